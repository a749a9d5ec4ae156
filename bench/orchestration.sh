#!/usr/bin/env bash
# Orchestration overhead of `ernicctl run` per benchmark point, side by side in one run:
#   local: ernicctl over netns hosts against a minimal hand-written shell loop driving the same
#          20 iperf3 points between the same kind of namespaces;
#   ssh:   ernicctl over SSH hosts against Debian's ansible-core running an idiomatic playbook
#          (bench/ansible/) for the same 20 points, both on the same two namespaces that each
#          run their own sshd.
# Overhead = wall time minus the time the iperf3 clients ran, divided by the points.
# Targets: local under 0.2 s per point; ssh at most 0.10 s per point and Ansible/ernicctl >= 30.
# Usage: bench/orchestration.sh [path/to/ernicctl] [local|ssh|all]   (as root; default all)
# The ssh variant installs ansible-core with apt-get when ansible-playbook is missing.
set -euo pipefail
ernicctl=$(realpath "${1:-build/cli/ernicctl}")
variant=${2:-all}
here=$(cd "$(dirname "$0")" && pwd)
[[ -x $ernicctl ]] || { echo "no ernicctl at $ernicctl (build one, or pass its path)" >&2; exit 2; }
case $variant in local | ssh | all) ;; *) echo "variant: local, ssh or all" >&2; exit 2 ;; esac
work=$(mktemp -d)
sshd_pids=()
cleanup() {
  for pid in "${sshd_pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for ns in ernbench-a ernbench-b ernbench-sa ernbench-sb; do ip netns del "$ns" 2>/dev/null || true; done
  ip link del ebsa-o 2>/dev/null || true
  ip link del ebsb-o 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

now() { date +%s.%N; }

# The 20 points both sides of each variant run.
benchmarks_yaml='benchmarks:
  - name: tcp
    tool: iperf3
    server: server
    client: client
    params: {parallel: [1, 2, 3, 4, 5], reverse: [false, true], protocol: [tcp, udp], duration: 1s, bitrate: 200M}
    timeout: 30s'

# Runs ernicctl on the 20 points between the hosts of $2 (scenario YAML), naming the run $1;
# sets points, ernic_tool (seconds the clients ran) and ernic_wall.
run_ernicctl() {
  cat > "$work/$1.yaml" <<YAML
name: orchestration-bench-$1
$2
$benchmarks_yaml
history: {path: $work/$1-history.jsonl}
YAML
  local start end measured
  start=$(now)
  "$ernicctl" run "$work/$1.yaml" --runs-dir "$work/runs" > "$work/ernicctl.out" 2>&1 ||
    { cat "$work/ernicctl.out" >&2; return 1; }
  end=$(now)
  measured=$(python3 - "$work/$1-history.jsonl" <<'PY'
import json, sys
record = json.loads(open(sys.argv[1]).read().splitlines()[-1])
points = record["ernicctl"]["points"]
assert all(p["status"] == "passed" for p in points), [p["reason"] for p in points]
print(len(points), sum(s["tool_s"] for p in points for s in p["samples"]))
PY
)
  read -r points ernic_tool <<< "$measured"
  ernic_wall=$(echo "$end - $start" | bc -l)
}

# Prints one line: name, wall, tools, overhead per point.
report() {
  printf '%-12s wall %6.2f s, tools %6.2f s, overhead per point %.3f s\n' "$1" "$2" "$3" \
    "$(echo "($2 - $3) / $4" | bc -l)"
}

local_variant() {
  local points ernic_tool ernic_wall
  run_ernicctl local 'hosts: [{name: server, provider: netns}, {name: client, provider: netns}]
netns: {subnet: 10.78.0.0/24}'

  # The same points from a minimal shell loop: readiness polled with ss, no fixed sleeps.
  local start end shell_tool=0 port=30000 t0 t1
  start=$(now)
  ip netns add ernbench-a && ip netns add ernbench-b
  ip -n ernbench-a link set lo up && ip -n ernbench-b link set lo up
  ip -n ernbench-a link add eth1 type veth peer name eth1 netns ernbench-b
  ip -n ernbench-a addr add 10.79.0.1/24 dev eth1 && ip -n ernbench-a link set eth1 up
  ip -n ernbench-b addr add 10.79.0.2/24 dev eth1 && ip -n ernbench-b link set eth1 up
  for parallel in 1 2 3 4 5; do for reverse in "" "-R"; do for udp in "" "-u"; do
    port=$((port + 1))
    ip netns exec ernbench-a iperf3 -s -1 --bind 10.79.0.1 -p $port > /dev/null 2>&1 &
    until ip netns exec ernbench-a ss -Hltn "sport = :$port" | grep -q LISTEN; do :; done
    t0=$(now)
    ip netns exec ernbench-b iperf3 -c 10.79.0.1 -p $port -J -t 1 -b 200M -P $parallel $reverse $udp > "$work/shell.json"
    t1=$(now)
    wait
    shell_tool=$(echo "$shell_tool + $t1 - $t0" | bc -l)
  done; done; done
  ip netns del ernbench-a; ip netns del ernbench-b
  end=$(now)
  local shell_wall
  shell_wall=$(echo "$end - $start" | bc -l)

  local ernic_overhead shell_overhead
  ernic_overhead=$(echo "($ernic_wall - $ernic_tool) / $points" | bc -l)
  shell_overhead=$(echo "($shell_wall - $shell_tool) / 20" | bc -l)
  printf 'local namespaces, points: %d\n' "$points"
  report ernicctl "$ernic_wall" "$ernic_tool" "$points"
  report 'shell loop' "$shell_wall" "$shell_tool" 20
  printf 'ratio ernicctl/shell overhead: %.2f (target: ernicctl under 0.200 s per point)\n' \
    "$(echo "$ernic_overhead / $shell_overhead" | bc -l)"
}

# Two namespaces, each with its own sshd on a management link to this namespace
# (10.81.1.2, 10.81.2.2) and a test link between them (10.81.3.1 - 10.81.3.2) for iperf3.
start_ssh_namespaces() {
  ssh-keygen -q -t ed25519 -N '' -C ernbench-client -f "$work/client_key"
  : > "$work/known_hosts"
  local side
  for side in a b; do
    local ns=ernbench-s$side net=$([[ $side == a ]] && echo 1 || echo 2)
    ip netns add "$ns"
    ip -n "$ns" link set lo up
    ip link add "ebs$side-o" type veth peer name "ebs$side-i" netns "$ns"
    ip addr add "10.81.$net.1/24" dev "ebs$side-o" && ip link set "ebs$side-o" up
    ip -n "$ns" addr add "10.81.$net.2/24" dev "ebs$side-i" && ip -n "$ns" link set "ebs$side-i" up
    mkdir -p "$work/sshd-$side/home"
    ssh-keygen -q -t ed25519 -N '' -C "ernbench-host-$side" -f "$work/sshd-$side/host_key"
    cp "$work/client_key.pub" "$work/sshd-$side/authorized_keys"
    echo "10.81.$net.2 $(cut -d' ' -f1,2 "$work/sshd-$side/host_key.pub")" >> "$work/known_hosts"
    cat > "$work/sshd-$side/sshd_config" <<CONFIG
Port 22
ListenAddress 10.81.$net.2
HostKey $work/sshd-$side/host_key
PidFile $work/sshd-$side/sshd.pid
AuthorizedKeysFile $work/sshd-$side/authorized_keys
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin prohibit-password
UsePAM no
StrictModes no
PrintMotd no
Subsystem sftp internal-sftp
LogLevel ERROR
CONFIG
    # Logins get an empty home instead of root's own (whose ~/.bashrc would run in every session).
    mkdir -p /run/sshd
    ip netns exec "$ns" unshare --mount --propagation private \
      sh -c 'mount --bind "$1" "$2" && shift 2 && exec "$@"' sh "$work/sshd-$side/home" \
      "$(getent passwd root | cut -d: -f6)" /usr/sbin/sshd -D -e -f "$work/sshd-$side/sshd_config" \
      2> "$work/sshd-$side/log" &
    sshd_pids+=($!)
  done
  ip -n ernbench-sa link add eth1 type veth peer name eth1 netns ernbench-sb
  ip -n ernbench-sa addr add 10.81.3.1/24 dev eth1 && ip -n ernbench-sa link set eth1 up
  ip -n ernbench-sb addr add 10.81.3.2/24 dev eth1 && ip -n ernbench-sb link set eth1 up
  for side in a b; do
    local tries=0
    until ip netns exec "ernbench-s$side" ss -Hltn 'sport = :22' | grep -q LISTEN; do
      tries=$((tries + 1))
      ((tries < 20000)) || { cat "$work/sshd-$side/log" >&2; return 1; }
    done
  done
}

ssh_variant() {
  command -v ansible-playbook > /dev/null || apt-get install -y ansible-core > "$work/apt.log" 2>&1 ||
    { cat "$work/apt.log" >&2; echo "cannot install ansible-core" >&2; return 1; }
  start_ssh_namespaces
  local ssh_keys="user: root, key: $work/client_key, known_hosts: $work/known_hosts"
  local points ernic_tool ernic_wall
  run_ernicctl ssh "hosts:
  - {name: server, provider: ssh, address: 10.81.3.1, ssh: {host: 10.81.1.2, $ssh_keys}}
  - {name: client, provider: ssh, address: 10.81.3.2, ssh: {host: 10.81.2.2, $ssh_keys}}"
  printf 'ssh (two namespaces with their own sshd), points: %d\n' "$points"
  report ernicctl "$ernic_wall" "$ernic_tool" "$points"

  # The same points from Ansible, on the same namespaces, sshd and keys.
  cat > "$work/inventory.ini" <<INI
server ansible_host=10.81.1.2
client ansible_host=10.81.2.2
[all:vars]
ansible_user=root
ansible_ssh_private_key_file=$work/client_key
ansible_ssh_common_args='-o UserKnownHostsFile=$work/known_hosts -o StrictHostKeyChecking=yes'
INI
  {
    echo "server_address: 10.81.3.1"
    echo "points:"
    local port=31000 parallel reverse udp
    for parallel in 1 2 3 4 5; do for reverse in false true; do for udp in false true; do
      port=$((port + 1))
      echo "  - {port: $port, parallel: $parallel, reverse: $reverse, udp: $udp}"
    done; done; done
  } > "$work/points.yml"
  local start end measured
  start=$(now)
  ANSIBLE_CONFIG=$here/ansible/ansible.cfg ANSIBLE_STDOUT_CALLBACK=json \
    ANSIBLE_SSH_CONTROL_PATH_DIR=$work/cp ANSIBLE_LOCAL_TEMP=$work/ansible-tmp \
    ansible-playbook -i "$work/inventory.ini" -e "@$work/points.yml" \
    "$here/ansible/orchestration.yml" > "$work/ansible.json" 2> "$work/ansible.err" ||
    { cat "$work/ansible.err" >&2; tail -c 4000 "$work/ansible.json" >&2; return 1; }
  end=$(now)
  local ansible_points ansible_tool ansible_wall
  measured=$(python3 - "$work/ansible.json" <<'PY'
import json, sys
result = json.load(open(sys.argv[1]))
assert all(s["failures"] == 0 and s["unreachable"] == 0 for s in result["stats"].values()), result["stats"]
deltas = []
for play in result["plays"]:
    for task in play["tasks"]:
        if task["task"]["name"] == "iperf3 client":
            for host in task["hosts"].values():
                h, m, s = host["delta"].split(":")
                deltas.append(int(h) * 3600 + int(m) * 60 + float(s))
print(len(deltas), sum(deltas))
PY
)
  read -r ansible_points ansible_tool <<< "$measured"
  ansible_wall=$(echo "$end - $start" | bc -l)

  local ernic_overhead ansible_overhead
  ernic_overhead=$(echo "($ernic_wall - $ernic_tool) / $points" | bc -l)
  ansible_overhead=$(echo "($ansible_wall - $ansible_tool) / $ansible_points" | bc -l)
  report ansible "$ansible_wall" "$ansible_tool" "$ansible_points"
  printf 'ratio ansible/ernicctl overhead: %.1f (targets: ernicctl at most 0.100 s per point, ratio >= 30)\n' \
    "$(echo "$ansible_overhead / $ernic_overhead" | bc -l)"
}

if [[ $variant != ssh ]]; then local_variant; fi
if [[ $variant != local ]]; then ssh_variant; fi

#!/usr/bin/env bash
# Orchestration overhead of `ernicctl run` per benchmark point, measured against a minimal
# hand-written shell loop that drives the same 20 iperf3 points between the same kind of
# namespaces, side by side in one run. Overhead = wall time minus the time iperf3 clients ran.
# Usage: bench/orchestration.sh [path/to/ernicctl]   (as root)
set -euo pipefail
ernicctl=${1:-build/cli/ernicctl}
work=$(mktemp -d)
trap 'ip netns del ernbench-a 2>/dev/null || true; ip netns del ernbench-b 2>/dev/null || true; rm -rf "$work"' EXIT

cat > "$work/bench.yaml" <<'YAML'
name: orchestration-bench
hosts: [{name: server, provider: netns}, {name: client, provider: netns}]
netns: {subnet: 10.78.0.0/24}
benchmarks:
  - name: tcp
    tool: iperf3
    server: server
    client: client
    params: {parallel: [1, 2, 3, 4, 5], reverse: [false, true], protocol: [tcp, udp], duration: 1s, bitrate: 200M}
    timeout: 30s
history: {path: HISTORY}
YAML
sed -i "s#HISTORY#$work/history.jsonl#" "$work/bench.yaml"

now() { date +%s.%N; }

# 1. ernicctl
start=$(now)
"$ernicctl" run "$work/bench.yaml" --runs-dir "$work/runs" > "$work/ernicctl.out" 2>&1
end=$(now)
ernic_wall=$(echo "$end - $start" | bc -l)
read -r points ernic_tool < <(python3 - "$work/history.jsonl" <<'PY'
import json, sys
record = json.loads(open(sys.argv[1]).read().splitlines()[-1])
points = record["ernicctl"]["points"]
assert all(p["status"] == "passed" for p in points), [p["reason"] for p in points]
print(len(points), sum(s["tool_s"] for p in points for s in p["samples"]))
PY
)

# 2. The same points from a minimal shell loop: readiness polled with ss, no fixed sleeps.
start=$(now)
ip netns add ernbench-a && ip netns add ernbench-b
ip -n ernbench-a link set lo up && ip -n ernbench-b link set lo up
ip -n ernbench-a link add eth1 type veth peer name eth1 netns ernbench-b
ip -n ernbench-a addr add 10.79.0.1/24 dev eth1 && ip -n ernbench-a link set eth1 up
ip -n ernbench-b addr add 10.79.0.2/24 dev eth1 && ip -n ernbench-b link set eth1 up
shell_tool=0
port=30000
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
shell_wall=$(echo "$end - $start" | bc -l)

ernic_overhead=$(echo "($ernic_wall - $ernic_tool) / $points" | bc -l)
shell_overhead=$(echo "($shell_wall - $shell_tool) / 20" | bc -l)
printf 'points:                                  %d\n' "$points"
printf 'ernicctl     wall %6.2f s, tools %6.2f s, overhead per point %.3f s\n' "$ernic_wall" "$ernic_tool" "$ernic_overhead"
printf 'shell loop   wall %6.2f s, tools %6.2f s, overhead per point %.3f s\n' "$shell_wall" "$shell_tool" "$shell_overhead"
printf 'ratio ernicctl/shell overhead:           %.2f\n' "$(echo "$ernic_overhead / $shell_overhead" | bc -l)"
printf 'target: under 0.200 s per point (Ansible play: about 2.6 s; rocm-ernic play with sleeps: about 7.7 s)\n'

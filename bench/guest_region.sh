#!/usr/bin/env bash
# Debian's unmodified perftest through guest regions (the path of guests on embedded instances,
# docs/emulator.md "Guests on the embedded emulator") against the socket front end, side by side
# on one pair of instances in one run: each instance serves its socket and a region file, and
# the programs find the device in a folder naming only the socket or only the region. Prints
# each figure and the ratio region / socket (no target: what a guest's path costs or saves).
#   bench/guest_region.sh [BUILD_DIR]        (default: build)
set -euo pipefail
build=${1:-build}
ernicctl=$(realpath "$build/cli/ernicctl")
for tool in ib_write_bw ib_send_lat; do
  command -v "$tool" >/dev/null || { echo "$tool is not installed (apt-get install perftest)" >&2; exit 2; }
done
dir=$(mktemp -d /tmp/ernic-bench-region.XXXXXX)
pids=()
cleanup() {
  kill "${pids[@]}" 2>/dev/null || true
  wait 2>/dev/null || true
  rm -rf "$dir"
}
trap cleanup EXIT INT TERM
port=$((20000 + RANDOM % 20000))
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
"$ernicctl" emulator --backend "tcp:manager:listen:$port" --socket "$dir/e1.sock" --gids 10.0.0.1 \
  --token bench --verbs-sysfs "$dir/e1.sysfs" --verbs-name ernic_1 --guest-region "$dir/r1" \
  --log-file "$dir/e1.log" &
pids+=($!)
until grep -q "instance ready" "$dir/e1.log" 2>/dev/null; do sleep 0.05; done
"$ernicctl" emulator --backend "tcp:worker:127.0.0.1:$port" --socket "$dir/e2.sock" --gids 10.0.0.2 \
  --token bench --verbs-sysfs "$dir/e2.sysfs" --verbs-name ernic_2 --guest-region "$dir/r2" \
  --log-file "$dir/e2.log" &
pids+=($!)
until grep -q "instance ready" "$dir/e2.log" 2>/dev/null; do sleep 0.05; done
# The instance's own folder names both; a copy without the region is the socket's path, one
# without the socket is the guest's.
for i in 1 2; do
  for path in socket region; do
    cp -r "$dir/e$i.sysfs" "$dir/$path$i.sysfs"
  done
  rm "$dir/socket$i.sysfs/class/infiniband/ernic_$i/ernic_region"
  rm "$dir/region$i.sysfs/class/infiniband/ernic_$i/ernic_socket"
done

# One perftest pair through `path`; prints the figure column `column` of its result row.
measure() {
  local path=$1 column=$2 tool=$3
  shift 3
  local oob=$((port + 1 + RANDOM % 1000))
  (eval "$("$ernicctl" verbs-env "$dir/${path}1.sysfs")"
   exec "$tool" -d ernic_1 -x 0 -p "$oob" "$@" >/dev/null 2>&1) &
  local server=$!
  until ss -ltn | grep -q ":$oob "; do sleep 0.02; done
  (eval "$("$ernicctl" verbs-env "$dir/${path}2.sysfs")"
   "$tool" -d ernic_2 -x 0 -p "$oob" "$@" 127.0.0.1) |
    awk -v c="$column" '/^ *[0-9]+ +[0-9]+ / {print $c}'
  wait "$server"
}

row() {
  local label=$1 unit=$2 column=$3
  shift 3
  local socket region
  socket=$(measure socket "$column" "$@")
  region=$(measure region "$column" "$@")
  awk -v l="$label" -v u="$unit" -v s="$socket" -v r="$region" \
    'BEGIN {printf "%-28s socket %9.2f %s   region %9.2f %s   region/socket %.2f\n", l, s, u, r, u, r / s}'
}

row "ib_write_bw 64 KiB" "MB/s" 4 ib_write_bw -s 65536 -D 3 -F
row "ib_write_bw 1 MiB" "MB/s" 4 ib_write_bw -s 1048576 -D 3 -F
row "ib_send_lat 4 KiB typical" "us" 5 ib_send_lat -s 4096 -n 2000 -F
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"

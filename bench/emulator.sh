#!/usr/bin/env bash
# Measures the embedded emulator against plain TCP on loopback, in one run, and prints each
# figure and each ratio (design targets in docs/emulator.md):
#   WRITE BW(1 MiB) / iperf3 one stream          >= 1.2
#   BW(8 MiB) / BW(1 MiB), send, write, read     >= 0.9
#   send_lat typical(4 KiB) / TCP busy-poll RTT  <= 3
#   idle instance CPU                            <= 2 % of a core
# Usage: bench/emulator.sh [path/to/ernicctl]   (a Release build; sanitizers distort everything)
set -euo pipefail

ERNICCTL=${1:-${ERNICCTL:-build-rel/cli/ernicctl}}
[[ -x $ERNICCTL ]] || { echo "no ernicctl at $ERNICCTL (build a Release tree, or pass its path)" >&2; exit 2; }
command -v iperf3 >/dev/null || { echo "iperf3 is not installed" >&2; exit 2; }
ERNICCTL=$(realpath "$ERNICCTL")
WORK=$(mktemp -d /tmp/ernic-bench.XXXXXX)
PIDS=()
cleanup() {
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${PIDS[@]}"; do
    for _ in $(seq 40); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
    kill -9 "$pid" 2>/dev/null || true
  done
  rm -rf "$WORK"
}
trap cleanup EXIT INT TERM
cd "$WORK"

wait_ready() {  # LOG
  for _ in $(seq 200); do grep -q "instance ready" "$1" 2>/dev/null && return 0; sleep 0.05; done
  echo "instance did not become ready:" >&2; tail -n 5 "$1" >&2; exit 1
}

"$ERNICCTL" emulator --backend tcp:manager:listen:0 --socket m.sock --token bench \
  --gids 10.0.0.1 --log-file m.log --stats-file m.stats & PIDS+=($!)
wait_ready m.log
PORT=$(grep -o "listening on 127.0.0.1:[0-9]*" m.log | cut -d: -f2)
"$ERNICCTL" emulator --backend "tcp:worker:127.0.0.1:$PORT" --socket w.sock --token bench \
  --gids 10.0.0.2 --log-file w.log --stats-file w.stats & PIDS+=($!)
WORKER=$!
wait_ready w.log

OOB=$((20000 + RANDOM % 20000))
perf() {  # TEST ARGS... -> prints the client's result row
  local test=$1; shift
  timeout 120 "$ERNICCTL" perf "$test" --socket m.sock -p "$OOB" "$@" > server.txt 2>&1 &
  local server=$!
  local out
  out=$(timeout 120 "$ERNICCTL" perf "$test" --socket w.sock -p "$OOB" "$@" 127.0.0.1 2>&1) || {
    echo "ernicctl perf $test $* failed:" >&2; echo "$out" >&2; exit 1; }
  wait "$server"
  echo "$out" | grep -E '^ [0-9]+ '
}
gbytes() { awk '{printf "%.3f", $4 / 8}'; }   # BW average [Gb/sec] column -> GB/s
typical() { awk '{print $5}'; }

echo "ERNIC embedded emulator bench, $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
declare -A BW
printf '%-8s %10s %10s %10s %10s   (GB/s, BW average, median of 3 runs)\n' verb "4KiB" "64KiB" "1MiB" "8MiB"
for verb in send write read; do
  row=()
  for size in 4096 65536 1048576 8388608; do
    iters=$(( size >= 8388608 ? 200 : size >= 1048576 ? 1500 : 5000 ))
    # This machine is shared: the median of three runs, not one sample.
    v=$(for _ in 1 2 3; do perf "${verb}_bw" -s "$size" -n "$iters" --report_gbits | gbytes; echo; done |
        sort -n | sed -n 2p)
    BW[$verb,$size]=$v
    row+=("$v")
  done
  printf '%-8s %10s %10s %10s %10s\n' "$verb" "${row[@]}"
done
echo
for verb in send write read; do
  printf '%-10s 4KiB typical %8s usec   64KiB typical %8s usec\n' "${verb}_lat" \
    "$(perf "${verb}_lat" -s 4096 -n 2000 | typical)" "$(perf "${verb}_lat" -s 65536 -n 1000 | typical)"
done
SEND_LAT=$(perf send_lat -s 4096 -n 2000 | typical)

iperf3 -s -1 -p "$OOB" > /dev/null 2>&1 & IPERF=$!
sleep 0.3
IPERF_BPS=$(iperf3 -c 127.0.0.1 -p "$OOB" -t 5 -J | python3 -c 'import json,sys; print(json.load(sys.stdin)["end"]["sum_received"]["bits_per_second"])')
wait "$IPERF" || true
IPERF_GB=$(awk -v b="$IPERF_BPS" 'BEGIN{printf "%.3f", b / 8e9}')
TCP_RTT=$("$ERNICCTL" perf tcp_pingpong -s 4096 -n 5000 | sed -E 's/.*round trip median ([0-9.]+) usec.*/\1/')

# Idle CPU of the worker: nothing runs against it now.
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
T0=$(ticks "$WORKER"); sleep 3; T1=$(ticks "$WORKER")
IDLE=$(awk -v d=$((T1 - T0)) -v hz="$(getconf CLK_TCK)" 'BEGIN{printf "%.2f", 100 * d / hz / 3}')

echo
echo "iperf3, one TCP stream over loopback: $IPERF_GB GB/s"
echo "TCP busy-poll ping-pong, 4 KiB, round trip: $TCP_RTT usec"
echo "idle worker instance: $IDLE % of a core"
echo
ratio() { awk -v a="$1" -v b="$2" 'BEGIN{ if (b > 0) printf "%.2f", a / b; else print "n/a" }'; }
pass() { awk -v r="$1" -v t="$2" -v op="$3" 'BEGIN{ ok = (op == ">=") ? r >= t : r <= t; print ok ? "meets" : "MISSES" }'; }
R=$(ratio "${BW[write,1048576]}" "$IPERF_GB"); echo "ratio WRITE BW(1MiB) / iperf3         = $R  (target >= 1.2: $(pass "$R" 1.2 '>='))"
for verb in send write read; do
  R=$(ratio "${BW[$verb,8388608]}" "${BW[$verb,1048576]}")
  echo "ratio ${verb} BW(8MiB) / BW(1MiB)$(printf '%*s' $((6 - ${#verb})) '')    = $R  (target >= 0.9: $(pass "$R" 0.9 '>='))"
done
R=$(ratio "$SEND_LAT" "$TCP_RTT"); echo "ratio send_lat(4KiB) / TCP RTT        = $R  (target <= 3: $(pass "$R" 3 '<='))"
echo "idle instance CPU                    = $IDLE %  (target <= 2: $(pass "$IDLE" 2 '<='))"
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"

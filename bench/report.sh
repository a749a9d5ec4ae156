#!/usr/bin/env bash
# Renders synthetic histories of 10,000 and 100,000 records with `ernicctl report` and prints
# wall time and peak RSS of each, and the 100k/10k ratios.
# Targets (issue 6): 100k records in at most 2 s and 256 MiB, time growing linearly.
#
#   bench/report.sh [path/to/ernicctl]      # the binary to measure, as the other benches take it
#   ERNICCTL=path/to/ernicctl bench/report.sh
#   bench/report.sh --build                 # first builds a Release ernicctl in build-bench/
#                                           # (ERNIC_BENCH_BUILD to change; ~10 min on 2 cores)
# Without an argument it uses $ERNICCTL, else build/cli/ernicctl.
# Exit status 1 when a target is missed, 2 when there is nothing to measure. Needs /usr/bin/time
# (Debian package "time").
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
if [[ ${1:-} == --build ]]; then
  build=${ERNIC_BENCH_BUILD:-$root/build-bench}
  log=$(mktemp /tmp/ernic-bench-build.XXXXXX.log)
  echo "bench/report.sh: building a Release ernicctl in $build (log: $log)" >&2
  if ! { cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DERNIC_SANITIZE=OFF \
           -DERNIC_TESTS=OFF && ninja -C "$build" -j2 ernicctl; } >"$log" 2>&1; then
    echo "bench/report.sh: the Release build failed; its last lines ($log):" >&2
    tail -n 25 "$log" >&2
    exit 2
  fi
  ERNICCTL=$build/cli/ernicctl
else
  ERNICCTL=${1:-${ERNICCTL:-$root/build/cli/ernicctl}}
fi
if [[ ! -x $ERNICCTL ]]; then
  echo "bench/report.sh: no ernicctl at $ERNICCTL (pass the binary to measure, or --build)" >&2
  exit 2
fi
if [[ ! -x /usr/bin/time ]]; then
  echo "bench/report.sh: /usr/bin/time is missing (apt-get install time)" >&2
  exit 2
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# "h:mm:ss" or "m:ss.xx" from GNU time -v, in seconds
to_seconds() {
  awk -F: '{ s = 0; for (i = 1; i <= NF; i++) s = s * 60 + $i; printf "%.3f", s }' <<<"$1"
}

declare -A wall rss cpu
for records in 10000 100000; do
  history=$work/history-$records.jsonl
  "$ERNICCTL" history synthesize "$history" --records "$records" --repetitions 3 >/dev/null
  bytes=$(stat -c %s "$history")
  # best of 3: the machine is shared, and the slowest runs measure the neighbours
  best=""
  for attempt in 1 2 3; do
    if ! /usr/bin/time -v "$ERNICCTL" report "$history" --out "$work/site-$records" \
      >"$work/report-$records.out" 2>"$work/time-try.txt"; then
      echo "bench/report.sh: '$ERNICCTL report' failed on $records records:" >&2
      tail -n 20 "$work/report-$records.out" "$work/time-try.txt" >&2
      exit 2
    fi
    elapsed=$(sed -n 's/.*Elapsed (wall clock) time (h:mm:ss or m:ss): //p' "$work/time-try.txt")
    seconds=$(to_seconds "$elapsed")
    if [[ -z $best ]] || awk "BEGIN{exit !($seconds < $best)}"; then
      best=$seconds
      cp "$work/time-try.txt" "$work/time-$records.txt"
    fi
  done
  wall[$records]=$best
  rss[$records]=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$work/time-$records.txt")
  user=$(sed -n 's/.*User time (seconds): //p' "$work/time-$records.txt")
  sys=$(sed -n 's/.*System time (seconds): //p' "$work/time-$records.txt")
  cpu[$records]=$(awk "BEGIN{print $user + $sys}")
  page=$(stat -c %s "$work/site-$records/index.html")
  printf '%7d records (%4d MiB of JSONL): %6.3f s wall (best of 3), %5.2f s CPU (user %s + sys %s), %6.1f MiB peak RSS, page %d KiB\n' \
    "$records" $((bytes / 1048576)) "${wall[$records]}" "${cpu[$records]}" "$user" "$sys" \
    "$(awk "BEGIN{print ${rss[$records]}/1024}")" $((page / 1024))
done

echo "load average while measuring: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores (wall time includes waiting for a CPU)"
time_ratio=$(awk "BEGIN{printf \"%.2f\", ${wall[100000]} / ${wall[10000]}}")
cpu_ratio=$(awk "BEGIN{printf \"%.2f\", ${cpu[100000]} / ${cpu[10000]}}")
rss_ratio=$(awk "BEGIN{printf \"%.2f\", ${rss[100000]} / ${rss[10000]}}")
echo "100k/10k: wall time x$time_ratio, CPU time x$cpu_ratio (linear: about x10), peak RSS x$rss_ratio"

status=0
check() {  # name, ok (1/0), detail
  if [[ $2 == 1 ]]; then echo "PASS $1 ($3)"; else echo "FAIL $1 ($3)"; status=1; fi
}
check "100k wall time <= 2 s" "$(awk "BEGIN{print (${wall[100000]} <= 2.0)}")" "${wall[100000]} s"
check "100k peak RSS <= 256 MiB" "$(awk "BEGIN{print (${rss[100000]} <= 262144)}")" "$((rss[100000] / 1024)) MiB"
check "time grows at most linearly" "$(awk "BEGIN{print ($time_ratio <= 11 || $cpu_ratio <= 11)}")" \
  "wall x$time_ratio, CPU x$cpu_ratio"
exit $status

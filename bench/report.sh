#!/usr/bin/env bash
# Renders synthetic histories of 10,000 and 100,000 records with `ernicctl report` and prints
# wall time and peak RSS of each, and the 100k/10k ratios.
# Targets (issue 6): 100k records in at most 2 s and 256 MiB, time growing linearly.
#
#   bench/report.sh                  # builds a Release ernicctl in build-bench/ first
#   ERNICCTL=path/to/ernicctl bench/report.sh
#
# Exit status 1 when a target is missed. Needs /usr/bin/time (Debian package "time").
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
if [[ -z "${ERNICCTL:-}" ]]; then
  build=${ERNIC_BENCH_BUILD:-$root/build-bench}
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DERNIC_SANITIZE=OFF \
    -DERNIC_TESTS=OFF >/dev/null
  ninja -C "$build" -j2 ernicctl >/dev/null
  ERNICCTL=$build/cli/ernicctl
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

declare -A wall rss
for records in 10000 100000; do
  history=$work/history-$records.jsonl
  "$ERNICCTL" history synthesize "$history" --records "$records" --repetitions 3 >/dev/null
  bytes=$(stat -c %s "$history")
  /usr/bin/time -v "$ERNICCTL" report "$history" --out "$work/site-$records" \
    >"$work/report-$records.out" 2>"$work/time-$records.txt"
  elapsed=$(sed -n 's/.*Elapsed (wall clock) time (h:mm:ss or m:ss): //p' "$work/time-$records.txt")
  wall[$records]=$(to_seconds "$elapsed")
  rss[$records]=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$work/time-$records.txt")
  user=$(sed -n 's/.*User time (seconds): //p' "$work/time-$records.txt")
  sys=$(sed -n 's/.*System time (seconds): //p' "$work/time-$records.txt")
  page=$(stat -c %s "$work/site-$records/index.html")
  printf '%7d records (%4d MiB of JSONL): %6.3f s wall, %5.2f s CPU (user %s + sys %s), %6.1f MiB peak RSS, page %d KiB\n' \
    "$records" $((bytes / 1048576)) "${wall[$records]}" "$(awk "BEGIN{print $user + $sys}")" "$user" "$sys" \
    "$(awk "BEGIN{print ${rss[$records]}/1024}")" $((page / 1024))
done

echo "load average while measuring: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores (wall time includes waiting for a CPU)"
time_ratio=$(awk "BEGIN{printf \"%.2f\", ${wall[100000]} / ${wall[10000]}}")
rss_ratio=$(awk "BEGIN{printf \"%.2f\", ${rss[100000]} / ${rss[10000]}}")
echo "100k/10k: time x$time_ratio (linear: at most x10), peak RSS x$rss_ratio"

status=0
check() {  # name, ok (1/0), detail
  if [[ $2 == 1 ]]; then echo "PASS $1 ($3)"; else echo "FAIL $1 ($3)"; status=1; fi
}
check "100k wall time <= 2 s" "$(awk "BEGIN{print (${wall[100000]} <= 2.0)}")" "${wall[100000]} s"
check "100k peak RSS <= 256 MiB" "$(awk "BEGIN{print (${rss[100000]} <= 262144)}")" "$((rss[100000] / 1024)) MiB"
check "time grows at most linearly" "$(awk "BEGIN{print ($time_ratio <= 11)}")" "x$time_ratio"
exit $status

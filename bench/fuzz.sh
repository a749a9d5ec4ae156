#!/usr/bin/env bash
# Runs every libFuzzer target of a fuzz build for a given time each and prints, per target,
# the executions, the coverage (edges and features libFuzzer counted at the end) and the
# crashes it found (with the reproducer files it wrote).
# Usage: bench/fuzz.sh BUILD_DIR [SECONDS]   (default 600 s per target)
# BUILD_DIR is configured with -DERNIC_FUZZ=ON (clang); only the fuzz targets need building:
#   cmake -S . -B build-fuzz -G Ninja -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
#     -DERNIC_FUZZ=ON && ninja -C build-fuzz frame_decoder_fuzz connection_fuzz
# Each target resumes from its corpus in the build tree (corpus-NAME, as the ctest run uses)
# seeded with the recorded tool outputs. Exit status 1 when any target crashed.
set -euo pipefail

BUILD=${1:?usage: bench/fuzz.sh BUILD_DIR [SECONDS]}
SECONDS_EACH=${2:-600}
[[ -d $BUILD ]] || { echo "no build directory $BUILD" >&2; exit 2; }
[[ $SECONDS_EACH =~ ^[0-9]+$ && $SECONDS_EACH -gt 0 ]] ||
  { echo "SECONDS must be a positive number, not '$SECONDS_EACH'" >&2; exit 2; }
BUILD=$(realpath "$BUILD")
SAMPLES=$(realpath "$(dirname "$0")/../tests/samples")

mapfile -t TARGETS < <(find "$BUILD" -type f -name '*_fuzz' -perm -u+x | sort)
((${#TARGETS[@]} > 0)) ||
  { echo "no fuzz targets in $BUILD (configure it with -DERNIC_FUZZ=ON and build them)" >&2; exit 2; }

OUT=$(mktemp -d /tmp/ernic-fuzz.XXXXXX)
echo "fuzzing ${#TARGETS[@]} target(s) for ${SECONDS_EACH} s each; logs and crash inputs in $OUT"
printf '%-22s %12s %9s %8s %9s %8s %s\n' target executions exec/s edges features corpus crashes
status=0
for target in "${TARGETS[@]}"; do
  name=$(basename "$target")
  corpus=$(dirname "$target")/corpus-$name
  mkdir -p "$corpus" "$OUT/$name"
  log=$OUT/$name.log
  # A crash ends libFuzzer with a non-zero status; the summary below reports it.
  "$target" -max_total_time="$SECONDS_EACH" -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$OUT/$name/" "$corpus" "$SAMPLES" >"$log" 2>&1 || true
  executions=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  last=$(grep -E '^#[0-9]+' "$log" | tail -1 || true)
  edges=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")
  features=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")
  files=$(find "$corpus" -type f | wc -l)
  crashes=$(find "$OUT/$name" -type f \( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' \
    -o -name 'oom-*' \) | wc -l)
  printf '%-22s %12s %9s %8s %9s %8s %s\n' "$name" "${executions:-?}" "${rate:-?}" \
    "${edges:-?}" "${features:-?}" "$files" "$crashes"
  if ((crashes > 0)) || grep -q '^==[0-9]*==ERROR' "$log"; then
    status=1
    grep -m3 -E '^==[0-9]+==ERROR|^SUMMARY' "$log" | sed "s/^/  $name: /" || true
    find "$OUT/$name" -type f | sed "s/^/  reproducer: /"
  fi
done
exit $status

#!/usr/bin/env bash
# Builds the fuzz targets of tests/fuzz with clang (libFuzzer, AddressSanitizer,
# UndefinedBehaviorSanitizer) and runs each for SECONDS, starting from its seeds
# in tests/fuzz/seeds/<target>; new inputs go to BUILD_DIR/corpus/<target>, so
# the seeds in the repository stay as they are. A finding is written to
# BUILD_DIR/<target>-crash-*, and the script exits 1.
#   scripts/fuzz.sh [SECONDS]      (default 60 per target; BUILD_DIR default build-fuzz)
#   scripts/fuzz.sh --ci           what CI runs: 20000 inputs per target from a
#                                  fixed random seed, so a run is repeatable
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-60}
if [[ $secs == --ci ]]; then
  limit=(-runs=20000 -seed=1)
  what="at most 20000, random seed 1"
elif [[ $secs =~ ^[0-9]+$ ]] && ((secs >= 1)); then
  limit=(-max_total_time="$secs")
  what="$secs s"
else
  echo "fuzz.sh: give SECONDS (a whole number >= 1) or --ci, e.g. scripts/fuzz.sh 30" >&2
  exit 2
fi
if ! command -v clang++ >/dev/null; then
  echo "fuzz.sh: clang++ not found: apt-get install clang libclang-rt-14-dev" >&2
  exit 2
fi
build=${BUILD_DIR:-build-fuzz}
mkdir -p "$build"
CC=clang CXX=clang++ cmake -S tests/fuzz -B "$build" >"$build/configure.log" 2>&1 || { cat "$build/configure.log" >&2; exit 1; }
cmake --build "$build" -j "$(nproc)" >"$build/build.log" 2>&1 || { tail -n 40 "$build/build.log" >&2; exit 1; }

status=0
for src in tests/fuzz/fuzz_*.cpp; do
  name=$(basename "$src" .cpp)
  corpus="$build/corpus/$name"
  mkdir -p "$corpus"
  seeds=()
  [[ -d tests/fuzz/seeds/$name ]] && seeds+=("tests/fuzz/seeds/$name")
  log="$build/$name.log"
  if "$build/$name" "${limit[@]}" -timeout=20 -rss_limit_mb=2048 -print_final_stats=1 \
       -artifact_prefix="$build/$name-" "$corpus" "${seeds[@]}" >"$log" 2>&1; then
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
    echo "$name: ${runs:-?} inputs run ($what), no finding"
  else
    echo "$name: FINDING (log: $log)"
    grep -E "ERROR|runtime error|SUMMARY|terminate|what\(\)" "$log" | head -n 8
    status=1
  fi
done
exit $status

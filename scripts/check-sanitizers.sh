#!/usr/bin/env bash
# Builds flopwatt and its tests with AddressSanitizer and UndefinedBehaviorSanitizer
# (-fno-sanitize-recover: the first report fails the test) in a build directory of
# its own, and runs the whole ctest suite, the umockdev and end-to-end CLI tests
# included (the flopwatt binary they start is instrumented too).
#   scripts/check-sanitizers.sh            (BUILD_DIR default build-sanitize)
# With `thread`: the public API (flopwatt/meter.h) under ThreadSanitizer, its
# Meter tests only (threads opening and closing windows while the sampler and
# the supply monitor run; windows pushed from the meter's own thread) and the
# ordered pool `store import` prepares runs on (harness/cli/ordered_parallel.h);
# only the library and those tests are built.
#   scripts/check-sanitizers.sh thread     (BUILD_DIR default build-tsan)
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-address}
if [[ $mode == thread ]]; then
  build=${BUILD_DIR:-build-tsan}
  flags="-fsanitize=thread -fno-omit-frame-pointer"
  link="-fsanitize=thread"
  target=(--target api_meter_test api_meter_push_test harness_cli_ordered_parallel_test)
else
  build=${BUILD_DIR:-build-sanitize}
  flags="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
  link="-fsanitize=address,undefined"
  target=()
fi
mkdir -p "$build"
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
# -O1 -g1: the compile time of -O2 -g is a quarter of CI's budget for this
# build, and a report needs only file:line, which -g1's line tables keep.
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" "${launcher[@]}" \
  -DCMAKE_C_FLAGS="$flags" -DCMAKE_CXX_FLAGS="$flags" \
  -DCMAKE_EXE_LINKER_FLAGS="$link" \
  -DCMAKE_SHARED_LINKER_FLAGS="$link" >"$build/configure.log" 2>&1 ||
  { cat "$build/configure.log" >&2; exit 1; }
cmake --build "$build" -j "$(nproc)" "${target[@]}" >"$build/build.log" 2>&1 || { tail -n 60 "$build/build.log" >&2; exit 1; }
if [[ $mode == thread ]]; then
  export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1
  "$build/tests/api/api_meter_test"
  "$build/tests/harness/cli/harness_cli_ordered_parallel_test"
  exec "$build/tests/api/api_meter_push_test"
fi
# umockdev-run preloads libumockdev-preload.so ahead of the ASan runtime, which
# ASan refuses by default ("ASan runtime does not come first"); the preload only
# wraps libc's file calls, so the order does not matter to what ASan checks.
# Leak checking is off: the one-time allocations the math libraries keep until
# exit are not this project's defects, and LeakSanitizer cannot run under ptrace.
export ASAN_OPTIONS=verify_asan_link_order=0:detect_leaks=0:halt_on_error=1:abort_on_error=0:strict_string_checks=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
# Tests labelled packaging (package lists, cpack) and python (scripts/plot.py's
# pure functions) run no flopwatt code, so no sanitizer sees anything in them;
# the plain suite runs them.
ctest --test-dir "$build" -j "$(nproc)" --output-on-failure -LE '^(packaging|python)$'

#!/usr/bin/env bash
# Every optional dependency OFF: configure, build flopwatt, and check that
# `flopwatt backends` and `flopwatt sources` run (exit 0), name what is missing
# with its fix, and that the binary links none of the optional libraries.
#   scripts/check-minimal-build.sh     (BUILD_DIR, default build-minimal)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD_DIR:-build-minimal}
off=()
for dep in OPENBLAS ONEDNN PFM SENSORS NPU_DEVICE BENCHMARK PROMETHEUS; do off+=("-DFLOPWATT_WITH_$dep=OFF"); done
mkdir -p "$build"
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DFLOPWATT_TESTS=OFF "${off[@]}" >"$build/configure.log" 2>&1 ||
  { cat "$build/configure.log" >&2; exit 1; }
grep -E '^-- +[A-Z_]+ \(.*\): ' "$build/configure.log"
cmake --build "$build" -j "$(nproc)" --target flopwatt >"$build/build.log" 2>&1 || { tail -n 40 "$build/build.log" >&2; exit 1; }

fail=0
expect() {  # expect WHAT PATTERN TEXT
  if ! grep -qF -- "$2" <<<"$3"; then echo "check-minimal-build: $1 does not say: $2" >&2; fail=1; fi
}
backends=$("$build/flopwatt" backends) || { echo "check-minimal-build: flopwatt backends exited $?" >&2; exit 1; }
sources=$("$build/flopwatt" sources --measure 0) || { echo "check-minimal-build: flopwatt sources exited $?" >&2; exit 1; }
expect "flopwatt backends" "built without OpenBLAS" "$backends"
expect "flopwatt backends" "apt-get install libopenblas-openmp-dev" "$backends"
expect "flopwatt backends" "built without oneDNN" "$backends"
expect "flopwatt backends" "built without the NPU device backend" "$backends"
expect "flopwatt backends" "cpu:reference      available" "$backends"
expect "flopwatt sources" "fix:" "$sources"
# serve and --pushgateway refuse with exit 2, naming the package.
serve=$("$build/flopwatt" serve --no-store 2>&1) && { echo "check-minimal-build: flopwatt serve exited 0" >&2; fail=1; }
expect "flopwatt serve" "apt-get install prometheus-cpp-dev" "$serve"
push=$("$build/flopwatt" measure --no-store --power none --pushgateway http://127.0.0.1:9 -- true 2>&1) &&
  { echo "check-minimal-build: measure --pushgateway exited 0" >&2; fail=1; }
expect "flopwatt measure --pushgateway" "apt-get install prometheus-cpp-dev" "$push"
linked=$(ldd "$build/flopwatt")
for lib in libopenblas libdnnl libdrm libelf libpfm libsensors libbenchmark libprometheus libcivetweb libcurl; do
  if grep -q "$lib" <<<"$linked"; then echo "check-minimal-build: the all-OFF binary links $lib" >&2; fail=1; fi
done
((fail == 0)) && echo "minimal build: flopwatt backends and sources exit 0 and name every missing dependency with its fix"
exit $fail

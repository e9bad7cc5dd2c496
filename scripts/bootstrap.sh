#!/usr/bin/env bash
# flopwatt set-up on Debian 12: install packages, build, then run or test.
#   scripts/bootstrap.sh          install, build, run the default suite (`flopwatt run default`)
#   scripts/bootstrap.sh test     install, build, run the whole test suite (ctest)
#   scripts/bootstrap.sh build    install and build only (binary: build/flopwatt)
# Environment: BUILD_DIR (default build), FLOPWATT_NATIVE=OFF for a portable binary,
# FLOPWATT_WERROR=ON to fail on any compiler warning (CI sets it).
set -euo pipefail
cd "$(dirname "$0")/.."

mode=${1:-run}
case "$mode" in run|test|build) ;; *) echo "usage: scripts/bootstrap.sh [run|test|build]" >&2; exit 2 ;; esac

# The package list lives in scripts/packages.txt (one per line, # comments).
mapfile -t packages < <(sed -e 's/#.*//' -e '/^[[:space:]]*$/d' scripts/packages.txt)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  if [[ $(id -u) -ne 0 ]]; then
    echo "flopwatt needs these Debian packages: ${missing[*]}" >&2
    echo "install them as root, then run this script again:" >&2
    echo "  sudo apt-get update && sudo apt-get install -y ${missing[*]}" >&2
    exit 1
  fi
  echo "installing: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

build=${BUILD_DIR:-build}
jobs=$(nproc)
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DFLOPWATT_NATIVE="${FLOPWATT_NATIVE:-ON}" \
  -DFLOPWATT_WERROR="${FLOPWATT_WERROR:-OFF}" >/dev/null
cmake --build "$build" -j "$jobs"

case "$mode" in
  build) echo "built: $build/flopwatt" ;;
  run) "$build/flopwatt" run default ;;
  test) ctest --test-dir "$build" --output-on-failure -j "$jobs" ;;
esac

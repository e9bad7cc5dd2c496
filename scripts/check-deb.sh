#!/usr/bin/env bash
# The Debian packages as a new user gets them: first lintian on this machine
# (any error fails, warnings are shown), then a bare Debian 12 root
# (`debootstrap --variant=minbase`, nothing else), where apt installs every
# .deb given (and must find every other dependency from their Depends alone),
# and what they installed is used: the programs, `flopwatt measure` and the
# Python module on a fixture laptop with an external meter at a constant 20 W,
# the man page, completion, pkg-config and CMake files; removing them must
# leave nothing. Too slow for every CI run (a debootstrap); run it before a
# change to packaging or dependencies lands.
# scripts/check-fresh-install.sh runs it on the packages it built inside its root.
#
#   sudo scripts/check-deb.sh [--keep] PACKAGE.deb... [DIR]
#     PACKAGE.deb  the packages `cpack -G DEB` made in a build directory (all of them:
#                  flopwatt, libflopwattN, libflopwatt-dev, python3-flopwatt)
#     DIR          where the Debian root is built (default: a new temporary directory)
#     --keep       leave the root in place afterwards (it is removed by default)
set -euo pipefail
cd "$(dirname "$0")/.."

keep=0
debs=()
dir=""
for a in "$@"; do
  case "$a" in
    --keep) keep=1 ;;
    -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
    -*) echo "check-deb: unknown option $a (use --keep, .deb files and a directory)" >&2; exit 2 ;;
    *.deb) debs+=("$a") ;;
    *) dir=$a ;;
  esac
done
if ((${#debs[@]} == 0)); then
  echo "check-deb: no package: give the .deb files that \`cpack -G DEB\` made in a build directory" >&2
  exit 2
fi
for deb in "${debs[@]}"; do
  [[ -f $deb ]] || { echo "check-deb: $deb: no such file" >&2; exit 2; }
done
mapfile -t names < <(for deb in "${debs[@]}"; do dpkg-deb -f "$deb" Package; done)

if ! command -v lintian >/dev/null; then
  echo "check-deb: lintian is not installed: apt-get install --no-install-recommends lintian" >&2
  exit 2
fi
echo "== lintian ${names[*]}"
if ! lintian --no-cfg --tag-display-limit 0 "${debs[@]}" | sed 's/^/   /'; then
  echo "check-deb: lintian reports errors (E: above)" >&2
  exit 1
fi
source scripts/lib/debian-root.sh
root=${dir:-$(mktemp -d /var/tmp/flopwatt-deb.XXXXXX)}
t0=$(date +%s)
debian_root_make "$root" "$(( keep || ${#dir} ))"

mkdir -p "$root/root/debs"
cp "${debs[@]}" "$root/root/debs/"
cp -r tests/fixtures/power/laptop "$root/root/laptop"
# An external meter log at a constant 20 W around now (realtime clock).
python3 - "$root/root/meter.log" <<'PY'
import sys, time
now = time.time()
with open(sys.argv[1], "w") as f:
    f.write("# clock: realtime\n")
    t = now - 5
    while t < now + 1800:
        f.write(f"{t:.3f},20\n")
        t += 0.1
PY

echo "== apt-get install ${names[*]}"
debian_root_run "$root" "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends /root/debs/*.deb" \
  >"$root.apt.log" 2>&1 || { tail -n 30 "$root.apt.log" >&2; echo "check-deb: apt could not install the packages (log: $root.apt.log)" >&2; exit 1; }
echo "   $(grep -c '^Setting up' "$root.apt.log") packages set up"

fails=0
checks=0
step() {
  local what=$1 cmd=$2 out
  checks=$((checks + 1))
  if out=$(debian_root_run "$root" "cd /root && $cmd" 2>&1); then
    echo "ok   $what"
  else
    echo "FAIL $what"; echo "$out" | tail -n 15 | sed 's/^/     /'; fails=$((fails + 1))
  fi
}
power="--sysfs-root /root/laptop --power-log /root/meter.log"
step "flopwatt --version" "flopwatt --version"
step "flopwatt backends" "flopwatt backends"
step "flopwatt sources on the fixture laptop" "flopwatt sources $power | grep -q external"
step "flopwatt finds its NPU device files" "flopwatt npu plan --device phoenix 512,768,768"
step "flopwatt measure -- sleep 0.5 at 20 W" \
  "flopwatt measure $power --no-store --out /root/m -- sleep 0.5 && python3 -c 'import json,sys; r=json.load(open(\"/root/m/run.json\")); print(r)' | grep -q 'external'"
step "flopwatt measure passes exit status 3 through" "flopwatt measure --power none --no-store --out /root/m3 -- sh -c 'exit 3'; test \$? -eq 3"
step "flopwatt run gemm (one small shape)" "flopwatt run gemm --shapes 64,64,64 --power none --no-store --out /root/g"
step "python3: import flopwatt, one window at 20 W" \
  "python3 -c 'import flopwatt,time; m=flopwatt.Meter(power_log=\"/root/meter.log\", sysfs_root=\"/root/laptop\")
with m.window(\"w\") as w: time.sleep(0.3)
assert 0.2 < w.energy_j / 0.3 / 20 < 1.5, w.energy_j
print(w.energy_j)'"
step "man page and bash completion where their tools look" \
  "test -s /usr/share/man/man1/flopwatt.1.gz && test -s /usr/share/bash-completion/completions/flopwatt"
step "pkg-config and CMake files name the installed library" \
  "grep -q 'lflopwatt' /usr/lib/pkgconfig/flopwatt.pc && test -e /usr/lib/cmake/flopwatt/flopwatt-config.cmake && test -e \$(readlink -f /usr/lib/libflopwatt.so)"
step "apt-get remove ${names[*]} leaves nothing of flopwatt" \
  "apt-get remove -y -qq ${names[*]} >/dev/null && ! ls -d /usr/bin/flopwatt* /usr/lib/libflopwatt* /usr/include/flopwatt /usr/lib/cmake/flopwatt \
     /usr/lib/pkgconfig/flopwatt.pc /usr/lib/python3/dist-packages/flopwatt* /usr/share/flopwatt /usr/share/man/man1/flopwatt.1.gz 2>/dev/null"

echo "== $checks checks, $fails failed, $(($(date +%s) - t0)) s in all (Debian $(cat "$root/etc/debian_version"), minbase + the packages' Depends)"
((fails == 0))

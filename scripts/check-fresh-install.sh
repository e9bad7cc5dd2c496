#!/usr/bin/env bash
# The README's two commands on a machine that has nothing installed by hand:
# builds a bare Debian 12 root with `debootstrap --variant=minbase`, clones this
# checkout's HEAD into it, and runs `scripts/bootstrap.sh` and then
# `scripts/bootstrap.sh test` inside it (chroot), printing the time and exit
# status of each; then the Debian package of that build goes through
# scripts/check-deb.sh (apt into a second bare root). Too slow for every CI
# run; run it before a change to the package list, the build or bootstrap lands.
#
#   sudo scripts/check-fresh-install.sh [--keep] [DIR]
#     DIR     where the Debian root is built (default: a new temporary directory)
#     --keep  leave the root in place afterwards (it is removed by default)
# The Debian mirror is taken from this machine's own apt sources.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)

keep=0
dir=""
for a in "$@"; do
  case "$a" in
    --keep) keep=1 ;;
    -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
    -*) echo "check-fresh-install: unknown option $a (use --keep or a directory)" >&2; exit 2 ;;
    *) dir=$a ;;
  esac
done
source scripts/lib/debian-root.sh
root=${dir:-$(mktemp -d /var/tmp/flopwatt-fresh.XXXXXX)}
stamp() { date +%s; }
t0=$(stamp)
debian_root_make "$root" "$(( keep || ${#dir} ))"

echo "== clone of $(git -C "$repo" rev-parse --short HEAD) into the root (committed state only)"
git clone -q "$repo" "$root/root/flopwatt"

run_in_root() { debian_root_run "$root" "cd /root/flopwatt && $1"; }

summary=()
status=0
for cmd in "scripts/bootstrap.sh" "scripts/bootstrap.sh test"; do
  echo "== $cmd"
  t=$(stamp)
  set +e
  run_in_root "$cmd" 2>&1 | tee "$root.$(echo "$cmd" | tr ' /' '__').log" | tail -n 25
  rc=${PIPESTATUS[0]}
  set -e
  summary+=("$cmd: exit $rc in $(($(stamp) - t)) s")
  ((rc == 0)) || status=1
done

# The package that build makes, installed by apt in a second bare root.
if ((status == 0)); then
  echo "== cpack -G DEB, then scripts/check-deb.sh on the packages"
  t=$(stamp)
  set +e
  run_in_root "cd build && cpack -G DEB -B /root/deb >/dev/null" && scripts/check-deb.sh "$root"/root/deb/*.deb
  rc=$?
  set -e
  summary+=("cpack -G DEB + scripts/check-deb.sh: exit $rc in $(($(stamp) - t)) s")
  ((rc == 0)) || status=1
fi

echo "== summary (Debian $(cat "$root/etc/debian_version"), minbase + only what bootstrap installed)"
echo "whole check: $(($(stamp) - t0)) s"
printf '%s\n' "${summary[@]}"
exit $status

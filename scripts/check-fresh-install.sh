#!/usr/bin/env bash
# The README's two commands on a machine that has nothing installed by hand:
# builds a bare Debian 12 root with `debootstrap --variant=minbase`, clones this
# checkout's HEAD into it, and runs `scripts/bootstrap.sh` and then
# `scripts/bootstrap.sh test` inside it (chroot), printing the time and exit
# status of each. Too slow for every CI run; run it before a change to the
# package list, the build or bootstrap lands.
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
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    -*) echo "check-fresh-install: unknown option $a (use --keep or a directory)" >&2; exit 2 ;;
    *) dir=$a ;;
  esac
done
if [[ $(id -u) -ne 0 ]]; then
  echo "check-fresh-install: needs root (debootstrap and chroot); run it with sudo" >&2
  exit 2
fi
if ! command -v debootstrap >/dev/null; then
  echo "check-fresh-install: debootstrap is not installed: apt-get install debootstrap" >&2
  exit 2
fi

# The first Debian (not security) mirror this machine's apt uses for bookworm.
mirror=$(
  { cat /etc/apt/sources.list 2>/dev/null | awk '$1=="deb" && $3 ~ /^bookworm$/ {print $2; exit}'
    for f in /etc/apt/sources.list.d/*.sources; do
      [[ -f $f ]] || continue
      awk 'BEGIN{RS=""} /Suites:[^\n]*bookworm( |$|\n)/ && !/security/ {
             for (i = 1; i <= NF; i++) if ($i == "URIs:") {print $(i+1); exit}
           }' "$f"
    done; } | head -n 1)
if [[ -z $mirror ]]; then
  echo "check-fresh-install: no bookworm mirror in /etc/apt/sources.list or /etc/apt/sources.list.d/*.sources" >&2
  exit 2
fi

root=${dir:-$(mktemp -d /var/tmp/flopwatt-fresh.XXXXXX)}
mkdir -p "$root"
mounted=()
cleanup() {
  for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do umount -l "${mounted[i]}" 2>/dev/null || true; done
  if ((keep == 0)) && [[ -z $dir ]]; then rm -rf --one-file-system "$root"; fi
}
trap cleanup EXIT

stamp() { date +%s; }
t0=$(stamp)
echo "== debootstrap --variant=minbase bookworm $root ($mirror)"
debootstrap --variant=minbase bookworm "$root" "$mirror" >"$root.debootstrap.log" 2>&1 || {
  tail -n 20 "$root.debootstrap.log" >&2
  echo "check-fresh-install: debootstrap failed (log: $root.debootstrap.log)" >&2
  exit 1
}
echo "   $(($(stamp) - t0)) s"
# The same package sources as this machine (updates and security included).
if compgen -G "/etc/apt/sources.list.d/*.sources" >/dev/null; then
  rm -f "$root/etc/apt/sources.list"
  cp /etc/apt/sources.list.d/*.sources "$root/etc/apt/sources.list.d/"
fi
cp /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true

for m in proc sys dev dev/pts; do
  mkdir -p "$root/$m"
  mount --bind "/$m" "$root/$m"
  mounted+=("$root/$m")
done

echo "== clone of $(git -C "$repo" rev-parse --short HEAD) into the root (committed state only)"
git clone -q "$repo" "$root/root/flopwatt"

run_in_root() {
  chroot "$root" /usr/bin/env -i HOME=/root LANG=C.UTF-8 PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    bash -c "cd /root/flopwatt && $1"
}

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

echo "== summary (Debian $(cat "$root/etc/debian_version"), minbase + only what bootstrap installed)"
echo "whole check: $(($(stamp) - t0)) s"
printf '%s\n' "${summary[@]}"
exit $status

# Sourced by scripts/check-fresh-install.sh and scripts/check-deb.sh: a bare
# `debootstrap --variant=minbase` Debian 12 root with this machine's package
# sources, /proc, /sys and /dev bound in, and removed again on exit.
#   debian_root_make DIR KEEP   (KEEP=1 leaves DIR in place)
#   debian_root_run DIR CMD     (CMD run by bash as root inside, clean environment)

debian_root_mirror() {
  # The first Debian (not security) mirror this machine's apt uses for bookworm.
  { cat /etc/apt/sources.list 2>/dev/null | awk '$1=="deb" && $3 ~ /^bookworm$/ {print $2; exit}'
    for f in /etc/apt/sources.list.d/*.sources; do
      [[ -f $f ]] || continue
      awk 'BEGIN{RS=""} /Suites:[^\n]*bookworm( |$|\n)/ && !/security/ {
             for (i = 1; i <= NF; i++) if ($i == "URIs:") {print $(i+1); exit}
           }' "$f"
    done; } | head -n 1
}

debian_root_mounted=()
debian_root_cleanup() {
  local i
  for ((i = ${#debian_root_mounted[@]} - 1; i >= 0; i--)); do umount -l "${debian_root_mounted[i]}" 2>/dev/null || true; done
  if [[ ${debian_root_remove:-} ]]; then rm -rf --one-file-system "$debian_root_remove"; fi
}

debian_root_make() {
  local root=$1 keep=$2 who=${0##*/} mirror
  if [[ $(id -u) -ne 0 ]]; then
    echo "$who: needs root (debootstrap and chroot); run it with sudo" >&2
    exit 2
  fi
  if ! command -v debootstrap >/dev/null; then
    echo "$who: debootstrap is not installed: apt-get install debootstrap" >&2
    exit 2
  fi
  mirror=$(debian_root_mirror)
  if [[ -z $mirror ]]; then
    echo "$who: no bookworm mirror in /etc/apt/sources.list or /etc/apt/sources.list.d/*.sources" >&2
    exit 2
  fi
  mkdir -p "$root"
  ((keep)) || debian_root_remove=$root
  trap debian_root_cleanup EXIT
  echo "== debootstrap --variant=minbase bookworm $root ($mirror)"
  local t0=$(date +%s)
  debootstrap --variant=minbase bookworm "$root" "$mirror" >"$root.debootstrap.log" 2>&1 || {
    tail -n 20 "$root.debootstrap.log" >&2
    echo "$who: debootstrap failed (log: $root.debootstrap.log)" >&2
    exit 1
  }
  echo "   $(($(date +%s) - t0)) s"
  # The same package sources as this machine (updates and security included).
  if compgen -G "/etc/apt/sources.list.d/*.sources" >/dev/null; then
    rm -f "$root/etc/apt/sources.list"
    cp /etc/apt/sources.list.d/*.sources "$root/etc/apt/sources.list.d/"
  fi
  cp /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true
  local m
  for m in proc sys dev dev/pts; do
    mkdir -p "$root/$m"
    mount --bind "/$m" "$root/$m"
    debian_root_mounted+=("$root/$m")
  done
}

debian_root_run() {
  chroot "$1" /usr/bin/env -i HOME=/root LANG=C.UTF-8 PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    bash -c "$2"
}

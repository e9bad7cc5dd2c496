#!/usr/bin/env bash
# Lets a non-root user read RAPL energy counters for flopwatt.
#
# Since the PLATYPUS side channel (CVE-2020-8694) the kernel makes
# /sys/class/powercap/*/energy_uj readable by root only. This script creates a
# group (default: power), adds a user to it, installs a udev rule that gives the
# group read access to every energy_uj at boot and whenever the driver loads,
# and applies the same change right away. Granting it re-opens that (slow,
# statistical) side channel to the group's members: add only people you trust.
#
# Usage: sudo scripts/setup-permissions.sh [--dry-run] [--group NAME] [--user NAME]
#        sudo scripts/setup-permissions.sh --uninstall [--dry-run]
#        scripts/setup-permissions.sh --explain     (the perf and MSR alternatives)
# Installed, and beside build/flopwatt, it is flopwatt-setup-permissions.
set -euo pipefail

GROUP=power
TARGET_USER="${SUDO_USER:-}"
DRY_RUN=0
MODE=install
RULE=/etc/udev/rules.d/70-flopwatt-powercap.rules
SYSFS=/sys/class/powercap

ORIG_ARGS="$*"

usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; }

while [ $# -gt 0 ]; do
  case "$1" in
    --dry-run) DRY_RUN=1 ;;
    --group) GROUP="${2:?--group needs a name}"; shift ;;
    --user) TARGET_USER="${2:?--user needs a name}"; shift ;;
    --uninstall) MODE=uninstall ;;
    --explain) MODE=explain ;;
    -h|--help) usage; exit 0 ;;
    *) echo "setup-permissions.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done

if ! [[ "$GROUP" =~ ^[a-z_][a-z0-9_-]{0,31}$ ]]; then
  echo "setup-permissions.sh: --group '$GROUP' is not a valid group name" >&2
  exit 2
fi

explain() {
  local paranoid="unknown"
  [ -r /proc/sys/kernel/perf_event_paranoid ] && paranoid="$(cat /proc/sys/kernel/perf_event_paranoid)"
  # The binary to grant: beside this script (installed, build tree), the checkout's build/, else on PATH.
  local bin
  local here
  here="$(dirname "$(readlink -f "$0")")"
  bin="$here/flopwatt"
  [ -x "$bin" ] || bin="$here/../build/flopwatt"
  [ -x "$bin" ] && bin="$(readlink -f "$bin")" || bin="$(command -v flopwatt || echo /usr/local/bin/flopwatt)"
  cat <<TXT
Ways for a non-root user to get CPU energy readings (flopwatt tries all of them;
\`flopwatt sources\` shows which one works and why the others do not):

1. powercap sysfs (rapl-powercap:*): what this script sets up without --explain.
   energy_uj files become readable by group '$GROUP' through the udev rule
   $RULE.

2. perf power PMU (rapl-perf:*): system-wide events need
   kernel.perf_event_paranoid <= 0 (now: $paranoid) or the CAP_PERFMON capability:
     sudo sysctl kernel.perf_event_paranoid=0
     echo 'kernel.perf_event_paranoid = 0' | sudo tee /etc/sysctl.d/90-flopwatt-perf.conf
   or, for the flopwatt binary only:
     sudo setcap cap_perfmon+ep $bin
   (a lower paranoid level lets every user profile the whole system).

3. MSR device (rapl-msr:*): load the msr module, then reading /dev/cpu/*/msr needs
   read access to the node and CAP_SYS_RAWIO:
     sudo modprobe msr
     echo msr | sudo tee /etc/modules-load.d/msr.conf
     echo 'SUBSYSTEM=="msr", GROUP="$GROUP", MODE="0640"' | sudo tee /etc/udev/rules.d/70-flopwatt-msr.rules
     sudo setcap cap_sys_rawio+ep $bin
   Raw MSR access is far more powerful than reading energy: prefer 1 or 2.

After any group change, log out and in again (or run \`newgrp $GROUP\`).
TXT
}

run() {
  if [ "$DRY_RUN" = 1 ]; then
    echo "would run: $*"
  else
    echo "running:   $*"
    "$@"
  fi
}

write_file() {  # path content
  if [ "$DRY_RUN" = 1 ]; then
    echo "would write $1:"
    printf '%s\n' "$2" | sed 's/^/    /'
  else
    echo "writing $1"
    printf '%s\n' "$2" > "$1"
  fi
}

if [ "$MODE" = explain ]; then
  explain
  exit 0
fi

if [ "$DRY_RUN" = 0 ] && [ "$(id -u)" != 0 ]; then
  echo "setup-permissions.sh: changes system files, so it must run as root:" >&2
  echo "  sudo $0 $ORIG_ARGS   (or add --dry-run to see what it would do)" >&2
  exit 1
fi

zones=()
if [ -d "$SYSFS" ]; then
  for f in "$SYSFS"/*/energy_uj; do [ -e "$f" ] && zones+=("$f"); done
fi

if [ "$MODE" = uninstall ]; then
  if [ -e "$RULE" ]; then run rm -f "$RULE"; else echo "no rule at $RULE"; fi
  for f in "${zones[@]}"; do
    run chgrp root "$f"
    run chmod 0400 "$f"
  done
  command -v udevadm >/dev/null 2>&1 && run udevadm control --reload
  echo "done: energy_uj is root-only again (group '$GROUP' was left in place; remove it with groupdel $GROUP)"
  exit 0
fi

if getent group "$GROUP" >/dev/null; then
  echo "group '$GROUP' exists"
else
  run groupadd --system "$GROUP"
fi

if [ -n "$TARGET_USER" ]; then
  if ! id "$TARGET_USER" >/dev/null 2>&1; then
    echo "setup-permissions.sh: no user '$TARGET_USER'" >&2
    exit 2
  fi
  if id -nG "$TARGET_USER" | tr ' ' '\n' | grep -qx "$GROUP"; then
    echo "user '$TARGET_USER' is already in '$GROUP'"
  else
    run usermod -aG "$GROUP" "$TARGET_USER"
  fi
else
  echo "no user given (run through sudo, or pass --user NAME): add users with usermod -aG $GROUP NAME"
fi

# Attributes are not device nodes, so GROUP=/MODE= do not apply: change the file on each add.
write_file "$RULE" "# Installed by flopwatt scripts/setup-permissions.sh: group '$GROUP' may read RAPL energy counters.
SUBSYSTEM==\"powercap\", ACTION==\"add\", TEST==\"energy_uj\", RUN+=\"/bin/chgrp $GROUP /sys%p/energy_uj\", RUN+=\"/bin/chmod g+r /sys%p/energy_uj\""

if command -v udevadm >/dev/null 2>&1; then
  run udevadm control --reload
fi

if [ "${#zones[@]}" -eq 0 ]; then
  echo "no energy_uj files under $SYSFS now (no RAPL driver loaded, or a virtual machine); the rule applies when they appear"
else
  for f in "${zones[@]}"; do
    run chgrp "$GROUP" "$f"
    run chmod g+r "$f"
  done
fi

echo
echo "done. Members of '$GROUP' can read energy_uj after logging in again; check with: build/flopwatt sources"
echo "Other ways (perf, MSR): $0 --explain"

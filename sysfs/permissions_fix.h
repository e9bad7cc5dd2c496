// The commands a "permission denied" fix line names, as they exist where the
// program runs: the setup script installed beside flopwatt
// (flopwatt-setup-permissions, bin/ of the prefix or the build tree), and the
// running executable for setcap. A message never points at a checkout's
// scripts/ or build/ that an installed machine does not have.
#pragma once
#include <string>

namespace flopwatt::sysfs {

// The installed name of scripts/setup-permissions.sh.
inline constexpr const char* kSetupPermissions = "flopwatt-setup-permissions";

// The setup command to type: its full path when it sits beside the running
// executable (a build tree or a prefix outside PATH), else the bare name.
std::string setup_permissions_command();

// The running executable's path (/proc/self/exe), for `setcap ... <path>`; the
// bare name "flopwatt" when it cannot be read.
std::string self_executable();

}  // namespace flopwatt::sysfs

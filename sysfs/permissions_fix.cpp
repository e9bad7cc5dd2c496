#include "sysfs/permissions_fix.h"

#include <unistd.h>

#include <filesystem>
#include <system_error>

namespace flopwatt::sysfs {

std::string self_executable() {
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec || exe.empty() ? std::string("flopwatt") : exe.string();
}

std::string setup_permissions_command() {
  const std::filesystem::path exe = self_executable();
  if (exe.has_parent_path()) {  // not the bare fallback name
    const auto beside = exe.parent_path() / kSetupPermissions;
    if (::access(beside.c_str(), X_OK) == 0) return beside.string();
  }
  return kSetupPermissions;
}

}  // namespace flopwatt::sysfs

#include "harness/run/run_options.h"

#include <cstdlib>

namespace flopwatt {

std::string resolve_sysfs_root(const std::string& flag_value) {
  if (!flag_value.empty()) return flag_value;
  const char* env = std::getenv("FLOPWATT_SYSFS_ROOT");
  return env && *env ? env : "/";
}

}  // namespace flopwatt

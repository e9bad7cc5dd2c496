// cpu0's cache directories in a fixture tree, laid out as the kernel does
// (Documentation/ABI/testing/sysfs-devices-system-cpu), for the tests of
// everything that sizes work by the caches below a root.
#pragma once
#include <string>

#include "tests/power/fixture_tree.h"

namespace flopwatt::sysfs::testing {

// An empty shared_cpu_list leaves that file out.
inline void write_cpu0_cache(const power::testing::FixtureTree& t, const std::string& index, const std::string& level,
                             const std::string& type, const std::string& size, const std::string& shared_cpu_list = "") {
  const std::string dir = "sys/devices/system/cpu/cpu0/cache/" + index + "/";
  t.write(dir + "level", level + "\n");
  t.write(dir + "type", type + "\n");
  t.write(dir + "size", size + "\n");
  if (!shared_cpu_list.empty()) t.write(dir + "shared_cpu_list", shared_cpu_list + "\n");
}

}  // namespace flopwatt::sysfs::testing

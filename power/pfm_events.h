// Event-name resolution through libpfm4 (pfm_get_os_event_encoding with
// PFM_OS_PERF_EVENT). libpfm4 reads the real /sys and knows only CPU models in
// its tables, so callers fall back to the kernel's sysfs descriptions.
#pragma once
#include <cstdint>
#include <string>

namespace flopwatt::power {

struct PfmEncoding {
  bool ok = false;
  int type = -1;
  std::uint64_t config = 0;
  std::string name;     // the libpfm4 event name tried (RAPL_ENERGY_PKG)
  std::string problem;  // why it failed
};

// sysfs event name (energy-pkg) -> perf type and config via libpfm4.
PfmEncoding pfm_encode_power_event(const std::string& sysfs_event);

}  // namespace flopwatt::power

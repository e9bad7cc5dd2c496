#include "power/pfm_events.h"

#include <perfmon/pfmlib_perf_event.h>

#include <cstring>
#include <mutex>

namespace flopwatt::power {

namespace {

std::string pfm_name_for(const std::string& sysfs_event) {
  if (sysfs_event == "energy-pkg") return "RAPL_ENERGY_PKG";
  if (sysfs_event == "energy-cores") return "RAPL_ENERGY_CORES";
  if (sysfs_event == "energy-gpu") return "RAPL_ENERGY_GPU";
  if (sysfs_event == "energy-ram") return "RAPL_ENERGY_DRAM";
  if (sysfs_event == "energy-psys") return "RAPL_ENERGY_PSYS";
  return {};
}

std::mutex& pfm_mutex() {
  static std::mutex m;
  return m;
}

}  // namespace

PfmEncoding pfm_encode_power_event(const std::string& sysfs_event) {
  PfmEncoding r;
  r.name = pfm_name_for(sysfs_event);
  if (r.name.empty()) {
    r.problem = "libpfm4 has no name for " + sysfs_event;
    return r;
  }
  std::lock_guard<std::mutex> g(pfm_mutex());  // libpfm4 is not thread-safe during init
  static const int init = pfm_initialize();
  if (init != PFM_SUCCESS) {
    r.problem = std::string("pfm_initialize: ") + pfm_strerror(init);
    return r;
  }
  perf_event_attr attr;
  std::memset(&attr, 0, sizeof attr);
  pfm_perf_encode_arg_t arg;
  std::memset(&arg, 0, sizeof arg);
  arg.attr = &attr;
  arg.size = sizeof arg;
  const int rc = pfm_get_os_event_encoding(r.name.c_str(), PFM_PLM0 | PFM_PLM3, PFM_OS_PERF_EVENT, &arg);
  if (rc != PFM_SUCCESS) {
    r.problem = "libpfm4 does not know " + r.name + " on this CPU (" + pfm_strerror(rc) + ")";
    return r;
  }
  r.ok = true;
  r.type = int(attr.type);
  r.config = attr.config;
  return r;
}

}  // namespace flopwatt::power

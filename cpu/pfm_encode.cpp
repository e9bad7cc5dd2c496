// libpfm4 turns an event string into perf_event_attr fields for this CPU's PMUs.
#include <perfmon/pfmlib_perf_event.h>

#include <cstdlib>
#include <cstring>
#include <mutex>

#include "cpu/perf_counters.h"

namespace flopwatt::cpu {

EventEncoding encode_event(const std::string& event) {
  EventEncoding r;
  // pfm_initialize and the encoder share library state: one caller at a time.
  static std::mutex m;
  std::lock_guard<std::mutex> g(m);
  static const int init = pfm_initialize();
  if (init != PFM_SUCCESS) {
    r.problem = std::string("libpfm4 could not initialise: ") + pfm_strerror(init);
    return r;
  }
  perf_event_attr attr;
  std::memset(&attr, 0, sizeof attr);
  char* fstr = nullptr;
  pfm_perf_encode_arg_t arg;
  std::memset(&arg, 0, sizeof arg);
  arg.attr = &attr;
  arg.fstr = &fstr;
  arg.size = sizeof arg;
  const int rc = pfm_get_os_event_encoding(event.c_str(), PFM_PLM0 | PFM_PLM3, PFM_OS_PERF_EVENT, &arg);
  if (rc != PFM_SUCCESS) {
    r.problem = "libpfm4 does not know '" + event + "' on this machine (" + pfm_strerror(rc) + ")";
    return r;
  }
  r.ok = true;
  r.type = attr.type;
  r.config = attr.config;
  r.config1 = attr.config1;
  r.config2 = attr.config2;
  r.fully_qualified = fstr ? fstr : event;
  std::free(fstr);
  return r;
}

}  // namespace flopwatt::cpu

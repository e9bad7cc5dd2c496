// Built without libpfm4 (FLOPWATT_WITH_PFM=OFF, or AUTO without libpfm4-dev):
// no event string can be encoded, and each counter says how to get them.
#include "cpu/perf_counters.h"

namespace flopwatt::cpu {

EventEncoding encode_event(const std::string& event) {
  EventEncoding r;
  r.problem = "flopwatt was built without libpfm4, so '" + event +
              "' cannot be encoded; fix: apt-get install libpfm4-dev, then cmake -DFLOPWATT_WITH_PFM=ON and rebuild";
  return r;
}

}  // namespace flopwatt::cpu

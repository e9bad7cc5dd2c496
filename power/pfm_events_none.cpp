// Built when libpfm4 is absent: names come from the kernel's sysfs descriptions only.
#include "power/pfm_events.h"

namespace flopwatt::power {

PfmEncoding pfm_encode_power_event(const std::string& sysfs_event) {
  PfmEncoding r;
  r.problem = "flopwatt was built without libpfm4 (Debian: libpfm4-dev)";
  return r;
}

}  // namespace flopwatt::power

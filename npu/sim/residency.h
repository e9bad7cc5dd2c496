// Which GEMM design is loaded on the modelled array, and what switching to
// another one costs. Two mechanisms:
//   load_pdi: every design lives in one hardware context (one xclbin or full
//             ELF holding all PDIs); a different design is an in-sequence
//             load_pdi;
//   xclbin:   every design is its own xclbin in its own hardware context; up
//             to hwctx_limit stay resident (least recently used is evicted);
//             a resident but inactive context is switched to at load_pdi
//             cost, a missing one costs a new context and xclbin load.
// The very first design always costs a context and xclbin load.
#pragma once
#include <list>
#include <string>

#include "npu/plan/device.h"

namespace flopwatt::npu {

enum class Reconfig { LoadPdi, Xclbin };
const char* to_string(Reconfig r);

class DesignResidency {
 public:
  DesignResidency(const DeviceDesc& dev, Reconfig how) : dev_(dev), how_(how) {}
  // Makes `key` the active design; returns the reconfiguration seconds.
  double switch_to(const std::string& key);
  const std::string& active() const { return active_; }
  int switches() const { return switches_; }
  int loads() const { return loads_; }

 private:
  DeviceDesc dev_;
  Reconfig how_;
  std::string active_;
  std::list<std::string> resident_;  // most recent first
  int switches_ = 0, loads_ = 0;
};

}  // namespace flopwatt::npu

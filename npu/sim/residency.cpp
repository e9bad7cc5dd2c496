#include "npu/sim/residency.h"

#include <algorithm>

namespace flopwatt::npu {

const char* to_string(Reconfig r) { return r == Reconfig::LoadPdi ? "load_pdi" : "xclbin"; }

double DesignResidency::switch_to(const std::string& key) {
  if (key == active_) return 0.0;
  double cost = 0;
  auto it = std::find(resident_.begin(), resident_.end(), key);
  if (resident_.empty()) {
    cost = dev_.reconfig_xclbin_s;
    ++loads_;
  } else if (how_ == Reconfig::LoadPdi) {
    cost = dev_.reconfig_load_pdi_s;
    resident_.clear();  // one context: only the active design is configured
    it = resident_.end();
  } else if (it != resident_.end()) {
    cost = dev_.reconfig_load_pdi_s;
  } else {
    cost = dev_.reconfig_xclbin_s;
    ++loads_;
    if (int(resident_.size()) >= dev_.hwctx_limit) resident_.pop_back();
  }
  if (it != resident_.end()) resident_.erase(it);
  resident_.push_front(key);
  if (!active_.empty()) ++switches_;
  active_ = key;
  return cost;
}

}  // namespace flopwatt::npu

#include "npu/backends.h"

#include "npu/sim/sim_backend.h"
#include "npu/xdna/xdna_backend.h"

namespace flopwatt::npu {

std::vector<std::unique_ptr<Backend>> make_backends() {
  std::vector<std::unique_ptr<Backend>> v;
  v.push_back(std::make_unique<xdna::XdnaBackend>());  // root: $FLOPWATT_SYSFS_ROOT or "/"
  std::string ignored;
  const SimOptions o = sim_options_from_env(&ignored);
  for (const char* dev : {"phoenix", "strix"}) {
    auto b = std::make_unique<SimBackend>(dev, o);
    b->set_ignored_settings(ignored);
    v.push_back(std::move(b));
  }
  return v;
}

}  // namespace flopwatt::npu

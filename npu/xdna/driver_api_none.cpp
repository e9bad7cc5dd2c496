// Built without libdrm (FLOPWATT_WITH_NPU_DEVICE=OFF, or AUTO without libdrm-dev):
// no node can be opened, and discovery says why and how to get device access.
#include <cerrno>

#include "npu/xdna/driver_api.h"

namespace flopwatt::npu::xdna {

std::unique_ptr<DriverApi> open_drm_node(const std::string&, int* errno_out) {
  if (errno_out) *errno_out = ENOSYS;
  return nullptr;
}

std::string drm_support_missing() {
  return "flopwatt was built without the NPU device backend (libdrm and libelf)";
}

}  // namespace flopwatt::npu::xdna

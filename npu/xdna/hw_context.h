// A hardware context of the amdxdna driver: a partition of the array with
// its completion timeline (syncobj). Created with the design's operations per
// cycle and tile count, then told which PDI each compute unit runs
// (CONFIG_HWCTX with CONFIG_CU); destroyed on scope exit together with its
// syncobj handle, which the driver leaves to user space (aie2_ctx.c:
// aie2_ctx_syncobj_destroy drops only the driver's reference).
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "npu/xdna/buffer.h"
#include "npu/xdna/driver_api.h"
#include "npu/xdna/uapi.h"
#include "npu/xdna/xclbin.h"

namespace flopwatt::npu::xdna {

class HwContext {
 public:
  // `build` decides what the QoS words past mainline's six mean; the object
  // passed is always the out-of-tree size, so neither driver reads past it.
  HwContext(DriverApi& api, std::uint32_t max_opc, std::uint32_t num_tiles,
            DriverBuild build);  // throws std::runtime_error
  ~HwContext();
  HwContext(const HwContext&) = delete;
  HwContext& operator=(const HwContext&) = delete;

  // cus[i] = {DEV buffer handle holding the PDI, function}.
  void configure_cus(const std::vector<CuConfig>& cus);
  std::uint32_t handle() const { return handle_; }
  std::uint32_t syncobj() const { return syncobj_; }

 private:
  DriverApi& api_;
  std::uint32_t handle_ = 0, syncobj_ = 0;
};

// The build of the driver behind a node, from what drmGetVersion reported
// (mainline when unknown).
DriverBuild driver_build(const std::optional<DrmVersionInfo>& version);
// The QoS argument of CREATE_HWCTX for that build.
QosInfoOutOfTree qos_for(DriverBuild build);

// The design's PDIs in DEV buffers, one per distinct PDI, and the CONFIG_CU
// entries pointing each CU (in IP_LAYOUT order) at its own (cu_pdis()).
struct CuPdis {
  std::vector<std::unique_ptr<Bo>> bos;
  std::vector<CuConfig> cus;
};
CuPdis load_cu_pdis(DriverApi& api, DevHeap& heap, const Xclbin& x);

// The CONFIG_CU parameter buffer: header then entries, as the driver reads it.
std::vector<std::uint8_t> cu_config_param(const std::vector<CuConfig>& cus);

}  // namespace flopwatt::npu::xdna

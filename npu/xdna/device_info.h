// What the amdxdna driver reports through DRM_IOCTL_AMDXDNA_GET_INFO: AIE
// array metadata, clocks, firmware version, sensors and hardware contexts.
// Each query keeps either its value or why it failed; current drivers do not
// implement the power sensor on Phoenix and Strix (amd/xdna-driver#713), and
// that is reported as "not supported", not as an error.
#pragma once
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "npu/xdna/driver_api.h"
#include "npu/xdna/uapi.h"

namespace flopwatt::npu::xdna {

template <class T>
struct Query {
  std::optional<T> value;
  std::string error;  // empty when value is set
};

struct DeviceInfo {
  std::optional<DrmVersionInfo> version;
  Query<AieMetadata> aie;
  Query<ClockMetadata> clocks;
  Query<FirmwareVersion> firmware;
  Query<std::vector<Sensor>> sensors;
  Query<std::vector<HwContextInfo>> contexts;
  Query<PowerMode> power_mode;
  Query<ResourceInfo> resources;
};

DeviceInfo query_device(DriverApi& api);
// Human-readable lines for `flopwatt npu info`.
std::vector<std::string> describe(const DeviceInfo& info);
// What a run's context records of the driver's report: power mode, clocks,
// firmware, the context limit; a query the driver refused says why.
std::vector<std::pair<std::string, std::string>> device_notes(const DeviceInfo& info);
// How many hardware contexts the device holds: the driver's npu_task_max
// (QUERY_RESOURCE_INFO), else the firmware limit of the generation's
// register table (amd/xdna-driver npu1_regs.c: hwctx_limit 6; npu4_regs.c: 16).
std::uint32_t context_limit(const DeviceInfo& info, const std::string& generation);
// "npu1" for a 5-column array, "npu4" for 8 columns (what the manifest's device names).
std::string generation_from(const AieMetadata& m);

}  // namespace flopwatt::npu::xdna

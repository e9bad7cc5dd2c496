// Finding an amdxdna device under a filesystem root (default "/", or a
// fixture tree in tests): /dev/accel/accel* nodes opened read-write and named
// by libdrm's drmGetVersion, plus the PCI functions of AMD NPUs and their
// firmware files, so a missing device is explained exactly: no NPU, driver
// not loaded, firmware missing, permission denied, or another driver.
// Never throws.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "npu/xdna/driver_api.h"

namespace flopwatt::npu::xdna {

struct NodeProbe {
  std::string path;
  bool opened = false;
  std::optional<DrmVersionInfo> version;
  std::string sysfs_driver;  // from sys/class/accel/<node>/device/driver, when present
  std::string problem;       // empty when this is a usable amdxdna node
  std::string fix;
};

struct NpuPciFunction {
  std::string address;     // "0000:c5:00.1"
  std::uint16_t device = 0;
  std::uint8_t revision = 0;
  std::string generation;  // "npu1", "npu2", "npu4", "npu5", "npu6" or "unknown"
  std::string driver;      // bound driver, empty when none
  std::string firmware_dir;
  bool firmware_present = false;
};

struct XdnaDiscovery {
  std::string root;
  std::vector<NodeProbe> nodes;
  std::vector<NpuPciFunction> pci;
  std::string node;    // the usable amdxdna node, empty when none
  std::string reason;  // why there is none
  std::string fix;
  bool ok() const { return !node.empty(); }
};

// How discovery opens a node; tests substitute fakes.
using NodeOpener = std::function<std::unique_ptr<DriverApi>(const std::string& path, int* errno_out)>;

XdnaDiscovery discover_xdna(const std::string& root, const NodeOpener& open = open_drm_node);
// The root to probe: $FLOPWATT_SYSFS_ROOT or "/".
std::string default_root();
// The firmware directory name the driver loads for a PCI function, e.g. "17f0_10".
std::string firmware_dir_name(std::uint16_t device, std::uint8_t revision);

}  // namespace flopwatt::npu::xdna

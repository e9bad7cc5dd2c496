#include "npu/xdna/discovery.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

#include "npu/xdna/uapi.h"
#include "sysfs/files.h"

namespace flopwatt::npu::xdna {

namespace {

std::string read_trimmed(const std::string& p) { return sysfs::read_trimmed(p).value_or(""); }

std::string under(const std::string& root, const char* abs) { return sysfs::under_root(root, abs); }

// PCI device ids of the XDNA NPUs the amdxdna driver binds (LX amdxdna_pci_drv.c).
std::string generation_of(std::uint16_t device, std::uint8_t rev) {
  if (device == 0x1502) return "npu1";
  if (device == 0x17f0) {
    switch (rev) {
      case 0x00: return "npu2";
      case 0x10: return "npu4";
      case 0x11: return "npu5";
      case 0x20: return "npu6";
    }
  }
  return "unknown";
}

std::vector<NpuPciFunction> scan_pci(const std::string& root) {
  std::vector<NpuPciFunction> v;
  const std::string devices = under(root, "/sys/bus/pci/devices");
  for (const auto& name : sysfs::list_dir(devices)) {
    const std::string d = sysfs::join_path(devices, name);
    if (sysfs::parse_hex_0x(read_trimmed(sysfs::join_path(d, "vendor"))) != 0x1022u) continue;
    const auto id = sysfs::parse_hex_0x(read_trimmed(sysfs::join_path(d, "device")));
    if (id != 0x1502u && id != 0x17f0u) continue;
    NpuPciFunction f;
    f.address = name;
    f.device = std::uint16_t(*id);
    f.revision = std::uint8_t(sysfs::parse_hex_0x(read_trimmed(sysfs::join_path(d, "revision"))).value_or(0));
    f.generation = generation_of(f.device, f.revision);
    f.driver = sysfs::link_target_name(sysfs::join_path(d, "driver")).value_or("");
    f.firmware_dir = "/lib/firmware/amdnpu/" + firmware_dir_name(f.device, f.revision);
    for (const auto& fw : sysfs::list_dir(under(root, f.firmware_dir.c_str())))
      if (fw.rfind("npu", 0) == 0) f.firmware_present = true;
    v.push_back(f);
  }
  std::sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.address < b.address; });
  return v;
}

}  // namespace

std::string firmware_dir_name(std::uint16_t device, std::uint8_t revision) {
  return fmt::format("{:04x}_{:02x}", device, revision);
}

std::string default_root() {
  const char* e = std::getenv("FLOPWATT_SYSFS_ROOT");
  return e && *e ? e : "/";
}

XdnaDiscovery discover_xdna(const std::string& root, const NodeOpener& open) {
  XdnaDiscovery r;
  r.root = root;
  r.pci = scan_pci(root);
  const std::string accel = under(root, "/dev/accel");
  for (const auto& name : sysfs::list_dir(accel)) {
    if (name.rfind("accel", 0) != 0) continue;
    NodeProbe n;
    n.path = sysfs::join_path(accel, name);
    n.sysfs_driver =
        sysfs::link_target_name(under(root, ("/sys/class/accel/" + name + "/device/driver").c_str())).value_or("");
    int err = 0;
    auto api = open(n.path, &err);
    if (!api) {
      if (err == EACCES || err == EPERM) {
        n.problem = fmt::format("permission denied opening {} read-write", n.path);
        n.fix = "add your user to the group owning the node (usually 'render'), then log in again";
      } else {
        n.problem = fmt::format("cannot open {}: {}", n.path, std::strerror(err));
        n.fix = "check that the node belongs to a loaded driver (ls -l /dev/accel; dmesg | grep -i xdna)";
      }
    } else {
      n.opened = true;
      int verr = 0;
      n.version = api->version(&verr);
      if (!n.version) {
        n.problem = fmt::format("{} is not a DRM device (drmGetVersion failed: {})", n.path, std::strerror(verr));
        n.fix = "point --sysfs-root at the real root, or check the node";
      } else if (n.version->name != kDrmDriverName) {
        n.problem = fmt::format("{} is driven by '{}', not amdxdna", n.path, n.version->name);
        n.fix = "this accelerator is not an AMD XDNA NPU";
      }
    }
    if (n.problem.empty() && r.node.empty()) r.node = n.path;
    r.nodes.push_back(std::move(n));
  }
  if (r.ok()) return r;

  // No usable node: say why, most specific first.
  if (const std::string missing = drm_support_missing(); !missing.empty()) {
    r.reason = missing;
    r.fix = "apt-get install libdrm-dev libelf-dev, then cmake -DFLOPWATT_WITH_NPU_DEVICE=ON and rebuild";
    return r;
  }
  for (const auto& n : r.nodes)
    if (!n.opened) {
      r.reason = n.problem;
      r.fix = n.fix;
      return r;
    }
  if (!r.pci.empty()) {
    const auto& f = r.pci.front();
    const std::string what = fmt::format("AMD NPU {} (PCI 1022:{:04x} rev {:02x}) at {}", f.generation, f.device,
                                         f.revision, f.address);
    if (f.driver.empty()) {
      r.reason = what + " has no driver bound";
      r.fix = "load the amdxdna driver (Linux >= 6.14 with CONFIG_DRM_ACCEL_AMDXDNA, or amd/xdna-driver): sudo modprobe amdxdna";
    } else if (f.driver != "amdxdna") {
      r.reason = what + " is bound to '" + f.driver + "', not amdxdna";
      r.fix = "unbind it and load amdxdna";
    } else if (!f.firmware_present) {
      r.reason = what + " is bound to amdxdna but its firmware is missing (" + f.firmware_dir + "/npu.sbin)";
      r.fix = "install the NPU firmware (linux-firmware >= 20241017 or amd/xdna-driver's firmware), then reload amdxdna";
    } else {
      r.reason = what + " is bound to amdxdna but exposes no /dev/accel node";
      r.fix = "check dmesg for amdxdna errors (firmware load, IOMMU/SVA); the driver may have failed to probe";
    }
    return r;
  }
  if (!r.nodes.empty()) {
    r.reason = r.nodes.front().problem;
    r.fix = r.nodes.front().fix;
    return r;
  }
  r.reason = fmt::format("no amdxdna device: no {} node and no AMD NPU PCI function (1022:1502 or 1022:17f0) under {}",
                         under(root, "/dev/accel") + "/accel*", root);
  r.fix = "run on a Ryzen AI (Phoenix, Hawk Point, Strix, Krackan) machine; the simulated NPU backends npu:sim-* work anywhere";
  return r;
}

}  // namespace flopwatt::npu::xdna

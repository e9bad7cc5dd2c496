#include "power/hwmon.h"

#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <regex>

#include "power/clock.h"
#include "power/counter_unwrap.h"
#include "power/source_base.h"
#include "power/sysfs.h"

namespace flopwatt::power {

// Implemented in hwmon_sensors.cpp (or its twin when built without libsensors).
bool sensors_read_value(const void* chip_handle, int subfeature, double& value);

namespace {

constexpr double kPowerNominalS = 0.1;    // SMU/firmware power readings refresh in the 1-100 ms range
constexpr double kEnergyNominalS = 0.001; // amd_energy accumulates per millisecond
// No client or single-socket part draws 10 kW; a power reading above it (a
// driver returning INT64_MAX uW) is garbage, and so is an energy step
// implying it.
constexpr double kMaxHwmonW = 10000;

class HwmonSource final : public SourceBase {
 public:
  HwmonSource(std::string id, std::string domain, HwmonChannel c, double nominal)
      : SourceBase(std::move(id), std::move(domain),
                   c.type == HwmonChannel::Type::Energy ? Kind::Counter : Kind::Gauge, nominal),
        c_(std::move(c)) {}

  std::optional<Sample> read() override {
    const std::int64_t a = monotonic_ns();
    int err = 0;
    auto v = read_hwmon_channel(c_, &err);
    const std::int64_t t = midpoint_ns(a, monotonic_ns());
    if (!v) {
      set_error((c_.chip_handle ? "libsensors " + c_.chip + "/" + c_.label : c_.path) + ": " + errno_text(err));
      return std::nullopt;
    }
    if (kind() == Kind::Gauge && !(std::fabs(*v) <= kMaxHwmonW)) {
      set_error(c_.path + ": implausible " + std::to_string(*v) + " W (> 10 kW): not a reading");
      return std::nullopt;
    }
    if (kind() == Kind::Counter && !(*v >= 0 && *v < 9.0e12)) {  // uJ as int64 and back
      set_error(c_.path + ": energy " + std::to_string(*v) + " J out of range: not a reading");
      return std::nullopt;
    }
    tracker_.observe(*v, t);
    if (kind() == Kind::Gauge) {
      clear_error();
      return Sample{t, *v};
    }
    // energy*_input is a driver-side accumulator; its width is not published,
    // so a decrease is a restart, never negative energy. Micro-joule steps;
    // a step above the bound is a restart too (a gap).
    const double total = unwrap_.update(std::uint64_t(std::llround(*v * 1e6)), t);
    resets_.store(unwrap_.restarts(), std::memory_order_relaxed);
    if (unwrap_.last_was_restart()) {
      set_error(c_.path + ": counter went back or jumped (restart): a gap");
      return std::nullopt;
    }
    clear_error();
    return Sample{t, total * 1e-6};
  }

 private:
  HwmonChannel c_;
  CounterUnwrap unwrap_{0, kMaxHwmonW * 1e6};
  std::atomic<std::uint64_t> resets_{0};

 public:
  std::uint64_t resets() const override { return resets_.load(std::memory_order_relaxed); }
};

std::string chip_attr_dir(const std::string& hwmon_dir) {
  // Old drivers keep their attributes under device/.
  if (path_exists(join_path(hwmon_dir, "name"))) return hwmon_dir;
  const std::string dev = join_path(hwmon_dir, "device");
  return path_exists(join_path(dev, "name")) ? dev : hwmon_dir;
}

}  // namespace

std::vector<HwmonChannel> scan_hwmon_sysfs(const std::string& root) {
  std::vector<HwmonChannel> out;
  const std::string base = under_root(root, "/sys/class/hwmon");
  std::map<std::string, int> seen;
  static const std::regex re("^(power|energy|temp)([0-9]+)_(input|average)$");
  for (const auto& n : list_dir(base)) {
    const std::string hw = join_path(base, n);
    const std::string dir = chip_attr_dir(hw);
    auto name = read_trimmed(join_path(dir, "name"));
    if (!name || name->empty()) continue;
    const int k = seen[*name]++;
    const std::string chip = k == 0 ? *name : *name + "-" + std::to_string(k);
    double interval = 0;
    if (auto ui = read_int(join_path(dir, "update_interval")); ui && *ui > 0) interval = double(*ui) * 1e-3;
    std::map<std::string, HwmonChannel> by_key;  // power1 -> channel (input preferred over average)
    for (const auto& f : list_dir(dir)) {
      std::smatch m;
      if (!std::regex_match(f, m, re)) continue;
      const std::string kind = m[1], idx = m[2], what = m[3];
      if (kind != "power" && what == "average") continue;
      HwmonChannel c;
      c.chip = chip;
      c.hwmon_dir = hw;
      c.type = kind == "power" ? HwmonChannel::Type::Power
               : kind == "energy" ? HwmonChannel::Type::Energy : HwmonChannel::Type::Temp;
      c.scale = kind == "temp" ? 1e-3 : 1e-6;
      c.path = join_path(dir, f);
      c.update_interval_s = interval;
      c.label = read_trimmed(join_path(dir, kind + idx + "_label")).value_or(kind + idx);
      const std::string key = kind + idx;
      c.channel = key;
      auto it = by_key.find(key);
      // Instantaneous input integrates better than the driver's own average.
      if (it == by_key.end() || what == "input") by_key[key] = c;
    }
    for (auto& [key, c] : by_key) out.push_back(std::move(c));
  }
  return out;
}

std::optional<double> read_hwmon_channel(const HwmonChannel& c, int* err) {
  if (c.chip_handle) {
    double v = 0;
    if (sensors_read_value(c.chip_handle, c.subfeature, v)) return v;
    if (err) *err = EIO;
    return std::nullopt;
  }
  std::int64_t raw = 0;
  int e = 0;
  if (!read_i64_file(c.path.c_str(), raw, e)) {
    if (err) *err = e;
    return std::nullopt;
  }
  return double(raw) * c.scale;
}

const char* to_string(HwmonDeviceClass c) {
  switch (c) {
    case HwmonDeviceClass::ApuGpu: return "APU";
    case HwmonDeviceClass::DiscreteGpu: return "discrete GPU";
    case HwmonDeviceClass::Cpu: return "CPU";
    case HwmonDeviceClass::Storage: return "storage";
    case HwmonDeviceClass::Platform: return "platform sensor";
    default: return "unknown device";
  }
}

namespace {

std::string base_chip(const HwmonChannel& c) { return c.chip.substr(0, c.chip.find('-')); }

// amdgpu on an APU or on a board of its own, from what the driver itself
// shows. gpu_metrics starts with metrics_table_header (structure_size u16,
// format_revision u8, content_revision u8; drivers/gpu/drm/amd/include/
// kgd_pp_interface.h): format 1 is a discrete GPU's table, 2 the APU table,
// 3 the newer APU one (gpu_metrics_v3_0, Strix Point and Krackan Point).
// Without it, the hwmon attributes amdgpu hides on APUs
// (drivers/gpu/drm/amd/pm/amdgpu_pm.c, hwmon_attributes_visible: "Skip fan
// attributes on APU", "no mclk on APUs", temp2/temp3 "only SOC15 dGPUs") or
// shows only there ("only APUs ... have vddnb", in1).
HwmonDevice amdgpu_device(const HwmonChannel& c) {
  const std::string dir = c.hwmon_dir;
  if (auto t = read_text(join_path(join_path(dir, "device"), "gpu_metrics")); t.ok && t.text.size() >= 4) {
    const int format = static_cast<unsigned char>(t.text[2]);
    if (format == 2 || format == 3)
      return {HwmonDeviceClass::ApuGpu, "gpu_metrics format " + std::to_string(format) + " (the APU table)"};
    if (format == 1) return {HwmonDeviceClass::DiscreteGpu, "gpu_metrics format 1 (the discrete GPU table)"};
  }
  if (read_trimmed(join_path(dir, "in1_label")).value_or("") == "vddnb")
    return {HwmonDeviceClass::ApuGpu, "in1 vddnb (shown on APUs only)"};
  for (const char* f : {"fan1_input", "pwm1", "freq2_input", "temp2_input", "temp3_input"})
    if (path_exists(join_path(dir, f)))
      return {HwmonDeviceClass::DiscreteGpu, std::string(f) + " (hidden on APUs)"};
  // Nothing tells: taken as a board of its own, so its power never stands for the CPU's.
  return {HwmonDeviceClass::DiscreteGpu, "no APU sign (gpu_metrics, in1 vddnb): taken as a discrete GPU"};
}

// The bus of the chip's parent device: "pci", "platform", "i2c", "acpi".
std::string device_bus(const std::string& hwmon_dir) {
  return sysfs::link_target_name(join_path(join_path(hwmon_dir, "device"), "subsystem")).value_or("");
}

}  // namespace

HwmonDevice hwmon_device_class(const HwmonChannel& c) {
  const std::string chip = base_chip(c);
  if (chip == "amdgpu") return amdgpu_device(c);
  // Drivers registered only for discrete boards: i915 and xe register their
  // hwmon for discrete GPUs only (drivers/gpu/drm/i915/i915_hwmon.c,
  // drivers/gpu/drm/xe/xe_hwmon.c: "hwmon is available only for dGfx");
  // nouveau (drivers/gpu/drm/nouveau/nouveau_hwmon.c) and radeon drive boards
  // whose power is the board's.
  if (chip == "i915" || chip == "xe" || chip == "nouveau" || chip == "radeon")
    return {HwmonDeviceClass::DiscreteGpu, chip + " registers hwmon for a graphics board"};
  // amd_energy (Documentation/hwmon/amd_energy.rst, removed from the kernel
  // since) and its out-of-tree successor zenergy read the RAPL MSRs; zenpower
  // the SMU's core and SoC rails.
  if (chip == "amd_energy" || chip == "zenergy" || chip == "zenpower")
    return {HwmonDeviceClass::Cpu, chip + " reads the CPU's own energy or rails"};
  // drivers/nvme/host/hwmon.c, drivers/hwmon/drivetemp.c: a drive's sensors.
  if (chip == "nvme" || chip == "drivetemp") return {HwmonDeviceClass::Storage, chip + " is a drive's sensor"};
  // The parent device's PCI class (include/linux/pci_ids.h: 0x03 display,
  // 0x0108 NVM Express) when the driver is not one of the above.
  if (auto cls = sysfs::parse_hex_0x(read_trimmed(join_path(join_path(c.hwmon_dir, "device"), "class")).value_or(""))) {
    if ((*cls >> 16) == 0x03) return {HwmonDeviceClass::DiscreteGpu, "PCI display device (class 0x03)"};
    if ((*cls >> 8) == 0x0108) return {HwmonDeviceClass::Storage, "PCI NVMe device (class 0x0108)"};
  }
  // acpi_power_meter (Documentation/hwmon/acpi_power_meter.rst) meters what
  // the firmware chose; Super I/O and I2C monitors (nct6775, it87, ina2xx,
  // ina3221, ...) sense the rails the board wires to them. None says which.
  const std::string bus = device_bus(c.hwmon_dir);
  if (chip == "acpi_power_meter" || bus == "platform" || bus == "acpi" || bus == "i2c" || bus == "isa")
    return {HwmonDeviceClass::Platform, bus.empty() ? chip : chip + " on the " + bus + " bus"};
  return {HwmonDeviceClass::Unknown, "driver " + chip + " is not known to measure the CPU"};
}

std::string hwmon_domain(const HwmonChannel& c) {
  switch (hwmon_device_class(c).cls) {
    case HwmonDeviceClass::ApuGpu: return "package";
    case HwmonDeviceClass::DiscreteGpu: return "gpu";
    case HwmonDeviceClass::Storage: return "storage";
    case HwmonDeviceClass::Platform: return "platform";
    case HwmonDeviceClass::Cpu: break;
    default: return "device";
  }
  // amd_energy and zenergy: Esocket<N> is a socket's energy, Ecore<NNN> one
  // core's; zenpower: core and SoC rails.
  const std::string chip = base_chip(c);
  if (chip == "zenpower") return c.label.find("Core") != std::string::npos ? "core" : "uncore";
  return c.label.rfind("Esocket", 0) == 0 ? "package" : "one-core";
}

void probe_hwmon(const std::string& root, Discovery& d) {
  std::vector<HwmonChannel> chans;
  std::string how = "sysfs";
  if (root.empty() || root == "/") {
    std::string problem;
    chans = scan_hwmon_libsensors(&problem);
    if (problem.empty()) {
      how = "libsensors";
    } else {
      chans = scan_hwmon_sysfs(root);
      how = "sysfs (" + problem + ")";
    }
  } else {
    chans = scan_hwmon_sysfs(root);
  }
  std::vector<std::string> chips;
  // Two channels of one chip with one label (power1 and power2 both "PPT", or
  // a power and an energy channel) keep their channel in the id, so their
  // samples never mix.
  std::map<std::string, int> label_uses;
  for (const auto& c : chans)
    if (c.type != HwmonChannel::Type::Temp) ++label_uses[c.chip + ":" + c.label];
  for (const auto& c : chans) {
    bool known = false;
    for (const auto& x : chips) known = known || x == c.chip;
    if (!known) chips.push_back(c.chip);
    if (c.type == HwmonChannel::Type::Temp) continue;
    SourceStatus s;
    s.id = "hwmon:" + c.chip + ":" + c.label;
    if (label_uses[c.chip + ":" + c.label] > 1) s.id += ":" + c.channel;
    const HwmonDevice dev = hwmon_device_class(c);
    s.domain = hwmon_domain(c);
    s.kind = c.type == HwmonChannel::Type::Energy ? Kind::Counter : Kind::Gauge;
    const double nominal =
        c.update_interval_s > 0 ? c.update_interval_s
                                : (c.type == HwmonChannel::Type::Energy ? kEnergyNominalS : kPowerNominalS);
    s.update_interval_s = nominal;
    s.note = "read through " + how + "; device class " + to_string(dev.cls) + " (" + dev.why + ")";
    if (s.domain == "gpu") s.note += ": a discrete GPU's power, not the CPU's, never the headline for CPU work";
    if (s.domain == "package" && dev.cls == HwmonDeviceClass::ApuGpu) s.note += ": PPT is the whole package's power";
    if (s.domain == "platform" || s.domain == "device" || s.domain == "storage")
      s.note += ": what it meters is not the CPU's work, never the headline";
    if (s.domain == "one-core") s.note += "; one core's energy, not all cores'";
    int err = 0;
    if (!read_hwmon_channel(c, &err)) {
      s.reason = "cannot read " + (c.path.empty() ? s.id : c.path) + ": " + errno_text(err);
      s.fix = err == EACCES || err == EPERM ? "run as root, or a udev rule granting read access to the attribute"
                                            : "the driver refused the read; check dmesg";
      d.status.push_back(std::move(s));
      continue;
    }
    s.available = true;
    d.sources.push_back(std::make_unique<HwmonSource>(s.id, s.domain, c, nominal));
    d.status.push_back(std::move(s));
  }
  bool any_status = false;
  for (const auto& s : d.status) any_status = any_status || s.id.rfind("hwmon:", 0) == 0;
  if (!any_status) {
    SourceStatus s;
    s.id = "hwmon:*";
    s.domain = "package";
    s.kind = Kind::Gauge;
    const std::string base = under_root(root, "/sys/class/hwmon");
    if (chips.empty()) {
      s.reason = "no hwmon chips in " + base + " (read through " + how + ")";
    } else {
      std::string list;
      for (const auto& c : chips) list += (list.empty() ? "" : ", ") + c;
      s.reason = "no hwmon power or energy channels (chips: " + list + ")";
    }
    s.fix = "AMD APU: the amdgpu driver reports PPT (package power); AMD Ryzen/EPYC: use RAPL through powercap "
            "(sudo modprobe intel_rapl_msr) or perf; per-core hwmon energy needs the out-of-tree zenergy driver "
            "(amd_energy is no longer in the kernel); inside a virtual machine there are no such sensors";
    d.status.push_back(std::move(s));
  }
}

}  // namespace flopwatt::power

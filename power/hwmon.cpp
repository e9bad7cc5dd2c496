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

std::string hwmon_domain(const HwmonChannel& c) {
  const std::string chip = c.chip.substr(0, c.chip.find('-'));
  if (chip == "amdgpu") {
    // The gpu_metrics blob starts with metrics_table_header (structure_size
    // u16, format_revision u8, content_revision u8; drivers/gpu/drm/amd/
    // include/kgd_pp_interface.h). Format 1 is a discrete GPU's table; 2 is
    // the APU table and 3 the newer APU one (gpu_metrics_v3_0, Strix Point
    // and Krackan Point): on an APU, PPT is the whole package.
    if (!c.hwmon_dir.empty()) {
      auto t = read_text(join_path(join_path(c.hwmon_dir, "device"), "gpu_metrics"));
      if (t.ok && t.text.size() >= 4) {
        const int format = static_cast<unsigned char>(t.text[2]);
        if (format == 2 || format == 3) return "package";
      }
    }
    return "gpu";
  }
  // amd_energy (removed from the upstream kernel) and its out-of-tree
  // successor zenergy: Esocket<N> is a socket's energy, Ecore<NNN> one core's.
  if (chip == "amd_energy" || chip == "zenergy") return c.label.rfind("Esocket", 0) == 0 ? "package" : "one-core";
  if (chip == "zenpower") return c.label.find("Core") != std::string::npos ? "core" : "uncore";
  return "device";
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
  for (const auto& c : chans) {
    bool known = false;
    for (const auto& x : chips) known = known || x == c.chip;
    if (!known) chips.push_back(c.chip);
    if (c.type == HwmonChannel::Type::Temp) continue;
    SourceStatus s;
    s.id = "hwmon:" + c.chip + ":" + c.label;
    s.domain = hwmon_domain(c);
    s.kind = c.type == HwmonChannel::Type::Energy ? Kind::Counter : Kind::Gauge;
    const double nominal =
        c.update_interval_s > 0 ? c.update_interval_s
                                : (c.type == HwmonChannel::Type::Energy ? kEnergyNominalS : kPowerNominalS);
    s.update_interval_s = nominal;
    s.note = "read through " + how;
    if (s.domain == "gpu") s.note += "; a discrete GPU's power (gpu_metrics format 1 or none), not the CPU package";
    if (s.domain == "package" && c.chip.rfind("amdgpu", 0) == 0)
      s.note += "; APU (gpu_metrics format 2 or 3): PPT is the whole package's power";
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

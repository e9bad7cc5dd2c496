#include "power/powercap_rapl.h"

#include "power/headline.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <map>
#include <memory>

#include "power/clock.h"
#include "power/msr_rapl.h"
#include "power/counter_unwrap.h"
#include "power/source_base.h"
#include "power/summed_source.h"
#include "power/sysfs.h"
#include "sysfs/permissions_fix.h"

namespace flopwatt::power {

namespace {

constexpr double kRaplUpdateS = 0.001;  // RAPL counters update about every 1 ms

class PowercapSource final : public SourceBase {
 public:
  PowercapSource(std::string id, std::string domain, std::string energy_path, std::uint64_t modulus,
                 double max_w)
      : SourceBase(std::move(id), std::move(domain), Kind::Counter, kRaplUpdateS),
        path_(std::move(energy_path)), unwrap_(modulus, max_w * 1e6), max_w_(max_w) {}

  std::uint64_t resets() const override { return resets_.load(std::memory_order_relaxed); }

  std::optional<Sample> read() override {
    std::uint64_t raw = 0;
    int err = 0;
    const std::int64_t a = monotonic_ns();
    const bool ok = read_u64_file(path_.c_str(), raw, err);
    const std::int64_t b = monotonic_ns();
    if (!ok) {
      set_error(path_ + ": " + errno_text(err));
      return std::nullopt;
    }
    const std::int64_t t = midpoint_ns(a, b);
    tracker_.observe(double(raw), t);
    const double total = unwrap_.update(raw, t);
    resets_.store(unwrap_.restarts(), std::memory_order_relaxed);
    if (unwrap_.last_was_restart()) {
      // The energy between the previous read and this one is unknown: no
      // sample, so the trace has a gap there instead of a phantom wrap.
      set_error(path_ + ": counter reset (a wrap would mean " +
                std::to_string(std::llround(unwrap_.last_rejected_rate() * 1e-6)) + " W, above " +
                std::to_string(std::llround(max_w_)) + " W): a gap");
      return std::nullopt;
    }
    clear_error();
    return Sample{t, total * 1e-6};
  }

 private:
  std::string path_;
  CounterUnwrap unwrap_;
  double max_w_;
  std::atomic<std::uint64_t> resets_{0};
};

// Powercap zones state their limits (Documentation/power/powercap/powercap.rst:
// constraint_X_power_limit_uw, optional constraint_X_max_power_uw). Bursts
// above the long-term limit are allowed, so the bound is twice the largest of
// them; without any, 1 kW, more than any single client or server package draws.
constexpr double kPlausibleZoneW = 1000;

double zone_power_bound_w(const std::string& zone_dir, std::string& note) {
  double largest_uw = 0;
  std::string ignored;
  for (int c = 0; c < 8; ++c) {
    for (const char* f : {"_power_limit_uw", "_max_power_uw"}) {
      const std::string name = "constraint_" + std::to_string(c) + f;
      auto v = read_int(join_path(zone_dir, name));
      if (!v || *v <= 0) continue;
      // Firmware fills unused limits with placeholders (4090 W, all ones):
      // above the ceiling no domain draws (power/headline.h) a limit bounds nothing.
      if (double(*v) * 1e-6 > kDomainCeilingW) {
        ignored += (ignored.empty() ? "" : ", ") + name + " = " + std::to_string(std::llround(double(*v) * 1e-6)) + " W";
        continue;
      }
      if (double(*v) > largest_uw) largest_uw = double(*v);
    }
  }
  if (!ignored.empty())
    note += "; ignored as a bound, above the " + std::to_string(std::llround(kDomainCeilingW)) +
            " W no domain draws: " + ignored;
  if (largest_uw > 0) {
    const double w = 2 * largest_uw * 1e-6;
    note += "; a step above " + std::to_string(std::llround(w)) +
            " W (2 x the zone's largest power limit) is a counter reset, a gap";
    return w;
  }
  note += "; no power limit: a step above 1000 W is a counter reset, a gap";
  return kPlausibleZoneW;
}

struct Zone {
  std::string dir_name;  // intel-rapl:0:1
  std::string path;
  std::string name;      // package-0, core, psys
  std::string parent;    // dir_name of the parent zone, empty at top level
  std::string id_suffix; // package-0, core-0, psys-0
  std::string domain;
};

bool is_rapl_zone_dir(const std::string& n) {
  // Zones are "<control type>:<n>[:<m>]"; the control-type directory itself has no colon.
  return n.find("rapl") != std::string::npos && n.find(':') != std::string::npos;
}

bool ends_with_index(const std::string& s) {
  const auto dash = s.rfind('-');
  if (dash == std::string::npos || dash + 1 == s.size()) return false;
  for (std::size_t i = dash + 1; i < s.size(); ++i)
    if (s[i] < '0' || s[i] > '9') return false;
  return true;
}

}  // namespace

std::string powercap_domain(const std::string& n) {
  for (const char* d : {"package", "uncore", "core", "dram", "psys"})
    if (n.rfind(d, 0) == 0) return d;
  return n;
}

std::string powercap_read_reason(int err, const std::string& path) {
  if (err == EACCES || err == EPERM)
    return path + " is readable by root only (the kernel restricted RAPL energy counters after "
                  "the PLATYPUS side channel, CVE-2020-8694)";
  return "cannot read " + path + ": " + errno_text(err);
}

std::string powercap_read_fix(int err) {
  if (err == EACCES || err == EPERM)
    return "sudo " + sysfs::setup_permissions_command() +
           " (udev rule: group 'power' may read energy_uj), then log in again; or run flopwatt as root";
  return "check that the intel_rapl_common driver is loaded: sudo modprobe intel_rapl_msr";
}

namespace {

// The RAPL zones under base, MMIO zones last so the MSR-backed one keeps the id.
std::vector<Zone> list_zones(const std::string& base) {
  std::vector<std::string> names = list_dir(base);
  std::stable_partition(names.begin(), names.end(),
                        [](const std::string& n) { return n.find("mmio") == std::string::npos; });
  std::vector<Zone> zones;
  for (const auto& n : names) {
    if (!is_rapl_zone_dir(n)) continue;
    Zone z;
    z.dir_name = n;
    z.path = join_path(base, n);
    auto nm = read_trimmed(join_path(z.path, "name"));
    if (!nm || nm->empty()) continue;
    z.name = *nm;
    const auto first = n.find(':'), last = n.rfind(':');
    if (first != last) z.parent = n.substr(0, last);
    z.domain = powercap_domain(z.name);
    zones.push_back(std::move(z));
  }
  return zones;
}

// Stable ids: a top-level zone keeps its indexed name (package-0, package-0-die-1),
// an unindexed one (psys) gets a running index; a subzone takes its parent's index.
void assign_ids(std::vector<Zone>& zones) {
  std::map<std::string, int> unindexed_count;
  std::map<std::string, const Zone*> by_dir;
  for (auto& z : zones) {
    if (!z.parent.empty()) continue;
    z.id_suffix = ends_with_index(z.name) ? z.name : z.name + "-" + std::to_string(unindexed_count[z.name]++);
    by_dir[z.dir_name] = &z;
  }
  for (auto& z : zones) {
    if (z.parent.empty()) continue;
    auto p = by_dir.find(z.parent);
    std::string idx = "0";
    if (p != by_dir.end()) {
      const std::string& ps = p->second->id_suffix;
      const auto dash = ps.find('-');
      if (dash != std::string::npos) idx = ps.substr(dash + 1);
    }
    z.id_suffix = ends_with_index(z.name) ? z.name : z.name + "-" + idx;
  }
}

class ZoneProbe {
 public:
  ZoneProbe(Discovery& d, bool amd) : d_(d), amd_(amd), status_begin_(d.status.size()) {}

  void probe(const Zone& z) {
    SourceStatus s;
    s.id = "rapl-powercap:" + z.id_suffix;
    s.domain = z.domain;
    s.kind = Kind::Counter;
    s.update_interval_s = kRaplUpdateS;
    const std::string energy = join_path(z.path, "energy_uj");
    s.note = "zone " + z.dir_name;
    // On AMD the kernel backs the core zone with MSR_AMD_CORE_ENERGY_STATUS
    // (drivers/powercap/intel_rapl_msr.c, rapl_msr_priv_amd), a per-core
    // register, read on the package's lead CPU: the zone is that one core's
    // energy, not all cores'.
    if (amd_ && z.domain == "core") {
      s.domain = "one-core";
      s.note += "; AMD: the kernel reads one core's MSR_AMD_CORE_ENERGY_STATUS (on the package's first CPU), so "
                "this is one core's energy, not all cores' (all cores: rapl-perf:energy-core, power_core PMU)";
    }
    if (auto dup = first_dir_of_id_.find(s.id); dup != first_dir_of_id_.end()) {
      s.id += "@" + z.dir_name;
      s.reason = "duplicate of zone " + dup->second + " (" +
                 (z.dir_name.find("mmio") != std::string::npos ? "the MMIO interface of the same domain"
                                                               : "same zone name") +
                 "); counting both would double the energy";
      s.fix = "none needed: use rapl-powercap:" + z.id_suffix;
      d_.status.push_back(std::move(s));
      return;
    }
    first_dir_of_id_[s.id] = z.dir_name;
    status_id_of_dir_[z.dir_name] = s.id;
    int err = 0;
    std::uint64_t raw = 0;
    if (!read_u64_file(energy.c_str(), raw, err)) {
      s.reason = powercap_read_reason(err, energy);
      s.fix = powercap_read_fix(err);
      d_.status.push_back(std::move(s));
      return;
    }
    if (copies_first_die(z, energy, raw, s)) return;
    std::uint64_t modulus = 0;
    if (auto m = read_int(join_path(z.path, "max_energy_range_uj")); m && *m > 0)
      modulus = std::uint64_t(*m) + 1;  // the counter takes values 0 .. max inclusive
    else
      s.note += "; no max_energy_range_uj: a decrease is taken as a restart";
    const double max_w = zone_power_bound_w(z.path, s.note);
    s.available = true;
    d_.status.push_back(s);
    d_.sources.push_back(std::make_unique<PowercapSource>(s.id, s.domain, energy, modulus, max_w));
    if (z.parent.empty() && z.domain == "package") package_zones_.push_back({s.id, energy, modulus, max_w});
  }

  // Several sockets (or dies with counters of their own): the machine's
  // package energy is their sum. Its parts are read by readers of its own, so
  // each socket also stays a source; a two-socket server pays two extra reads
  // per period for it.
  void add_package_sum() {
    if (package_zones_.size() < 2) return;
    SourceStatus s;
    s.id = "rapl-powercap:package";
    s.domain = "package";
    s.kind = Kind::Counter;
    s.update_interval_s = kRaplUpdateS;
    s.available = true;
    s.note = "sum of";
    std::vector<std::unique_ptr<PowerSource>> parts;
    for (const auto& p : package_zones_) {
      s.sum_of.push_back(p.id);
      s.contains.push_back(p.id);
      s.note += " " + p.id;
      parts.push_back(std::make_unique<PowercapSource>(p.id, "package", p.energy, p.modulus, p.max_w));
    }
    d_.sources.push_back(make_summed_source(s.id, s.domain, std::move(parts)));
    d_.status.push_back(std::move(s));
  }

  // Overlap: a package contains its core and uncore (not DRAM, which is its own
  // rail); psys, the platform, contains every package.
  void mark_overlaps(const std::vector<Zone>& zones) {
    std::vector<std::string> packages;
    for (const auto& z : zones)
      if (z.parent.empty() && z.domain == "package" && status_id_of_dir_.count(z.dir_name))
        packages.push_back(status_id_of_dir_[z.dir_name]);
    for (std::size_t i = status_begin_; i < d_.status.size(); ++i) {
      SourceStatus& s = d_.status[i];
      for (const auto& z : zones) {
        auto it = status_id_of_dir_.find(z.dir_name);
        if (it == status_id_of_dir_.end() || it->second != s.id) continue;
        if (z.domain == "psys") s.contains = packages;
        if (z.domain == "package")
          for (const auto& c : zones)
            if (c.parent == z.dir_name && c.domain != "dram" && status_id_of_dir_.count(c.dir_name))
              s.contains.push_back(status_id_of_dir_[c.dir_name]);
      }
    }
  }

 private:
  struct PackageZone {
    std::string id, energy;
    std::uint64_t modulus;
    double max_w;
  };

  // A per-die zone that reads the very same counter as its sibling die is a
  // copy of a per-package counter (seen on parts whose RAPL is per package):
  // recorded as unavailable, true.
  bool copies_first_die(const Zone& z, const std::string& energy, std::uint64_t raw, SourceStatus& s) {
    const auto die = z.name.find("-die-");
    if (die == std::string::npos) return false;
    const std::string key = z.name.substr(0, die);
    auto it = die_reading_.find(key);
    if (it == die_reading_.end()) {
      die_reading_[key] = raw;
      return false;
    }
    std::uint64_t again = 0;
    int e2 = 0;
    const bool same = it->second == raw || (read_u64_file(energy.c_str(), again, e2) && again == it->second);
    if (!same) return false;
    s.reason = "reads the same counter as the first die of " + key +
               " (a per-die copy of a per-package counter); counting both would double the energy";
    s.fix = "none needed: use the first die's zone";
    d_.status.push_back(std::move(s));
    return true;
  }

  Discovery& d_;
  bool amd_;
  std::size_t status_begin_;
  std::map<std::string, std::string> first_dir_of_id_;
  std::map<std::string, std::uint64_t> die_reading_;  // per-die zones: first reading, to spot copies
  std::map<std::string, std::string> status_id_of_dir_;
  std::vector<PackageZone> package_zones_;
};

}  // namespace

void probe_powercap(const std::string& root, Discovery& d) {
  const std::string base = under_root(root, "/sys/class/powercap");
  auto missing = [&](std::string reason, std::string fix) {
    SourceStatus s;
    s.id = "rapl-powercap:*";
    s.domain = "package";
    s.kind = Kind::Counter;
    s.reason = std::move(reason);
    s.fix = std::move(fix);
    d.status.push_back(std::move(s));
  };
  const char* vm_fix =
      "on bare metal: sudo modprobe intel_rapl_msr (Intel and AMD); inside a virtual machine the "
      "hypervisor usually does not pass RAPL through, so use a battery, external or host-side meter";
  if (!is_directory(base)) {
    missing("no " + base + " (powercap RAPL driver not loaded, or a virtual machine without RAPL)", vm_fix);
    return;
  }
  std::vector<Zone> zones = list_zones(base);
  if (zones.empty()) {
    missing("no RAPL zones in " + base + " (only control types, or no rapl driver)", vm_fix);
    return;
  }
  assign_ids(zones);
  const std::string vendor = read_cpu_id(root).vendor;
  ZoneProbe probe(d, vendor == "AuthenticAMD" || vendor == "HygonGenuine");
  for (const auto& z : zones) probe.probe(z);
  probe.add_package_sum();
  probe.mark_overlaps(zones);
}

}  // namespace flopwatt::power

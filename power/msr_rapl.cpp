#include "power/msr_rapl.h"

#include <atomic>

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <map>
#include <sstream>

#include "power/clock.h"
#include "power/counter_unwrap.h"
#include "power/source_base.h"
#include "power/summed_source.h"
#include "power/sysfs.h"
#include "sysfs/permissions_fix.h"

namespace flopwatt::power {

namespace {

constexpr double kRaplUpdateS = 0.001;
constexpr std::uint64_t kModulus32 = 1ull << 32;

bool pread_msr(int fd, std::uint32_t reg, std::uint64_t& v, int& err) {
  ssize_t n;
  do n = ::pread(fd, &v, sizeof v, off_t(reg));
  while (n < 0 && errno == EINTR);
  if (n == ssize_t(sizeof v)) return true;
  err = n < 0 ? errno : EIO;  // a short read: the register is past the end of a fixture file
  return false;
}

std::string hex(std::uint32_t v) {
  std::ostringstream s;
  s << "0x" << std::uppercase << std::hex << v;
  return s.str();
}

// One domain: a 32-bit energy status register on one or more CPUs (AMD core
// energy is per physical core; the domain is their sum, each unwrapped alone).
class FileMsrAccess final : public MsrAccess {
 public:
  explicit FileMsrAccess(std::string root) : root_(std::move(root)) {}
  int open(int cpu) override {
    const int fd = ::open(under_root(root_, "/dev/cpu/" + std::to_string(cpu) + "/msr").c_str(), O_RDONLY | O_CLOEXEC);
    return fd < 0 ? -errno : fd;
  }
  bool read(int fd, std::uint32_t reg, std::uint64_t& v, int& err) override { return pread_msr(fd, reg, v, err); }
  void close(int fd) override { ::close(fd); }

 private:
  std::string root_;
};

// No bound from the registers we read (the power limit MSRs are not read
// here), so the plausible bound: 1 kW per domain, above any package.
constexpr double kPlausibleMsrW = 1000;

class MsrSource final : public SourceBase {
 public:
  MsrSource(std::string id, std::string domain, std::shared_ptr<MsrAccess> access, std::vector<int> fds,
            std::uint32_t reg, double unit_j)
      : SourceBase(std::move(id), std::move(domain), Kind::Counter, kRaplUpdateS), access_(std::move(access)),
        fds_(std::move(fds)), reg_(reg), unit_j_(unit_j),
        unwrap_(fds_.size(), CounterUnwrap(kModulus32, kPlausibleMsrW / unit_j)) {}
  ~MsrSource() override {
    for (int fd : fds_) access_->close(fd);
  }

  std::optional<Sample> read() override {
    const std::int64_t a = monotonic_ns();
    double units = 0, raw_sum = 0;
    bool restarted = false;
    for (std::size_t i = 0; i < fds_.size(); ++i) {
      std::uint64_t v = 0;
      int err = 0;
      if (!access_->read(fds_[i], reg_, v, err)) {
        set_error("MSR " + hex(reg_) + ": " + errno_text(err));
        return std::nullopt;
      }
      v &= 0xffffffffull;
      raw_sum += double(v);
      units += unwrap_[i].update(v, a);
      if (unwrap_[i].last_was_restart()) restarted = true;
    }
    const std::int64_t t = midpoint_ns(a, monotonic_ns());
    std::uint64_t r = 0;
    for (const auto& u : unwrap_) r += u.restarts();
    resets_.store(r, std::memory_order_relaxed);
    if (restarted) {
      // The energy since the previous read is unknown: a gap, not a wrap.
      set_error("MSR " + hex(reg_) + ": counter reset (a wrap would mean more than " +
                std::to_string(int(kPlausibleMsrW)) + " W): a gap");
      return std::nullopt;
    }
    clear_error();
    tracker_.observe(raw_sum, t);
    return Sample{t, units * unit_j_};
  }

 private:
  std::shared_ptr<MsrAccess> access_;
  std::vector<int> fds_;
  std::uint32_t reg_;
  double unit_j_;
  std::vector<CounterUnwrap> unwrap_;
  std::atomic<std::uint64_t> resets_{0};

 public:
  std::uint64_t resets() const override { return resets_.load(std::memory_order_relaxed); }
};

struct Cpu {
  int cpu, package, core;
};

std::string msr_path(const std::string& root, int cpu) {
  return under_root(root, "/dev/cpu/" + std::to_string(cpu) + "/msr");
}

std::string msr_fix() {
  return "sudo modprobe msr (persist: echo msr | sudo tee /etc/modules-load.d/msr.conf); MSR reads also need "
         "read access to /dev/cpu/*/msr and CAP_SYS_RAWIO: run as root, or sudo setcap cap_sys_rawio+ep " +
         sysfs::self_executable() + " with a group-readable node (see " + sysfs::setup_permissions_command() +
         " --explain)";
}

}  // namespace

CpuId read_cpu_id(const std::string& root) {
  CpuId id;
  auto t = read_text(under_root(root, "/proc/cpuinfo"));
  if (!t.ok) return id;
  std::istringstream in(t.text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) {
      if (!id.vendor.empty()) break;  // end of the first processor's block
      continue;
    }
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string key = line.substr(0, colon);
    while (!key.empty() && (key.back() == ' ' || key.back() == '\t')) key.pop_back();
    std::string val = line.substr(colon + 1);
    if (!val.empty() && val[0] == ' ') val.erase(0, 1);
    if (key == "vendor_id" && id.vendor.empty()) id.vendor = val;
    else if (key == "cpu family" && id.family < 0) id.family = std::atoi(val.c_str());
    else if (key == "model" && id.model < 0) id.model = std::atoi(val.c_str());
    else if (key == "model name" && id.model_name.empty()) id.model_name = val;
  }
  return id;
}

double rapl_energy_unit_j(std::uint64_t unit_register) {
  return std::ldexp(1.0, -int((unit_register >> 8) & 0x1f));
}

bool intel_dram_fixed_unit(int family, int model) {
  if (family != 6) return false;
  // The kernel's hsw_server defaults (drivers/powercap/intel_rapl_common.c,
  // rapl_ids) and perf's RAPL_UNIT_QUIRK_INTEL_HSW models (arch/x86/events/
  // rapl.c): Haswell-X 63, Broadwell-X 79, Broadwell-D 86 (perf only; the
  // powercap driver uses the unit register there), Skylake-X 85, Xeon Phi
  // 87/133, Ice Lake-X/-D 106/108. Sapphire (143) and Emerald (207) Rapids
  // are not in it: both drivers dropped their fixed DRAM unit, so DRAM uses
  // the unit register there.
  for (int m : {63, 79, 86, 85, 87, 133, 106, 108})
    if (model == m) return true;
  return false;
}

namespace {
// Silvermont and Airmont Atoms (rapl_defaults_byt/_cht/_tng/_ann, whose
// check_unit is rapl_check_unit_atom): the energy status unit is a power of
// two in microjoules, not a negative power of two in joules.
bool intel_atom_unit_rule(int family, int model) {
  if (family != 6) return false;
  for (int m : {55, 74, 76, 90})  // ATOM_SILVERMONT, _SILVERMONT_MID, ATOM_AIRMONT, _AIRMONT_MID
    if (model == m) return true;
  return false;
}
// rapl_defaults_spr_server (psys_domain_energy_unit one joule) and perf's
// RAPL_UNIT_QUIRK_INTEL_SPR (psys hw unit 2^0): Sapphire and Emerald Rapids.
bool intel_psys_joule_unit(int family, int model) { return family == 6 && (model == 143 || model == 207); }
}  // namespace

double intel_domain_unit_j(int family, int model, const std::string& domain, std::uint64_t unit_register) {
  const int esu = int((unit_register >> 8) & 0x1f);
  if (intel_atom_unit_rule(family, model)) return std::ldexp(1.0, esu) * 1e-6;
  if (domain == "dram" && intel_dram_fixed_unit(family, model)) return std::ldexp(1.0, -16);
  if (domain == "psys" && intel_psys_joule_unit(family, model)) return 1.0;
  return rapl_energy_unit_j(unit_register);
}

std::shared_ptr<MsrAccess> file_msr_access(const std::string& root) { return std::make_shared<FileMsrAccess>(root); }

namespace {

// The CPUs under /dev/cpu with their package and core; one per package reads
// package-scope MSRs, AMD core energy needs one per physical core.
std::vector<Cpu> list_cpus(const std::string& root) {
  std::vector<Cpu> cpus;
  for (const auto& n : list_dir(under_root(root, "/dev/cpu"))) {
    // /dev/cpu holds a directory per CPU number and the "microcode" node.
    const auto number = sysfs::parse_decimal(n);
    if (!number || *number > 65535) continue;
    const int c = int(*number);
    const std::string topo = under_root(root, "/sys/devices/system/cpu/cpu" + n + "/topology/");
    cpus.push_back({c, int(read_int(topo + "physical_package_id").value_or(0)),
                    int(read_int(topo + "core_id").value_or(c))});
  }
  if (cpus.empty()) cpus.push_back({0, 0, 0});
  return cpus;
}

struct DomainDef {
  const char* domain;
  std::uint32_t reg;
  bool per_core;
  bool once;  // platform-wide, read from the first package only
};

std::vector<DomainDef> domain_defs(bool intel) {
  if (intel)
    return {{"package", msr::kIntelPackage, false, false}, {"core", msr::kIntelPP0, false, false},
            {"uncore", msr::kIntelPP1, false, false},      {"dram", msr::kIntelDram, false, false},
            {"psys", msr::kIntelPlatform, false, true}};
  return {{"package", msr::kAmdPackage, false, false}, {"core", msr::kAmdCore, true, false}};
}

class MsrProbe {
 public:
  MsrProbe(const std::string& root, Discovery& d, std::shared_ptr<MsrAccess> access, const CpuId& cpu)
      : root_(root), d_(d), access_(std::move(access)), cpu_(cpu), intel_(cpu.vendor == "GenuineIntel") {}

  void missing(const std::string& id, std::string reason, std::string fix) {
    SourceStatus s;
    s.id = id;
    s.domain = "package";
    s.kind = Kind::Counter;
    s.reason = std::move(reason);
    s.fix = std::move(fix);
    d_.status.push_back(std::move(s));
  }

  void run(const std::vector<Cpu>& cpus) {
    for (const auto& c : cpus) {
      package_cpu_.emplace(c.package, c.cpu);
      core_cpu_.emplace(std::make_pair(c.package, c.core), c.cpu);
    }
    for (const auto& [pkg, first_cpu] : package_cpu_) probe_package(pkg, first_cpu);
    std::vector<std::string> pkgs;
    for (const auto& s : d_.status)
      if (s.id.rfind("rapl-msr:package-", 0) == 0 && s.available) pkgs.push_back(s.id);
    for (auto& s : d_.status)
      if (s.id.rfind("rapl-msr:psys-", 0) == 0 && s.available) s.contains = pkgs;
    if (pkg_parts_.size() >= 2) add_package_sum();
  }

 private:
  struct PackagePart {
    std::string id;
    int cpu;
    double unit_j;
  };

  int open_msr(int c, int& err) {
    const int h = access_->open(c);
    err = h < 0 ? -h : 0;
    return h;
  }

  std::string open_reason(int c, int err) const {
    if (err == EACCES || err == EPERM)
      return msr_path(root_, c) + ": " + errno_text(err) + " (MSR reads need read access to the node and CAP_SYS_RAWIO)";
    if (err == ENOENT || err == ENXIO || err == ENODEV) return msr_path(root_, c) + " missing: msr module not loaded";
    return msr_path(root_, c) + ": " + errno_text(err);
  }

  void probe_package(int pkg, int first_cpu) {
    const std::uint32_t unit_reg = intel_ ? msr::kIntelUnit : msr::kAmdUnit;
    int err = 0;
    const int ufd = open_msr(first_cpu, err);
    if (ufd < 0) {
      missing("rapl-msr:*-" + std::to_string(pkg), open_reason(first_cpu, err), msr_fix());
      return;
    }
    std::uint64_t unit = 0;
    const bool read = access_->read(ufd, unit_reg, unit, err);
    access_->close(ufd);
    if (!read) {
      missing("rapl-msr:*-" + std::to_string(pkg),
              "cannot read the RAPL unit register " + hex(unit_reg) + ": " + errno_text(err) +
                  (err == EIO ? " (not implemented by this CPU)" : ""),
              "none: this CPU (or its hypervisor) does not implement RAPL MSRs");
      return;
    }
    std::vector<std::string> pkg_children;
    std::size_t pkg_status = SIZE_MAX;
    for (const auto& def : domain_defs(intel_)) {
      if (def.once && pkg != package_cpu_.begin()->first) continue;
      // AMD: the unit register alone, no per-model rule.
      const double unit_j = intel_ ? intel_domain_unit_j(cpu_.family, cpu_.model, def.domain, unit)
                                   : rapl_energy_unit_j(unit);
      if (!probe_domain(def, pkg, first_cpu, unit_j)) continue;
      const std::string& id = d_.status.back().id;
      if (def.reg == msr::kIntelPP0 || def.reg == msr::kIntelPP1 || def.reg == msr::kAmdCore) pkg_children.push_back(id);
      if (std::string(def.domain) == "package") {
        pkg_status = d_.status.size() - 1;
        pkg_parts_.push_back({id, first_cpu, unit_j});
      }
    }
    if (pkg_status != SIZE_MAX) d_.status[pkg_status].contains = pkg_children;
  }

  // Opens and test-reads the domain's register on each of its CPUs; adds its
  // status, and its source when it counts. True when available.
  bool probe_domain(const DomainDef& def, int pkg, int first_cpu, double unit_j) {
    SourceStatus s;
    s.id = "rapl-msr:" + std::string(def.domain) + "-" + std::to_string(def.once ? 0 : pkg);
    s.domain = def.domain;
    s.kind = Kind::Counter;
    s.update_interval_s = kRaplUpdateS;
    std::vector<int> cpu_list;
    if (def.per_core) {
      for (const auto& [key, c] : core_cpu_)
        if (key.first == pkg) cpu_list.push_back(c);
    } else {
      cpu_list.push_back(first_cpu);
    }
    std::vector<int> fds;
    std::string problem, fix = msr_fix();
    bool all_zero = true;
    for (int c : cpu_list) {
      int err = 0;
      const int fd = open_msr(c, err);
      if (fd < 0) {
        problem = open_reason(c, err);
        break;
      }
      fds.push_back(fd);
      std::uint64_t v = 0;
      if (!access_->read(fd, def.reg, v, err)) {
        problem = "MSR " + hex(def.reg) + " on cpu " + std::to_string(c) + ": " + errno_text(err) +
                  (err == EIO ? " (this CPU does not implement the " + std::string(def.domain) + " domain)" : "");
        fix = "none: the domain does not exist on this CPU";
        break;
      }
      all_zero = all_zero && (v & 0xffffffffull) == 0;
    }
    if (problem.empty() && all_zero) {
      problem = "MSR " + hex(def.reg) + " reads 0 (the " + std::string(def.domain) +
                " domain is not implemented or not counting)";
      fix = "none: use another domain";
    }
    std::ostringstream note;
    note << "MSR " << hex(def.reg) << " on " << cpu_list.size() << " cpu(s), " << unit_j * 1e6 << " uJ/count";
    s.note = note.str();
    if (!problem.empty()) {
      for (int fd : fds) access_->close(fd);
      s.reason = problem;
      s.fix = fix;
      d_.status.push_back(std::move(s));
      return false;
    }
    s.available = true;
    d_.sources.push_back(std::make_unique<MsrSource>(s.id, s.domain, access_, fds, def.reg, unit_j));
    d_.status.push_back(std::move(s));
    return true;
  }

  // Several sockets: their sum is the machine's package energy. Each part
  // gets a descriptor of its own (the single-package sources keep theirs).
  void add_package_sum() {
    SourceStatus s;
    s.id = "rapl-msr:package";
    s.domain = "package";
    s.kind = Kind::Counter;
    s.update_interval_s = kRaplUpdateS;
    s.note = "sum of";
    std::vector<std::unique_ptr<PowerSource>> parts;
    std::string problem;
    for (const auto& p : pkg_parts_) {
      int err = 0;
      const int fd = open_msr(p.cpu, err);
      if (fd < 0) {
        problem = open_reason(p.cpu, err);
        break;
      }
      parts.push_back(std::make_unique<MsrSource>(p.id, "package", access_, std::vector<int>{fd},
                                                  intel_ ? msr::kIntelPackage : msr::kAmdPackage, p.unit_j));
      s.sum_of.push_back(p.id);
      s.contains.push_back(p.id);
      s.note += " " + p.id;
    }
    if (problem.empty()) {
      s.available = true;
      d_.sources.push_back(make_summed_source(s.id, s.domain, std::move(parts)));
    } else {
      s.reason = problem;
      s.fix = msr_fix();
    }
    d_.status.push_back(std::move(s));
  }

  const std::string& root_;
  Discovery& d_;
  std::shared_ptr<MsrAccess> access_;
  CpuId cpu_;
  bool intel_;
  std::map<int, int> package_cpu_;               // package -> first cpu
  std::map<std::pair<int, int>, int> core_cpu_;  // (package, core) -> first cpu
  std::vector<PackagePart> pkg_parts_;
};

}  // namespace

void probe_msr_rapl(const std::string& root, Discovery& d, std::shared_ptr<MsrAccess> access) {
  if (!access) access = file_msr_access(root);
  const CpuId cpu = read_cpu_id(root);
  MsrProbe probe(root, d, access, cpu);
  const bool amd = cpu.vendor == "AuthenticAMD" || cpu.vendor == "HygonGenuine";
  if (cpu.vendor != "GenuineIntel" && !amd) {
    probe.missing("rapl-msr:*", cpu.vendor.empty() ? "cannot tell the CPU vendor (no vendor_id in /proc/cpuinfo)"
                                                   : "CPU vendor " + cpu.vendor + " has no RAPL MSRs",
                  "none: use another source");
    return;
  }
  const std::vector<Cpu> cpus = list_cpus(root);
  const int h = access->open(cpus.front().cpu);
  if (h == -ENOENT || h == -ENXIO || h == -ENODEV) {
    probe.missing("rapl-msr:*", "msr module not loaded (" + msr_path(root, cpus.front().cpu) + " missing)", msr_fix());
    return;
  }
  if (h >= 0) access->close(h);
  probe.run(cpus);
}

}  // namespace flopwatt::power

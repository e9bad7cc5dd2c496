#include "power/perf_rapl.h"

#include <linux/perf_event.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <thread>

#include "power/clock.h"
#include "power/pfm_events.h"
#include "power/source_base.h"
#include "power/summed_source.h"
#include "power/sysfs.h"
#include "sysfs/permissions_fix.h"

namespace flopwatt::power {

namespace {

constexpr double kRaplUpdateS = 0.001;

class SystemPerfAccess final : public PerfAccess {
 public:
  int open(int type, std::uint64_t config, int cpu) override {
    perf_event_attr attr;
    std::memset(&attr, 0, sizeof attr);
    attr.size = sizeof attr;
    attr.type = std::uint32_t(type);
    attr.config = config;
    // RAPL events count system-wide only: pid -1 on one CPU of the package.
    const long fd = ::syscall(__NR_perf_event_open, &attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
    return fd < 0 ? -errno : int(fd);
  }
  bool read(int fd, std::uint64_t& count) override {
    ssize_t n;
    do n = ::read(fd, &count, sizeof count);
    while (n < 0 && errno == EINTR);
    return n == ssize_t(sizeof count);
  }
  void close(int fd) override { ::close(fd); }
};

class PerfSource final : public SourceBase {
 public:
  PerfSource(std::string id, std::string domain, std::shared_ptr<PerfAccess> access, int fd, double scale)
      : SourceBase(std::move(id), std::move(domain), Kind::Counter, kRaplUpdateS),
        access_(std::move(access)), fd_(fd), scale_(scale) {}
  ~PerfSource() override { access_->close(fd_); }

  std::optional<Sample> read() override {
    std::uint64_t count = 0;
    const std::int64_t a = monotonic_ns();
    const bool ok = access_->read(fd_, count);
    const std::int64_t b = monotonic_ns();
    if (!ok) {
      set_error("read of perf counter failed: " + errno_text(errno));
      return std::nullopt;
    }
    clear_error();
    const std::int64_t t = midpoint_ns(a, b);
    tracker_.observe(double(count), t);
    if (!have_first_) {
      have_first_ = true;
      first_ = count;
    }
    // 64-bit kernel totals: a decrease cannot be a wrap, so never count one.
    const double j = count >= first_ ? double(count - first_) * scale_ : 0.0;
    return Sample{t, j};
  }

 private:
  std::shared_ptr<PerfAccess> access_;
  int fd_;
  double scale_;
  bool have_first_ = false;
  std::uint64_t first_ = 0;
};

}  // namespace

std::string perf_event_domain(const std::string& e) {
  if (e == "energy-pkg") return "package";
  if (e == "energy-cores") return "core";
  if (e == "energy-core") return "core";  // power_core PMU: one per core, summed
  if (e == "energy-gpu") return "uncore";
  if (e == "energy-ram") return "dram";
  if (e == "energy-psys") return "psys";
  return e.rfind("energy-", 0) == 0 ? e.substr(7) : e;
}

PerfPmuDesc read_perf_pmu(const std::string& root, const std::string& pmu) {
  PerfPmuDesc p;
  const sysfs::Pmu desc = sysfs::read_pmu(root, pmu);
  if (!desc.present) {
    p.problem = pmu == "power" ? "no perf power PMU (" + desc.dir + " missing: RAPL not supported by this CPU or kernel, "
                                 "or a virtual machine)"
                               : "no perf " + pmu + " PMU (" + desc.dir + " missing: AMD's per-core energy PMU needs "
                                 "Linux 6.13 or later and a Zen CPU)";
    return p;
  }
  p.present = true;
  if (!desc.problem.empty()) {
    p.problem = desc.problem;
    return p;
  }
  p.type = int(desc.type);
  // Kernels before cpumask existed counted RAPL on any CPU of the one package.
  p.cpus = desc.cpus.empty() ? std::vector<int>{0} : desc.cpus;
  for (const auto& name : sysfs::pmu_event_names(desc)) {
    PerfEventDesc e;
    e.name = name;
    const auto ev = sysfs::read_pmu_event(desc, name);
    if (!ev) {
      e.problem = "cannot read " + join_path(join_path(desc.dir, "events"), name);
      p.events.push_back(std::move(e));
      continue;
    }
    e.spec = ev->spec;
    sysfs::PerfConfig c;
    if (sysfs::encode_terms(e.spec, desc, c, e.problem)) {
      if (c.config1 || c.config2) e.problem = "'" + e.spec + "' sets config1 or config2, which no energy event uses";
      else e.config = c.config;
    }
    if (e.problem.empty()) e.problem = ev->problem;
    // Without a .scale file the kernel's RAPL unit is 2^-32 J.
    e.scale = ev->scale.value_or(1.0 / 4294967296.0);
    e.unit = ev->unit.value_or("Joules");
    if (e.unit != "Joules" && e.problem.empty()) e.problem = "unit is '" + e.unit + "', not Joules";
    p.events.push_back(std::move(e));
  }
  if (p.events.empty()) p.problem = "the power PMU lists no events in " + join_path(desc.dir, "events");
  return p;
}

std::shared_ptr<PerfAccess> system_perf_access() { return std::make_shared<SystemPerfAccess>(); }

std::string perf_open_reason(int err, const std::string& root, const std::string& event) {
  if (err == EACCES || err == EPERM) {
    const std::string paranoid_path = under_root(root, "/proc/sys/kernel/perf_event_paranoid");
    auto v = read_trimmed(paranoid_path);
    return "perf_event_open refused the system-wide event power/" + event + "/ (" + errno_text(err) +
           "): kernel.perf_event_paranoid is " + (v ? *v : std::string("unknown")) +
           " and system-wide events need it <= 0, or CAP_PERFMON (CAP_SYS_ADMIN before Linux 5.8)";
  }
  return "perf_event_open rejected power/" + event + "/: " + errno_text(err);
}

std::string perf_open_fix(int err) {
  if (err == EACCES || err == EPERM)
    return "sudo sysctl kernel.perf_event_paranoid=0 (persist in /etc/sysctl.d/), or sudo setcap cap_perfmon+ep " +
           sysfs::self_executable() + "; see " + sysfs::setup_permissions_command() + " --explain";
  return "check that the kernel's RAPL perf driver supports this CPU (dmesg | grep -i rapl)";
}

namespace {

// Stands in for the syscall under a fixture root: every open fails with
// ENODEV, which perf_rapl_reason words as the fixture case.
class NoPerfAccess final : public PerfAccess {
 public:
  int open(int, std::uint64_t, int) override { return -ENODEV; }
  bool read(int, std::uint64_t&) override { return false; }
  void close(int) override {}
};

bool real_root(const std::string& root) { return root.empty() || root == "/"; }

// AMD's power_core PMU (arch/x86/events/rapl.c, rapl_pmus_core: scope one
// core, event energy-core on MSR_AMD_CORE_ENERGY_STATUS): one event per core,
// the cores' sum is the "all cores" domain the package zone's core child is not.
void probe_perf_core_pmu(const std::string& root, Discovery& d, const std::shared_ptr<PerfAccess>& access,
                         bool fixture) {
  PerfPmuDesc pmu = read_perf_pmu(root, "power_core");
  if (!pmu.present) return;  // not an AMD Zen with Linux 6.13+: nothing to list
  for (const auto& e : pmu.events) {
    SourceStatus s;
    s.id = "rapl-perf:" + e.name;
    s.domain = perf_event_domain(e.name);
    s.kind = Kind::Counter;
    s.update_interval_s = kRaplUpdateS;
    char scale[32];
    std::snprintf(scale, sizeof scale, "%.6g", e.scale);
    s.note = "power_core PMU, event " + e.spec + ", scale " + scale + " J/count; sum over " +
             std::to_string(pmu.cpus.size()) + " core(s), one CPU each (cpumask)";
    if (!e.problem.empty()) {
      s.reason = "cannot encode power_core/" + e.name + "/: " + e.problem;
      s.fix = "report the PMU's sysfs files with a bug report";
      d.status.push_back(std::move(s));
      continue;
    }
    std::vector<std::unique_ptr<PowerSource>> parts;
    std::string problem, fix;
    for (int cpu : pmu.cpus) {
      const int fd = access->open(pmu.type, e.config, cpu);
      if (fd < 0) {
        problem = fixture && -fd == ENODEV
                      ? "perf events cannot be opened under --sysfs-root (perf_event_open is a system call; the "
                        "fixture only describes the PMU)"
                      : perf_open_reason(-fd, root, e.name) + " (cpu " + std::to_string(cpu) + ")";
        fix = fixture ? "none needed for a fixture; on the real machine run without --sysfs-root" : perf_open_fix(-fd);
        break;
      }
      parts.push_back(std::make_unique<PerfSource>(s.id + "@cpu" + std::to_string(cpu), s.domain, access, fd,
                                                   e.scale));
    }
    if (!problem.empty() || parts.empty()) {
      s.reason = problem.empty() ? "the power_core PMU lists no CPUs" : problem;
      s.fix = fix;
      d.status.push_back(std::move(s));
      continue;
    }
    s.available = true;
    d.sources.push_back(make_summed_source(s.id, s.domain, std::move(parts)));
    d.status.push_back(std::move(s));
  }
}

}  // namespace

void probe_perf_rapl(const std::string& root, Discovery& d, std::shared_ptr<PerfAccess> access) {
  const bool fixture = !access && !real_root(root);
  if (!access) access = fixture ? std::shared_ptr<PerfAccess>(std::make_shared<NoPerfAccess>()) : system_perf_access();
  probe_perf_core_pmu(root, d, access, fixture);
  PerfPmuDesc pmu = read_perf_pmu(root);
  if (!pmu.present || pmu.events.empty() || pmu.type < 0) {
    SourceStatus s;
    s.id = "rapl-perf:*";
    s.domain = "package";
    s.kind = Kind::Counter;
    s.reason = pmu.problem;
    s.fix = "on bare metal: a kernel with the RAPL perf driver (CONFIG_PERF_EVENTS_INTEL_RAPL / "
            "AMD RAPL); in a VM the power PMU is usually absent";
    d.status.push_back(std::move(s));
    return;
  }
  struct Opened {
    std::size_t status;
    int fd;
    double scale;
    std::uint64_t first = 0;
  };
  std::vector<Opened> opened;
  const bool use_pfm = root.empty() || root == "/";  // libpfm4 only reads the real /sys
  for (const auto& e : pmu.events) {
    for (std::size_t ci = 0; ci < pmu.cpus.size(); ++ci) {
      SourceStatus s;
      s.id = "rapl-perf:" + e.name + (pmu.cpus.size() > 1 ? "-" + std::to_string(ci) : "");
      s.domain = perf_event_domain(e.name);
      s.kind = Kind::Counter;
      s.update_interval_s = kRaplUpdateS;
      int type = pmu.type;
      std::uint64_t config = e.config;
      std::string how = "sysfs description " + e.spec;
      if (use_pfm) {
        PfmEncoding pe = pfm_encode_power_event(e.name);
        if (pe.ok) {
          type = pe.type;
          config = pe.config;
          how = "libpfm4 " + pe.name;
        } else {
          how += " (" + pe.problem + ")";
        }
      } else if (!e.problem.empty()) {
        s.reason = "cannot encode power/" + e.name + "/: " + e.problem;
        s.fix = "report the PMU's sysfs files with a bug report";
        d.status.push_back(std::move(s));
        continue;
      }
      char scale[32];
      std::snprintf(scale, sizeof scale, "%.6g", e.scale);
      s.note = "event from " + how + "; scale " + scale + " J/count; cpu " + std::to_string(pmu.cpus[ci]);
      const int fd = access->open(type, config, pmu.cpus[ci]);
      if (fd < 0 && fixture && -fd == ENODEV) {
        s.reason = "perf events cannot be opened under --sysfs-root (perf_event_open is a system call; the "
                   "fixture only describes the PMU)";
        s.fix = "none needed for a fixture; on the real machine run without --sysfs-root";
        d.status.push_back(std::move(s));
        continue;
      }
      if (fd < 0) {
        s.reason = perf_open_reason(-fd, root, e.name);
        s.fix = perf_open_fix(-fd);
        d.status.push_back(std::move(s));
        continue;
      }
      opened.push_back({d.status.size(), fd, e.scale});
      d.status.push_back(std::move(s));
    }
  }
  // A counter that stays at zero is a hypervisor exposing the PMU without the
  // energy MSRs behind it. Real RAPL counts from the first millisecond, so a
  // short poll separates the two without slowing discovery noticeably.
  std::vector<bool> advanced(opened.size(), false);
  const std::int64_t deadline = monotonic_ns() + 30'000'000;
  for (;;) {
    bool all = true;
    for (std::size_t i = 0; i < opened.size(); ++i) {
      std::uint64_t c = 0;
      if (!advanced[i] && access->read(opened[i].fd, c) && c > 0) advanced[i] = true;
      all = all && advanced[i];
    }
    if (all || monotonic_ns() > deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(3));
  }
  for (std::size_t i = 0; i < opened.size(); ++i) {
    SourceStatus& s = d.status[opened[i].status];
    if (!advanced[i]) {
      access->close(opened[i].fd);
      s.reason = "the counter stays at 0 for 30 ms (this CPU does not implement the domain, or a virtual "
                 "machine exposes the power PMU without the energy counters behind it)";
      s.fix = "none for this domain: use another one; inside a VM measure on the host, or use a battery or "
              "external meter";
      continue;
    }
    s.available = true;
    d.sources.push_back(std::make_unique<PerfSource>(s.id, s.domain, access, opened[i].fd, opened[i].scale));
  }
  // package contains cores and gpu (uncore); psys contains the packages.
  std::vector<std::string> pkgs;
  for (auto& s : d.status)
    if (s.id.rfind("rapl-perf:", 0) == 0 && s.domain == "package" && s.available) pkgs.push_back(s.id);
  for (auto& s : d.status) {
    if (s.id.rfind("rapl-perf:", 0) != 0 || !s.available) continue;
    if (s.domain == "psys") s.contains = pkgs;
    if (s.domain == "package") {
      const std::string suffix = s.id.substr(std::string("rapl-perf:energy-pkg").size());
      for (auto& c : d.status)
        if (c.available && (c.id == "rapl-perf:energy-cores" + suffix || c.id == "rapl-perf:energy-gpu" + suffix))
          s.contains.push_back(c.id);
    }
  }
}

}  // namespace flopwatt::power

#include "cpu/perf_counters.h"

#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <sstream>

#include "cpu/pmu_sysfs.h"
#include "sysfs/files.h"
#include "workloads/error.h"

namespace flopwatt::cpu {
namespace {

class SyscallAccess final : public CounterAccess {
 public:
  int open(const EventEncoding& e, int* err) override {
    perf_event_attr attr;
    std::memset(&attr, 0, sizeof attr);
    attr.size = sizeof attr;
    attr.type = e.type;
    attr.config = e.config;
    attr.config1 = e.config1;
    attr.config2 = e.config2;
    attr.disabled = 1;
    // OpenMP worker threads started after the open are counted too; a
    // CPU-wide event cannot inherit (perf_event_open(2): inherit applies to tasks).
    attr.inherit = e.cpu < 0 ? 1 : 0;
    attr.read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING;
    const long fd = e.cpu < 0 ? ::syscall(SYS_perf_event_open, &attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC)
                              : ::syscall(SYS_perf_event_open, &attr, -1, e.cpu, -1, PERF_FLAG_FD_CLOEXEC);
    if (fd < 0 && err) *err = errno;
    return int(fd);
  }
  bool reset_and_enable(int fd) override {
    return ::ioctl(fd, PERF_EVENT_IOC_RESET, 0) == 0 && ::ioctl(fd, PERF_EVENT_IOC_ENABLE, 0) == 0;
  }
  bool disable(int fd) override { return ::ioctl(fd, PERF_EVENT_IOC_DISABLE, 0) == 0; }
  bool read(int fd, CounterReading& r) override {
    std::uint64_t v[3];
    if (::read(fd, v, sizeof v) != ssize_t(sizeof v)) return false;
    r = {v[0], v[1], v[2]};
    return true;
  }
  void close(int fd) override { ::close(fd); }
};

std::string paranoid_setting(const std::string& root) {
  const auto v = sysfs::read_trimmed(sysfs::under_root(root, "/proc/sys/kernel/perf_event_paranoid"));
  return v && !v->empty() ? *v : "unknown";
}

// Why perf_event_open refused a hardware event, most specific first; the
// errors are those perf_event_open(2) documents.
void explain(CounterStatus& st, const EventEncoding& e, int err, const std::string& root) {
  const std::string devices = sysfs::under_root(root, "/sys/bus/event_source/devices");
  const bool hardware = e.type == PERF_TYPE_HARDWARE || e.type == PERF_TYPE_HW_CACHE || e.type >= PERF_TYPE_MAX;
  if (e.cpu >= 0 && (err == EACCES || err == EPERM)) {
    // perf_event_open(2), perf_event_paranoid: CPU-wide events need a value
    // below 1, or CAP_PERFMON (CAP_SYS_ADMIN before Linux 5.8).
    st.reason = "perf_event_open: system-wide counting denied (kernel.perf_event_paranoid = " + paranoid_setting(root) +
                "; uncore events count the whole machine)";
    st.fix = "sudo sysctl kernel.perf_event_paranoid=0, or run as root or with CAP_PERFMON";
    return;
  }
  if (hardware && e.cpu < 0 && !sysfs::path_exists(devices + "/cpu") && !sysfs::path_exists(devices + "/cpu_core")) {
    st.reason = "no CPU PMU is exposed (" + devices + "/cpu" +
                " missing: a virtual machine without PMU passthrough, or a kernel without perf hardware support)";
    st.fix = "count on bare metal, or enable the virtual PMU (KVM: -cpu host,pmu=on; VMware: virtualize CPU "
             "performance counters)";
    return;
  }
  if (err == EACCES || err == EPERM) {
    st.reason = "perf_event_open: permission denied (kernel.perf_event_paranoid = " + paranoid_setting(root) + ")";
    st.fix = "sudo sysctl kernel.perf_event_paranoid=2 (or lower) allows counting your own processes; or run as root";
    return;
  }
  if (err == ENOENT || err == EOPNOTSUPP || err == EINVAL) {
    st.reason = "perf_event_open: this CPU or kernel does not count " + e.fully_qualified + " (" + std::strerror(err) + ")";
    st.fix = "pick another event (`showevtinfo` from libpfm4's examples lists this CPU's)";
    return;
  }
  st.reason = std::string("perf_event_open failed: ") + std::strerror(err);
  st.fix = "check `perf stat -e " + st.event + " true`";
}

}  // namespace

std::unique_ptr<CounterAccess> real_counter_access() { return std::make_unique<SyscallAccess>(); }

std::vector<std::string> parse_counter_list(const std::string& spec, const std::string& flag) {
  if (spec == "none") return {};
  if (spec == "default" || spec.empty())
    return {"perf::PERF_COUNT_HW_CPU_CYCLES", "perf::PERF_COUNT_HW_INSTRUCTIONS", "perf::PERF_COUNT_HW_CACHE_MISSES",
            kDramReadBytes, kDramWriteBytes};
  std::vector<std::string> out;
  std::stringstream ss(spec);
  std::string e;
  while (std::getline(ss, e, ',')) {
    if (e.empty())
      throw InputError(flag + " " + spec, "an empty event name", "give libpfm4 event strings separated by single commas");
    out.push_back(e);
  }
  if (!spec.empty() && spec.back() == ',')
    throw InputError(flag + " " + spec, "an empty event name", "give libpfm4 event strings separated by single commas");
  return out;
}

namespace {

// One encoding per CPU an uncore event is opened on (any CPU when none is listed).
void add_per_cpu(std::vector<std::pair<EventEncoding, double>>& parts, const SysfsEvent& s) {
  EventEncoding e;
  e.ok = true;
  e.type = s.type;
  e.config = s.config;
  e.config1 = s.config1;
  e.config2 = s.config2;
  e.fully_qualified = s.pmu;
  for (int cpu : s.cpus.empty() ? std::vector<int>{-1} : s.cpus) {
    e.cpu = cpu;
    parts.emplace_back(e, s.scale);
  }
}

std::string cpu_list(const SysfsEvent& s) {
  std::string out;
  for (int c : s.cpus) {
    if (!out.empty()) out += ',';
    out += std::to_string(c);
  }
  return out.empty() ? "any CPU" : "CPU " + out;
}

}  // namespace

CounterSet::CounterSet(const std::vector<std::string>& events, CounterAccess& access, const std::string& root)
    : access_(access) {
  for (const auto& ev : events) {
    CounterStatus st;
    st.event = ev;
    std::vector<std::pair<EventEncoding, double>> parts;
    if (ev == kDramReadBytes || ev == kDramWriteBytes) {
      const DramEvents d = dram_events(root, ev == kDramWriteBytes);
      if (d.events.empty()) {
        st.reason = d.problem;
        st.fix = "count on bare metal with the memory controllers' PMU exposed (Intel uncore driver; AMD "
                 "amd_uncore on Linux 6.10+); until then intensity is FLOPs per analytic byte";
      }
      std::vector<std::string> pmus;
      for (const auto& s : d.events) {
        add_per_cpu(parts, s);
        pmus.push_back(s.pmu);
      }
      if (!d.events.empty())
        st.how = "system-wide (all processes) on " + cpu_list(d.events.front()) + ": " + d.family + " summed over " +
                 std::to_string(pmus.size()) + " PMU instance(s), in bytes";
    } else if (ev.find('/') != std::string::npos) {
      const SysfsResolve r = resolve_sysfs_event(ev, root);
      if (!r.event) {
        st.reason = r.problem;
        st.fix = r.fix;
      } else {
        add_per_cpu(parts, *r.event);
        if (!r.event->cpus.empty())
          st.how = "system-wide (all processes) on " + cpu_list(*r.event) +
                   (r.event->unit.empty() ? "" : ", in " + r.event->unit);
      }
    } else {
      const EventEncoding e = encode_event(ev);
      if (e.ok) parts.emplace_back(e, 1.0);
      else {
        st.reason = e.problem;
        st.fix = "check the event string against libpfm4's list for this CPU";
      }
    }
    open_parts(st, parts, root);
    status_.push_back(st);
  }
}

void CounterSet::open_parts(CounterStatus& st, const std::vector<std::pair<EventEncoding, double>>& parts,
                            const std::string& root) {
  std::vector<Part> opened;
  for (const auto& [e, scale] : parts) {
    int err = 0;
    const int fd = access_.open(e, &err);
    if (fd < 0) {
      explain(st, e, err, root);
      for (const auto& p : opened) access_.close(p.fd);
      opened.clear();
      break;
    }
    opened.push_back({fd, scale, {}});
  }
  st.available = !opened.empty();
  parts_.push_back(std::move(opened));
}

CounterSet::~CounterSet() {
  for (const auto& ps : parts_)
    for (const auto& p : ps) access_.close(p.fd);
}

bool CounterSet::any_available() const {
  for (const auto& ps : parts_)
    if (!ps.empty()) return true;
  return false;
}

void CounterSet::begin() {
  for (auto& ps : parts_)
    for (auto& p : ps) {
      p.at_begin = CounterReading{};
      if (access_.reset_and_enable(p.fd)) access_.read(p.fd, p.at_begin);
    }
}

std::vector<WindowCount> CounterSet::end() {
  for (const auto& ps : parts_)
    for (const auto& p : ps) access_.disable(p.fd);
  std::vector<WindowCount> out;
  for (std::size_t i = 0; i < parts_.size(); ++i) {
    WindowCount w;
    w.event = status_[i].event;
    double sum = 0, fraction = 1;
    bool ok = !parts_[i].empty();
    for (const auto& p : parts_[i]) {
      CounterReading r;
      const CounterReading& b = p.at_begin;
      // PERF_EVENT_IOC_RESET zeroes the count but not time_enabled/time_running
      // (perf_event_open(2), "PERF_EVENT_IOC_RESET"), so all three are taken as
      // differences over the window.
      if (!(access_.read(p.fd, r) && r.time_enabled > b.time_enabled && r.value >= b.value)) {
        ok = false;
        break;
      }
      const double enabled = double(r.time_enabled - b.time_enabled);
      const double running = double(r.time_running - b.time_running);
      // A multiplexed counter ran part of the window: scaled by enabled/running
      // time (perf_event_open(2), "Reading results").
      fraction = std::min(fraction, running / enabled);
      if (!(running > 0)) {
        ok = false;
        break;
      }
      sum += double(r.value - b.value) * enabled / running * p.scale;
    }
    w.running_fraction = ok ? fraction : 0;
    if (ok) w.value = sum;
    out.push_back(w);
  }
  return out;
}

}  // namespace flopwatt::cpu

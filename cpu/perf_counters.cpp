#include "cpu/perf_counters.h"

#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "workloads/error.h"

namespace flopwatt::cpu {
namespace {

namespace fs = std::filesystem;

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
    attr.inherit = 1;  // OpenMP worker threads started after the open are counted too
    attr.read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING;
    const long fd = ::syscall(SYS_perf_event_open, &attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
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

std::string read_first_line(const fs::path& p) {
  std::ifstream f(p);
  std::string s;
  std::getline(f, s);
  return s;
}

// Why perf_event_open refused a hardware event, most specific first; the
// errors are those perf_event_open(2) documents.
void explain(CounterStatus& st, const EventEncoding& e, int err, const std::string& root) {
  const fs::path devices = fs::path(root) / "sys/bus/event_source/devices";
  std::error_code ec;
  const bool hardware = e.type == PERF_TYPE_HARDWARE || e.type == PERF_TYPE_HW_CACHE || e.type >= PERF_TYPE_MAX;
  if (hardware && !fs::exists(devices / "cpu", ec) && !fs::exists(devices / "cpu_core", ec)) {
    st.reason = "no CPU PMU is exposed (" + (devices / "cpu").string() +
                " missing: a virtual machine without PMU passthrough, or a kernel without perf hardware support)";
    st.fix = "count on bare metal, or enable the virtual PMU (KVM: -cpu host,pmu=on; VMware: virtualize CPU "
             "performance counters)";
    return;
  }
  if (err == EACCES || err == EPERM) {
    const std::string paranoid = read_first_line(fs::path(root) / "proc/sys/kernel/perf_event_paranoid");
    st.reason = "perf_event_open: permission denied (kernel.perf_event_paranoid = " +
                (paranoid.empty() ? std::string("unknown") : paranoid) + ")";
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
    return {"perf::PERF_COUNT_HW_CPU_CYCLES", "perf::PERF_COUNT_HW_INSTRUCTIONS", "perf::PERF_COUNT_HW_CACHE_MISSES"};
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

CounterSet::CounterSet(const std::vector<std::string>& events, CounterAccess& access, const std::string& root)
    : access_(access) {
  for (const auto& ev : events) {
    CounterStatus st;
    st.event = ev;
    int fd = -1;
    const EventEncoding e = encode_event(ev);
    if (!e.ok) {
      st.reason = e.problem;
      st.fix = "check the event string against libpfm4's list for this CPU";
    } else {
      int err = 0;
      fd = access_.open(e, &err);
      if (fd < 0) explain(st, e, err, root);
    }
    st.available = fd >= 0;
    status_.push_back(st);
    fds_.push_back(fd);
  }
}

CounterSet::~CounterSet() {
  for (int fd : fds_)
    if (fd >= 0) access_.close(fd);
}

bool CounterSet::any_available() const {
  for (int fd : fds_)
    if (fd >= 0) return true;
  return false;
}

void CounterSet::begin() {
  at_begin_.assign(fds_.size(), CounterReading{});
  for (std::size_t i = 0; i < fds_.size(); ++i)
    if (fds_[i] >= 0 && access_.reset_and_enable(fds_[i])) access_.read(fds_[i], at_begin_[i]);
}

std::vector<WindowCount> CounterSet::end() {
  for (int fd : fds_)
    if (fd >= 0) access_.disable(fd);
  std::vector<WindowCount> out;
  for (std::size_t i = 0; i < fds_.size(); ++i) {
    WindowCount w;
    w.event = status_[i].event;
    CounterReading r;
    const CounterReading b = i < at_begin_.size() ? at_begin_[i] : CounterReading{};
    // PERF_EVENT_IOC_RESET zeroes the count but not time_enabled/time_running
    // (perf_event_open(2), "PERF_EVENT_IOC_RESET"), so all three are taken as
    // differences over the window.
    if (fds_[i] >= 0 && access_.read(fds_[i], r) && r.time_enabled > b.time_enabled && r.value >= b.value) {
      const double enabled = double(r.time_enabled - b.time_enabled);
      const double running = double(r.time_running - b.time_running);
      // A multiplexed counter ran part of the window: scaled by enabled/running
      // time (perf_event_open(2), "Reading results").
      w.running_fraction = running / enabled;
      if (running > 0) w.value = double(r.value - b.value) * enabled / running;
    }
    out.push_back(w);
  }
  return out;
}

}  // namespace flopwatt::cpu

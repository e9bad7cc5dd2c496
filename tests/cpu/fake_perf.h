// perf_event_open(2) as its manual page and the kernel describe it, on a
// simulated clock, for the counter tests:
//  - an event opened with attr.disabled counts nothing until ENABLE;
//  - while enabled, time_enabled advances; time_running advances only while
//    the event is on the PMU (multiplexing: `share` of the time), and so does
//    the count ("Reading results");
//  - PERF_EVENT_IOC_RESET zeroes the count only: "there is no way to reset the
//    multiplexing time_enabled or time_running values";
//  - refusals: ENOENT for an event type the CPU does not support, EACCES when
//    perf_event_paranoid forbids it (ERRORS);
//  - an uncore PMU has no per-task context (task_ctx_nr = perf_invalid_context
//    in arch/x86/events/intel/uncore.c and amd/uncore.c), so a per-task open
//    (pid 0, cpu -1) is EINVAL (kernel/events/core.c refuses a task event on
//    such a PMU; both uncore drivers' event_init refuse event->cpu < 0);
//  - a CPU-wide open (pid -1, cpu >= 0) needs perf_event_paranoid < 1 or
//    CAP_PERFMON, else EACCES (perf_event_open(2), "perf_event related
//    configuration files").
#pragma once
#include <cerrno>
#include <cstdint>
#include <map>
#include <set>
#include <utility>

#include "cpu/perf_counters.h"

namespace flopwatt::cpu {

class FakePerf final : public CounterAccess {
 public:
  struct Event {
    double rate = 0;     // counts per ns while on the PMU
    double share = 1.0;  // fraction of enabled time on the PMU
    bool enabled = false;
    double value = 0, enabled_ns = 0, running_ns = 0;
    EventEncoding encoding;
  };
  int refuse_errno = 0;
  // Core events by config (PERF_TYPE_HARDWARE's numbering).
  std::map<std::uint64_t, double> rate_by_config{{0, 3.0}, {1, 5.0}, {3, 0.25}};
  // Uncore PMUs by perf type; their counts per ns for each CPU-wide open, by
  // (type, config); an uncore config not listed counts nothing.
  std::set<std::uint32_t> uncore_types;
  std::map<std::pair<std::uint32_t, std::uint64_t>, double> uncore_rate;
  int paranoid = 2;
  bool cap_perfmon = false;
  double share = 1.0;
  std::map<int, Event> fds;
  int next_fd = 10;

  int open(const EventEncoding& e, int* err) override {
    const bool uncore = uncore_types.count(e.type) > 0;
    const int refuse = refuse_errno                              ? refuse_errno
                       : uncore && e.cpu < 0                     ? EINVAL
                       : e.cpu >= 0 && paranoid >= 1 && !cap_perfmon ? EACCES
                                                                 : 0;
    if (refuse) {
      *err = refuse;
      return -1;
    }
    double rate = 1.0;
    if (uncore) {
      auto it = uncore_rate.find({e.type, e.config});
      rate = it == uncore_rate.end() ? 0.0 : it->second;
    } else if (rate_by_config.count(e.config)) {
      rate = rate_by_config[e.config];
    }
    const int fd = next_fd++;
    fds[fd] = Event{rate, share, false, 0, 0, 0, e};
    return fd;
  }
  bool reset_and_enable(int fd) override {
    fds.at(fd).value = 0;
    fds.at(fd).enabled = true;
    return true;
  }
  bool disable(int fd) override {
    fds.at(fd).enabled = false;
    return true;
  }
  bool read(int fd, CounterReading& r) override {
    const Event& e = fds.at(fd);
    r = {std::uint64_t(e.value), std::uint64_t(e.enabled_ns), std::uint64_t(e.running_ns)};
    return true;
  }
  void close(int fd) override { fds.erase(fd); }
  void advance(double ns) {
    for (auto& [fd, e] : fds)
      if (e.enabled) {
        e.enabled_ns += ns;
        e.running_ns += ns * e.share;
        e.value += e.rate * ns * e.share;
      }
  }
};

}  // namespace flopwatt::cpu

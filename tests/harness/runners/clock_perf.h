// A perf_event_open fake whose counts follow the real monotonic clock, for
// runner tests whose windows are real time.
#pragma once
#include <cstdint>
#include <map>

#include "cpu/perf_counters.h"
#include "power/clock.h"

namespace flopwatt {

// perf_event_open(2) as its manual page describes it, counting on the real
// monotonic clock so a window's count grows with the work inside it:
//  - an event opened with attr.disabled counts nothing until
//    PERF_EVENT_IOC_ENABLE, and stops at PERF_EVENT_IOC_DISABLE;
//  - PERF_EVENT_IOC_RESET zeroes the count, not time_enabled/time_running;
//  - read() with PERF_FORMAT_TOTAL_TIME_ENABLED | _RUNNING returns
//    {value, time_enabled, time_running} ("Reading results"); here the event
//    is never multiplexed, so running == enabled.
class ClockPerf final : public cpu::CounterAccess {
 public:
  struct Event {
    double per_ns = 1;
    bool enabled = false;
    std::int64_t since = 0;
    double value = 0, enabled_ns = 0;
  };
  std::map<int, Event> fds;
  int enables = 0;
  // What each PERF_EVENT_IOC_ENABLE costs before the event counts: a
  // descheduled thread between the ioctls, made certain.
  std::int64_t enable_cost_ns = 0;

  int open(const cpu::EventEncoding& e, int*) override {
    const int fd = 100 + int(fds.size());
    fds[fd].per_ns = e.config == 1 ? 2.0 : 1.0;  // PERF_COUNT_HW_INSTRUCTIONS runs at twice the cycles
    return fd;
  }
  bool reset_and_enable(int fd) override {
    settle(fds.at(fd));
    fds.at(fd).value = 0;
    for (const std::int64_t t = power::monotonic_ns(); power::monotonic_ns() - t < enable_cost_ns;) {
    }
    fds.at(fd).enabled = true;
    fds.at(fd).since = power::monotonic_ns();
    ++enables;
    return true;
  }
  bool disable(int fd) override {
    settle(fds.at(fd));
    fds.at(fd).enabled = false;
    return true;
  }
  bool read(int fd, cpu::CounterReading& r) override {
    settle(fds.at(fd));
    const Event& e = fds.at(fd);
    r = {std::uint64_t(e.value), std::uint64_t(e.enabled_ns), std::uint64_t(e.enabled_ns)};
    return true;
  }
  void close(int fd) override { fds.erase(fd); }

 private:
  static void settle(Event& e) {
    if (!e.enabled) return;
    const std::int64_t now = power::monotonic_ns();
    e.value += double(now - e.since) * e.per_ns;
    e.enabled_ns += double(now - e.since);
    e.since = now;
  }
};

}  // namespace flopwatt

#include "harness/run/timing.h"

#include <time.h>

namespace flopwatt {

std::atomic<bool> g_interrupted{false};

std::int64_t monotonic_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return std::int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

Timed time_repeated(const TimingOptions& o, const std::function<void(int)>& body,
                    const std::function<void()>& before_timed) {
  int rep = 0;
  for (; rep < o.warmup_reps && !g_interrupted.load(); ++rep) body(rep);
  if (before_timed && !g_interrupted.load()) before_timed();
  Timed t;
  t.t0_ns = monotonic_ns();
  std::int64_t last = t.t0_ns;
  const auto min_ns = static_cast<std::int64_t>(o.min_time_s * 1e9);
  const auto max_ns = static_cast<std::int64_t>(o.max_time_s * 1e9);
  while (!g_interrupted.load()) {
    body(rep++);
    const std::int64_t now = monotonic_ns();
    t.rep_s.push_back(double(now - last) * 1e-9);
    last = now;
    const auto n = static_cast<int>(t.rep_s.size());
    const std::int64_t elapsed = now - t.t0_ns;
    if ((n >= o.min_reps && elapsed >= min_ns) || n >= o.max_reps || elapsed >= max_ns) break;
  }
  t.t1_ns = last;
  return t;
}

}  // namespace flopwatt

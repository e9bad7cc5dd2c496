#include "cpu/core_trip.h"

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <vector>

namespace flopwatt::cpu {

namespace {

// The ball alone on its cache line: anything else there would travel with it.
struct alignas(64) Ball {
  std::atomic<int> v{0};
  char pad[64 - sizeof(std::atomic<int>)];
};

constexpr int kGaveUp = -1;

}  // namespace

std::optional<double> core_round_trip_ns(int threads, int rounds, int trips, double budget_s) {
  if (threads < 2 || rounds < 1 || trips < 1) return std::nullopt;
  using clock = std::chrono::steady_clock;
  Ball ball;
  std::vector<double> per_trip_ns;
  int team = 0;
#pragma omp parallel num_threads(2) shared(ball, per_trip_ns, team)
  {
    const int tid = omp_get_thread_num();
#pragma omp single
    team = omp_get_num_threads();
    if (team == 2)
      for (int r = 0; r < rounds; ++r) {
        if (tid == 0) ball.v.store(0, std::memory_order_relaxed);
#pragma omp barrier
        if (tid == 0) {
          const auto t0 = clock::now();
          auto over = [&] { return std::chrono::duration<double>(clock::now() - t0).count() > budget_s; };
          bool ok = true;
          for (int i = 0; i < trips && ok; ++i) {
            ball.v.store(2 * i + 1, std::memory_order_release);
            for (unsigned spin = 1; ball.v.load(std::memory_order_acquire) != 2 * i + 2; ++spin)
              if (spin % 1024 == 0 && over()) {
                ok = false;
                break;
              }
            if (ok && i % 64 == 63 && over()) ok = false;
          }
          if (ok) per_trip_ns.push_back(std::chrono::duration<double, std::nano>(clock::now() - t0).count() / trips);
          ball.v.store(kGaveUp, std::memory_order_release);
        } else {
          for (int i = 0; i < trips; ++i) {
            int v;
            while ((v = ball.v.load(std::memory_order_acquire)) != 2 * i + 1 && v != kGaveUp) {
            }
            // Only a ball still in play is returned: thread 0 may have given up
            // since the load, and a late return would overwrite that.
            int expected = 2 * i + 1;
            if (v == kGaveUp || !ball.v.compare_exchange_strong(expected, 2 * i + 2, std::memory_order_acq_rel))
              break;
          }
        }
#pragma omp barrier
      }
  }
  if (per_trip_ns.empty() || 2 * int(per_trip_ns.size()) < rounds) return std::nullopt;
  std::sort(per_trip_ns.begin(), per_trip_ns.end());
  return per_trip_ns[per_trip_ns.size() / 2];
}

}  // namespace flopwatt::cpu

// A background thread that advances a fixture energy counter at a known power,
// as RAPL does about every millisecond, so the sampler can be checked against
// a known answer.
//
// RAPL advances in hardware whatever the CPUs are doing; a writer thread the
// scheduler delays leaves the counter stale while the code under test reads
// it, so every test with one runs alone (ALONE in tests/CMakeLists.txt). The
// thread keeps an ordinary priority: given SCHED_FIFO it made the exporter's
// 1 s power read 0 or 21 W of 15 W in 3 of 20 sanitizer runs (one of them in
// CI), and 0 of 20 without.
#pragma once
#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>

#include "fixture_tree.h"
#include "power/clock.h"

namespace flopwatt::power::testing {

class FakeCounter {
 public:
  // Writes <rel> (micro-joules) wrapping at max_uj, the powercap convention.
  FakeCounter(const FixtureTree& t, std::string rel, double watts, std::uint64_t max_uj, std::uint64_t start_uj)
      : tree_(t), rel_(std::move(rel)), watts_(watts), max_uj_(max_uj), start_uj_(start_uj) {
    t0_ = monotonic_ns();
    write_now();
    thread_ = std::thread([this] {
      while (!stop_.load()) {
        write_now();
        std::this_thread::sleep_for(std::chrono::microseconds(900));
      }
    });
  }
  ~FakeCounter() { stop(); }
  void stop() {
    if (thread_.joinable()) {
      stop_ = true;
      thread_.join();
    }
  }
  // Synchronous: once pause(true) returns no write is in flight, so a test may
  // delete the file and know the writer will not bring it back.
  void pause(bool p) {
    std::lock_guard<std::mutex> lock(write_mu_);
    paused_ = p;
  }

 private:
  void write_now() {
    std::lock_guard<std::mutex> lock(write_mu_);
    if (paused_.load()) return;
    // Energy since start from the writer's own clock, so its stalls do not change the rate.
    const double uj = watts_ * double(monotonic_ns() - t0_) * 1e-3;
    const std::uint64_t v = (start_uj_ + std::uint64_t(uj)) % (max_uj_ + 1);
    tree_.replace(rel_, std::to_string(v) + "\n");
  }
  const FixtureTree& tree_;
  std::string rel_;
  double watts_;
  std::uint64_t max_uj_, start_uj_;
  std::int64_t t0_ = 0;
  std::atomic<bool> stop_{false}, paused_{false};
  std::mutex write_mu_;
  std::thread thread_;
};

}  // namespace flopwatt::power::testing

// Items prepared on several threads are used in their own order, each made
// once, with no more than `ahead` prepared and waiting, and a throw on either
// side reaches the caller without leaving a thread behind.
#include "harness/cli/ordered_parallel.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <random>
#include <stdexcept>
#include <string>

namespace flopwatt {
namespace {

TEST(OrderedParallel, UsesEveryItemOnceInOrderWithBoundedLookahead) {
  for (const unsigned threads : {1u, 2u, 5u}) {
    constexpr std::size_t n = 300, ahead = 4;
    std::vector<std::atomic<int>> made(n);
    std::atomic<std::size_t> made_total{0};
    std::size_t used_total = 0, most_waiting = 0;
    std::vector<std::size_t> order;
    ordered_parallel<std::string>(
        n, threads, ahead,
        [&](std::size_t i) {
          ++made[i];
          // Uneven work, so later items often finish first.
          std::this_thread::sleep_for(std::chrono::microseconds((i * 7919) % 300));
          ++made_total;
          return "item " + std::to_string(i);
        },
        [&](std::size_t i, std::string item) {
          EXPECT_EQ(item, "item " + std::to_string(i));
          order.push_back(i);
          ++used_total;
          most_waiting = std::max(most_waiting, made_total.load() - used_total);
        });
    ASSERT_EQ(order.size(), n) << threads;
    for (std::size_t i = 0; i < n; ++i) {
      EXPECT_EQ(order[i], i);
      EXPECT_EQ(made[i].load(), 1) << i;
    }
    EXPECT_LE(most_waiting, ahead) << threads;
  }
}

TEST(OrderedParallel, AThrowFromMakeArrivesAtItsTurnAfterTheItemsBeforeIt) {
  std::vector<std::size_t> used;
  EXPECT_THROW(ordered_parallel<int>(
                   50, 3, 8,
                   [](std::size_t i) -> int {
                     if (i == 17) throw std::runtime_error("bad item");
                     return static_cast<int>(i);
                   },
                   [&](std::size_t i, int) { used.push_back(i); }),
               std::runtime_error);
  ASSERT_EQ(used.size(), 17u);
  EXPECT_EQ(used.back(), 16u);
}

TEST(OrderedParallel, AThrowFromUseStopsTheThreadsAndArrivesAtOnce) {
  std::atomic<std::size_t> made{0};
  EXPECT_THROW(ordered_parallel<int>(
                   100000, 2, 4, [&](std::size_t) { return static_cast<int>(++made); },
                   [](std::size_t i, int) {
                     if (i == 3) throw std::logic_error("stop");
                   }),
               std::logic_error);
  EXPECT_LE(made.load(), 4u + 4u + 2u);  // what was in flight when use threw, not the rest
}

TEST(OrderedParallel, NoItemsIsNoCall) {
  int calls = 0;
  ordered_parallel<int>(0, 4, 4, [&](std::size_t) { return ++calls; }, [&](std::size_t, int) { ++calls; });
  EXPECT_EQ(calls, 0);
}

}  // namespace
}  // namespace flopwatt

#include "power/source_watch.h"

#include <gtest/gtest.h>

#include <cmath>

#include "fake_counter.h"
#include "fixture_tree.h"
#include "power/powercap_rapl.h"

using namespace flopwatt::power;
using flopwatt::power::testing::FakeCounter;
using flopwatt::power::testing::FixtureTree;

namespace {

void zone(const FixtureTree& t, int i, const char* name) {
  const std::string d = "sys/class/powercap/intel-rapl:" + std::to_string(i) + "/";
  t.write(d + "name", std::string(name) + "\n");
  t.write(d + "max_energy_range_uj", "1000000000\n");
  t.write(d + "energy_uj", "5000\n");
}

TEST(SourceWatch, AMovingCounterHasItsPowerAndAFrozenOneDidNotChange) {
  FixtureTree t;
  zone(t, 0, "package-0");
  zone(t, 1, "psys");  // never written again: a counter that does not move
  FakeCounter fake(t, "sys/class/powercap/intel-rapl:0/energy_uj", 8.0, 1'000'000'000, 0);
  // A loaded machine can stall the fake's writer: under ASan in CI one 0.4 s
  // window read 4.7 W of the 8 written. So the best of up to three windows;
  // a watcher that misreads the counter misreads every one.
  double best = -1;
  for (int attempt = 0; attempt < 3 && std::abs(best - 8.0) > 0.8; ++attempt) {
    SCOPED_TRACE(::testing::Message() << "window " << attempt + 1);
    Discovery d;
    probe_powercap(t.root(), d);
    const auto w = watch_sources(std::move(d.sources), 0.4);
    ASSERT_EQ(w.size(), 2u);
    const SourceWatch& moving = w.at("rapl-powercap:package-0");
    EXPECT_TRUE(moving.sampled);
    EXPECT_TRUE(moving.changed);
    if (std::abs(moving.avg_power_w - 8.0) < std::abs(best - 8.0)) best = moving.avg_power_w;
    const SourceWatch& frozen = w.at("rapl-powercap:psys-0");
    EXPECT_TRUE(frozen.sampled);
    EXPECT_FALSE(frozen.changed);
    EXPECT_FALSE(frozen.interval_measured);
    EXPECT_EQ(frozen.avg_power_w, 0.0);
  }
  EXPECT_NEAR(best, 8.0, 0.8);
}

TEST(SourceWatch, NoSourcesNothingWatched) { EXPECT_TRUE(watch_sources({}, 0.1).empty()); }

}  // namespace

#include "power/source.h"

#include <gtest/gtest.h>

#include <set>

#include "fixture_tree.h"

using namespace flopwatt::power;
using flopwatt::power::testing::FixtureTree;

namespace {

std::string laptop() { return std::string(FLOPWATT_TEST_FIXTURES) + "/power/laptop"; }

const SourceStatus* status(const Discovery& d, const std::string& id) {
  for (const auto& s : d.status)
    if (s.id == id) return &s;
  return nullptr;
}

}  // namespace

TEST(Discover, EmptyRootExplainsEveryPath) {
  FixtureTree t;
  DiscoverOptions o;
  o.root = t.root();
  Discovery d = discover(o);
  EXPECT_TRUE(d.sources.empty());
  std::set<std::string> ids;
  for (const auto& s : d.status) {
    ids.insert(s.id);
    EXPECT_FALSE(s.available);
    EXPECT_FALSE(s.reason.empty()) << s.id;
    EXPECT_FALSE(s.fix.empty()) << s.id;
  }
  EXPECT_EQ(ids, (std::set<std::string>{"rapl-powercap:*", "rapl-perf:*", "rapl-msr:*", "battery:*", "hwmon:*"}));
}

TEST(Discover, LaptopFixture) {
  DiscoverOptions o;
  o.root = laptop();
  Discovery d = discover(o);
  std::set<std::string> avail;
  for (const auto& s : d.sources) avail.insert(s->id());
  EXPECT_EQ(avail, (std::set<std::string>{"rapl-powercap:package-0", "rapl-powercap:core-0", "rapl-powercap:uncore-0",
                                          "rapl-powercap:psys-0", "battery:BAT0", "battery-energy:BAT0",
                                          "hwmon:amdgpu:PPT"}));
  ASSERT_TRUE(status(d, "rapl-powercap:package-0@intel-rapl-mmio:0"));
  EXPECT_FALSE(status(d, "rapl-powercap:package-0@intel-rapl-mmio:0")->available);
  // The fixture's perf PMU type does not exist in the running kernel.
  ASSERT_TRUE(status(d, "rapl-perf:energy-pkg"));
  EXPECT_FALSE(status(d, "rapl-perf:energy-pkg")->available);
  EXPECT_NE(status(d, "rapl-msr:*")->reason.find("msr module not loaded"), std::string::npos);
  for (const auto& s : d.status) EXPECT_TRUE(s.available || !s.reason.empty()) << s.id;
}

TEST(Discover, SelectionByIdOrPrefix) {
  DiscoverOptions o;
  o.root = laptop();
  o.select = {"battery:", "rapl-powercap:package-0"};
  Discovery d = discover(o);
  std::set<std::string> ids;
  for (const auto& s : d.sources) ids.insert(s->id());
  EXPECT_EQ(ids, (std::set<std::string>{"battery:BAT0", "rapl-powercap:package-0"}));
  EXPECT_NE(status(d, "rapl-powercap:core-0")->note.find("not selected"), std::string::npos);
  EXPECT_TRUE(selected("hwmon:amdgpu:PPT", {}));
  EXPECT_FALSE(selected("hwmon:amdgpu:PPT", {"rapl"}));
}

TEST(Discover, PowerLogErrorsBecomeAStatusNotAnException) {
  FixtureTree t;
  t.write("bad.csv", "0,1\n");
  DiscoverOptions o;
  o.root = t.root();
  o.power_log = t.path("bad.csv");
  Discovery d = discover(o);
  const SourceStatus* s = status(d, "external:bad");
  ASSERT_TRUE(s);
  EXPECT_FALSE(s->available);
  EXPECT_NE(s->reason.find("bad.csv:1"), std::string::npos);
  t.write("good.csv", "# clock: relative\n0,1\n");
  o.power_log = t.path("good.csv");
  Discovery ok = discover(o);
  ASSERT_EQ(ok.sources.size(), 1u);
  EXPECT_EQ(ok.sources[0]->domain(), "wall");
}

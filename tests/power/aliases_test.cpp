#include "power/aliases.h"

#include <gtest/gtest.h>

#include <set>

#include "fixture_tree.h"
#include "power/msr_rapl.h"

using namespace flopwatt::power;
using flopwatt::power::testing::FixtureTree;

TEST(Aliases, KeysMatchTheSameRegisterAcrossInterfaces) {
  EXPECT_EQ(*rapl_counter_key("rapl-powercap:package-1", "package"), "package/1");
  EXPECT_EQ(*rapl_counter_key("rapl-perf:energy-pkg-1", "package"), "package/1");
  EXPECT_EQ(*rapl_counter_key("rapl-perf:energy-pkg", "package"), "package/0");
  EXPECT_EQ(*rapl_counter_key("rapl-msr:package-1", "package"), "package/1");
  EXPECT_EQ(*rapl_counter_key("rapl-perf:energy-psys", "psys"), "psys/0");
  EXPECT_EQ(*rapl_counter_key("rapl-msr:psys-0", "psys"), "psys/0");
  EXPECT_EQ(*rapl_counter_key("rapl-powercap:dram-0", "dram"), "dram/0");
  EXPECT_EQ(*rapl_counter_key("rapl-perf:energy-ram", "dram"), "dram/0");
  EXPECT_EQ(*rapl_counter_key("rapl-powercap:package", "package"), "package/sum");
  EXPECT_EQ(*rapl_counter_key("rapl-msr:package", "package"), "package/sum");
  // No counterpart: per-die zones, AMD's one core, the per-core PMU sum, batteries.
  EXPECT_FALSE(rapl_counter_key("rapl-powercap:package-0-die-1", "package"));
  EXPECT_FALSE(rapl_counter_key("rapl-powercap:core-0", "one-core"));
  EXPECT_FALSE(rapl_counter_key("rapl-perf:energy-core", "core"));
  EXPECT_FALSE(rapl_counter_key("battery:BAT0", "battery"));
  EXPECT_LT(rapl_view_rank("rapl-powercap:package-0"), rapl_view_rank("rapl-perf:energy-pkg"));
  EXPECT_LT(rapl_view_rank("rapl-perf:energy-pkg"), rapl_view_rank("rapl-msr:package-0"));
}

// As root on an Intel laptop both powercap and the MSR device show package-0
// and psys: one reader each, the MSR views listed as aliases.
TEST(Aliases, DiscoverSamplesPowercapAndListsTheMsrViews) {
  FixtureTree t;
  t.write("proc/cpuinfo", "processor\t: 0\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 154\n\n");
  t.write("sys/devices/system/cpu/cpu0/topology/physical_package_id", "0\n");
  t.write("sys/devices/system/cpu/cpu0/topology/core_id", "0\n");
  for (auto [dir, name] : {std::pair{"intel-rapl:0", "package-0"}, {"intel-rapl:1", "psys"}}) {
    const std::string p = std::string("sys/class/powercap/") + dir + "/";
    t.write(p + "name", std::string(name) + "\n");
    t.write(p + "energy_uj", "1000\n");
    t.write(p + "max_energy_range_uj", "262143328850\n");
  }
  const std::string msr = "dev/cpu/0/msr";
  t.write_msr(msr, msr::kIntelUnit, 0xA0E03);
  t.write_msr(msr, msr::kIntelPackage, 1000);
  t.write_msr(msr, msr::kIntelPP0, 0);
  t.write_msr(msr, msr::kIntelPP1, 0);
  t.write_msr(msr, msr::kIntelDram, 0);
  t.write_msr(msr, msr::kIntelPlatform, 3000);
  DiscoverOptions o;
  o.root = t.root();
  Discovery d = discover(o);
  std::set<std::string> ids;
  for (const auto& s : d.sources) ids.insert(s->id());
  EXPECT_TRUE(ids.count("rapl-powercap:package-0"));
  EXPECT_TRUE(ids.count("rapl-powercap:psys-0"));
  EXPECT_FALSE(ids.count("rapl-msr:package-0"));
  EXPECT_FALSE(ids.count("rapl-msr:psys-0"));
  const SourceStatus* m = nullptr;
  const SourceStatus* k = nullptr;
  for (const auto& s : d.status) {
    if (s.id == "rapl-msr:package-0") m = &s;
    if (s.id == "rapl-powercap:package-0") k = &s;
  }
  ASSERT_TRUE(m && k);
  EXPECT_FALSE(m->available);
  EXPECT_EQ(m->alias_of, "rapl-powercap:package-0");
  EXPECT_EQ(k->aliases, std::vector<std::string>{"rapl-msr:package-0"});
  EXPECT_NE(k->note.find("also seen as rapl-msr:package-0"), std::string::npos) << k->note;

  // Asked for by name, the MSR view is sampled.
  o.select = {"rapl-msr"};
  Discovery only = discover(o);
  std::set<std::string> sel;
  for (const auto& s : only.sources) sel.insert(s->id());
  EXPECT_TRUE(sel.count("rapl-msr:package-0"));
}

TEST(Aliases, ZenergySocketIsThePackageRegister) {
  EXPECT_EQ(*rapl_counter_key("hwmon:zenergy:Esocket0", "package"), "package/0");
  EXPECT_FALSE(rapl_counter_key("hwmon:zenergy:Ecore003", "one-core"));
  EXPECT_GT(rapl_view_rank("hwmon:zenergy:Esocket0"), rapl_view_rank("rapl-msr:package-0"));
}

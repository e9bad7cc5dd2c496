#include "power/powercap_rapl.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "fixture_tree.h"

using namespace flopwatt::power;
using flopwatt::power::testing::FixtureTree;

namespace {

void zone(const FixtureTree& t, const std::string& dir, const std::string& name, std::uint64_t uj,
          std::uint64_t max = 262143328850ull) {
  const std::string p = "sys/class/powercap/" + dir + "/";
  t.write(p + "name", name + "\n");
  t.write(p + "energy_uj", std::to_string(uj) + "\n");
  t.write(p + "max_energy_range_uj", std::to_string(max) + "\n");
}

const SourceStatus* find(const Discovery& d, const std::string& id) {
  for (const auto& s : d.status)
    if (s.id == id) return &s;
  return nullptr;
}

PowerSource* source(const Discovery& d, const std::string& id) {
  for (const auto& s : d.sources)
    if (s->id() == id) return s.get();
  return nullptr;
}

}  // namespace

TEST(Powercap, ZonesSubzonesIdsDomainsAndContainment) {
  FixtureTree t;
  t.write("sys/class/powercap/intel-rapl/enabled", "1\n");  // the control type, not a zone
  zone(t, "intel-rapl:0", "package-0", 1000);
  zone(t, "intel-rapl:0:0", "core", 2000);
  zone(t, "intel-rapl:0:1", "uncore", 3000);
  zone(t, "intel-rapl:0:2", "dram", 3500);
  zone(t, "intel-rapl:1", "psys", 4000);
  Discovery d;
  probe_powercap(t.root(), d);
  ASSERT_EQ(d.sources.size(), 5u);
  const SourceStatus* pkg = find(d, "rapl-powercap:package-0");
  ASSERT_TRUE(pkg);
  EXPECT_TRUE(pkg->available);
  EXPECT_EQ(pkg->domain, "package");
  EXPECT_EQ(pkg->kind, Kind::Counter);
  // Package contains core and uncore but not DRAM, a separate rail.
  EXPECT_EQ(pkg->contains, (std::vector<std::string>{"rapl-powercap:core-0", "rapl-powercap:uncore-0"}));
  ASSERT_TRUE(find(d, "rapl-powercap:core-0"));
  EXPECT_EQ(find(d, "rapl-powercap:core-0")->domain, "core");
  EXPECT_EQ(find(d, "rapl-powercap:dram-0")->domain, "dram");
  const SourceStatus* psys = find(d, "rapl-powercap:psys-0");
  ASSERT_TRUE(psys);
  EXPECT_EQ(psys->domain, "psys");
  EXPECT_EQ(psys->contains, std::vector<std::string>{"rapl-powercap:package-0"});
}

TEST(Powercap, SecondPackageSubzonesTakeItsIndex) {
  FixtureTree t;
  zone(t, "intel-rapl:0", "package-0", 1);
  zone(t, "intel-rapl:1", "package-1", 2);
  zone(t, "intel-rapl:1:0", "dram", 3);
  Discovery d;
  probe_powercap(t.root(), d);
  EXPECT_TRUE(find(d, "rapl-powercap:package-1"));
  EXPECT_TRUE(find(d, "rapl-powercap:dram-1"));
}

TEST(Powercap, MmioDuplicateIsListedButNotSampled) {
  FixtureTree t;
  zone(t, "intel-rapl:0", "package-0", 1000);
  zone(t, "intel-rapl-mmio:0", "package-0", 1000);
  Discovery d;
  probe_powercap(t.root(), d);
  ASSERT_EQ(d.sources.size(), 1u);
  EXPECT_EQ(d.sources[0]->id(), "rapl-powercap:package-0");
  const SourceStatus* dup = find(d, "rapl-powercap:package-0@intel-rapl-mmio:0");
  ASSERT_TRUE(dup);
  EXPECT_FALSE(dup->available);
  EXPECT_NE(dup->reason.find("duplicate of zone intel-rapl:0"), std::string::npos);
  EXPECT_NE(dup->reason.find("double"), std::string::npos);
}

TEST(Powercap, PerDieCopyOfAPackageCounterIsDetected) {
  FixtureTree t;
  zone(t, "intel-rapl:0", "package-0-die-0", 777777);
  zone(t, "intel-rapl:1", "package-0-die-1", 777777);  // the same counter
  zone(t, "intel-rapl:2", "package-1-die-0", 5);
  zone(t, "intel-rapl:3", "package-1-die-1", 9);       // a real second die
  Discovery d;
  probe_powercap(t.root(), d);
  EXPECT_TRUE(find(d, "rapl-powercap:package-0-die-0")->available);
  const SourceStatus* copy = find(d, "rapl-powercap:package-0-die-1");
  ASSERT_TRUE(copy);
  EXPECT_FALSE(copy->available);
  EXPECT_NE(copy->reason.find("per-die copy"), std::string::npos);
  EXPECT_TRUE(find(d, "rapl-powercap:package-1-die-1")->available);
  // Three counters, and their sum (the copy is not part of it).
  EXPECT_EQ(d.sources.size(), 4u);
  ASSERT_TRUE(find(d, "rapl-powercap:package"));
  EXPECT_EQ(find(d, "rapl-powercap:package")->sum_of,
            (std::vector<std::string>{"rapl-powercap:package-0-die-0", "rapl-powercap:package-1-die-0",
                                      "rapl-powercap:package-1-die-1"}));
}

// Two sockets (the two-packages fixture, tests/fixtures/power/two-packages):
// the package headline is their sum, not package-0 alone.
TEST(Powercap, TwoPackagesAreSummed) {
  FixtureTree t;
  zone(t, "intel-rapl:0", "package-0", 1000000);
  zone(t, "intel-rapl:1", "package-1", 5000000);
  Discovery d;
  probe_powercap(t.root(), d);
  const SourceStatus* sum = find(d, "rapl-powercap:package");
  ASSERT_TRUE(sum);
  EXPECT_TRUE(sum->available);
  EXPECT_EQ(sum->domain, "package");
  EXPECT_EQ(sum->sum_of, (std::vector<std::string>{"rapl-powercap:package-0", "rapl-powercap:package-1"}));
  PowerSource* s = source(d, "rapl-powercap:package");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->read()->value, 0.0);
  t.write("sys/class/powercap/intel-rapl:0/energy_uj", "3000000\n");  // +2 J
  t.write("sys/class/powercap/intel-rapl:1/energy_uj", "8000000\n");  // +3 J
  EXPECT_NEAR(s->read()->value, 5.0, 1e-9);
}

// drivers/powercap/intel_rapl_msr.c backs AMD's core zone with a per-core
// MSR read on the package's first CPU: one core, not all.
TEST(Powercap, AmdCoreZoneIsOneCore) {
  FixtureTree t;
  t.write("proc/cpuinfo", "processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 25\nmodel\t\t: 116\n\n");
  zone(t, "intel-rapl:0", "package-0", 1000);
  zone(t, "intel-rapl:0:0", "core", 20);
  Discovery d;
  probe_powercap(t.root(), d);
  ASSERT_TRUE(find(d, "rapl-powercap:core-0"));
  EXPECT_EQ(find(d, "rapl-powercap:core-0")->domain, "one-core");
  EXPECT_NE(find(d, "rapl-powercap:core-0")->note.find("one core's energy"), std::string::npos);
  EXPECT_FALSE(find(d, "rapl-powercap:package"));  // one socket: no sum
}

TEST(Powercap, WrapAtMaxEnergyRange) {
  FixtureTree t;
  const std::uint64_t max = 1'000'000;  // counts 0..1e6 uJ
  zone(t, "intel-rapl:0", "package-0", 900'000, max);
  Discovery d;
  probe_powercap(t.root(), d);
  PowerSource* s = source(d, "rapl-powercap:package-0");
  ASSERT_TRUE(s);
  auto a = s->read();
  ASSERT_TRUE(a);
  EXPECT_EQ(a->value, 0.0);
  t.write("sys/class/powercap/intel-rapl:0/energy_uj", "999000\n");
  EXPECT_NEAR(s->read()->value, 0.099, 1e-12);
  t.write("sys/class/powercap/intel-rapl:0/energy_uj", "49000\n");  // wrapped: +1001 + 49000 uJ
  EXPECT_NEAR(s->read()->value, 0.099 + 0.050001, 1e-12);
  t.write("sys/class/powercap/intel-rapl:0/energy_uj", "60000\n");
  EXPECT_NEAR(s->read()->value, 0.160001, 1e-12);
}

TEST(Powercap, UnreadableEnergyFileFailsTheReadNotTheProcess) {
  FixtureTree t;
  zone(t, "intel-rapl:0", "package-0", 10);
  Discovery d;
  probe_powercap(t.root(), d);
  ASSERT_EQ(d.sources.size(), 1u);
  ::unlink(t.path("sys/class/powercap/intel-rapl:0/energy_uj").c_str());
  EXPECT_FALSE(d.sources[0]->read());
  EXPECT_NE(d.sources[0]->last_error().find("ENOENT"), std::string::npos);
}

TEST(Powercap, PermissionDeniedReasonAndFix) {
  // The message itself, as an EACCES from open() produces it.
  const std::string r = powercap_read_reason(EACCES, "/sys/class/powercap/intel-rapl:0/energy_uj");
  EXPECT_NE(r.find("readable by root only"), std::string::npos);
  EXPECT_NE(r.find("CVE-2020-8694"), std::string::npos);
  // Named as it is installed, never a checkout's scripts/ (the test binary has no setup command beside it).
  EXPECT_NE(powercap_read_fix(EACCES).find("sudo flopwatt-setup-permissions ("), std::string::npos)
      << powercap_read_fix(EACCES);
  EXPECT_EQ(powercap_read_fix(EACCES).find("scripts/"), std::string::npos);
  EXPECT_EQ(powercap_read_reason(EIO, "x").find("readable by root only"), std::string::npos);
}

TEST(Powercap, PermissionDeniedThroughTheFilesystem) {
  if (geteuid() == 0)
    GTEST_SKIP() << "running as root, which ignores file modes; the unprivileged case runs in "
                    "power_process_tests (setpriv) and the message is checked above";
  FixtureTree t;
  zone(t, "intel-rapl:0", "package-0", 10);
  ::chmod(t.path("sys/class/powercap/intel-rapl:0/energy_uj").c_str(), 0);
  Discovery d;
  probe_powercap(t.root(), d);
  EXPECT_TRUE(d.sources.empty());
  ASSERT_EQ(d.status.size(), 1u);
  EXPECT_NE(d.status[0].reason.find("readable by root only"), std::string::npos);
  EXPECT_NE(d.status[0].fix.find("setup-permissions.sh"), std::string::npos);
}

TEST(Powercap, NoPowercapExplainsWhy) {
  FixtureTree t;
  Discovery d;
  probe_powercap(t.root(), d);
  ASSERT_EQ(d.status.size(), 1u);
  EXPECT_EQ(d.status[0].id, "rapl-powercap:*");
  EXPECT_FALSE(d.status[0].available);
  EXPECT_NE(d.status[0].reason.find("powercap"), std::string::npos);
  EXPECT_FALSE(d.status[0].fix.empty());

  t.write("sys/class/powercap/intel-rapl/enabled", "1\n");  // control type only, no zones
  Discovery d2;
  probe_powercap(t.root(), d2);
  ASSERT_EQ(d2.status.size(), 1u);
  EXPECT_NE(d2.status[0].reason.find("no RAPL zones"), std::string::npos);
}

// A reset from 0.9 x max_energy_range_uj to 0 (the counter-reset fixture,
// tests/fixtures/power/counter-reset): as a wrap it would be 26 kJ, far above
// twice the zone's 28 W limit over any read interval, so it is a gap.
TEST(Powercap, ResetNearTheTopOfTheRangeIsAGapNotAWrap) {
  FixtureTree t;
  const std::uint64_t max = 262143328850ull;
  zone(t, "intel-rapl:0", "package-0", max / 10 * 9, max);
  t.write("sys/class/powercap/intel-rapl:0/constraint_0_power_limit_uw", "28000000\n");
  Discovery d;
  probe_powercap(t.root(), d);
  PowerSource* s = source(d, "rapl-powercap:package-0");
  ASSERT_TRUE(s);
  EXPECT_NE(find(d, "rapl-powercap:package-0")->note.find("56 W"), std::string::npos)
      << find(d, "rapl-powercap:package-0")->note;
  ASSERT_TRUE(s->read());
  t.write("sys/class/powercap/intel-rapl:0/energy_uj", "0\n");
  EXPECT_FALSE(s->read());
  EXPECT_NE(s->last_error().find("counter reset"), std::string::npos) << s->last_error();
  t.write("sys/class/powercap/intel-rapl:0/energy_uj", "2000000\n");
  auto after = s->read();
  ASSERT_TRUE(after);
  EXPECT_NEAR(after->value, 2.0, 1e-9);  // only what came after the reset
  EXPECT_TRUE(s->last_error().empty());
}

// A firmware placeholder limit (4090 W in constraint_1_max_power_uw, seen on
// desktop boards) would bound a step at 8180 W, past the 2000 W no domain
// draws: it is ignored, and the zone's real 28 W limit bounds the step.
TEST(Powercap, FirmwareLimitAboveTheCeilingIsNoBound) {
  FixtureTree t;
  zone(t, "intel-rapl:0", "package-0", 1000000);
  t.write("sys/class/powercap/intel-rapl:0/constraint_0_power_limit_uw", "28000000\n");
  t.write("sys/class/powercap/intel-rapl:0/constraint_1_max_power_uw", "4090000000\n");
  Discovery d;
  probe_powercap(t.root(), d);
  const std::string note = find(d, "rapl-powercap:package-0")->note;
  EXPECT_NE(note.find("56 W"), std::string::npos) << note;
  EXPECT_NE(note.find("ignored as a bound"), std::string::npos) << note;
  EXPECT_EQ(note.find("8180 W"), std::string::npos) << note;
  // Only the placeholder: the plausible default, not 8 kW.
  FixtureTree t2;
  zone(t2, "intel-rapl:0", "package-0", 1000000);
  t2.write("sys/class/powercap/intel-rapl:0/constraint_0_max_power_uw", "4090000000\n");
  Discovery d2;
  probe_powercap(t2.root(), d2);
  EXPECT_NE(find(d2, "rapl-powercap:package-0")->note.find("1000 W"), std::string::npos)
      << find(d2, "rapl-powercap:package-0")->note;
}

#include "power/msr_rapl.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <cmath>
#include <map>

#include "fixture_tree.h"

using namespace flopwatt::power;
using flopwatt::power::testing::FixtureTree;

namespace {

PowerSource* source(const Discovery& d, const std::string& id) {
  for (const auto& s : d.sources)
    if (s->id() == id) return s.get();
  return nullptr;
}
const SourceStatus* status(const Discovery& d, const std::string& id) {
  for (const auto& s : d.status)
    if (s.id == id) return &s;
  return nullptr;
}

void cpuinfo(const FixtureTree& t, const std::string& vendor, int family, int model) {
  t.write("proc/cpuinfo", "processor\t: 0\nvendor_id\t: " + vendor + "\ncpu family\t: " + std::to_string(family) +
                              "\nmodel\t\t: " + std::to_string(model) + "\nmodel name\t: Test CPU\n\n");
}

void topology(const FixtureTree& t, int cpu, int pkg, int core) {
  const std::string p = "sys/devices/system/cpu/cpu" + std::to_string(cpu) + "/topology/";
  t.write(p + "physical_package_id", std::to_string(pkg) + "\n");
  t.write(p + "core_id", std::to_string(core) + "\n");
}

}  // namespace

TEST(MsrRapl, EnergyUnitFromBits12To8) {
  EXPECT_DOUBLE_EQ(rapl_energy_unit_j(0xA0E03), std::ldexp(1.0, -14));  // a common Intel value
  EXPECT_DOUBLE_EQ(rapl_energy_unit_j(0x0A1003), std::ldexp(1.0, -16)); // a common AMD value
  EXPECT_TRUE(intel_dram_fixed_unit(6, 85));
  EXPECT_FALSE(intel_dram_fixed_unit(6, 142));
}

TEST(MsrRapl, IntelDomainsAtTheirOffsets) {
  FixtureTree t;
  cpuinfo(t, "GenuineIntel", 6, 142);
  topology(t, 0, 0, 0);
  const std::string msr = "dev/cpu/0/msr";
  t.write_msr(msr, msr::kIntelUnit, 0xA0E03);
  t.write_msr(msr, msr::kIntelPackage, 1000);
  t.write_msr(msr, msr::kIntelPP0, 500);
  t.write_msr(msr, msr::kIntelPP1, 0);  // not implemented: reads 0
  t.write_msr(msr, msr::kIntelDram, 70);
  t.write_msr(msr, msr::kIntelPlatform, 3000);
  Discovery d;
  probe_msr_rapl(t.root(), d);
  ASSERT_TRUE(source(d, "rapl-msr:package-0"));
  ASSERT_TRUE(source(d, "rapl-msr:core-0"));
  ASSERT_TRUE(source(d, "rapl-msr:dram-0"));
  ASSERT_TRUE(source(d, "rapl-msr:psys-0"));
  EXPECT_FALSE(source(d, "rapl-msr:uncore-0"));
  EXPECT_NE(status(d, "rapl-msr:uncore-0")->reason.find("reads 0"), std::string::npos);
  EXPECT_EQ(status(d, "rapl-msr:package-0")->contains, std::vector<std::string>{"rapl-msr:core-0"});
  EXPECT_EQ(status(d, "rapl-msr:psys-0")->contains, std::vector<std::string>{"rapl-msr:package-0"});

  PowerSource* pkg = source(d, "rapl-msr:package-0");
  EXPECT_EQ(pkg->read()->value, 0.0);
  t.write_msr(msr, msr::kIntelPackage, 1000 + 16384);  // 16384 units of 2^-14 J
  EXPECT_DOUBLE_EQ(pkg->read()->value, 1.0);
}

TEST(MsrRapl, ThirtyTwoBitWrapAndHighBitsIgnored) {
  FixtureTree t;
  cpuinfo(t, "GenuineIntel", 6, 142);
  const std::string msr = "dev/cpu/0/msr";
  t.write_msr(msr, msr::kIntelUnit, 0xA1003);  // 2^-16 J
  t.write_msr(msr, msr::kIntelPackage, 0xABCD0000FFFFF000ull);  // reserved high bits set
  Discovery d;
  probe_msr_rapl(t.root(), d);
  PowerSource* pkg = source(d, "rapl-msr:package-0");
  ASSERT_TRUE(pkg);
  pkg->read();
  t.write_msr(msr, msr::kIntelPackage, 0xABCD000000001000ull);  // wrapped past 2^32
  EXPECT_DOUBLE_EQ(pkg->read()->value, double(0x2000) / 65536.0);
}

TEST(MsrRapl, UnimplementedRegisterPastTheFileEnd) {
  FixtureTree t;
  cpuinfo(t, "GenuineIntel", 6, 142);
  const std::string msr = "dev/cpu/0/msr";
  t.write_msr(msr, msr::kIntelUnit, 0xA0E03);
  t.write_msr(msr, msr::kIntelPackage, 77);  // file ends at 0x619: DRAM, PP0 and platform fail
  Discovery d;
  probe_msr_rapl(t.root(), d);
  EXPECT_TRUE(source(d, "rapl-msr:package-0"));
  EXPECT_FALSE(source(d, "rapl-msr:core-0"));
  EXPECT_NE(status(d, "rapl-msr:core-0")->reason.find("does not implement"), std::string::npos);
}

TEST(MsrRapl, AmdUnitAndPackageInARegularFile) {
  // AMD's registers are one apart, so in a flat file their bytes overlap: the
  // unit's energy field (byte 1) survives the package written after it, and
  // the core register (which would clobber that byte) is left out here.
  FixtureTree t;
  cpuinfo(t, "AuthenticAMD", 25, 116);
  const std::string msr = "dev/cpu/0/msr";
  t.write_msr(msr, msr::kAmdUnit, 0x0A1003);  // 2^-16 J
  t.write_msr(msr, msr::kAmdPackage, 0xFFFF0000u);
  Discovery d;
  probe_msr_rapl(t.root(), d);
  PowerSource* pkg = source(d, "rapl-msr:package-0");
  ASSERT_TRUE(pkg);
  pkg->read();
  t.write_msr(msr, msr::kAmdPackage, 0x00030000u);  // wrapped: +4 J
  EXPECT_DOUBLE_EQ(pkg->read()->value, 4.0);
}

namespace {

// Per-CPU register maps standing in for /dev/cpu/N/msr.
class FakeMsr : public MsrAccess {
 public:
  std::map<int, std::map<std::uint32_t, std::uint64_t>> regs;
  int open(int cpu) override { return regs.count(cpu) ? cpu : -ENOENT; }
  bool read(int cpu, std::uint32_t reg, std::uint64_t& v, int& err) override {
    auto it = regs[cpu].find(reg);
    if (it == regs[cpu].end()) {
      err = EIO;
      return false;
    }
    v = it->second;
    return true;
  }
  void close(int) override {}
};

}  // namespace

TEST(MsrRapl, AmdCoreEnergySumsPhysicalCoresOnly) {
  FixtureTree t;
  cpuinfo(t, "AuthenticAMD", 25, 116);
  // cpu0 and cpu2 are SMT siblings of core 0; cpu1 is core 1.
  topology(t, 0, 0, 0);
  topology(t, 1, 0, 1);
  topology(t, 2, 0, 0);
  for (int c = 0; c < 3; ++c) t.write("dev/cpu/" + std::to_string(c) + "/cpuid", "");
  auto fake = std::make_shared<FakeMsr>();
  for (int c = 0; c < 3; ++c)
    fake->regs[c] = {{msr::kAmdUnit, 0x0A1003}, {msr::kAmdPackage, 5000}, {msr::kAmdCore, std::uint64_t(100 + c)}};
  Discovery d;
  probe_msr_rapl(t.root(), d, fake);
  PowerSource* pkg = source(d, "rapl-msr:package-0");
  PowerSource* core = source(d, "rapl-msr:core-0");
  ASSERT_TRUE(pkg);
  ASSERT_TRUE(core);
  EXPECT_EQ(status(d, "rapl-msr:package-0")->contains, std::vector<std::string>{"rapl-msr:core-0"});
  EXPECT_NE(status(d, "rapl-msr:core-0")->note.find("on 2 cpu(s)"), std::string::npos);
  core->read();
  pkg->read();
  fake->regs[0][msr::kAmdCore] = 100 + 65536;
  fake->regs[1][msr::kAmdCore] = 0xFFFFFFFFull + 1 + 101 + 2 * 65536;  // bit 32 set: ignored
  fake->regs[2][msr::kAmdCore] = 102 + 1000 * 65536;  // a sibling: must not count
  fake->regs[0][msr::kAmdPackage] = 5000 + 4 * 65536;
  EXPECT_DOUBLE_EQ(core->read()->value, 3.0);
  EXPECT_DOUBLE_EQ(pkg->read()->value, 4.0);
}

TEST(MsrRapl, PermissionDeniedOnTheNode) {
  FixtureTree t;
  cpuinfo(t, "GenuineIntel", 6, 142);
  t.write("dev/cpu/0/cpuid", "");
  struct Refuse : FakeMsr {
    int open(int) override { return -EACCES; }
  };
  Discovery d;
  probe_msr_rapl(t.root(), d, std::make_shared<Refuse>());
  ASSERT_EQ(d.status.size(), 1u);
  EXPECT_NE(d.status[0].reason.find("CAP_SYS_RAWIO"), std::string::npos) << d.status[0].reason;
  EXPECT_NE(d.status[0].fix.find("setcap cap_sys_rawio+ep"), std::string::npos);
}

TEST(MsrRapl, MissingNodeSaysLoadTheModule) {
  FixtureTree t;
  cpuinfo(t, "GenuineIntel", 6, 142);
  t.write("dev/cpu/0/cpuid", "");
  Discovery d;
  probe_msr_rapl(t.root(), d);
  ASSERT_EQ(d.status.size(), 1u);
  EXPECT_EQ(d.status[0].id, "rapl-msr:*");
  EXPECT_NE(d.status[0].reason.find("msr module not loaded"), std::string::npos);
  EXPECT_NE(d.status[0].fix.find("modprobe msr"), std::string::npos);
}

TEST(MsrRapl, UnknownVendor) {
  FixtureTree t;
  cpuinfo(t, "CentaurHauls", 7, 1);
  Discovery d;
  probe_msr_rapl(t.root(), d);
  ASSERT_EQ(d.status.size(), 1u);
  EXPECT_NE(d.status[0].reason.find("CentaurHauls"), std::string::npos);
}

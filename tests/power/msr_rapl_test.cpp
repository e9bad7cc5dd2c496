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

// Units per model, as drivers/powercap/intel_rapl_common.c (rapl_ids and the
// rapl_defaults_* they point at) and arch/x86/events/rapl.c
// (rapl_check_hw_unit's quirks) convert them.
TEST(MsrRapl, IntelUnitTablePerModel) {
  const std::uint64_t reg = 0xA0E03;  // ESU 14: 2^-14 J = 61 uJ
  const double u14 = std::ldexp(1.0, -14), u16 = std::ldexp(1.0, -16);
  // Client (Alder Lake 151): everything from the register.
  for (const char* d : {"package", "core", "dram", "psys"}) EXPECT_DOUBLE_EQ(intel_domain_unit_j(6, 151, d, reg), u14);
  // Skylake-X 85, Ice Lake-X 106: DRAM fixed at 2^-16 J (15.26 uJ).
  EXPECT_DOUBLE_EQ(intel_domain_unit_j(6, 85, "dram", reg), u16);
  EXPECT_DOUBLE_EQ(intel_domain_unit_j(6, 106, "dram", reg), u16);
  EXPECT_DOUBLE_EQ(intel_domain_unit_j(6, 85, "package", reg), u14);
  // Sapphire Rapids 143, Emerald Rapids 207: DRAM from the register, psys 1 J.
  for (int m : {143, 207}) {
    EXPECT_DOUBLE_EQ(intel_domain_unit_j(6, m, "dram", reg), u14) << m;
    EXPECT_DOUBLE_EQ(intel_domain_unit_j(6, m, "psys", reg), 1.0) << m;
    EXPECT_DOUBLE_EQ(intel_domain_unit_j(6, m, "package", reg), u14) << m;
  }
  // Silvermont (55) and Airmont (76): 2^ESU uJ. ESU 5 -> 32 uJ.
  EXPECT_DOUBLE_EQ(intel_domain_unit_j(6, 55, "package", 0x505), 32e-6);
  EXPECT_DOUBLE_EQ(intel_domain_unit_j(6, 76, "core", 0x505), 32e-6);
  // Goldmont (92) uses the core rule.
  EXPECT_DOUBLE_EQ(intel_domain_unit_j(6, 92, "package", 0x505), std::ldexp(1.0, -5));
}

// A two-socket Sapphire Rapids (family 6 model 143) through the MSR files:
// 61 uJ package and DRAM counts, psys in joules, one package source per socket.
TEST(MsrRapl, SapphireRapidsTwoSockets) {
  FixtureTree t;
  cpuinfo(t, "GenuineIntel", 6, 143);
  topology(t, 0, 0, 0);
  topology(t, 1, 1, 0);
  for (int c : {0, 1}) {
    const std::string msr = "dev/cpu/" + std::to_string(c) + "/msr";
    t.write_msr(msr, msr::kIntelUnit, 0xA0E03);
    t.write_msr(msr, msr::kIntelPackage, 1000);
    t.write_msr(msr, msr::kIntelPP0, 0);
    t.write_msr(msr, msr::kIntelPP1, 0);
    t.write_msr(msr, msr::kIntelDram, 2000);
    t.write_msr(msr, msr::kIntelPlatform, 50);
  }
  Discovery d;
  probe_msr_rapl(t.root(), d);
  ASSERT_TRUE(source(d, "rapl-msr:package-0"));
  ASSERT_TRUE(source(d, "rapl-msr:package-1"));
  ASSERT_TRUE(source(d, "rapl-msr:dram-0"));
  ASSERT_TRUE(source(d, "rapl-msr:psys-0"));
  EXPECT_NE(status(d, "rapl-msr:dram-0")->note.find("61.03"), std::string::npos) << status(d, "rapl-msr:dram-0")->note;
  EXPECT_NE(status(d, "rapl-msr:psys-0")->note.find("1e+06 uJ"), std::string::npos) << status(d, "rapl-msr:psys-0")->note;
  PowerSource* dram = source(d, "rapl-msr:dram-0");
  PowerSource* psys = source(d, "rapl-msr:psys-0");
  dram->read();
  psys->read();
  t.write_msr("dev/cpu/0/msr", msr::kIntelDram, 2000 + 16384);
  t.write_msr("dev/cpu/0/msr", msr::kIntelPlatform, 50 + 3);
  EXPECT_DOUBLE_EQ(dram->read()->value, 1.0);
  EXPECT_DOUBLE_EQ(psys->read()->value, 3.0);
  // Two sockets: their sum.
  PowerSource* sum = source(d, "rapl-msr:package");
  ASSERT_TRUE(sum);
  EXPECT_EQ(status(d, "rapl-msr:package")->sum_of, (std::vector<std::string>{"rapl-msr:package-0", "rapl-msr:package-1"}));
  sum->read();
  t.write_msr("dev/cpu/0/msr", msr::kIntelPackage, 1000 + 16384);
  t.write_msr("dev/cpu/1/msr", msr::kIntelPackage, 1000 + 2 * 16384);
  EXPECT_DOUBLE_EQ(sum->read()->value, 3.0);
}

// A reset from high in the 32-bit range to 0: as a wrap it would be
// 0.1 x 2^32 x 61 uJ = 26 kJ, far above 1 kW over any read interval.
TEST(MsrRapl, ResetIsAGapNotAWrap) {
  FixtureTree t;
  cpuinfo(t, "GenuineIntel", 6, 142);
  const std::string msr = "dev/cpu/0/msr";
  t.write_msr(msr, msr::kIntelUnit, 0xA0E03);
  t.write_msr(msr, msr::kIntelPackage, 0xE6666666ull);  // 0.9 x 2^32
  Discovery d;
  probe_msr_rapl(t.root(), d);
  PowerSource* pkg = source(d, "rapl-msr:package-0");
  ASSERT_TRUE(pkg);
  ASSERT_TRUE(pkg->read());
  t.write_msr(msr, msr::kIntelPackage, 0);
  EXPECT_FALSE(pkg->read());
  EXPECT_NE(pkg->last_error().find("counter reset"), std::string::npos) << pkg->last_error();
  t.write_msr(msr, msr::kIntelPackage, 16384);
  EXPECT_DOUBLE_EQ(pkg->read()->value, 1.0);
}

#include "power/hwmon.h"

#include <gtest/gtest.h>

#include <set>

#include "fixture_tree.h"

using namespace flopwatt::power;
using flopwatt::power::testing::FixtureTree;

namespace {

const SourceStatus* status(const Discovery& d, const std::string& id) {
  for (const auto& s : d.status)
    if (s.id == id) return &s;
  return nullptr;
}
PowerSource* source(const Discovery& d, const std::string& id) {
  for (const auto& s : d.sources)
    if (s->id() == id) return s.get();
  return nullptr;
}

void apu(const FixtureTree& t) {
  const std::string p = "sys/class/hwmon/hwmon3/";
  t.write(p + "name", "amdgpu\n");
  t.write(p + "power1_input", "14000000\n");
  t.write(p + "power1_average", "13000000\n");
  t.write(p + "power1_label", "PPT\n");
  t.write(p + "temp1_input", "47000\n");
  t.write(p + "temp1_label", "edge\n");
  // gpu_metrics header: size (u16), format revision 2 (APU table), content revision.
  t.write(p + "device/gpu_metrics", std::string("\x60\x00\x02\x01", 4));
}

}  // namespace

TEST(Hwmon, SysfsChannelsPreferInputOverAverage) {
  FixtureTree t;
  apu(t);
  auto ch = scan_hwmon_sysfs(t.root());
  ASSERT_EQ(ch.size(), 2u);
  const HwmonChannel* p = nullptr;
  for (const auto& c : ch)
    if (c.type == HwmonChannel::Type::Power) p = &c;
  ASSERT_TRUE(p);
  EXPECT_EQ(p->chip, "amdgpu");
  EXPECT_EQ(p->label, "PPT");
  EXPECT_NE(p->path.find("power1_input"), std::string::npos);
  EXPECT_DOUBLE_EQ(read_hwmon_channel(*p).value(), 14.0);
  EXPECT_EQ(hwmon_domain(*p), "package");
}

TEST(Hwmon, ProbeApuPptAsPackageGauge) {
  FixtureTree t;
  apu(t);
  Discovery d;
  probe_hwmon(t.root(), d);
  PowerSource* s = source(d, "hwmon:amdgpu:PPT");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->kind(), Kind::Gauge);
  EXPECT_EQ(s->domain(), "package");
  EXPECT_DOUBLE_EQ(s->read()->value, 14.0);
  EXPECT_NE(status(d, "hwmon:amdgpu:PPT")->note.find("sysfs"), std::string::npos);
}

TEST(Hwmon, DiscreteGpuIsNotThePackage) {
  FixtureTree t;
  t.write("sys/class/hwmon/hwmon0/name", "amdgpu\n");
  t.write("sys/class/hwmon/hwmon0/power1_average", "95000000\n");
  t.write("sys/class/hwmon/hwmon0/power1_label", "PPT\n");
  t.write("sys/class/hwmon/hwmon0/device/gpu_metrics", std::string("\x60\x00\x01\x03", 4));
  Discovery d;
  probe_hwmon(t.root(), d);
  ASSERT_TRUE(source(d, "hwmon:amdgpu:PPT"));
  EXPECT_EQ(source(d, "hwmon:amdgpu:PPT")->domain(), "gpu");
  EXPECT_DOUBLE_EQ(source(d, "hwmon:amdgpu:PPT")->read()->value, 95.0);
}

TEST(Hwmon, EnergyCounterAndDuplicateChipNames) {
  FixtureTree t;
  for (int i : {0, 1}) {
    const std::string p = "sys/class/hwmon/hwmon" + std::to_string(i) + "/";
    t.write(p + "name", "amd_energy\n");
    t.write(p + "energy1_input", "1000000\n");
    t.write(p + "energy1_label", "Esocket0\n");
    t.write(p + "energy2_input", "5000\n");
    t.write(p + "energy2_label", "Ecore000\n");
  }
  Discovery d;
  probe_hwmon(t.root(), d);
  PowerSource* s0 = source(d, "hwmon:amd_energy:Esocket0");
  ASSERT_TRUE(s0);
  ASSERT_TRUE(source(d, "hwmon:amd_energy-1:Esocket0"));
  EXPECT_EQ(s0->kind(), Kind::Counter);
  EXPECT_EQ(s0->domain(), "package");
  EXPECT_EQ(source(d, "hwmon:amd_energy:Ecore000")->domain(), "one-core");  // one core, not all
  EXPECT_EQ(s0->read()->value, 0.0);
  t.write("sys/class/hwmon/hwmon0/energy1_input", "3500000\n");
  EXPECT_NEAR(s0->read()->value, 2.5, 1e-9);
}

TEST(Hwmon, AttributesUnderDeviceForOldDrivers) {
  FixtureTree t;
  t.write("sys/class/hwmon/hwmon0/device/name", "oldchip\n");
  t.write("sys/class/hwmon/hwmon0/device/power1_input", "2000000\n");
  Discovery d;
  probe_hwmon(t.root(), d);
  ASSERT_TRUE(source(d, "hwmon:oldchip:power1"));
  EXPECT_EQ(source(d, "hwmon:oldchip:power1")->domain(), "device");
}

TEST(Hwmon, ChipsWithoutPowerChannelsAreNamed) {
  FixtureTree t;
  t.write("sys/class/hwmon/hwmon0/name", "k10temp\n");
  t.write("sys/class/hwmon/hwmon0/temp1_input", "50000\n");
  Discovery d;
  probe_hwmon(t.root(), d);
  EXPECT_TRUE(d.sources.empty());
  ASSERT_EQ(d.status.size(), 1u);
  EXPECT_EQ(d.status[0].id, "hwmon:*");
  EXPECT_NE(d.status[0].reason.find("chips: k10temp"), std::string::npos);

  FixtureTree empty;
  Discovery d2;
  probe_hwmon(empty.root(), d2);
  ASSERT_EQ(d2.status.size(), 1u);
  EXPECT_NE(d2.status[0].reason.find("no hwmon chips"), std::string::npos);
}

// Strix and Krackan Point APUs publish gpu_metrics format revision 3
// (gpu_metrics_v3_0 in drivers/gpu/drm/amd/include/kgd_pp_interface.h).
TEST(Hwmon, GpuMetricsFormatThreeIsAnApu) {
  FixtureTree t;
  apu(t);
  t.write("sys/class/hwmon/hwmon3/device/gpu_metrics", std::string("\x08\x01\x03\x00", 4));
  Discovery d;
  probe_hwmon(t.root(), d);
  ASSERT_TRUE(source(d, "hwmon:amdgpu:PPT"));
  EXPECT_EQ(source(d, "hwmon:amdgpu:PPT")->domain(), "package");
  EXPECT_EQ(status(d, "hwmon:amdgpu:PPT")->note.find("discrete"), std::string::npos);
}

TEST(Hwmon, GarbageAndImpossiblePowerAreNotReadings) {
  FixtureTree t;
  apu(t);
  Discovery d;
  probe_hwmon(t.root(), d);
  PowerSource* s = source(d, "hwmon:amdgpu:PPT");
  ASSERT_TRUE(s);
  for (const char* bad : {"9223372036854775807\n", "14000000abc\n", "99999999999999999999999\n"}) {
    t.write("sys/class/hwmon/hwmon3/power1_input", bad);
    EXPECT_FALSE(s->read()) << bad;
    EXPECT_FALSE(s->last_error().empty()) << bad;
  }
  t.write("sys/class/hwmon/hwmon3/power1_input", "14000000\n");
  EXPECT_DOUBLE_EQ(s->read()->value, 14.0);
}

namespace {

// amdgpu's hwmon attributes as drivers/gpu/drm/amd/pm/amdgpu_pm.c shows them
// (hwmon_attributes_visible): a board of its own has a fan, mclk (freq2) and
// junction/memory temperatures; an APU has vddnb (in1) and none of those.
void amdgpu_chip(const FixtureTree& t, const std::string& hw, bool apu) {
  const std::string p = "sys/class/hwmon/" + hw + "/";
  t.write(p + "name", "amdgpu\n");
  t.write(p + "power1_average", apu ? "14000000\n" : "52000000\n");
  t.write(p + "power1_label", "PPT\n");
  t.write(p + "temp1_input", "45000\n");
  if (apu) {
    t.write(p + "in1_input", "1000\n");
    t.write(p + "in1_label", "vddnb\n");
  } else {
    t.write(p + "fan1_input", "800\n");
    t.write(p + "pwm1", "80\n");
    t.write(p + "freq2_input", "96000000\n");
    t.write(p + "temp2_input", "50000\n");
  }
}

}  // namespace

TEST(Hwmon, AmdgpuWithoutGpuMetricsIsClassedByTheAttributesTheDriverShows) {
  FixtureTree t;
  amdgpu_chip(t, "hwmon1", false);
  amdgpu_chip(t, "hwmon2", true);
  Discovery d;
  probe_hwmon(t.root(), d);
  ASSERT_TRUE(source(d, "hwmon:amdgpu:PPT"));
  ASSERT_TRUE(source(d, "hwmon:amdgpu-1:PPT"));
  EXPECT_EQ(source(d, "hwmon:amdgpu:PPT")->domain(), "gpu");
  EXPECT_EQ(source(d, "hwmon:amdgpu-1:PPT")->domain(), "package");
  EXPECT_NE(status(d, "hwmon:amdgpu:PPT")->note.find("discrete GPU (fan1_input"), std::string::npos)
      << status(d, "hwmon:amdgpu:PPT")->note;
  EXPECT_NE(status(d, "hwmon:amdgpu-1:PPT")->note.find("APU (in1 vddnb"), std::string::npos)
      << status(d, "hwmon:amdgpu-1:PPT")->note;
}

TEST(Hwmon, DeviceClassFromDriverAndBus) {
  FixtureTree t;
  // drivers/gpu/drm/i915/i915_hwmon.c: discrete boards only.
  t.write("sys/class/hwmon/hwmon0/name", "i915\n");
  t.write("sys/class/hwmon/hwmon0/energy1_input", "123456789\n");
  // An unlabelled channel of a board sensor (drivers/hwmon/acpi_power_meter.c).
  t.write("sys/class/hwmon/hwmon1/name", "acpi_power_meter\n");
  t.write("sys/class/hwmon/hwmon1/power1_average", "270000000\n");
  // An unknown driver under a PCI display device (class 0x030000).
  t.write("sys/class/hwmon/hwmon2/name", "someboard\n");
  t.write("sys/class/hwmon/hwmon2/power1_input", "30000000\n");
  t.write("sys/class/hwmon/hwmon2/device/class", "0x030000\n");
  // And one with nothing to tell.
  t.write("sys/class/hwmon/hwmon3/name", "mystery\n");
  t.write("sys/class/hwmon/hwmon3/power1_input", "30000000\n");
  Discovery d;
  probe_hwmon(t.root(), d);
  ASSERT_TRUE(source(d, "hwmon:i915:energy1"));
  EXPECT_EQ(source(d, "hwmon:i915:energy1")->domain(), "gpu");
  EXPECT_EQ(source(d, "hwmon:acpi_power_meter:power1")->domain(), "platform");
  EXPECT_EQ(source(d, "hwmon:someboard:power1")->domain(), "gpu");
  EXPECT_EQ(source(d, "hwmon:mystery:power1")->domain(), "device");
  EXPECT_NE(status(d, "hwmon:mystery:power1")->note.find("never the headline"), std::string::npos);
}

// Two channels of one chip with one label: each keeps its channel in the id.
TEST(Hwmon, ChannelsWithOneLabelGetIdsOfTheirOwn) {
  FixtureTree t;
  const std::string p = "sys/class/hwmon/hwmon0/";
  t.write(p + "name", "nct7802\n");
  t.write(p + "power1_input", "10000000\n");
  t.write(p + "power1_label", "CPU\n");
  t.write(p + "power2_input", "20000000\n");
  t.write(p + "power2_label", "CPU\n");
  t.write(p + "power3_input", "5000000\n");
  t.write(p + "power3_label", "SoC\n");
  Discovery d;
  probe_hwmon(t.root(), d);
  ASSERT_TRUE(source(d, "hwmon:nct7802:CPU:power1"));
  ASSERT_TRUE(source(d, "hwmon:nct7802:CPU:power2"));
  EXPECT_TRUE(source(d, "hwmon:nct7802:SoC"));
  EXPECT_FALSE(source(d, "hwmon:nct7802:CPU"));
  EXPECT_DOUBLE_EQ(source(d, "hwmon:nct7802:CPU:power2")->read()->value, 20.0);
  std::set<std::string> ids;
  for (const auto& s : d.status) EXPECT_TRUE(ids.insert(s.id).second) << "duplicate id " << s.id;
}

#include "power/headline.h"

#include <gtest/gtest.h>

using namespace flopwatt::power;

namespace {

HeadlineCandidate cand(std::string id, std::string domain, ChargeState c = ChargeState::NotBattery,
                       bool low = false) {
  HeadlineCandidate h;
  h.id = std::move(id);
  h.domain = std::move(domain);
  h.charge = c;
  h.has_energy = true;
  h.low_confidence = low;
  if (low) h.why_low = "window 0.8 s < 3 x 1.0 s update interval";
  return h;
}

}  // namespace

// The laptop on mains: BAT0 charging at 4 W next to a package counter.
TEST(Headline, ChargingBatteryNeverHeadlines) {
  auto c = choose_headline({cand("battery:BAT0", "battery", ChargeState::Charging),
                            cand("rapl-powercap:package-0", "package")});
  ASSERT_TRUE(c.source);
  EXPECT_EQ(*c.source, "rapl-powercap:package-0");
  EXPECT_FALSE(c.runner_up);
  EXPECT_NE(c.why.find("battery:BAT0: charging"), std::string::npos) << c.why;
}

TEST(Headline, IdleOrUnknownBatteryNeverHeadlinesEvenAlone) {
  for (auto st : {ChargeState::Idle, ChargeState::Unknown, ChargeState::Charging, ChargeState::Changed}) {
    auto c = choose_headline({cand("battery:BAT0", "battery", st)});
    EXPECT_FALSE(c.source) << to_string(st);
    EXPECT_NE(c.why.find("no source qualifies"), std::string::npos);
  }
}

TEST(Headline, DischargingBatteryHeadlinesOnlyWithoutAWiderAdequateSource) {
  auto alone = choose_headline({cand("battery:BAT0", "battery", ChargeState::Discharging),
                                cand("rapl-powercap:core-0", "core")});
  EXPECT_EQ(*alone.source, "battery:BAT0");
  EXPECT_EQ(*alone.runner_up, "rapl-powercap:core-0");
  // On battery a short window is low confidence for the 1-15 s gauge; psys is a 1 ms counter.
  auto with_psys = choose_headline({cand("battery:BAT0", "battery", ChargeState::Discharging, true),
                                    cand("rapl-powercap:psys-0", "psys")});
  EXPECT_EQ(*with_psys.source, "rapl-powercap:psys-0");
  EXPECT_EQ(*with_psys.runner_up, "battery:BAT0");
  EXPECT_FALSE(with_psys.low_confidence);
}

TEST(Headline, WidestAdequateWinsOverWiderLowConfidence) {
  auto c = choose_headline({cand("wall:meter", "wall", ChargeState::NotBattery, true),
                            cand("rapl-powercap:package-0", "package")});
  EXPECT_EQ(*c.source, "rapl-powercap:package-0");
  EXPECT_EQ(*c.runner_up, "wall:meter");
  EXPECT_NE(c.why.find("wall:meter: low confidence"), std::string::npos) << c.why;
}

TEST(Headline, OrderIsWallPsysPackageBattery) {
  std::vector<HeadlineCandidate> v = {cand("battery:BAT0", "battery", ChargeState::Discharging),
                                      cand("rapl-powercap:package-0", "package"),
                                      cand("rapl-powercap:psys-0", "psys"), cand("wall:meter", "wall")};
  EXPECT_EQ(*choose_headline(v).source, "wall:meter");
  EXPECT_EQ(*choose_headline(v).runner_up, "rapl-powercap:psys-0");
  v.pop_back();
  EXPECT_EQ(*choose_headline(v).source, "rapl-powercap:psys-0");
  v.pop_back();
  EXPECT_EQ(*choose_headline(v).source, "rapl-powercap:package-0");
  EXPECT_EQ(*choose_headline(v).runner_up, "battery:BAT0");
}

TEST(Headline, NothingAdequateFallsBackToWidestWithEnergyMarkedLow) {
  auto c = choose_headline({cand("rapl-powercap:package-0", "package", ChargeState::NotBattery, true),
                            cand("battery:BAT0", "battery", ChargeState::Discharging, true)});
  EXPECT_EQ(*c.source, "rapl-powercap:package-0");
  EXPECT_TRUE(c.low_confidence);
}

TEST(Headline, SumReplacesItsParts) {
  auto sum = cand("rapl-powercap:package", "package");
  sum.summed = true;
  sum.parts = {"rapl-powercap:package-0", "rapl-powercap:package-1"};
  auto c = choose_headline({cand("rapl-powercap:package-0", "package"), sum, cand("rapl-powercap:package-1", "package")});
  EXPECT_EQ(*c.source, "rapl-powercap:package");
  EXPECT_FALSE(c.runner_up);  // the parts are not alternatives to their own sum
  EXPECT_NE(c.why.find("rapl-powercap:package-1: part of rapl-powercap:package"), std::string::npos);

  auto bsum = cand("battery:sum", "battery", ChargeState::Discharging);
  bsum.summed = true;
  bsum.parts = {"battery:BAT0", "battery:BAT1"};
  auto b = choose_headline({cand("battery:BAT0", "battery", ChargeState::Idle),
                            cand("battery:BAT1", "battery", ChargeState::Discharging), bsum});
  EXPECT_EQ(*b.source, "battery:sum");
}

TEST(Headline, NoEnergyAndDomainFilter) {
  auto p = cand("rapl-powercap:psys-0", "psys");
  p.has_energy = false;
  auto c = choose_headline({p, cand("rapl-powercap:package-0", "package")});
  EXPECT_EQ(*c.source, "rapl-powercap:package-0");
  auto only = choose_headline({cand("rapl-powercap:psys-0", "psys"), cand("rapl-powercap:core-0", "core")}, "core");
  EXPECT_EQ(*only.source, "rapl-powercap:core-0");
  EXPECT_NE(only.rule.find("--headline-domain"), std::string::npos);
}

// One discharging battery read two ways: the power_now gauge before the
// energy_now-delta estimate (the id order alone put "battery-energy:" first).
TEST(Headline, BatteryPowerGaugeBeforeItsEnergyDeltaEstimate) {
  auto c = choose_headline({cand("battery-energy:BAT0", "battery", ChargeState::Discharging),
                            cand("battery:BAT0", "battery", ChargeState::Discharging)});
  ASSERT_TRUE(c.source);
  EXPECT_EQ(*c.source, "battery:BAT0");
  EXPECT_EQ(*c.runner_up, "battery-energy:BAT0");
}

namespace {

HeadlineCandidate measured(std::string id, std::string domain, double w, double fpj,
                           ChargeState c = ChargeState::NotBattery) {
  HeadlineCandidate h = cand(std::move(id), std::move(domain), c);
  h.avg_power_w = w;
  h.flop_per_j = fpj;
  return h;
}

}  // namespace

// A weak charger: the adapter is online and the battery still discharges,
// covering only the deficit (Documentation/ABI/testing/sysfs-class-power).
// Its gauge is a partial draw: 27.9 GFLOP/J came out of one such run.
TEST(Headline, DischargingBatteryOnMainsIsAPartialDrawNeverTheHeadline) {
  HeadlineCandidate bat = measured("battery:BAT0", "battery", 3.0, 27.9e9, ChargeState::Discharging);
  bat.on_mains = true;
  const Usability u = figure_usability(bat);
  EXPECT_FALSE(u.usable);
  EXPECT_NE(u.why.find("adapter is online"), std::string::npos) << u.why;
  auto c = choose_headline({bat});
  EXPECT_FALSE(c.source) << c.why;
  bat.on_mains = false;  // unplugged: the machine runs from the battery alone
  EXPECT_EQ(*choose_headline({bat}).source, "battery:BAT0");
  bat.on_mains.reset();  // no adapter at all, discharging: the same
  EXPECT_EQ(*choose_headline({bat}).source, "battery:BAT0");
}

// power_now written in mW where the ABI says uW: 12 W reads as 0.012 W.
TEST(Headline, PowerBelowTheLoadFloorIsNoHeadline) {
  auto c = choose_headline({measured("battery:BAT0", "battery", 0.0125, 9.7e12, ChargeState::Discharging),
                            measured("rapl-powercap:core-0", "core", 6, 2e10)});
  ASSERT_TRUE(c.source);
  EXPECT_EQ(*c.source, "rapl-powercap:core-0");
  EXPECT_NE(c.why.find("below the 0.5 W"), std::string::npos) << c.why;
  // A VM's package counter creeping at 1 mW.
  EXPECT_FALSE(figure_usability(measured("rapl-powercap:package-0", "package", 0.001, 1.27e14)).usable);
  // Narrower domains (a core, DRAM) may draw little: no floor for them.
  EXPECT_TRUE(figure_usability(measured("rapl-powercap:dram-0", "dram", 0.2, 5e10)).usable);
}

TEST(Headline, ACounterThatDoesNotAdvanceDuringLoadIsUnavailable) {
  const Usability u = figure_usability(measured("rapl-powercap:package-0", "package", 0.0, 0));
  EXPECT_FALSE(u.usable);
  EXPECT_NE(u.why.find("does not advance: a VM or a disabled counter"), std::string::npos) << u.why;
  HeadlineCandidate idle = measured("rapl-powercap:package-0", "package", 0.0, 0);
  idle.under_load = false;  // an idle window may draw nothing measurable
  EXPECT_TRUE(figure_usability(idle).usable);
}

// A 5 ms window on a powercap counter that had not ticked yet: 0 J, once
// taken as the headline "with adequate confidence" for a core or uncore domain.
TEST(Headline, ZeroJoulesUnderLoadIsNoHeadlineForAnyDomain) {
  const auto c = choose_headline({measured("rapl-powercap:uncore-0", "uncore", 0.0, 0)});
  EXPECT_FALSE(c.source) << *c.source;
  const Usability u = figure_usability(measured("rapl-powercap:core-0", "core", 0.0, 0));
  EXPECT_FALSE(u.usable);
  EXPECT_NE(u.why.find("0 J over the window"), std::string::npos) << u.why;
}

TEST(Headline, PowerAboveTheCeilingAndFlopPerJouleAboveTheDeviceBoundAreNoHeadline) {
  EXPECT_FALSE(figure_usability(measured("rapl-powercap:package-0", "package", 15000, 1e8)).usable);
  const Usability cpu = figure_usability(measured("rapl-powercap:package-0", "package", 15, 2e12));
  EXPECT_FALSE(cpu.usable);
  EXPECT_NE(cpu.why.find("no CPU reaches"), std::string::npos) << cpu.why;
  HeadlineCandidate npu = measured("rapl-powercap:package-0", "package", 15, 2e12);
  npu.device = device_class_of_backend("npu:xdna");
  EXPECT_TRUE(figure_usability(npu).usable);  // within what an NPU may reach
  npu.flop_per_j = 2e13;
  EXPECT_FALSE(figure_usability(npu).usable);
  EXPECT_EQ(device_class_of_backend("cpu:onednn"), DeviceClass::Cpu);
}

// A physics refusal of the widest source hands the headline to the next one.
TEST(Headline, ARefusedWiderSourceFallsThroughToTheNextUsable) {
  auto c = choose_headline({measured("rapl-powercap:psys-0", "psys", 0.0, 0),
                            measured("rapl-powercap:package-0", "package", 14, 3e9)});
  ASSERT_TRUE(c.source);
  EXPECT_EQ(*c.source, "rapl-powercap:package-0");
  EXPECT_NE(c.why.find("rapl-powercap:psys-0: does not advance"), std::string::npos) << c.why;
}

// A desktop whose RAPL is root-only: a discrete GPU's board power (52 W,
// amdgpu power1) was the headline of a CPU GEMM with confidence "ok"; an
// unlabelled platform sensor (270 W) was too when RAPL had frozen.
TEST(Headline, ADeviceBesideTheCpuIsNeverTheHeadlineOfCpuWork) {
  for (const char* domain : {"gpu", "platform", "storage", "device"}) {
    const HeadlineCandidate c = measured(std::string("hwmon:x:") + domain, domain, 52, 2e9);
    const Usability u = figure_usability(c);
    EXPECT_FALSE(u.usable) << domain;
    EXPECT_NE(u.why.find("not the CPU's work"), std::string::npos) << u.why;
    EXPECT_FALSE(choose_headline({c}).source) << domain;
    EXPECT_FALSE(choose_headline({c}, domain).source) << domain << " even when asked for by domain";
  }
  // Beside a frozen package counter, nothing qualifies: no figure rather than the GPU's.
  const auto c = choose_headline({measured("rapl-powercap:package-0", "package", 0.0, 0),
                                  measured("hwmon:amdgpu:PPT", "gpu", 52, 2e9)});
  EXPECT_FALSE(c.source);
  EXPECT_NE(c.why.find("hwmon:amdgpu:PPT: a discrete GPU's power"), std::string::npos) << c.why;
  // The GPU's own work may take its board's power.
  HeadlineCandidate gpu = measured("hwmon:amdgpu:PPT", "gpu", 52, 2e10);
  gpu.device = device_class_of_backend("gpu:rocm");
  EXPECT_TRUE(figure_usability(gpu).usable);
  EXPECT_TRUE(domain_measures("package", DeviceClass::Cpu));
  EXPECT_FALSE(domain_measures("gpu", DeviceClass::Npu));
}

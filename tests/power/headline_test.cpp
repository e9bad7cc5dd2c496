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

// Discovery, the supply state and the headline rule on recordings of real
// machines (tests/fixtures/real/<name>, each with a README naming its public
// source and what a correct tool reports for it). The end-to-end check of the
// same ground truth through `flopwatt sources` and `flopwatt run gemm` is
// tests/harness/cli/real_recordings_test.cpp.
#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <set>

#include "power/headline.h"
#include "power/hwmon.h"
#include "power/power_state.h"
#include "power/source.h"
#include "power/supply_track.h"

using namespace flopwatt::power;

namespace {

std::string recording(const std::string& name) { return std::string(FLOPWATT_TEST_FIXTURES) + "/real/" + name; }

struct Seen {
  Discovery d;
  SupplyTrack track;
  std::map<std::string, const SourceStatus*> status;
};

std::unique_ptr<Seen> look(const std::string& name) {
  auto s = std::make_unique<Seen>();
  DiscoverOptions o;
  o.root = recording(name);
  s->d = discover(o);
  for (const auto& x : s->d.status) s->status[x.id] = &x;
  s->track.poll(o.root, 1000);
  s->track.poll(o.root, 2000);
  return s;
}

// The power_supply state of a recording whose adapter is offline (or not
// recorded) and whose one battery is discharging, as a laptop on battery.
std::optional<PowerState> discharging_alone(const std::string& name) {
  auto ps = read_power_state(recording(name));
  EXPECT_TRUE(ps && ps->ac_online) << name;
  if (!ps || !ps->ac_online) return std::nullopt;
  EXPECT_FALSE(*ps->ac_online) << name;
  EXPECT_EQ(ps->batteries.size(), 1u) << name;
  if (ps->batteries.size() != 1) return std::nullopt;
  EXPECT_EQ(ps->batteries[0].status, BatteryStatus::Discharging) << name;
  return ps;
}

// One window of CPU work under load as the harness would judge it: each
// sampled source with the power its recording reads (a counter read twice
// from a recording does not advance: 0 W) and a GEMM's 1 GFLOP/J-scale figure.
HeadlineChoice cpu_headline(const Seen& s) {
  std::vector<HeadlineCandidate> c;
  for (const auto& src : s.d.sources) {
    HeadlineCandidate h;
    h.id = src->id();
    h.domain = src->domain();
    h.has_energy = true;
    const auto v = src->read();
    h.avg_power_w = src->kind() == Kind::Gauge && v ? v->value : 0.0;
    h.flop_per_j = *h.avg_power_w > 0 ? 1e10 / *h.avg_power_w : 0.0;
    if (h.domain == "battery") h.charge = s.track.batteries_state_over({h.id.substr(h.id.find(':') + 1)}, 1000, 2000);
    if (const auto sup = s.track.supply_over(1000, 2000); sup != Supply::Unknown) h.on_mains = sup == Supply::Mains;
    c.push_back(h);
  }
  return choose_headline(c);
}

}  // namespace

// Five discrete Radeon boards recorded by amdgpu-sysfs-rs: each one's PPT is a
// source of domain gpu, classed from what amdgpu shows only on boards of their
// own, and never the headline of CPU work.
TEST(RealRecordings, DiscreteRadeonBoardsAreGpusNeverTheCpuHeadline) {
  struct Board {
    const char* name;
    double watts;
    const char* evidence;
  };
  for (const Board& b : {Board{"amdgpu-rx6900xt", 36.0, "gpu_metrics format 1"},
                         Board{"amdgpu-rx7600s", 1.0, "gpu_metrics format 1"},
                         Board{"amdgpu-rx9070xt", 19.0, "freq2_input"},
                         Board{"amdgpu-rx580", 41.045, "fan1_input"},
                         Board{"amdgpu-vega56", 8.0, "fan1_input"}}) {
    auto s = look(b.name);
    ASSERT_TRUE(s->status.count("hwmon:amdgpu:PPT")) << b.name;
    const SourceStatus& st = *s->status.at("hwmon:amdgpu:PPT");
    EXPECT_TRUE(st.available) << b.name << ": " << st.reason;
    EXPECT_EQ(st.domain, "gpu") << b.name;
    EXPECT_NE(st.note.find(std::string("discrete GPU (") + b.evidence), std::string::npos) << b.name << ": " << st.note;
    ASSERT_EQ(s->d.sources.size(), 1u) << b.name;
    EXPECT_NEAR(s->d.sources[0]->read()->value, b.watts, 1e-9) << b.name;
    const HeadlineChoice h = cpu_headline(*s);
    EXPECT_FALSE(h.source) << b.name << ": " << *h.source;
    EXPECT_NE(h.why.find("a discrete GPU's power, not the CPU's work"), std::string::npos) << h.why;
    EXPECT_FALSE(read_power_state(recording(b.name))) << b.name << ": no power_supply recorded";
  }
}

// A ThinkPad battery (LGC LNV-45N1) discharging at 5.0 W with the adapter
// offline, beside a package zone whose firmware fills both power limits with
// 4090 W (recorded by node_exporter's fixture).
TEST(RealRecordings, ThinkpadOnBatteryWithAFirmwareLimitPlaceholder) {
  auto s = look("thinkpad-45n1");
  const auto ps = discharging_alone("thinkpad-45n1");
  ASSERT_TRUE(ps);
  EXPECT_NEAR(*ps->battery_percent, 100.0 * 36.58 / 45.07, 1e-6);
  EXPECT_EQ(*s->track.first_supply(), Supply::Battery);
  for (const char* id : {"battery:BAT0", "battery-energy:BAT0", "rapl-powercap:package-0", "rapl-powercap:core-0"})
    EXPECT_TRUE(s->status.count(id) && s->status.at(id)->available) << id;
  // The zone's bound is twice its 95 W max power, never twice the 4090 W placeholder.
  const std::string pkg = s->status.at("rapl-powercap:package-0")->note;
  EXPECT_NE(pkg.find("a step above 190 W"), std::string::npos) << pkg;
  EXPECT_NE(pkg.find("constraint_0_power_limit_uw = 4090 W"), std::string::npos) << pkg;
  // A recorded counter never advances: the battery, the machine's only supply, is the headline.
  const HeadlineChoice h = cpu_headline(*s);
  ASSERT_TRUE(h.source) << h.why;
  EXPECT_EQ(*h.source, "battery:BAT0") << h.why;
  EXPECT_NE(h.why.find("rapl-powercap:package-0: does not advance"), std::string::npos) << h.why;
}

// A Dell laptop's charge-based battery (SANYO, recorded by batinfo's issue #4):
// charge_* in uAh and current_now in uA, no energy_* or power_now, discharging
// with no adapter entry recorded.
TEST(RealRecordings, DellChargeBasedBatteryIsScaledByItsVoltage) {
  auto s = look("dell-sanyo-bat0");
  const auto ps = discharging_alone("dell-sanyo-bat0");
  ASSERT_TRUE(ps);
  EXPECT_TRUE(ps->ac_inferred);
  EXPECT_NEAR(*ps->batteries[0].energy_wh, 2.155 * 7.461, 1e-9);
  EXPECT_NEAR(*ps->batteries[0].energy_full_wh, 7.328 * 7.461, 1e-9);
  EXPECT_NEAR(*ps->battery_percent, 100.0 * 2.155 / 7.328, 1e-6);
  EXPECT_EQ(*s->track.first_supply(), Supply::Battery);
  ASSERT_TRUE(s->status.count("battery:BAT0") && s->status.count("battery-energy:BAT0"));
  EXPECT_TRUE(s->status.at("battery:BAT0")->available) << s->status.at("battery:BAT0")->reason;
  EXPECT_NE(s->status.at("battery:BAT0")->note.find("current_now x voltage_now"), std::string::npos);
  EXPECT_TRUE(s->status.at("battery-energy:BAT0")->available);
  EXPECT_NE(s->status.at("battery-energy:BAT0")->note.find("charge_now x voltage_now"), std::string::npos);
  for (const auto& src : s->d.sources) {
    if (src->id() == "battery:BAT0") {
      EXPECT_NEAR(src->read()->value, 1.109 * 7.461, 1e-9);
    }
  }
  const HeadlineChoice h = cpu_headline(*s);
  ASSERT_TRUE(h.source) << h.why;
  EXPECT_EQ(*h.source, "battery:BAT0") << h.why;
}

// An M1 MacBook Air under Asahi (macsmc-battery, recorded in Vitals' issue
// #540): current_now and power_now negative while discharging, as
// sysfs-class-power specifies. The draw is the magnitude, 4.721 W.
TEST(RealRecordings, AsahiNegativeCurrentWhileDischargingIsTheMagnitude) {
  auto s = look("macbook-air-m1");
  const auto ps = discharging_alone("macbook-air-m1");
  ASSERT_TRUE(ps);
  EXPECT_FALSE(ps->battery_percent) << "no charge_now or capacity was recorded";
  EXPECT_EQ(*s->track.first_supply(), Supply::Battery);
  ASSERT_TRUE(s->status.count("battery:macsmc-battery"));
  const SourceStatus& g = *s->status.at("battery:macsmc-battery");
  EXPECT_TRUE(g.available) << g.reason;
  EXPECT_NE(g.note.find("power_now"), std::string::npos) << g.note;
  EXPECT_EQ(g.note.find("disagrees"), std::string::npos) << g.note;  // 4.721 W vs 0.386 A x 12.233 V
  EXPECT_FALSE(s->status.at("battery-energy:macsmc-battery")->available);
  ASSERT_EQ(s->d.sources.size(), 1u);
  EXPECT_NEAR(s->d.sources[0]->read()->value, 4.721, 1e-9);
  const HeadlineChoice h = cpu_headline(*s);
  ASSERT_TRUE(h.source) << h.why;
  EXPECT_EQ(*h.source, "battery:macsmc-battery") << h.why;
}

// A Logitech MX Anywhere 3's battery (hidpp_battery_0, scope Device, recorded
// by flutter_server_box) alone in power_supply: a peripheral's battery is not
// the machine's, so no battery source, no supply state, no headline.
TEST(RealRecordings, PeripheralBatteryIsNeitherASourceNorTheSupply) {
  auto s = look("hidpp-mx-anywhere3");
  EXPECT_FALSE(read_power_state(recording("hidpp-mx-anywhere3"))) << "a mouse's battery is not a system battery";
  EXPECT_EQ(*s->track.first_supply(), Supply::Unknown);
  EXPECT_TRUE(s->d.sources.empty());
  for (const auto& x : s->d.status) EXPECT_EQ(x.id.find("hidpp"), std::string::npos) << x.id;
  ASSERT_TRUE(s->status.count("battery:*"));
  EXPECT_FALSE(s->status.at("battery:*")->available);
  EXPECT_FALSE(cpu_headline(*s).source);
}

// A ThinkPad T480s's UCSI port with a USB PD charger online (recorded in
// cinnamon-spices-applets' issue #8744), nothing else recorded: on mains,
// and a port is not a power source of the machine.
TEST(RealRecordings, UcsiPdChargerOnlineIsMains) {
  auto s = look("thinkpad-t480s-ucsi");
  const auto ps = read_power_state(recording("thinkpad-t480s-ucsi"));
  ASSERT_TRUE(ps && ps->ac_online);
  EXPECT_TRUE(*ps->ac_online);
  EXPECT_FALSE(ps->ac_inferred);
  EXPECT_TRUE(ps->batteries.empty());
  EXPECT_EQ(*s->track.first_supply(), Supply::Mains);
  EXPECT_TRUE(s->d.sources.empty());
  EXPECT_FALSE(cpu_headline(*s).source);
}

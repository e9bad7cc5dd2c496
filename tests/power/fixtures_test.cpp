// Discovery and the headline rule on each scenario tree of tests/fixtures/power
// (tests/fixtures/power/<name>, described in <name>.md beside it).
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "power/headline.h"
#include "power/source.h"
#include "power/supply_track.h"

using namespace flopwatt::power;

namespace {

std::string fixture(const std::string& name) { return std::string(FLOPWATT_TEST_FIXTURES) + "/power/" + name; }

struct Seen {
  Discovery d;
  SupplyTrack track;
  std::map<std::string, const SourceStatus*> status;
  std::set<std::string> sampled;
};

std::unique_ptr<Seen> look(const std::string& name) {
  auto s = std::make_unique<Seen>();
  DiscoverOptions o;
  o.root = fixture(name);
  s->d = discover(o);
  for (const auto& x : s->d.status) s->status[x.id] = &x;
  for (const auto& x : s->d.sources) s->sampled.insert(x->id());
  s->track.poll(o.root, 1000);
  s->track.poll(o.root, 2000);
  return s;
}

// What the harness will do per window: every sampled source is a candidate,
// batteries with their state over the window from the supply track.
HeadlineChoice headline(const Seen& s) {
  std::vector<HeadlineCandidate> c;
  for (const auto& src : s.d.sources) {
    const SourceStatus* st = s.status.at(src->id());
    HeadlineCandidate h;
    h.id = src->id();
    h.domain = src->domain();
    h.has_energy = true;
    h.summed = !st->sum_of.empty();
    h.parts = st->sum_of;
    if (h.domain == "battery") {
      std::vector<std::string> bats;
      for (const auto& p : st->sum_of) bats.push_back(p.substr(p.find(':') + 1));
      if (bats.empty()) bats.push_back(h.id.substr(h.id.find(':') + 1));
      h.charge = s.track.batteries_state_over(bats, 1000, 2000);
    }
    c.push_back(h);
  }
  return choose_headline(c);
}

}  // namespace

TEST(Fixtures, ChargingOnMainsNeverHeadlinesTheBattery) {
  auto s = look("charging-on-mains");
  EXPECT_EQ(*s->track.first_supply(), Supply::Mains);
  EXPECT_TRUE(s->sampled.count("battery:BAT0"));
  auto h = headline(*s);
  EXPECT_EQ(*h.source, "rapl-powercap:psys-0");
  EXPECT_EQ(*h.runner_up, "rapl-powercap:package-0");
  EXPECT_NE(h.why.find("battery:BAT0: charging"), std::string::npos) << h.why;
  EXPECT_NE(s->status.at("battery:BAT0")->note.find("going into the battery"), std::string::npos);
}

TEST(Fixtures, FullAndNotChargingAreMainsAndIdle) {
  for (const char* name : {"full-on-mains", "not-charging"}) {
    auto s = look(name);
    EXPECT_EQ(*s->track.first_supply(), Supply::Mains) << name;
    EXPECT_EQ(s->track.battery_state_over("BAT0", 1000, 2000), ChargeState::Idle) << name;
    auto h = headline(*s);
    EXPECT_EQ(*h.source, "rapl-powercap:psys-0") << name;
    EXPECT_NE(h.why.find("battery:BAT0: idle"), std::string::npos) << h.why;
  }
}

TEST(Fixtures, TwoBatteriesHaveASumAndTheIdleOneNeverHeadlines) {
  auto s = look("two-batteries");
  EXPECT_EQ(*s->track.first_supply(), Supply::Battery);
  ASSERT_TRUE(s->sampled.count("battery:sum"));
  auto h = headline(*s);
  EXPECT_EQ(*h.source, "rapl-powercap:package-0");
  EXPECT_EQ(*h.runner_up, "battery:sum");
  EXPECT_NE(h.why.find("battery:BAT0: unknown"), std::string::npos) << h.why;
  EXPECT_EQ(s->status.at("battery:BAT0")->note.find("on mains"), std::string::npos);
}

TEST(Fixtures, TwoPackagesHeadlineTheirSum) {
  auto s = look("two-packages");
  auto h = headline(*s);
  EXPECT_EQ(*h.source, "rapl-powercap:package");
  EXPECT_NE(h.why.find("part of rapl-powercap:package"), std::string::npos) << h.why;
  EXPECT_NE(s->status.at("rapl-powercap:package-0")->note.find("300 W"), std::string::npos)
      << s->status.at("rapl-powercap:package-0")->note;  // 2 x the larger limit, 150 W
}

TEST(Fixtures, CounterResetZoneStatesItsBound) {
  auto s = look("counter-reset");
  EXPECT_NE(s->status.at("rapl-powercap:package-0")->note.find("128 W"), std::string::npos)
      << s->status.at("rapl-powercap:package-0")->note;
}

TEST(Fixtures, AmdLaptop) {
  auto s = look("amd-laptop");
  EXPECT_EQ(s->status.at("rapl-powercap:core-0")->domain, "one-core");
  EXPECT_EQ(s->status.at("hwmon:zenergy:Ecore000")->domain, "one-core");
  // The zenergy socket counter is the powercap package register: listed, not sampled.
  EXPECT_EQ(s->status.at("hwmon:zenergy:Esocket0")->alias_of, "rapl-powercap:package-0");
  EXPECT_FALSE(s->sampled.count("hwmon:zenergy:Esocket0"));
  ASSERT_TRUE(s->status.count("rapl-perf:energy-core"));
  EXPECT_NE(s->status.at("rapl-perf:energy-core")->reason.find("--sysfs-root"), std::string::npos);
  for (const auto& [id, st] : s->status) EXPECT_EQ(st->fix.find("modprobe amd_energy"), std::string::npos) << id;
  auto h = headline(*s);
  EXPECT_EQ(*h.source, "rapl-powercap:package-0");
}

TEST(Fixtures, StrixApuPptIsThePackage) {
  auto s = look("strix-apu");
  ASSERT_TRUE(s->status.count("hwmon:amdgpu:PPT"));
  EXPECT_EQ(s->status.at("hwmon:amdgpu:PPT")->domain, "package");
  EXPECT_EQ(s->status.at("hwmon:amdgpu:PPT")->note.find("discrete"), std::string::npos);
  EXPECT_EQ(*headline(*s).source, "hwmon:amdgpu:PPT");
}

TEST(Fixtures, SapphireRapidsMsrUnits) {
  auto s = look("sapphire-rapids-msr");
  ASSERT_TRUE(s->sampled.count("rapl-msr:package-0"));
  ASSERT_TRUE(s->sampled.count("rapl-msr:package-1"));
  EXPECT_NE(s->status.at("rapl-msr:dram-0")->note.find("61.03"), std::string::npos)
      << s->status.at("rapl-msr:dram-0")->note;
  EXPECT_NE(s->status.at("rapl-msr:psys-0")->note.find("1e+06 uJ"), std::string::npos)
      << s->status.at("rapl-msr:psys-0")->note;
  ASSERT_TRUE(s->sampled.count("rapl-msr:package"));  // both sockets summed
  auto h = headline(*s);
  EXPECT_EQ(*h.source, "rapl-msr:psys-0");
  EXPECT_EQ(*h.runner_up, "rapl-msr:package");
}

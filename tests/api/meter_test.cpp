// flopwatt::Meter, the public API, against a meter whose power is known (an
// external log at a constant 20 W) on fixture laptops: windows that nest and
// overlap, ended from any thread, and the headline rule the CLI applies.
#include "flopwatt/meter.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <new>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "tests/api/meter_support.h"

namespace fs = std::filesystem;

// Allocations made by this thread, to hold begin/close to "nothing allocated
// per window after the first" (the sampler's thread allocates as it likes).
thread_local long t_allocations = 0;

void* operator new(std::size_t n) {
  ++t_allocations;
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n) { return operator new(n); }
// Every form that pairs with the plain deletes below, so a sanitizer's own
// operator new never meets our free().
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  ++t_allocations;
  return std::malloc(n ? n : 1);
}
void* operator new[](std::size_t n, const std::nothrow_t& t) noexcept { return operator new(n, t); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }

namespace {

constexpr double kWatts = 20.0;

class MeterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("flopwatt-meter-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  flopwatt::MeterOptions at_20_watts(const std::string& fixture = "laptop") const {
    return flopwatt::testing::at_constant_watts(dir_, kWatts, fixture);
  }
  fs::path dir_;
};

void sleep_s(double s) { std::this_thread::sleep_for(std::chrono::duration<double>(s)); }

TEST_F(MeterTest, AWindowsEnergyIsItsPowerTimesItsDuration) {
  flopwatt::Meter m(at_20_watts());
  ASSERT_TRUE(m.active());
  auto w = m.begin("step");
  sleep_s(0.3);
  const flopwatt::WindowResult r = m.end(w, 6e9);
  EXPECT_EQ(r.name, "step");
  EXPECT_NEAR(r.duration_s, 0.3, 0.1);
  ASSERT_TRUE(r.energy_j) << r.headline_why;
  EXPECT_EQ(r.headline, "external:meter");
  EXPECT_FALSE(r.headline_why.empty());
  EXPECT_NEAR(*r.avg_power_w, kWatts, 0.05 * kWatts);
  EXPECT_NEAR(*r.energy_j, kWatts * r.duration_s, 0.05 * kWatts * r.duration_s);
  ASSERT_TRUE(r.flop_per_j);
  EXPECT_NEAR(*r.flop_per_j, 6e9 / *r.energy_j, 1e-6 * *r.flop_per_j);
  ASSERT_TRUE(r.flop_per_s);
  EXPECT_NEAR(*r.flop_per_s, 6e9 / r.duration_s, 1e-6 * *r.flop_per_s);
  bool listed = false;
  for (const auto& s : r.sources) listed = listed || (s.id == "external:meter" && s.energy_j == *r.energy_j);
  EXPECT_TRUE(listed);
}

TEST_F(MeterTest, WindowsNestAndOverlap) {
  flopwatt::Meter m(at_20_watts());
  auto outer = m.begin("outer");
  sleep_s(0.2);
  auto a = m.begin("a");
  sleep_s(0.2);
  auto b = m.begin("b");  // overlaps a
  sleep_s(0.2);
  const auto ra = m.end(a);
  sleep_s(0.2);
  const auto rb = m.end(b);
  const auto ro = m.end(outer);
  for (const auto* r : {&ra, &rb, &ro}) {
    ASSERT_TRUE(r->energy_j) << r->name << ": " << r->headline_why;
    EXPECT_NEAR(*r->energy_j, kWatts * r->duration_s, 0.05 * kWatts * r->duration_s) << r->name;
  }
  EXPECT_EQ(ra.name, "a");
  EXPECT_EQ(rb.name, "b");
  EXPECT_GT(ro.duration_s, ra.duration_s + 0.15);
  EXPECT_GT(*ro.energy_j, *ra.energy_j + *rb.energy_j - 20 * 0.25);  // a and b share 0.2 s
}

// A loop closes its windows without waiting; their figures are judged after
// it, each the same as end() would have given.
TEST_F(MeterTest, ClosedWindowsAreJudgedAfterTheLoop) {
  flopwatt::Meter m(at_20_watts());
  std::vector<flopwatt::Meter::Closed> closed;
  for (int i = 0; i < 3; ++i) {
    auto w = m.begin("step");
    sleep_s(0.32);
    closed.push_back(m.close(w, 1e9));
    EXPECT_THROW(m.close(w), std::invalid_argument);
  }
  for (std::size_t i = 0; i < closed.size(); ++i) {
    const auto& c = closed[i];
    EXPECT_EQ(c.name, "step");
    EXPECT_NEAR(double(c.t1_ns - c.t0_ns) * 1e-9, 0.32, 0.1);
    if (i > 0) {
      EXPECT_GE(c.t0_ns, closed[i - 1].t1_ns);
    }
    const flopwatt::WindowResult r = m.result(c);
    ASSERT_TRUE(r.energy_j) << r.headline_why;
    EXPECT_NEAR(*r.energy_j, kWatts * r.duration_s, 0.05 * kWatts * r.duration_s);
    EXPECT_EQ(r.name, "step");
    ASSERT_TRUE(r.flop_per_j);
    const flopwatt::WindowResult again = m.result(c);
    EXPECT_EQ(*again.energy_j, *r.energy_j) << "judging twice changes nothing";
    EXPECT_EQ(again.headline, r.headline);
  }
}

TEST_F(MeterTest, OpeningAndClosingAllocatesNothingAfterTheFirstWindow) {
  flopwatt::Meter m(at_20_watts());
  const std::string names[] = {"step", "fifteen-chars-x"};  // fit the string's own buffer
  for (const auto& n : names) m.close(m.begin(n));         // the first window sizes the slots
  const long before = t_allocations;
  for (int i = 0; i < 1000; ++i) {
    auto outer = m.begin(names[i % 2]);
    auto inner = m.begin(names[(i + 1) % 2]);
    const auto ci = m.close(inner, 1);
    const auto co = m.close(outer);
    ASSERT_EQ(ci.name, names[(i + 1) % 2]);
    ASSERT_LE(co.t0_ns, ci.t0_ns);
  }
  EXPECT_EQ(t_allocations - before, 0);
}

// Samples older than the history go, so a meter in a long run stays small;
// a window judged after its samples went says so instead of integrating what
// is left, and an open window keeps its samples however old it is.
TEST_F(MeterTest, SamplesOlderThanTheHistoryGoButNotAnOpenWindows) {
  flopwatt::MeterOptions o = at_20_watts();
  o.history_s = 0.4;
  flopwatt::Meter m(o);
  auto old = m.begin("old");
  sleep_s(0.35);
  const auto c_old = m.close(old);
  const auto r_old_now = m.result(c_old);
  ASSERT_TRUE(r_old_now.energy_j) << "judged in time: " << r_old_now.headline_why;

  sleep_s(0.3);
  auto held = m.begin("held open");
  sleep_s(0.3);
  auto young = m.begin("young");
  sleep_s(0.35);
  const auto r_young = m.end(young);  // its result prunes what is older than 0.4 s
  ASSERT_TRUE(r_young.energy_j) << r_young.headline_why;
  const auto r_old = m.result(c_old);
  EXPECT_EQ(r_old.name, "old");
  EXPECT_FALSE(r_old.energy_j) << "a window whose samples were dropped has no figure";
  EXPECT_NE(r_old.headline_why.find("history_s"), std::string::npos) << r_old.headline_why;
  EXPECT_NEAR(r_old.duration_s, r_old_now.duration_s, 1e-12);
  // Began 0.65 s ago, more than the history, but open through the prune.
  const auto r_held = m.end(held);
  ASSERT_TRUE(r_held.energy_j) << "an open window keeps its samples: " << r_held.headline_why;
  EXPECT_GT(r_held.duration_s, 0.6);
  EXPECT_NEAR(*r_held.energy_j, kWatts * r_held.duration_s, 0.05 * kWatts * r_held.duration_s);
}

TEST_F(MeterTest, AWindowEndsOnce) {
  flopwatt::MeterOptions none;
  none.power = "none";
  flopwatt::Meter m(none), other(none);
  auto w = m.begin("x");
  const auto r = m.end(w);
  EXPECT_FALSE(r.energy_j);
  EXPECT_NE(r.headline_why.find("no power source"), std::string::npos) << r.headline_why;
  EXPECT_THROW(m.end(w), std::invalid_argument);
  auto y = other.begin("y");
  auto z = m.begin("z");
  // y's slot exists in m (z took it) but its id is other's: refused.
  if (y.slot == z.slot) {
    EXPECT_THROW(m.end({y.id + 1000, y.slot}), std::invalid_argument);
  }
  EXPECT_THROW(m.end({0, 0}), std::invalid_argument);
  m.end(z);
  other.end(y);
}

TEST_F(MeterTest, ManyThreadsOpenAndCloseWindows) {
  flopwatt::Meter m(at_20_watts());
  // Windows of 0.32 s: over 3 of the 0.1 s meter's intervals, so each has a figure.
  constexpr int kThreads = 8, kWindows = 6;
  std::atomic<int> good{0}, bad{0};
  std::vector<std::thread> ts;
  for (int t = 0; t < kThreads; ++t)
    ts.emplace_back([&, t] {
      for (int i = 0; i < kWindows; ++i) {
        std::string name = "t";
        name.append(std::to_string(t)).append("-").append(std::to_string(i));
        auto w = m.begin(name);
        sleep_s(0.32);
        const auto r = m.end(w);
        const bool ok = r.name == name && r.energy_j &&
                        std::abs(*r.avg_power_w - kWatts) < 0.1 * kWatts;
        (ok ? good : bad)++;
      }
    });
  for (auto& th : ts) th.join();
  EXPECT_EQ(good, kThreads * kWindows);
  EXPECT_EQ(bad, 0);
}

TEST_F(MeterTest, AChargingBatteryIsNeverTheHeadline) {
  // On mains with the battery charging, and no other source: no headline, and why.
  flopwatt::MeterOptions o;
  o.sysfs_root = std::string(FLOPWATT_TEST_FIXTURES) + "/power/charging-on-mains";
  flopwatt::Meter m(o);
  auto w = m.begin("step");
  sleep_s(0.2);
  const auto r = m.end(w, 1e9);
  for (const auto& s : r.sources) {
    if (s.domain == "battery") {
      EXPECT_NE(r.headline, s.id) << r.headline_why;
    }
  }
  EXPECT_EQ(r.supply, "mains");
  if (!r.headline) {
    EXPECT_FALSE(r.headline_why.empty());
  }
}

TEST_F(MeterTest, BadOptionsAreOneLineNamingTheOption) {
  flopwatt::MeterOptions o;
  o.power = "no-such-source";
  o.sysfs_root = std::string(FLOPWATT_TEST_FIXTURES) + "/power/laptop";
  try {
    flopwatt::Meter m(o);
    FAIL() << "an unknown source was accepted";
  } catch (const std::runtime_error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("no-such-source"), std::string::npos) << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  }
}

// meter.h promises a throw for a power log that cannot be opened or parsed, as the command's
// --power-log is an error; a meter that silently lacked the named source measured nothing asked.
TEST_F(MeterTest, APowerLogThatCannotBeOpenedOrParsedThrowsNamingTheOption) {
  flopwatt::MeterOptions o;
  o.sysfs_root = std::string(FLOPWATT_TEST_FIXTURES) + "/power/laptop";
  const fs::path garbled = dir_ / "garbled.log";
  std::ofstream(garbled) << "this is not a power log\nnor,is,this\n";
  for (const std::string& log : {(dir_ / "missing.log").string(), garbled.string()}) {
    o.power_log = log;
    try {
      flopwatt::Meter m(o);
      ADD_FAILURE() << "accepted " << log;
    } catch (const std::runtime_error& e) {
      const std::string msg = e.what();
      EXPECT_EQ(msg.rfind("MeterOptions::power_log", 0), 0u) << msg;
      EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
    }
  }
}

// headline_source() is the last judged window's source, never one chosen before any window:
// on the fixture laptop (psys does not advance) the meter once named psys while every window
// refused it.
TEST_F(MeterTest, HeadlineSourceIsTheLastJudgedWindowsOwn) {
  flopwatt::Meter m(at_20_watts());
  EXPECT_FALSE(m.headline_source()) << "no window judged yet";
  auto w = m.begin("step");
  sleep_s(0.3);
  const auto r = m.end(w, 1e9);
  EXPECT_EQ(m.headline_source(), r.headline) << r.headline_why;
}

TEST(MeterVersion, IsTheProjects) { EXPECT_STREQ(flopwatt::version(), FLOPWATT_PROJECT_VERSION); }

}  // namespace

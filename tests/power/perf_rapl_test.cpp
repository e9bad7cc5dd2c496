#include "power/perf_rapl.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <map>

#include "fixture_tree.h"

using namespace flopwatt::power;
using flopwatt::power::testing::FixtureTree;

namespace {

const char* kPmu = "sys/bus/event_source/devices/power/";

void write_pmu(const FixtureTree& t, const std::string& cpumask = "0\n") {
  t.write(std::string(kPmu) + "type", "4242\n");
  t.write(std::string(kPmu) + "cpumask", cpumask);
  t.write(std::string(kPmu) + "format/event", "config:0-7\n");
  for (auto [name, code] : {std::pair{"energy-pkg", "0x02"}, {"energy-cores", "0x01"}, {"energy-psys", "0x05"}}) {
    t.write(std::string(kPmu) + "events/" + name, std::string("event=") + code + "\n");
    t.write(std::string(kPmu) + "events/" + name + ".scale", "2.3283064365386962890625e-10\n");
    t.write(std::string(kPmu) + "events/" + name + ".unit", "Joules\n");
  }
  t.write("proc/sys/kernel/perf_event_paranoid", "2\n");
}

// Stands in for the kernel: refuses with a fixed errno, or counts by a step per read.
class FakePerf : public PerfAccess {
 public:
  int refuse = 0;
  std::uint64_t step = 0;
  std::map<int, std::uint64_t> counts;
  std::vector<std::pair<int, std::uint64_t>> opened;  // (type, config)
  int open(int type, std::uint64_t config, int cpu) override {
    if (refuse) return -refuse;
    opened.emplace_back(type, config);
    const int fd = 100 + int(opened.size());
    counts[fd] = 0;
    return fd;
  }
  bool read(int fd, std::uint64_t& c) override {
    counts[fd] += step;
    c = counts[fd];
    return true;
  }
  void close(int) override {}
};

}  // namespace

TEST(PerfRapl, ParsesThePmuDescription) {
  FixtureTree t;
  write_pmu(t, "0,28\n");
  PerfPmuDesc p = read_perf_pmu(t.root());
  ASSERT_TRUE(p.present);
  EXPECT_EQ(p.type, 4242);
  EXPECT_EQ(p.cpus, (std::vector<int>{0, 28}));
  ASSERT_EQ(p.events.size(), 3u);
  EXPECT_EQ(p.events[0].name, "energy-cores");
  EXPECT_EQ(p.events[0].config, 0x01u);
  EXPECT_EQ(p.events[1].name, "energy-pkg");
  EXPECT_EQ(p.events[1].config, 0x02u);
  EXPECT_DOUBLE_EQ(p.events[1].scale, 1.0 / 4294967296.0);
  EXPECT_EQ(p.events[1].unit, "Joules");
  EXPECT_TRUE(p.events[1].problem.empty());
}

// A cpumask the kernel would not print used to be read in part ("0,x" as
// CPU 0); now the PMU is unusable and says which file is wrong.
TEST(PerfRapl, CorruptCpumaskNamesTheFile) {
  FixtureTree t;
  write_pmu(t, "0,99999999999999999999-3\n");
  const PerfPmuDesc p = read_perf_pmu(t.root());
  EXPECT_TRUE(p.present);
  EXPECT_TRUE(p.events.empty());
  EXPECT_NE(p.problem.find("devices/power/cpumask: cpumask '0,99999999999999999999-3' is not a CPU list"),
            std::string::npos)
      << p.problem;
  Discovery d;
  probe_perf_rapl(t.root(), d, std::make_shared<FakePerf>());
  EXPECT_TRUE(d.sources.empty());
}

// A type of "010" is PMU 10; base-0 parsing opened PMU 8, another PMU's events.
TEST(PerfRapl, PmuTypeIsDecimal) {
  FixtureTree t;
  write_pmu(t);
  t.write(std::string(kPmu) + "type", "010\n");
  EXPECT_EQ(read_perf_pmu(t.root()).type, 10);
}

TEST(PerfRapl, RefusedOpenExplainsParanoidAndCapPerfmon) {
  FixtureTree t;
  write_pmu(t);
  auto fake = std::make_shared<FakePerf>();
  fake->refuse = EACCES;
  Discovery d;
  probe_perf_rapl(t.root(), d, fake);
  EXPECT_TRUE(d.sources.empty());
  ASSERT_EQ(d.status.size(), 3u);
  for (const auto& s : d.status) {
    EXPECT_FALSE(s.available);
    EXPECT_NE(s.reason.find("perf_event_paranoid is 2"), std::string::npos) << s.reason;
    EXPECT_NE(s.reason.find("CAP_PERFMON"), std::string::npos);
    EXPECT_NE(s.fix.find("sysctl kernel.perf_event_paranoid=0"), std::string::npos);
  }
  EXPECT_EQ(perf_open_reason(ENOENT, t.root(), "energy-pkg").find("paranoid"), std::string::npos);
}

TEST(PerfRapl, OpensSysfsEncodingsAndScalesCountsToJoules) {
  FixtureTree t;
  write_pmu(t);
  auto fake = std::make_shared<FakePerf>();
  fake->step = 1ull << 32;  // one joule per read at the 2^-32 scale
  Discovery d;
  probe_perf_rapl(t.root(), d, fake);
  ASSERT_EQ(d.sources.size(), 3u);
  for (auto [type, config] : fake->opened) EXPECT_EQ(type, 4242);
  PowerSource* pkg = nullptr;
  for (auto& s : d.sources)
    if (s->id() == "rapl-perf:energy-pkg") pkg = s.get();
  ASSERT_TRUE(pkg);
  EXPECT_EQ(pkg->domain(), "package");
  const double a = pkg->read()->value;
  const double b = pkg->read()->value;
  EXPECT_DOUBLE_EQ(b - a, 1.0);
  for (const auto& s : d.status) {
    if (s.id == "rapl-perf:energy-pkg") {
      EXPECT_EQ(s.contains, std::vector<std::string>{"rapl-perf:energy-cores"});
    }
    if (s.id == "rapl-perf:energy-psys") {
      EXPECT_EQ(s.contains, std::vector<std::string>{"rapl-perf:energy-pkg"});
    }
  }
}

TEST(PerfRapl, CounterStuckAtZeroIsAVirtualMachineNotASource) {
  FixtureTree t;
  write_pmu(t);
  auto fake = std::make_shared<FakePerf>();
  fake->step = 0;
  Discovery d;
  probe_perf_rapl(t.root(), d, fake);
  EXPECT_TRUE(d.sources.empty());
  for (const auto& s : d.status) EXPECT_NE(s.reason.find("stays at 0"), std::string::npos);
}

TEST(PerfRapl, FixtureRootNeverReachesTheRealSyscall) {
  // The fixture's PMU type (4242) means nothing to the running kernel, so
  // under a fixture root no event is opened: each says why, in those words.
  FixtureTree t;
  write_pmu(t);
  Discovery d;
  probe_perf_rapl(t.root(), d);
  EXPECT_TRUE(d.sources.empty());
  ASSERT_FALSE(d.status.empty());
  for (const auto& s : d.status) {
    EXPECT_FALSE(s.available);
    EXPECT_NE(s.reason.find("cannot be opened under --sysfs-root"), std::string::npos) << s.reason;
    EXPECT_FALSE(s.fix.empty());
  }
}

// AMD's per-core PMU (arch/x86/events/rapl.c: PMU "power_core", event
// energy-core = event=0x01, per-core scope, cpumask one CPU per core).
TEST(PerfRapl, AmdPowerCorePmuIsSummedOverCores) {
  FixtureTree t;
  const std::string p = "sys/bus/event_source/devices/power_core/";
  t.write(p + "type", "4243\n");
  t.write(p + "cpumask", "0-3\n");
  t.write(p + "format/event", "config:0-7\n");
  t.write(p + "events/energy-core", "event=0x01\n");
  t.write(p + "events/energy-core.scale", "2.3283064365386962890625e-10\n");
  t.write(p + "events/energy-core.unit", "Joules\n");
  auto fake = std::make_shared<FakePerf>();
  fake->step = 1ull << 32;  // 1 J per read per core
  Discovery d;
  probe_perf_rapl(t.root(), d, fake);
  PowerSource* s = nullptr;
  for (const auto& x : d.sources)
    if (x->id() == "rapl-perf:energy-core") s = x.get();
  ASSERT_TRUE(s);
  EXPECT_EQ(s->domain(), "core");
  EXPECT_EQ(fake->opened.size(), 4u);
  EXPECT_EQ(fake->opened[0], (std::pair<int, std::uint64_t>{4243, 1}));
  EXPECT_DOUBLE_EQ(s->read()->value, 0.0);
  EXPECT_DOUBLE_EQ(s->read()->value, 4.0);  // four cores, 1 J each
}

TEST(PerfRapl, NoPmuExplainsWhy) {
  FixtureTree t;
  Discovery d;
  probe_perf_rapl(t.root(), d);
  ASSERT_EQ(d.status.size(), 1u);
  EXPECT_EQ(d.status[0].id, "rapl-perf:*");
  EXPECT_NE(d.status[0].reason.find("no perf power PMU"), std::string::npos);
}

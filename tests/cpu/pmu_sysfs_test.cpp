// Uncore DRAM counters found and encoded from sysfs (cpu/pmu_sysfs.h), on
// fixture roots shaped like four real machines (tests/fixtures/pmu/README.md),
// and counted through a fake perf_event_open that knows the hardware's event
// codes independently: a wrong encoding counts nothing and the test fails.
#include "cpu/pmu_sysfs.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "cpu/perf_counters.h"
#include "tests/cpu/fake_perf.h"
#include "tests/power/fixture_tree.h"

namespace flopwatt::cpu {
namespace {

namespace fs = std::filesystem;

const std::string kPmu = std::string(FLOPWATT_TEST_FIXTURES) + "/pmu/";

std::uint32_t type_of(const std::string& machine, const std::string& pmu) {
  std::ifstream f(kPmu + machine + "/sys/bus/event_source/devices/" + pmu + "/type");
  std::uint32_t t = 0;
  f >> t;
  return t;
}

TEST(PmuSysfs, EventAliasesAreEncodedThroughTheFormatFiles) {
  const auto r = resolve_sysfs_event("uncore_imc_free_running/data_read/", kPmu + "tigerlake-laptop");
  ASSERT_TRUE(r.event) << r.problem;
  EXPECT_EQ(r.event->type, type_of("tigerlake-laptop", "uncore_imc_free_running"));
  EXPECT_EQ(r.event->config, 0x20ffu);  // event 0xff in 0-7, umask 0x20 in 8-15
  EXPECT_DOUBLE_EQ(r.event->scale, 6.103515625e-5);
  EXPECT_EQ(r.event->unit, "MiB");
  EXPECT_EQ(r.event->cpus, std::vector<int>{0});
}

TEST(PmuSysfs, RawTermsAndMultiRangeFormats) {
  const std::string root = kPmu + "phoenix-laptop";
  auto r = resolve_sysfs_event("amd_umc_1/event=0x0a,rdwrmask=0x2/", root);
  ASSERT_TRUE(r.event) << r.problem;
  EXPECT_EQ(r.event->config, 0x20au);
  // AMD's DF umask is split: low 8 bits into 8-15, the next 4 into 24-27.
  r = resolve_sysfs_event("amd_df/event=0x1f,umask=0xabc/", root);
  ASSERT_TRUE(r.event) << r.problem;
  EXPECT_EQ(r.event->config, 0x1fu | (0xbcu << 8) | (0xau << 24));
  // Too wide for its bits, an unknown term, a missing PMU or event: said, not guessed.
  EXPECT_FALSE(resolve_sysfs_event("amd_umc_0/rdwrmask=0x4/", root).event);
  const auto unknown = resolve_sysfs_event("amd_umc_0/umask=0x1/", root);
  EXPECT_NE(unknown.problem.find("no term 'umask'"), std::string::npos) << unknown.problem;
  EXPECT_NE(resolve_sysfs_event("uncore_imc_0/cas_count_read/", root).problem.find("not exposed"), std::string::npos);
  EXPECT_NE(resolve_sysfs_event("amd_umc_0/umc_cas_cmd.rd/", root).problem.find("has no event"), std::string::npos);
  EXPECT_FALSE(resolve_sysfs_event("no-slashes", root).event);
}

// A type of "010" is PMU 10 (base-0 parsing opened PMU 8), and a cpumask the
// kernel would not print is named with its file rather than counted on a guess.
TEST(PmuSysfs, TypeIsDecimalAndABadCpumaskIsNamed) {
  power::testing::FixtureTree t;
  const std::string d = "sys/bus/event_source/devices/amd_umc_0/";
  t.write(d + "type", "010\n");
  t.write(d + "cpumask", "0\n");
  t.write(d + "format/event", "config:0-7\n");
  const auto r = resolve_sysfs_event("amd_umc_0/event=0x0a/", t.root());
  ASSERT_TRUE(r.event) << r.problem;
  EXPECT_EQ(r.event->type, 10u);
  t.write(d + "cpumask", "0-\n");
  const auto bad = resolve_sysfs_event("amd_umc_0/event=0x0a/", t.root());
  EXPECT_FALSE(bad.event);
  EXPECT_NE(bad.problem.find("amd_umc_0/cpumask: cpumask '0-' is not a CPU list"), std::string::npos) << bad.problem;
}

TEST(PmuSysfs, EachMachineGetsItsMemoryControllerFamily) {
  struct Case {
    const char* machine;
    const char* family;
    std::size_t pmus;
    std::uint64_t read_config, write_config;
    double bytes_per_count;
    std::vector<int> cpus;
  } cases[] = {
      {"tigerlake-laptop", "uncore_imc_free_running/data_read/", 1, 0x20ff, 0x30ff, 64, {0}},
      {"kabylake-laptop", "uncore_imc/data_reads/", 1, 0x01, 0x02, 64, {0}},
      {"phoenix-laptop", "amd_umc/event=0x0a,rdwrmask=0x1/", 2, 0x10a, 0x20a, 64, {0}},
      // The free-running boxes have no byte events; the CAS counters are used.
      {"sapphirerapids-2s", "uncore_imc/cas_count_read/", 8, 0xcf05, 0xf005, 64, {0, 56}},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.machine);
    const DramEvents rd = dram_events(kPmu + c.machine, false), wr = dram_events(kPmu + c.machine, true);
    ASSERT_EQ(rd.events.size(), c.pmus) << rd.problem;
    ASSERT_EQ(wr.events.size(), c.pmus) << wr.problem;
    EXPECT_EQ(rd.family, c.family);
    for (std::size_t i = 0; i < c.pmus; ++i) {
      EXPECT_EQ(rd.events[i].config, c.read_config);
      EXPECT_EQ(wr.events[i].config, c.write_config);
      EXPECT_DOUBLE_EQ(rd.events[i].scale, c.bytes_per_count);  // 6.103515625e-5 MiB is 64 B
      EXPECT_EQ(rd.events[i].unit, "bytes");
      EXPECT_EQ(rd.events[i].cpus, c.cpus);
    }
  }
  const DramEvents none = dram_events("/nonexistent-root", false);
  EXPECT_TRUE(none.events.empty());
  EXPECT_NE(none.problem.find("no memory-controller PMU"), std::string::npos);
}

// The whole path: a machine moving known DRAM traffic, counted per window as
// the sum over every memory-controller PMU and every socket, in bytes.
class DramCounting : public ::testing::TestWithParam<const char*> {};

TEST_P(DramCounting, CountsTheMachinesTrafficInBytes) {
  const std::string machine = GetParam();
  const std::string root = kPmu + machine;
  // The hardware's own event codes per family (the kernel's aliases and perf's
  // amdzen4 UMC events), written here independently of the code under test.
  struct Codes {
    std::uint64_t read, write;
  };
  const std::map<std::string, std::pair<std::string, Codes>> hw = {
      {"tigerlake-laptop", {"uncore_imc_free_running", {0x20ff, 0x30ff}}},
      {"kabylake-laptop", {"uncore_imc", {0x01, 0x02}}},
      {"phoenix-laptop", {"amd_umc_", {0x10a, 0x20a}}},
      {"sapphirerapids-2s", {"uncore_imc_", {0xcf05, 0xf005}}},
  };
  const auto& [prefix, codes] = hw.at(machine);
  FakePerf fake;
  fake.paranoid = 0;
  // Every instance of the family moves 0.5 read and 0.25 written lines per ns
  // on each socket it is opened on.
  int instances = 0;
  for (const auto& d : fs::directory_iterator(root + "/sys/bus/event_source/devices")) {
    const std::string name = d.path().filename().string();
    if (name == "cpu" || name == "software" || name == "tracepoint" || name == "breakpoint") continue;
    const std::uint32_t t = type_of(machine, name);
    fake.uncore_types.insert(t);
    if (name.rfind(prefix, 0) == 0 && name.find("free_running_") == std::string::npos) {
      ++instances;
      fake.uncore_rate[{t, codes.read}] = 0.5;
      fake.uncore_rate[{t, codes.write}] = 0.25;
    }
  }
  ASSERT_GT(instances, 0);
  const int sockets = machine == std::string("sapphirerapids-2s") ? 2 : 1;
  CounterSet set({kDramReadBytes, kDramWriteBytes}, fake, root);
  ASSERT_TRUE(set.status()[0].available) << set.status()[0].reason;
  EXPECT_NE(set.status()[0].how.find("system-wide"), std::string::npos) << set.status()[0].how;
  for (const auto& [fd, e] : fake.fds) EXPECT_GE(e.encoding.cpu, 0) << "uncore events are opened per CPU";
  set.begin();
  fake.advance(1e6);
  const auto w = set.end();
  ASSERT_TRUE(w[0].value && w[1].value);
  EXPECT_DOUBLE_EQ(*w[0].value, 0.5 * 1e6 * 64 * instances * sockets);
  EXPECT_DOUBLE_EQ(*w[1].value, 0.25 * 1e6 * 64 * instances * sockets);
}

INSTANTIATE_TEST_SUITE_P(Machines, DramCounting,
                         ::testing::Values("tigerlake-laptop", "kabylake-laptop", "phoenix-laptop",
                                           "sapphirerapids-2s"),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (auto& ch : n)
                             if (ch == '-') ch = '_';
                           return n;
                         });

TEST(DramCounters, ParanoidMachineSaysWhatToChange) {
  const std::string root = kPmu + "tigerlake-laptop";  // perf_event_paranoid 2, Debian's default
  FakePerf fake;
  fake.uncore_types.insert(type_of("tigerlake-laptop", "uncore_imc_free_running"));
  std::ifstream p(root + "/proc/sys/kernel/perf_event_paranoid");
  p >> fake.paranoid;
  CounterSet set({kDramReadBytes}, fake, root);
  ASSERT_FALSE(set.status()[0].available);
  EXPECT_NE(set.status()[0].reason.find("perf_event_paranoid = 2"), std::string::npos) << set.status()[0].reason;
  EXPECT_NE(set.status()[0].fix.find("perf_event_paranoid=0"), std::string::npos) << set.status()[0].fix;
  EXPECT_TRUE(fake.fds.empty()) << "nothing stays open for an unavailable event";
}

// Half the instances open and one refuses: the event is unavailable as a
// whole (a partial sum would understate the traffic), and nothing leaks.
TEST(DramCounters, OneRefusedInstanceMakesTheSumUnavailable) {
  const std::string machine = "sapphirerapids-2s";
  FakePerf fake;
  fake.paranoid = 0;
  for (int i = 0; i < 8; ++i) fake.uncore_types.insert(type_of(machine, "uncore_imc_" + std::to_string(i)));
  // uncore_imc_7 refuses, as perf_event_open(2) does with ENODEV for a PMU
  // the running hardware does not back.
  struct Refusing : CounterAccess {
    FakePerf& inner;
    std::uint32_t refuse_type;
    Refusing(FakePerf& f, std::uint32_t t) : inner(f), refuse_type(t) {}
    int open(const EventEncoding& e, int* err) override {
      if (e.type == refuse_type) {
        *err = ENODEV;
        return -1;
      }
      return inner.open(e, err);
    }
    bool reset_and_enable(int fd) override { return inner.reset_and_enable(fd); }
    bool disable(int fd) override { return inner.disable(fd); }
    bool read(int fd, CounterReading& r) override { return inner.read(fd, r); }
    void close(int fd) override { inner.close(fd); }
  } refusing(fake, type_of(machine, "uncore_imc_7"));
  CounterSet set({kDramReadBytes}, refusing, kPmu + machine);
  EXPECT_FALSE(set.status()[0].available);
  EXPECT_FALSE(set.status()[0].reason.empty());
  EXPECT_TRUE(fake.fds.empty());
}

}  // namespace
}  // namespace flopwatt::cpu

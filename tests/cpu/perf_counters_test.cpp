#include "cpu/perf_counters.h"

#include <gtest/gtest.h>
#include <linux/perf_event.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <map>

#include "tests/cpu/fake_perf.h"
#include "workloads/error.h"

namespace flopwatt::cpu {
namespace {

namespace fs = std::filesystem;

fs::path root_with(bool cpu_pmu, const std::string& paranoid) {
  const fs::path root = fs::temp_directory_path() / ("flopwatt_perfctr_" + std::to_string(::getpid()));
  fs::remove_all(root);
  // /sys/bus/event_source/devices/<pmu>/type holds the PMU's perf type
  // (Documentation/ABI/testing/sysfs-bus-event_source-devices).
  fs::create_directories(root / "sys/bus/event_source/devices/software");
  std::ofstream(root / "sys/bus/event_source/devices/software/type") << "1\n";
  if (cpu_pmu) {
    fs::create_directories(root / "sys/bus/event_source/devices/cpu");
    std::ofstream(root / "sys/bus/event_source/devices/cpu/type") << "4\n";
  }
  fs::create_directories(root / "proc/sys/kernel");
  std::ofstream(root / "proc/sys/kernel/perf_event_paranoid") << paranoid << "\n";
  return root;
}

bool have_libpfm() { return encode_event("perf::PERF_COUNT_HW_CPU_CYCLES").ok; }

TEST(PerfCounters, ParsesTheCountersFlag) {
  EXPECT_EQ(parse_counter_list("none").size(), 0u);
  const auto d = parse_counter_list("default");
  ASSERT_EQ(d.size(), 5u);
  EXPECT_EQ(d[0], "perf::PERF_COUNT_HW_CPU_CYCLES");
  EXPECT_EQ(d[3], kDramReadBytes);
  EXPECT_EQ(d[4], kDramWriteBytes);
  EXPECT_EQ(parse_counter_list("uncore_imc_0/cas_count_read/,dram_read_bytes").size(), 2u);
  EXPECT_EQ(parse_counter_list("a,b:c").size(), 2u);
  EXPECT_THROW(parse_counter_list("a,,b"), InputError);
  EXPECT_THROW(parse_counter_list("a,"), InputError);
}

TEST(PerfCounters, LibpfmEncodesTheGenericEvents) {
  if (!have_libpfm()) GTEST_SKIP() << encode_event("x").problem;
  const EventEncoding c = encode_event("perf::PERF_COUNT_HW_CPU_CYCLES");
  EXPECT_EQ(c.type, std::uint32_t(PERF_TYPE_HARDWARE));
  EXPECT_EQ(c.config, std::uint64_t(PERF_COUNT_HW_CPU_CYCLES));
  EXPECT_EQ(encode_event("perf::PERF_COUNT_HW_INSTRUCTIONS").config, std::uint64_t(PERF_COUNT_HW_INSTRUCTIONS));
  const EventEncoding bad = encode_event("NO_SUCH_EVENT_ANYWHERE");
  EXPECT_FALSE(bad.ok);
  EXPECT_NE(bad.problem.find("NO_SUCH_EVENT_ANYWHERE"), std::string::npos) << bad.problem;
}

TEST(PerfCounters, CountsAWindowThroughTheFake) {
  if (!have_libpfm()) GTEST_SKIP() << "built without libpfm4";
  const fs::path root = root_with(true, "2");
  FakePerf fake;
  CounterSet set(parse_counter_list("default"), fake, root.string());
  ASSERT_TRUE(set.any_available());
  fake.advance(500);  // not enabled yet: nothing counts
  set.begin();
  fake.advance(1e6);
  const auto w = set.end();
  ASSERT_EQ(w.size(), 5u);
  EXPECT_DOUBLE_EQ(*w[0].value, 3e6);
  EXPECT_DOUBLE_EQ(*w[1].value, 5e6);
  EXPECT_DOUBLE_EQ(*w[2].value, 0.25e6);
  EXPECT_DOUBLE_EQ(w[0].running_fraction, 1.0);
  // A machine with a core PMU but no memory-controller PMU: DRAM bytes say so.
  EXPECT_FALSE(w[3].value.has_value());
  EXPECT_NE(set.status()[3].reason.find("no memory-controller PMU"), std::string::npos) << set.status()[3].reason;
  fs::remove_all(root);
}

// Multiplexed counters are scaled, and each window uses its own enabled and
// running times: the kernel does not reset them.
TEST(PerfCounters, MultiplexedCountsAreScaledPerWindow) {
  if (!have_libpfm()) GTEST_SKIP() << "built without libpfm4";
  const fs::path root = root_with(true, "2");
  FakePerf fake;
  fake.share = 0.5;
  CounterSet set({"perf::PERF_COUNT_HW_CPU_CYCLES"}, fake, root.string());
  set.begin();
  fake.advance(2e6);
  auto w = set.end();
  EXPECT_DOUBLE_EQ(w[0].running_fraction, 0.5);
  EXPECT_DOUBLE_EQ(*w[0].value, 6e6);
  fake.fds.begin()->second.share = 0.25;  // the second window shares the PMU more
  set.begin();
  fake.advance(1e6);
  w = set.end();
  EXPECT_DOUBLE_EQ(w[0].running_fraction, 0.25);
  EXPECT_DOUBLE_EQ(*w[0].value, 3e6);
  fs::remove_all(root);
}

TEST(PerfCounters, WithoutACpuPmuEveryCounterSaysWhy) {
  if (!have_libpfm()) GTEST_SKIP() << "built without libpfm4";
  const fs::path root = root_with(false, "2");
  FakePerf fake;
  fake.refuse_errno = ENOENT;
  CounterSet set(parse_counter_list("default"), fake, root.string());
  EXPECT_FALSE(set.any_available());
  for (const auto& st : set.status()) {
    EXPECT_FALSE(st.available);
    const bool dram = st.event == kDramReadBytes || st.event == kDramWriteBytes;
    EXPECT_NE(st.reason.find(dram ? "no memory-controller PMU" : "no CPU PMU is exposed"), std::string::npos)
        << st.reason;
    EXPECT_FALSE(st.fix.empty());
  }
  set.begin();
  for (const auto& w : set.end()) EXPECT_FALSE(w.value.has_value());
  fs::remove_all(root);
}

TEST(PerfCounters, PermissionDeniedNamesTheParanoidSetting) {
  if (!have_libpfm()) GTEST_SKIP() << "built without libpfm4";
  const fs::path root = root_with(true, "3");
  FakePerf fake;
  fake.refuse_errno = EACCES;
  CounterSet set({"perf::PERF_COUNT_HW_INSTRUCTIONS"}, fake, root.string());
  ASSERT_EQ(set.status().size(), 1u);
  EXPECT_NE(set.status()[0].reason.find("perf_event_paranoid = 3"), std::string::npos) << set.status()[0].reason;
  fs::remove_all(root);
}

TEST(PerfCounters, UnknownEventIsUnavailableWithLibpfmsWords) {
  FakePerf fake;
  CounterSet set({"NO_SUCH_EVENT_ANYWHERE"}, fake, "/");
  ASSERT_EQ(set.status().size(), 1u);
  EXPECT_FALSE(set.status()[0].available);
  EXPECT_FALSE(set.status()[0].reason.empty());
  EXPECT_TRUE(fake.fds.empty()) << "nothing is opened for an event that could not be encoded";
}

// This machine, through the real system call: either the PMU counts a busy
// loop, or each counter says why it cannot.
TEST(PerfCounters, RealMachineCountsOrSaysWhy) {
  auto access = real_counter_access();
  CounterSet set(parse_counter_list("default"), *access);
  set.begin();
  volatile double x = 0;
  for (int i = 0; i < 1000000; ++i) x = x + 1.0;
  const auto w = set.end();
  for (std::size_t i = 0; i < w.size(); ++i) {
    SCOPED_TRACE(w[i].event);
    if (set.status()[i].available) {
      ASSERT_TRUE(w[i].value.has_value());
      EXPECT_GT(*w[i].value, 0);
    } else {
      EXPECT_FALSE(set.status()[i].reason.empty());
      EXPECT_FALSE(w[i].value.has_value());
      std::printf("[ unavailable ] %s: %s\n", w[i].event.c_str(), set.status()[i].reason.c_str());
    }
  }
}

}  // namespace
}  // namespace flopwatt::cpu

#include "cpu/bandwidth.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>

namespace flopwatt::cpu {
namespace {

namespace fs = std::filesystem;

// cpu0's caches as drivers/base/cacheinfo.c shows them under
// /sys/devices/system/cpu/cpu0/cache/indexN/ (Documentation/ABI/testing/
// sysfs-devices-system-cpu): level, type, size as "%uK", shared_cpu_list.
// Sizes: a Zen 4 laptop part (32 KiB L1d and L1i, 1 MiB L2, 16 MiB L3 shared by 16).
fs::path zen4_cache_tree() {
  const fs::path root = fs::temp_directory_path() / ("flopwatt_bw_" + std::to_string(::getpid()));
  fs::remove_all(root);
  const auto write = [&](int idx, const char* level, const char* type, const char* size, const char* shared) {
    const fs::path d = root / "sys/devices/system/cpu/cpu0/cache" / ("index" + std::to_string(idx));
    fs::create_directories(d);
    std::ofstream(d / "level") << level << "\n";
    std::ofstream(d / "type") << type << "\n";
    std::ofstream(d / "size") << size << "\n";
    std::ofstream(d / "shared_cpu_list") << shared << "\n";
  };
  write(0, "1", "Data", "32K", "0,8");
  write(1, "1", "Instruction", "32K", "0,8");
  write(2, "2", "Unified", "1024K", "0,8");
  write(3, "3", "Unified", "16384K", "0-15");
  return root;
}

TEST(Bandwidth, CacheTopologyFromSysfs) {
  const fs::path root = zen4_cache_tree();
  const auto c = cache_topology(root.string());
  ASSERT_EQ(c.size(), 3u) << "the instruction cache is left out";
  EXPECT_EQ(c[0].level, 1);
  EXPECT_EQ(c[0].bytes, 32u << 10);
  EXPECT_EQ(c[0].shared_by, 2);
  EXPECT_EQ(c[1].bytes, 1u << 20);
  EXPECT_EQ(c[2].level, 3);
  EXPECT_EQ(c[2].bytes, 16u << 20);
  EXPECT_EQ(c[2].shared_by, 16);
  EXPECT_EQ(c[2].source, "sysfs");

  const auto ws = working_sets(c, 4);
  ASSERT_EQ(ws.size(), 4u);
  EXPECT_EQ(ws[0].level, "L1");
  EXPECT_EQ(ws[0].bytes, 16u << 10);
  EXPECT_EQ(ws[1].bytes, 512u << 10);
  EXPECT_EQ(ws[2].level, "LLC");
  EXPECT_EQ(ws[2].bytes, (16u << 20) / 4 / 2) << "four threads share the L3";
  EXPECT_EQ(ws[3].level, "DRAM");
  EXPECT_EQ(ws[3].bytes, 64u << 20) << "4x 16 MiB";
  fs::remove_all(root);
}

TEST(Bandwidth, NoTopologyMeansDramOnlyAndAHugeLlcIsCapped) {
  const auto none = working_sets({}, 1);
  ASSERT_EQ(none.size(), 1u);
  EXPECT_EQ(none[0].level, "DRAM");
  EXPECT_NE(none[0].basis.find("no cache topology"), std::string::npos);
  const auto big = working_sets({{3, "Unified", std::size_t(508) << 20, 2, "sysconf"}}, 1);
  EXPECT_EQ(big.back().bytes, std::size_t(1) << 30);
  EXPECT_NE(big.back().basis.find("capped"), std::string::npos);
  EXPECT_TRUE(cache_topology("/nonexistent-root").empty()) << "sysconf stands in for the real root only";
}

// Every stream leaves exactly what it must, and a wrong element or sum is caught.
TEST(Bandwidth, StreamsCheckTheDataTheyMoved) {
  for (Stream s : {Stream::Read, Stream::Write, Stream::Copy, Stream::Triad}) {
    SCOPED_TRACE(stream_name(s));
    for (std::size_t n : {std::size_t(1), std::size_t(1023), std::size_t(5000)}) {
      StreamBuffers buf(n, s);
      double sum = 0;
      for (int pass = 0; pass < 3; ++pass) sum = run_stream_pass(s, buf, pass);
      EXPECT_TRUE(check_stream(s, buf, 3, sum)) << n;
      if (s == Stream::Read) {
        EXPECT_FALSE(check_stream(s, buf, 3, sum + 1));
        continue;
      }
      if (s == Stream::Write) {
        EXPECT_FALSE(check_stream(s, buf, 2, sum)) << "a pass that did not run";
      }
      StreamBuffers bad = buf;
      (s == Stream::Copy ? bad.b : bad.a)[n / 2] += 1;
      EXPECT_FALSE(check_stream(s, bad, 3, sum));
    }
  }
}

// Structure and sanity only: rates depend on the machine's load. The bound
// (1 TB/s per thread) catches a miscounted byte factor, not a slow machine.
TEST(Bandwidth, MeasuredPointsAreVerifiedPositiveAndBounded) {
  const WorkingSet small{"L1", 16 << 10, "test"};
  for (Stream s : {Stream::Read, Stream::Write, Stream::Copy, Stream::Triad})
    for (int threads : {1, 2}) {
      SCOPED_TRACE(std::string(stream_name(s)) + " threads=" + std::to_string(threads));
      const BandwidthPoint p = measure_stream(s, small, threads, 0.01);
      EXPECT_TRUE(p.verified) << p.note;
      EXPECT_GE(p.reps, 5);
      EXPECT_GE(p.threads, 1);
      EXPECT_TRUE(std::isfinite(p.median_bytes_per_s));
      EXPECT_GT(p.median_bytes_per_s, 0);
      EXPECT_LE(p.p10_bytes_per_s, p.median_bytes_per_s);
      EXPECT_LE(p.median_bytes_per_s, p.p90_bytes_per_s);
      EXPECT_LT(p.median_bytes_per_s / p.threads, 1e12);
    }
}

}  // namespace
}  // namespace flopwatt::cpu

#include "cpu/bandwidth.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>

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
  for (Stream s : all_streams()) {
    SCOPED_TRACE(stream_name(s));
    // 5003: a non-temporal stream's unaligned tail after its whole vectors.
    for (std::size_t n : {std::size_t(1), std::size_t(1023), std::size_t(5003)}) {
      StreamBuffers buf(n, s);
      double sum = 0;
      for (int pass = 0; pass < 3; ++pass) sum = run_stream_pass(s, buf, pass);
      EXPECT_TRUE(check_stream(s, buf, 3, sum)) << n;
      if (s == Stream::Read) {
        EXPECT_FALSE(check_stream(s, buf, 3, sum + 1));
        continue;
      }
      if (s != Stream::Copy && s != Stream::CopyNt && s != Stream::Triad && s != Stream::TriadNt) {
        EXPECT_FALSE(check_stream(s, buf, 2, sum)) << "a pass that did not run";
      }
      StreamBuffers bad = buf;
      (s == Stream::Copy || s == Stream::CopyNt ? bad.b : bad.a)[n / 2] += 1;
      EXPECT_FALSE(check_stream(s, bad, 3, sum));
      if (!buf.c.empty() && s != Stream::Triad && s != Stream::TriadNt) {
        StreamBuffers bad_c = buf;  // an in-place stream's last array
        bad_c.c[n - 1] += 1;
        EXPECT_FALSE(check_stream(s, bad_c, 3, sum));
      }
      if (!buf.h.empty()) {
        StreamBuffers bad_h = buf;
        bad_h.h[0] ^= 1;
        EXPECT_FALSE(check_stream(s, bad_h, 3, sum)) << "the bf16 copy";
      }
    }
  }
}

// The ops' patterns: what one pass moves per element, by hand.
TEST(Bandwidth, PatternsCountTheirStreams) {
  EXPECT_EQ(stream_bytes_per_element(Stream::Update), 8);        // a read, a written back
  EXPECT_EQ(stream_bytes_per_element(Stream::R1U1), 12);
  EXPECT_EQ(stream_bytes_per_element(Stream::R2U1), 16);
  EXPECT_EQ(stream_bytes_per_element(Stream::R1U3), 4 + 3 * 8);  // AdamW: g; p, m, v
  EXPECT_EQ(stream_bytes_per_element(Stream::R1U3H1), 4 + 3 * 8 + 2);
  EXPECT_EQ(stream_bytes_per_element(Stream::CopyNt), stream_bytes_per_element(Stream::Copy));
  EXPECT_EQ(stream_footprint_per_element(Stream::R1U3H1), 4 * 4 + 2);
  EXPECT_EQ(stream_footprint_per_element(Stream::Update), 4);
  std::set<std::string> names;
  for (Stream s : all_streams()) EXPECT_TRUE(names.insert(stream_name(s)).second) << stream_name(s);
  for (const char* op_pattern : {"read", "write", "copy", "triad", "update", "r1u1", "r2u1", "r1u3", "r1u3h1"})
    EXPECT_TRUE(names.count(op_pattern)) << op_pattern << ": named by workloads/gpt2/op_table.cpp";
}

// What 2 threads keep per level of the Zen 4 tree: private L1 and L2 once per
// thread, the shared L3 once; the roofline picks an op's level by it.
TEST(Bandwidth, LevelCapacitiesCountPrivateCachesPerThread) {
  const fs::path root = zen4_cache_tree();
  const auto caps = level_capacities(cache_topology(root.string()), 2);
  ASSERT_EQ(caps.size(), 3u);
  EXPECT_EQ(caps[0].level, "L1");
  EXPECT_EQ(caps[0].bytes, 2u * (32u << 10));
  EXPECT_EQ(caps[1].level, "L2");
  EXPECT_EQ(caps[1].bytes, 2u * (1u << 20));
  EXPECT_EQ(caps[2].level, "LLC");
  EXPECT_EQ(caps[2].bytes, 16u << 20);
  // Two L3s of 16 CPUs each hold twice as much for 20 threads.
  const auto two = level_capacities({{3, "Unified", std::size_t(16) << 20, 16, "sysfs"}}, 20);
  ASSERT_EQ(two.size(), 1u);
  EXPECT_EQ(two[0].bytes, std::size_t(32) << 20);
  fs::remove_all(root);
}

// Structure and sanity only: rates depend on the machine's load. The bound
// (1 TB/s per thread) catches a miscounted byte factor, not a slow machine.
TEST(Bandwidth, MeasuredPointsAreVerifiedPositiveAndBounded) {
  const WorkingSet small{"L1", 16 << 10, "test"};
  for (Stream s : all_streams())
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

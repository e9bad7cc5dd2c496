// The machine-file layer (sysfs/files.h) on fixture trees.
#include "sysfs/files.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <cerrno>
#include <cstdint>

#include "tests/power/fixture_tree.h"
#include "tests/sysfs/cpu0_cache_tree.h"

using namespace flopwatt::sysfs;
using flopwatt::power::testing::FixtureTree;
using flopwatt::sysfs::testing::write_cpu0_cache;

// A sysfs attribute is a decimal number and a newline
// (Documentation/filesystems/sysfs.rst: one value per file, ASCII); anything
// else is a fault to report, not a reading.
TEST(Sysfs, IntegersOnlyWhenTheWholeFileIsANumber) {
  FixtureTree t;
  std::uint64_t u = 0;
  std::int64_t i = 0;
  int err = 0;
  t.write("v", "123\n");
  EXPECT_TRUE(read_u64_file(t.path("v").c_str(), u, err));
  EXPECT_EQ(u, 123u);
  EXPECT_TRUE(read_i64_file(t.path("v").c_str(), i, err));
  EXPECT_EQ(i, 123);
  t.write("v", "-5\n");
  EXPECT_TRUE(read_i64_file(t.path("v").c_str(), i, err));
  EXPECT_EQ(i, -5);
  EXPECT_FALSE(read_u64_file(t.path("v").c_str(), u, err));

  t.write("v", "123abc\n");
  EXPECT_FALSE(read_u64_file(t.path("v").c_str(), u, err));
  EXPECT_EQ(err, EINVAL);
  EXPECT_FALSE(read_i64_file(t.path("v").c_str(), i, err));
  EXPECT_EQ(err, EINVAL);
  EXPECT_FALSE(read_int(t.path("v")));

  t.write("v", "99999999999999999999999\n");  // overflows 64 bits
  EXPECT_FALSE(read_u64_file(t.path("v").c_str(), u, err));
  EXPECT_EQ(err, ERANGE);
  EXPECT_FALSE(read_i64_file(t.path("v").c_str(), i, err));
  EXPECT_EQ(err, ERANGE);
  EXPECT_FALSE(read_int(t.path("v")));

  t.write("v", "18446744073709551615\n");  // UINT64_MAX itself is a number
  EXPECT_TRUE(read_u64_file(t.path("v").c_str(), u, err));
  EXPECT_EQ(u, UINT64_MAX);
}

// strtoll with base 0 read "010" as 8 and "0x10" as 16; sysfs prints neither
// octal nor hex for its numbers.
TEST(Sysfs, NumbersAreDecimalNotOctal) {
  FixtureTree t;
  t.write("v", "010\n");
  EXPECT_EQ(read_int(t.path("v")), 10);
  t.write("v", "0755\n");
  EXPECT_EQ(read_int(t.path("v")), 755);
  t.write("v", "0x10\n");
  int err = 0;
  EXPECT_FALSE(read_int(t.path("v"), &err));
  EXPECT_EQ(err, EINVAL);
  EXPECT_EQ(parse_decimal("010"), 10u);
  EXPECT_EQ(parse_decimal("18446744073709551615"), UINT64_MAX);
  EXPECT_FALSE(parse_decimal("18446744073709551616"));
  for (const char* bad : {"", " 1", "1 ", "+1", "-1", "0x1", "1e3", "1.0"}) EXPECT_FALSE(parse_decimal(bad)) << bad;
}

TEST(Sysfs, CpuListsStrictAboutWhatTheKernelDoesNotPrint) {
  EXPECT_EQ(*parse_cpu_list("0"), std::vector<int>{0});
  EXPECT_EQ(*parse_cpu_list("0-3,8,10-11"), (std::vector<int>{0, 1, 2, 3, 8, 10, 11}));
  EXPECT_EQ(*parse_cpu_list("08"), std::vector<int>{8});  // decimal, not octal
  EXPECT_EQ(*parse_cpu_list("5-5"), std::vector<int>{5});
  EXPECT_TRUE(parse_cpu_list("")->empty());  // an offline mask
  for (const char* bad : {"3-1", "a", ",", "0,", ",0", "0,,1", "-1", "1-", "-", "0-3-5", "0x1", " 0", "+2",
                          "65536", "0-99999", "9223372036854775807", "0,99999999999999999999-3"})
    EXPECT_FALSE(parse_cpu_list(bad)) << bad;
}

namespace {

const std::string kPmuDir = "sys/bus/event_source/devices/";

void write_uncore_pmu(const FixtureTree& t) {
  const std::pair<const char*, const char*> files[] = {
      {"type", "010"},
      {"cpumask", "0,18"},
      {"format/event", "config:0-7"},
      {"format/umask", "config:8-15"},
      {"format/split", "config:16-17,40-41"},
      {"format/mask1", "config1:0-3"},
      {"events/cas_count_read", "event=0x04,umask=0x03"},
      {"events/cas_count_read.scale", "6.103515625e-5"},
      {"events/cas_count_read.unit", "MiB"},
      {"events/clockticks", "event=0x00,umask=0x00"},
  };
  for (const auto& [file, text] : files) t.write(kPmuDir + "uncore_imc_0/" + file, std::string(text) + "\n");
}

}  // namespace

TEST(Sysfs, PmuDescriptionReadFromItsDirectory) {
  FixtureTree t;
  write_uncore_pmu(t);
  const Pmu p = read_pmu(t.root(), "uncore_imc_0");
  ASSERT_TRUE(p.present);
  EXPECT_TRUE(p.problem.empty()) << p.problem;
  EXPECT_EQ(p.type, 10u);  // "010" in `type` is PMU 10, not 8
  EXPECT_EQ(p.cpus, (std::vector<int>{0, 18}));
  EXPECT_EQ(p.formats.at("umask"), "config:8-15");
  EXPECT_EQ(pmu_event_names(p), (std::vector<std::string>{"cas_count_read", "clockticks"}));
  const auto e = read_pmu_event(p, "cas_count_read");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->spec, "event=0x04,umask=0x03");
  EXPECT_DOUBLE_EQ(e->scale.value(), 6.103515625e-5);
  EXPECT_EQ(e->unit.value(), "MiB");
  const auto bare = read_pmu_event(p, "clockticks");
  ASSERT_TRUE(bare);
  EXPECT_FALSE(bare->scale);
  EXPECT_FALSE(bare->unit);
  EXPECT_FALSE(read_pmu_event(p, "nothing"));
  EXPECT_FALSE(read_pmu(t.root(), "amd_umc_0").present);
}

TEST(Sysfs, PmuFilesThatAreNotWhatTheKernelWritesAreNamed) {
  FixtureTree t;
  write_uncore_pmu(t);
  t.write(kPmuDir + "uncore_imc_0/type", "0x0a\n");
  Pmu p = read_pmu(t.root(), "uncore_imc_0");
  EXPECT_NE(p.problem.find("uncore_imc_0/type: type '0x0a' is not a decimal number"), std::string::npos) << p.problem;
  t.write(kPmuDir + "uncore_imc_0/type", "10\n");
  t.write(kPmuDir + "uncore_imc_0/cpumask", "0-\n");
  p = read_pmu(t.root(), "uncore_imc_0");
  EXPECT_NE(p.problem.find("uncore_imc_0/cpumask: cpumask '0-' is not a CPU list"), std::string::npos) << p.problem;
  t.write(kPmuDir + "uncore_imc_0/events/cas_count_read.scale", "lots\n");
  const auto e = read_pmu_event(read_pmu(t.root(), "uncore_imc_0"), "cas_count_read");
  ASSERT_TRUE(e);
  EXPECT_FALSE(e->scale);
  EXPECT_NE(e->problem.find("cas_count_read.scale: scale 'lots' is not a number"), std::string::npos) << e->problem;
}

TEST(Sysfs, EventTermsFillTheirFormatBitsLowBitsFirst) {
  FixtureTree t;
  write_uncore_pmu(t);
  const Pmu p = read_pmu(t.root(), "uncore_imc_0");
  auto encode = [&](const std::string& terms, std::string& problem) {
    PerfConfig c;
    return encode_terms(terms, p, c, problem) ? std::optional<PerfConfig>(c) : std::nullopt;
  };
  std::string problem;
  EXPECT_EQ(encode("event=0x04,umask=0x03", problem).value().config, 0x0304u);
  EXPECT_EQ(encode("event=10", problem).value().config, 10u);  // a decimal value in a hand-written spec
  EXPECT_EQ(encode("event=010", problem).value().config, 10u);
  EXPECT_EQ(encode("split=0xf", problem).value().config, (0x3ull << 16) | (0x3ull << 40));
  const auto c1 = encode("event=1,mask1", problem);  // a bare term is 1
  ASSERT_TRUE(c1);
  EXPECT_EQ(c1->config, 1u);
  EXPECT_EQ(c1->config1, 1u);
  EXPECT_FALSE(encode("split=0x1f", problem));
  EXPECT_NE(problem.find("does not fit the 4 bits"), std::string::npos) << problem;
  EXPECT_FALSE(encode("bogus=1", problem));
  EXPECT_NE(problem.find("uncore_imc_0/format/bogus missing: uncore_imc_0 has no term 'bogus'"), std::string::npos)
      << problem;
  EXPECT_FALSE(encode("event=0xzz", problem));
  EXPECT_FALSE(encode("event=", problem));

  // Kernels before format/ files encoded the event code in config's low byte.
  Pmu old;
  old.name = "power";
  PerfConfig c;
  ASSERT_TRUE(encode_terms("event=0x05", old, c, problem)) << problem;
  EXPECT_EQ(c.config, 0x05u);
}

TEST(Sysfs, CacheSizesInTheKernelsNotation) {
  EXPECT_EQ(parse_cache_size("48K"), std::size_t(48) << 10);
  EXPECT_EQ(parse_cache_size("32M"), std::size_t(32) << 20);
  EXPECT_EQ(parse_cache_size("1G"), std::size_t(1) << 30);
  EXPECT_EQ(parse_cache_size("4096"), 4096u);
  EXPECT_EQ(parse_cache_size("010K"), std::size_t(10) << 10);
  for (const char* bad : {"", "K", "32 M", "32KB", "32k", "-1K", "99999999999999999999K"})
    EXPECT_FALSE(parse_cache_size(bad)) << bad;
}

TEST(Sysfs, CachesOfCpu0ReadBelowTheRoot) {
  FixtureTree t;
  write_cpu0_cache(t, "index0", "1", "Data", "48K", "0,8");
  write_cpu0_cache(t, "index1", "1", "Instruction", "32K", "0,8");
  write_cpu0_cache(t, "index2", "2", "Unified", "1280K", "0,8");
  write_cpu0_cache(t, "index3", "3", "Unified", "24576K", "0-15");
  write_cpu0_cache(t, "index10", "4", "Unified", "64M", "0-15");  // natural order: index10 after index3
  t.write("sys/devices/system/cpu/cpu0/cache/uevent", "");
  std::string problem;
  const auto caches = cpu0_caches(t.root(), &problem);
  EXPECT_TRUE(problem.empty()) << problem;
  ASSERT_EQ(caches.size(), 5u);
  EXPECT_EQ(caches[0].level, 1);
  EXPECT_EQ(caches[0].type, "Data");
  EXPECT_EQ(caches[0].bytes, std::size_t(48) << 10);
  EXPECT_EQ(caches[0].shared_cpus, (std::vector<int>{0, 8}));
  EXPECT_EQ(caches[3].bytes, std::size_t(24) << 20);
  EXPECT_EQ(caches[3].shared_cpus.size(), 16u);
  EXPECT_EQ(caches[4].level, 4);
  EXPECT_EQ(caches[4].bytes, std::size_t(64) << 20);

  write_cpu0_cache(t, "index2", "2", "Unified", "1280 KB", "0,8");
  write_cpu0_cache(t, "index3", "3", "Unified", "24576K", "0-");
  const auto broken = cpu0_caches(t.root(), &problem);
  ASSERT_EQ(broken.size(), 4u);  // index2 dropped; index3 kept without its sharers
  EXPECT_EQ(broken[2].level, 3);
  EXPECT_TRUE(broken[2].shared_cpus.empty());
  EXPECT_NE(problem.find("cache/index2/size: size '1280 KB' is not a cache size"), std::string::npos) << problem;

  EXPECT_TRUE(cpu0_caches(t.path("nothing")).empty());
}

// PCI vendor, device and revision files hold "0x%04x"/"0x%02x"
// (drivers/pci/pci-sysfs.c), the one place sysfs numbers are hex.
TEST(Sysfs, PciIdsOnlyInTheirHexForm) {
  EXPECT_EQ(parse_hex_0x("0x1022"), 0x1022u);
  EXPECT_EQ(parse_hex_0x("0x17F0"), 0x17f0u);
  EXPECT_EQ(parse_hex_0x("0xffffffffffffffff"), UINT64_MAX);
  for (const char* bad : {"1022", "0x", "0x10g2", " 0x10", "0x1ffffffffffffffff", "", "-0x1"})
    EXPECT_FALSE(parse_hex_0x(bad)) << bad;
}

// A device's driver link is relative, ../../../bus/pci/drivers/NAME
// (Documentation/ABI/testing/sysfs-bus-pci, "driver").
TEST(Sysfs, LinkTargetNameIsTheLastComponent) {
  FixtureTree d;
  const std::string link = d.path("driver");
  ASSERT_EQ(::symlink("../../../bus/pci/drivers/amdxdna", link.c_str()), 0);
  EXPECT_EQ(link_target_name(link), "amdxdna");
  d.write("plain", "x");
  EXPECT_FALSE(link_target_name(d.path("plain")));
  EXPECT_FALSE(link_target_name(d.path("absent")));
}

// /proc/cpuinfo as arch/x86/kernel/cpu/proc.c prints it ("key\t: value", a
// blank line between CPUs) and /proc/meminfo as fs/proc/meminfo.c does
// ("Key:" padded, the value in kB), both described in
// Documentation/filesystems/proc.rst.
TEST(Sysfs, CpuinfoAndMeminfoReadBelowTheRoot) {
  FixtureTree d;
  d.write("proc/cpuinfo",
        "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD Ryzen 7 7840U w/ Radeon 780M Graphics\n"
        "flags\t\t: fpu avx512f\n\nprocessor\t: 1\nmodel name\t: other\n");
  d.write("proc/meminfo", "MemTotal:       32002116 kB\nMemFree:         1000 kB\nHugepagesize:    2048 kB\n"
                                  "Odd:             12 MB\n");
  EXPECT_EQ(cpuinfo_field(d.root(), "model name"), "AMD Ryzen 7 7840U w/ Radeon 780M Graphics");
  EXPECT_EQ(cpuinfo_field(d.root(), "flags"), "fpu avx512f");
  EXPECT_FALSE(cpuinfo_field(d.root(), "model"));  // a key is matched whole, not as a prefix
  EXPECT_EQ(meminfo_bytes(d.root(), "MemTotal"), 32002116ull * 1024);
  EXPECT_FALSE(meminfo_bytes(d.root(), "Odd"));
  EXPECT_FALSE(meminfo_bytes(d.root(), "SwapTotal"));
  EXPECT_FALSE(cpuinfo_field(d.path("nowhere"), "model name"));
}

#include "power/sysfs.h"

#include <gtest/gtest.h>

#include <cerrno>

#include "fixture_tree.h"

using namespace flopwatt::power;
using flopwatt::power::testing::FixtureTree;

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

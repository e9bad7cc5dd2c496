#include "npu/xdna/hw_context.h"

#include <gtest/gtest.h>

#include "npu/xdna/buffer.h"
#include "tests/npu/xdna/fake_driver.h"

namespace flopwatt::npu::xdna {
namespace {

TEST(HwContext, DestroyingTheContextReleasesItsSyncobj) {
  test::FakeDriver f({}, test::FakeOptions{});
  DevHeap heap(f);
  {
    HwContext ctx(f, 8192, 16, DriverBuild::Mainline);
    EXPECT_EQ(f.live_contexts(), 1u);
    EXPECT_EQ(f.live_syncobjs(), 1u);
  }
  EXPECT_EQ(f.live_contexts(), 0u);
  EXPECT_EQ(f.live_syncobjs(), 0u) << "the driver leaves the handle to user space";
}

TEST(HwContext, TheBuildIsToldApartByTheDriverVersion) {
  EXPECT_EQ(driver_build(std::nullopt), DriverBuild::Mainline);
  for (const auto build : {test::DriverBuild::Mainline, test::DriverBuild::OutOfTree}) {
    test::FakeOptions o;
    o.build = build;
    test::FakeDriver f({}, o);
    int err = 0;
    EXPECT_EQ(driver_build(f.version(&err)),
              build == test::DriverBuild::OutOfTree ? DriverBuild::OutOfTree : DriverBuild::Mainline);
  }
}

// The out-of-tree driver copies a 32-byte QoS struct: the two words past
// mainline's six must be ours, and say "no start column requested".
TEST(HwContext, TheOutOfTreeDriverGetsItsWholeQosStruct) {
  test::FakeOptions o;
  o.build = test::DriverBuild::OutOfTree;
  test::FakeDriver f({}, o);
  DevHeap heap(f);
  int err = 0;
  HwContext ctx(f, 8192, 16, driver_build(f.version(&err)));
  EXPECT_EQ(f.last_user_start_col, 0xFFu);
  EXPECT_EQ(f.last_qos_reserved, 0u);
}

TEST(HwContext, WithoutTheHeapTheDriverRefusesAndSaysSo) {
  test::FakeDriver f({}, test::FakeOptions{});
  try {
    HwContext ctx(f, 8192, 16, DriverBuild::Mainline);
    FAIL() << "created a context without a device heap";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("CREATE_HWCTX"), std::string::npos) << e.what();
  }
  EXPECT_EQ(f.live_syncobjs(), 0u);
}

}  // namespace
}  // namespace flopwatt::npu::xdna

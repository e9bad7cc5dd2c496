#include "npu/xdna/device_info.h"

#include <gtest/gtest.h>

#include "tests/npu/xdna/fake_driver.h"

namespace flopwatt::npu::xdna {
namespace {

// QUERY_RESOURCE_INFO is parameter 12 upstream; 13 answers eight bytes of
// frame-boundary preemption state and succeeds, so asking 13 reads a context
// limit of 0 without any error.
TEST(DeviceInfo, TheContextLimitComesFromQueryResourceInfo) {
  test::FakeOptions o;
  o.hwctx_limit = 16;
  test::FakeDriver f({}, o);
  const DeviceInfo info = query_device(f);
  ASSERT_TRUE(info.resources.value) << info.resources.error;
  EXPECT_EQ(info.resources.value->npu_task_max, 16u);
  EXPECT_EQ(context_limit(info, "npu1"), 16u) << "the driver's figure, not npu1's table value of 6";
}

// The driver returns a power sensor (and on mainline a temperature when PMF
// has one) plus one utilisation sensor per column: 9 or 10 on an 8-column
// Strix, more than the 8 flopwatt once asked for. All of them are read.
TEST(DeviceInfo, EverySensorTheDriverReturnsIsRead) {
  struct Case {
    test::DriverBuild build;
    std::uint16_t cols, temp;
    std::size_t sensors;
  };
  for (const Case c : {Case{test::DriverBuild::OutOfTree, 8, 0xffff, 9}, Case{test::DriverBuild::Mainline, 8, 45, 10},
                       Case{test::DriverBuild::Mainline, 8, 0xffff, 9}, Case{test::DriverBuild::OutOfTree, 5, 0xffff, 6}}) {
    SCOPED_TRACE(testing::Message() << "cols " << c.cols << " temp " << c.temp);
    test::FakeOptions o;
    o.build = c.build, o.cols = c.cols, o.npu_temp = c.temp;
    test::FakeDriver f({}, o);
    const DeviceInfo info = query_device(f);
    ASSERT_TRUE(info.sensors.value) << info.sensors.error;
    ASSERT_EQ(info.sensors.value->size(), c.sensors);
    EXPECT_STREQ(info.sensors.value->front().label, "Total Power");
    EXPECT_EQ(std::string(info.sensors.value->back().label), "Column " + std::to_string(c.cols - 1) + " Utilization");
  }
}

TEST(DeviceInfo, NoPmfMeansNoSensorsAndSaysWhy) {
  test::FakeOptions o;
  o.pmf = false;
  test::FakeDriver f({}, o);
  const DeviceInfo info = query_device(f);
  EXPECT_FALSE(info.sensors.value);
  EXPECT_NE(info.sensors.error.find("not supported"), std::string::npos) << info.sensors.error;
}

}  // namespace
}  // namespace flopwatt::npu::xdna

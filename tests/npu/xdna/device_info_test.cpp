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

}  // namespace
}  // namespace flopwatt::npu::xdna

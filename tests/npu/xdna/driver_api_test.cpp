#include "npu/xdna/driver_api.h"

#include <gtest/gtest.h>

#include <cerrno>

namespace flopwatt::npu::xdna {
namespace {

TEST(DriverApi, OnlyAnInterruptedIoctlIsReissued) {
  EXPECT_TRUE(ioctl_restartable(EINTR));
  EXPECT_FALSE(ioctl_restartable(EAGAIN)) << "CREATE_BO's EAGAIN asks for a bigger heap; reissuing never ends";
  EXPECT_FALSE(ioctl_restartable(EINVAL));
}

}  // namespace
}  // namespace flopwatt::npu::xdna

// The fake driver's own contract, one upstream rule per check, so a change to
// the fake that drifts from amdxdna shows here and not as a puzzling backend
// failure.
#include "tests/npu/xdna/fake_driver.h"

#include <gtest/gtest.h>

#include <cerrno>

namespace flopwatt::npu::xdna::test {
namespace {

std::uint32_t create(FakeDriver& f, BoType type, std::size_t size, int* err) {
  CreateBo c{};
  c.type = type, c.size = size;
  return f.ioctl(kIoctlCreateBo, &c, err) == 0 ? c.handle : 0;
}

GetBoInfo info(FakeDriver& f, std::uint32_t h) {
  GetBoInfo i{};
  i.handle = h;
  int err = 0;
  EXPECT_EQ(f.ioctl(kIoctlGetBoInfo, &i, &err), 0);
  return i;
}

TEST(FakeDriver, ShmemAddressesAreInvalidUntilMapped) {
  for (bool pasid : {true, false}) {
    FakeOptions o;
    o.pasid = pasid;
    FakeDriver f({}, o);
    int err = 0;
    const auto h = create(f, kBoShmem, 8192, &err);
    ASSERT_NE(h, 0u);
    GetBoInfo i = info(f, h);
    EXPECT_EQ(i.vaddr, kInvalidAddr);
    EXPECT_NE(i.map_offset, kInvalidAddr);
    EXPECT_EQ(i.xdna_addr == kInvalidAddr, pasid) << "PASID: no DMA address of its own";
    void* p = f.mmap(8192, i.map_offset, nullptr, &err);
    ASSERT_NE(p, nullptr);
    i = info(f, h);
    if (pasid) {
      EXPECT_EQ(i.vaddr, reinterpret_cast<std::uint64_t>(p));
      EXPECT_EQ(i.xdna_addr, i.vaddr) << "the device reaches it at the user address";
    } else {
      EXPECT_EQ(i.vaddr, kInvalidAddr) << "without PASID the user address is not recorded";
    }
    f.munmap(p, 8192);
    EXPECT_EQ(info(f, h).vaddr, kInvalidAddr);
  }
}

TEST(FakeDriver, DevObjectsNeedAMappedHeapAndHaveNoMmapOffset) {
  FakeDriver f({}, FakeOptions{});
  int err = 0;
  EXPECT_EQ(create(f, kBoDev, 4096, &err), 0u);
  EXPECT_EQ(err, EAGAIN);
  const auto heap = create(f, kBoDevHeap, kDevHeapBytes, &err);
  ASSERT_NE(heap, 0u);
  EXPECT_EQ(create(f, kBoDev, 4096, &err), 0u) << "PASID: the heap must be mapped first";
  EXPECT_EQ(err, EAGAIN);
  void* hp = f.mmap(kDevHeapBytes, info(f, heap).map_offset, nullptr, &err);
  ASSERT_NE(hp, nullptr);
  const auto dev = create(f, kBoDev, 4096, &err);
  ASSERT_NE(dev, 0u);
  const GetBoInfo i = info(f, dev);
  EXPECT_EQ(i.map_offset, kInvalidAddr);
  EXPECT_EQ(i.xdna_addr - info(f, heap).xdna_addr, i.vaddr - reinterpret_cast<std::uint64_t>(hp));
  f.munmap(hp, kDevHeapBytes);
}

TEST(FakeDriver, SyncFromDeviceOnAnOrdinaryObjectIsEinval) {
  FakeDriver f({}, FakeOptions{});
  int err = 0;
  const auto h = create(f, kBoShmem, 4096, &err);
  SyncBo s{h, kSyncToDevice, 0, 4096};
  EXPECT_EQ(f.ioctl(kIoctlSyncBo, &s, &err), 0);
  s.direction = kSyncFromDevice;
  EXPECT_EQ(f.ioctl(kIoctlSyncBo, &s, &err), -1);
  EXPECT_EQ(err, EINVAL);
}

TEST(FakeDriver, TheContextLimitHoldsUntilOneIsDestroyed) {
  FakeDriver f({}, FakeOptions{});
  QosInfo q{};
  std::vector<std::uint32_t> handles;
  int err = 0;
  for (int i = 0; i < 7; ++i) {
    CreateHwctx c{};
    c.qos_p = reinterpret_cast<std::uint64_t>(&q), c.max_opc = 8192, c.num_tiles = 16;
    const int r = f.ioctl(kIoctlCreateHwctx, &c, &err);
    if (i < 6) {
      ASSERT_EQ(r, 0);
      handles.push_back(c.handle);
    } else {
      EXPECT_EQ(r, -1);
      EXPECT_EQ(err, EINVAL);
    }
  }
  DestroyHwctx d{handles[0], 0};
  EXPECT_EQ(f.ioctl(kIoctlDestroyHwctx, &d, &err), 0);
  CreateHwctx c{};
  c.qos_p = reinterpret_cast<std::uint64_t>(&q), c.max_opc = 8192, c.num_tiles = 4 * 6;
  EXPECT_EQ(f.ioctl(kIoctlCreateHwctx, &c, &err), -1) << "six columns on a five-column array";
  c.num_tiles = 16;
  EXPECT_EQ(f.ioctl(kIoctlCreateHwctx, &c, &err), 0);
}

}  // namespace
}  // namespace flopwatt::npu::xdna::test

// The fake driver's own contract, one upstream rule per check, so a change to
// the fake that drifts from amdxdna shows here and not as a puzzling backend
// failure. Written against upstream_uapi.h only, like the fake.
#include "tests/npu/xdna/fake_driver.h"

#include <gtest/gtest.h>

#include <sys/mman.h>

#include <cerrno>

namespace flopwatt::npu::xdna::test {
namespace {

namespace up = upstream;

std::uint32_t create(FakeDriver& f, std::uint32_t type, std::size_t size, int* err) {
  up::amdxdna_drm_create_bo c{};
  c.type = type, c.size = size;
  return f.ioctl(up::kIoctlCreateBo, &c, err) == 0 ? c.handle : 0;
}

up::amdxdna_drm_get_bo_info info(FakeDriver& f, std::uint32_t h) {
  up::amdxdna_drm_get_bo_info i{};
  i.handle = h;
  int err = 0;
  EXPECT_EQ(f.ioctl(up::kIoctlGetBoInfo, &i, &err), 0);
  return i;
}

int create_ctx(FakeDriver& f, const void* qos, std::uint32_t num_tiles, int* err, up::amdxdna_drm_create_hwctx* out = nullptr) {
  up::amdxdna_drm_create_hwctx c{};
  c.qos_p = reinterpret_cast<std::uint64_t>(qos), c.max_opc = 8192, c.num_tiles = num_tiles;
  const int r = f.ioctl(up::kIoctlCreateHwctx, &c, err);
  if (out) *out = c;
  return r;
}

// A heap the way user space sets one up: a DEV_HEAP chunk, mapped.
struct MappedHeap {
  FakeDriver& f;
  std::uint32_t handle = 0;
  void* p = nullptr;
  explicit MappedHeap(FakeDriver& fd) : f(fd) {
    int err = 0;
    handle = create(f, up::kBoDevHeap, up::kDevmSize, &err);
    EXPECT_NE(handle, 0u);
    p = f.mmap(up::kDevmSize, info(f, handle).map_offset, nullptr, &err);
    EXPECT_NE(p, nullptr);
  }
  ~MappedHeap() {
    f.munmap(p, up::kDevmSize);
    f.gem_close(handle);
  }
};

TEST(FakeDriver, ShmemAddressesAreInvalidUntilMapped) {
  for (bool pasid : {true, false}) {
    FakeOptions o;
    o.pasid = pasid;
    FakeDriver f({}, o);
    int err = 0;
    const auto h = create(f, up::kBoShare, 8192, &err);
    ASSERT_NE(h, 0u);
    auto i = info(f, h);
    EXPECT_EQ(i.vaddr, up::kInvalidAddr);
    EXPECT_NE(i.map_offset, up::kInvalidAddr);
    EXPECT_EQ(i.xdna_addr == up::kInvalidAddr, pasid) << "PASID: no DMA address of its own";
    void* p = f.mmap(8192, i.map_offset, nullptr, &err);
    ASSERT_NE(p, nullptr);
    i = info(f, h);
    if (pasid) {
      EXPECT_EQ(i.vaddr, reinterpret_cast<std::uint64_t>(p));
      EXPECT_EQ(i.xdna_addr, i.vaddr) << "the device reaches it at the user address";
    } else {
      EXPECT_EQ(i.vaddr, up::kInvalidAddr) << "without PASID the user address is not recorded";
    }
    f.munmap(p, 8192);
    EXPECT_EQ(info(f, h).vaddr, up::kInvalidAddr);
  }
}

TEST(FakeDriver, DevObjectsNeedAMappedHeapAndHaveNoMmapOffset) {
  FakeDriver f({}, FakeOptions{});
  int err = 0;
  EXPECT_EQ(create(f, up::kBoDev, 4096, &err), 0u);
  EXPECT_EQ(err, EAGAIN);
  const auto heap = create(f, up::kBoDevHeap, up::kDevmSize, &err);
  ASSERT_NE(heap, 0u);
  EXPECT_EQ(create(f, up::kBoDev, 4096, &err), 0u) << "the heap must be mapped first";
  EXPECT_EQ(err, EAGAIN);
  void* hp = f.mmap(up::kDevmSize, info(f, heap).map_offset, nullptr, &err);
  ASSERT_NE(hp, nullptr);
  const auto dev = create(f, up::kBoDev, 4096, &err);
  ASSERT_NE(dev, 0u);
  const auto i = info(f, dev);
  EXPECT_EQ(i.map_offset, up::kInvalidAddr);
  EXPECT_EQ(i.xdna_addr - info(f, heap).xdna_addr, i.vaddr - reinterpret_cast<std::uint64_t>(hp));
  f.munmap(hp, up::kDevmSize);
}

TEST(FakeDriver, HeapChunksAreMultiplesOf64MiBUpToTheDeviceMaximum) {
  int err = 0;
  FakeDriver npu1({}, FakeOptions{});
  EXPECT_EQ(create(npu1, up::kBoDevHeap, 32u << 20, &err), 0u);
  EXPECT_EQ(err, EINVAL) << "not a multiple of AIE2_DEVM_SIZE";
  EXPECT_EQ(create(npu1, up::kBoDevHeap, 0, &err), 0u);
  EXPECT_EQ(err, EINVAL);
  EXPECT_EQ(create(npu1, up::kBoDevHeap, 128u << 20, &err), 0u);
  EXPECT_EQ(err, ENOSPC) << "npu1's dev_heap_max_size is 64 MiB";
  const auto first = create(npu1, up::kBoDevHeap, up::kDevmSize, &err);
  ASSERT_NE(first, 0u);
  EXPECT_EQ(info(npu1, first).xdna_addr, up::kDevmBase);
  EXPECT_EQ(create(npu1, up::kBoDevHeap, up::kDevmSize, &err), 0u);
  EXPECT_EQ(err, ENOSPC);
  npu1.gem_close(first);
  EXPECT_EQ(create(npu1, up::kBoDevHeap, up::kDevmSize, &err), 0u)
      << "a closed chunk stays in the client's heap until the file closes";
  EXPECT_EQ(err, ENOSPC);

  FakeOptions o4;
  o4.dev_heap_max_size = up::kDevmMaxSize;
  FakeDriver npu4({}, o4);
  std::uint64_t next = up::kDevmBase;
  for (int i = 0; i < 8; ++i) {
    const auto h = create(npu4, up::kBoDevHeap, up::kDevmSize, &err);
    ASSERT_NE(h, 0u) << i;
    EXPECT_EQ(info(npu4, h).xdna_addr, next) << "chunks follow each other in device memory";
    next += up::kDevmSize;
  }
  EXPECT_EQ(create(npu4, up::kBoDevHeap, up::kDevmSize, &err), 0u);
  EXPECT_EQ(err, ENOSPC) << "512 MiB is AIE2_DEVM_MAX_SIZE";

  FakeOptions fixed;
  fixed.dev_heap_max_size = up::kDevmMaxSize, fixed.heap_expand = false;
  FakeDriver no_expand({}, fixed);
  ASSERT_NE(create(no_expand, up::kBoDevHeap, up::kDevmSize, &err), 0u);
  EXPECT_EQ(create(no_expand, up::kBoDevHeap, up::kDevmSize, &err), 0u);
  EXPECT_EQ(err, EOPNOTSUPP) << "no hwctx_heap_expand";
}

TEST(FakeDriver, ADevObjectBeyondTheHeapSoFarIsEagainUntilAChunkIsAdded) {
  FakeOptions o;
  o.dev_heap_max_size = up::kDevmMaxSize;
  FakeDriver f({}, o);
  int err = 0;
  // Two chunks mapped back to back, as amdxdna_init_dev_bo wants them.
  void* res = ::mmap(nullptr, 2 * up::kDevmSize, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(res, MAP_FAILED);
  const auto h1 = create(f, up::kBoDevHeap, up::kDevmSize, &err);
  ASSERT_EQ(f.mmap(up::kDevmSize, info(f, h1).map_offset, res, &err), res);
  const auto a = create(f, up::kBoDev, 40u << 20, &err);
  ASSERT_NE(a, 0u);
  EXPECT_EQ(create(f, up::kBoDev, 40u << 20, &err), 0u);
  EXPECT_EQ(err, EAGAIN) << "the second 40 MiB does not fit in the first chunk";
  const auto h2 = create(f, up::kBoDevHeap, up::kDevmSize, &err);
  void* second = static_cast<char*>(res) + up::kDevmSize;
  ASSERT_EQ(f.mmap(up::kDevmSize, info(f, h2).map_offset, second, &err), second);
  const auto b = create(f, up::kBoDev, 40u << 20, &err);
  ASSERT_NE(b, 0u) << "spans both chunks";
  EXPECT_EQ(info(f, b).xdna_addr, up::kDevmBase + (40u << 20));
  EXPECT_EQ(create(f, up::kBoDev, (512u << 20) + 4096, &err), 0u);
  EXPECT_EQ(err, EINVAL) << "larger than dev_heap_max_size";
  f.gem_close(a), f.gem_close(b);
  f.munmap(res, up::kDevmSize), f.munmap(second, up::kDevmSize);
  f.gem_close(h1), f.gem_close(h2);
  ::munmap(res, 2 * up::kDevmSize);
}

TEST(FakeDriver, AHardwareContextNeedsTheHeapFirst) {
  FakeDriver f({}, FakeOptions{});
  up::amdxdna_qos_info q{};
  int err = 0;
  EXPECT_EQ(create_ctx(f, &q, 16, &err), -1);
  EXPECT_EQ(err, ENOENT) << "aie2_hwctx_init: no dev heap object";
  MappedHeap heap(f);
  EXPECT_EQ(create_ctx(f, &q, 16, &err), 0);
}

TEST(FakeDriver, TheOutOfTreeDriverReadsTwoMoreQosWords) {
  FakeOptions o;
  o.build = DriverBuild::OutOfTree;
  FakeDriver f({}, o);
  MappedHeap heap(f);
  up::amdxdna_qos_info_oot q{};
  q.user_start_col = up::kUserStartColNotRequested, q.reserved = 0;
  int err = 0;
  ASSERT_EQ(create_ctx(f, &q, 16, &err), 0);
  EXPECT_EQ(f.last_user_start_col, up::kUserStartColNotRequested);
  const auto v = f.version(&err);
  ASSERT_TRUE(v);
  EXPECT_EQ(v->name, "amdxdna_accel_driver");
  EXPECT_EQ(v->major, 1);
  FakeDriver mainline({}, FakeOptions{});
  EXPECT_EQ(mainline.version(&err)->major, 0);
  EXPECT_EQ(mainline.version(&err)->desc, v->desc) << "only the version tells the builds apart";
}

TEST(FakeDriver, SyncFromDeviceOnAnOrdinaryObjectIsEinval) {
  FakeDriver f({}, FakeOptions{});
  int err = 0;
  const auto h = create(f, up::kBoShare, 4096, &err);
  up::amdxdna_drm_sync_bo s{h, up::kSyncDirectToDevice, 0, 4096};
  EXPECT_EQ(f.ioctl(up::kIoctlSyncBo, &s, &err), 0);
  s.direction = up::kSyncDirectFromDevice;
  EXPECT_EQ(f.ioctl(up::kIoctlSyncBo, &s, &err), -1);
  EXPECT_EQ(err, EINVAL);
}

TEST(FakeDriver, TheContextLimitHoldsUntilOneIsDestroyed) {
  FakeDriver f({}, FakeOptions{});
  MappedHeap heap(f);
  up::amdxdna_qos_info q{};
  std::vector<std::uint32_t> handles;
  int err = 0;
  for (int i = 0; i < 7; ++i) {
    up::amdxdna_drm_create_hwctx c{};
    const int r = create_ctx(f, &q, 16, &err, &c);
    if (i < 6) {
      ASSERT_EQ(r, 0);
      handles.push_back(c.handle);
    } else {
      EXPECT_EQ(r, -1);
      EXPECT_EQ(err, EINVAL);
    }
  }
  up::amdxdna_drm_destroy_hwctx d{handles[0], 0};
  EXPECT_EQ(f.ioctl(up::kIoctlDestroyHwctx, &d, &err), 0);
  EXPECT_EQ(create_ctx(f, &q, 4 * 6, &err), -1) << "six columns on a five-column array";
  EXPECT_EQ(create_ctx(f, &q, 16, &err), 0);
}

TEST(FakeDriver, TheSyncobjHandleOutlivesItsContext) {
  FakeDriver f({}, FakeOptions{});
  MappedHeap heap(f);
  up::amdxdna_qos_info q{};
  up::amdxdna_drm_create_hwctx c{};
  int err = 0;
  ASSERT_EQ(create_ctx(f, &q, 16, &err, &c), 0);
  EXPECT_EQ(f.live_syncobjs(), 1u);
  up::amdxdna_drm_destroy_hwctx d{c.handle, 0};
  ASSERT_EQ(f.ioctl(up::kIoctlDestroyHwctx, &d, &err), 0);
  EXPECT_EQ(f.live_contexts(), 0u);
  EXPECT_EQ(f.live_syncobjs(), 1u) << "aie2_ctx_syncobj_destroy leaves the handle to user space";
  EXPECT_EQ(f.syncobj_destroy(c.syncobj_handle), 0);
  EXPECT_EQ(f.live_syncobjs(), 0u);
  EXPECT_EQ(f.syncobj_destroy(c.syncobj_handle), -EINVAL);
}

TEST(FakeDriver, GetInfoAnswersByUpstreamParameterNumbers) {
  FakeOptions o;
  o.hwctx_limit = 16;
  FakeDriver f({}, o);
  int err = 0;
  up::amdxdna_drm_get_resource_info r{};
  up::amdxdna_drm_get_info g{up::kQueryResourceInfo, sizeof r, reinterpret_cast<std::uint64_t>(&r)};
  ASSERT_EQ(f.ioctl(up::kIoctlGetInfo, &g, &err), 0);
  EXPECT_EQ(r.npu_task_max, 16u);
  // 13 is the frame-boundary preemption state: eight bytes, and success.
  up::amdxdna_drm_get_resource_info wrong{};
  g = {up::kGetFrameBoundaryPreemptState, sizeof wrong, reinterpret_cast<std::uint64_t>(&wrong)};
  ASSERT_EQ(f.ioctl(up::kIoctlGetInfo, &g, &err), 0);
  EXPECT_EQ(wrong.npu_task_max, 0u);
  for (std::uint32_t p : {up::kReadAieMem, up::kQueryTelemetry, std::uint32_t(99)}) {
    g = {p, sizeof r, reinterpret_cast<std::uint64_t>(&r)};
    EXPECT_EQ(f.ioctl(up::kIoctlGetInfo, &g, &err), -1) << p;
    EXPECT_EQ(err, EOPNOTSUPP) << p;
  }
}

TEST(FakeDriver, TheLedgerRecordsWhatWasLeftOpen) {
  auto ledger = std::make_shared<FakeLedger>();
  {
    FakeOptions o;
    o.ledger = ledger;
    FakeDriver f({}, o);
    MappedHeap heap(f);
    int err = 0;
    create(f, up::kBoShare, 4096, &err);
    up::amdxdna_qos_info q{};
    ASSERT_EQ(create_ctx(f, &q, 16, &err), 0);
  }
  EXPECT_TRUE(ledger->closed);
  EXPECT_EQ(ledger->bos, 1u) << "the SHARE object; the heap's handle was closed";
  EXPECT_EQ(ledger->contexts, 1u);
  EXPECT_EQ(ledger->syncobjs, 1u);
}

}  // namespace
}  // namespace flopwatt::npu::xdna::test

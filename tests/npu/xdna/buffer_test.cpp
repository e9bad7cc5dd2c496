#include "npu/xdna/buffer.h"

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "tests/npu/xdna/fake_driver.h"

namespace flopwatt::npu::xdna {
namespace {

constexpr std::size_t kMiB = std::size_t(1) << 20;

// npu4 and later allow 512 MiB of heap (AIE2_DEVM_MAX_SIZE): a DEV buffer
// that does not fit is EAGAIN, and the heap grows by a chunk per retry.
TEST(DevHeap, GrowsWhenADevBufferDoesNotFit) {
  test::FakeOptions o;
  o.dev_heap_max_size = test::upstream::kDevmMaxSize;
  test::FakeDriver f({}, o);
  DevHeap heap(f);
  EXPECT_EQ(heap.size(), 64 * kMiB);
  Bo a(f, kBoDev, 40 * kMiB, &heap);
  Bo b(f, kBoDev, 40 * kMiB, &heap);
  EXPECT_EQ(heap.size(), 128 * kMiB);
  EXPECT_EQ(f.heap_bytes(), 128u * kMiB);
  EXPECT_EQ(b.device_address(), heap.device_address() + 40 * kMiB) << "spans the first chunk's end";
  // Both buffers are the heap's bytes where the device sees them.
  std::memset(b.data(), 0x5a, b.size());
  EXPECT_EQ(static_cast<unsigned char*>(heap.data())[40 * kMiB + 30 * kMiB], 0x5a);
  Bo big(f, kBoDev, 200 * kMiB, &heap);
  EXPECT_EQ(heap.size(), 320 * kMiB);
}

// npu1's DEV range ends with its 64 MiB heap (ENOSPC); a driver without heap
// expansion refuses the second chunk (EOPNOTSUPP). Either way the error says
// what did not fit where, after at most one growth attempt.
TEST(DevHeap, AFullHeapIsAClearErrorWhenItCannotGrow) {
  test::FakeOptions no_expand;
  no_expand.dev_heap_max_size = test::upstream::kDevmMaxSize, no_expand.heap_expand = false;
  for (const auto& [o, reason] : {std::pair{test::FakeOptions{}, "No space left on device"},
                                  std::pair{no_expand, "the heap cannot grow: amdxdna CREATE_BO (DEV_HEAP) failed: "
                                                       "Operation not supported"}}) {
    test::FakeDriver f({}, o);
    DevHeap heap(f);
    Bo a(f, kBoDev, 40 * kMiB, &heap);
    try {
      Bo b(f, kBoDev, 40 * kMiB, &heap);
      ADD_FAILURE() << "a second 40 MiB buffer fit in a 64 MiB heap";
    } catch (const std::runtime_error& e) {
      const std::string m = e.what();
      EXPECT_NE(m.find("a 40960 KiB DEV buffer does not fit in the 64 MiB device heap; "), std::string::npos) << m;
      EXPECT_NE(m.find(reason), std::string::npos) << m;
    }
    EXPECT_EQ(f.heap_chunks_refused, o.heap_expand ? 0 : 1);
    EXPECT_EQ(heap.size(), 64 * kMiB);
  }
}

TEST(DevHeap, StopsAtItsReservation) {
  test::FakeOptions o;
  o.dev_heap_max_size = test::upstream::kDevmMaxSize;
  test::FakeDriver f({}, o);
  DevHeap heap(f, 128 * kMiB);
  Bo a(f, kBoDev, 100 * kMiB, &heap);
  EXPECT_THROW(Bo(f, kBoDev, 100 * kMiB, &heap), std::runtime_error);
  EXPECT_EQ(heap.size(), 128 * kMiB);
  EXPECT_NE(heap.why_full().find("128 MiB reserved"), std::string::npos) << heap.why_full();
  EXPECT_THROW(DevHeap(f, 100 * kMiB), std::invalid_argument);
}

TEST(DevHeap, EverythingIsClosedAfterwards) {
  auto ledger = std::make_shared<test::FakeLedger>();
  {
    test::FakeOptions o;
    o.dev_heap_max_size = test::upstream::kDevmMaxSize;
    o.ledger = ledger;
    test::FakeDriver f({}, o);
    DevHeap heap(f);
    Bo a(f, kBoDev, 40 * kMiB, &heap), b(f, kBoDev, 40 * kMiB, &heap), s(f, kBoShmem, 4096);
  }
  ASSERT_TRUE(ledger->closed);
  EXPECT_EQ(ledger->bos, 0u);
}

}  // namespace
}  // namespace flopwatt::npu::xdna

#include "npu/xdna/buffer.h"

#include <sys/mman.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <stdexcept>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

#include <fmt/format.h>

namespace flopwatt::npu::xdna {

namespace {

[[noreturn]] void fail(const char* what, int err) {
  throw std::runtime_error(fmt::format("amdxdna {} failed: {}", what, std::strerror(err)));
}

}  // namespace

Bo::Bo(DriverApi& api, BoType type, std::size_t size, const DevHeap* heap) : api_(api), size_(size) {
  CreateBo c{};
  c.size = size;
  c.type = type;
  int err = 0;
  if (api_.ioctl(kIoctlCreateBo, &c, &err) != 0) fail("CREATE_BO", err);
  handle_ = c.handle;
  GetBoInfo info{};
  info.handle = handle_;
  if (api_.ioctl(kIoctlGetBoInfo, &info, &err) != 0) {
    api_.gem_close(handle_);
    fail("GET_BO_INFO", err);
  }
  if (info.map_offset != kInvalidAddr) {
    map_ = api_.mmap(size, info.map_offset, nullptr, &err);
    if (!map_) {
      api_.gem_close(handle_);
      fail("mmap of a buffer object", err);
    }
    owns_map_ = true;
  } else {
    // A DEV object: its bytes are the heap's, at the same offset as its device
    // address from the heap's (the driver's user address for it is invalid
    // without PASID).
    const std::uint64_t base = heap ? heap->device_address() : 0;
    if (!heap || info.xdna_addr == kInvalidAddr || info.xdna_addr < base || info.xdna_addr - base > kDevHeapBytes ||
        size > kDevHeapBytes - (info.xdna_addr - base)) {
      api_.gem_close(handle_);
      throw std::runtime_error(fmt::format("amdxdna buffer object {} has no mmap offset and is not inside the DEV heap",
                                           handle_));
    }
    map_ = static_cast<char*>(heap->data()) + (info.xdna_addr - base);
  }
  xdna_addr_ = info.xdna_addr != kInvalidAddr ? info.xdna_addr : reinterpret_cast<std::uint64_t>(map_);
}

Bo::~Bo() {
  if (owns_map_) api_.munmap(map_, size_);
  api_.gem_close(handle_);
}

void Bo::sync(std::uint32_t) { flush_cpu_cache(map_, size_); }

void flush_cpu_cache(const void* p, std::size_t n) {
  if (!p || !n) return;
#if defined(__x86_64__) || defined(__i386__)
  // CLFLUSH is not ordered against later loads: fence on both sides.
  constexpr std::uintptr_t kLine = 64;
  auto a = reinterpret_cast<std::uintptr_t>(p) & ~(kLine - 1);
  const auto end = reinterpret_cast<std::uintptr_t>(p) + n;
  _mm_mfence();
  for (; a < end; a += kLine) _mm_clflush(reinterpret_cast<const void*>(a));
  _mm_mfence();
#elif defined(__aarch64__)
  constexpr std::uintptr_t kLine = 64;
  auto a = reinterpret_cast<std::uintptr_t>(p) & ~(kLine - 1);
  const auto end = reinterpret_cast<std::uintptr_t>(p) + n;
  for (; a < end; a += kLine) asm volatile("dc civac, %0" ::"r"(a) : "memory");
  asm volatile("dsb sy" ::: "memory");
#else
  std::atomic_thread_fence(std::memory_order_seq_cst);
#endif
}

DevHeap::DevHeap(DriverApi& api) : api_(api) {
  CreateBo c{};
  c.size = kDevHeapBytes;
  c.type = kBoDevHeap;
  int err = 0;
  if (api_.ioctl(kIoctlCreateBo, &c, &err) != 0) fail("CREATE_BO (DEV_HEAP)", err);
  handle_ = c.handle;
  GetBoInfo info{};
  info.handle = handle_;
  if (api_.ioctl(kIoctlGetBoInfo, &info, &err) != 0) {
    api_.gem_close(handle_);
    fail("GET_BO_INFO (DEV_HEAP)", err);
  }
  xdna_addr_ = info.xdna_addr;
  // The driver hands out DEV buffer addresses relative to a heap mapped at a
  // heap-size-aligned address: reserve twice the size, map inside it aligned.
  void* res = ::mmap(nullptr, 2 * kDevHeapBytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (res == MAP_FAILED) {
    api_.gem_close(handle_);
    fail("address reservation for DEV_HEAP", errno);
  }
  const auto base = reinterpret_cast<std::uintptr_t>(res);
  const auto aligned = (base + kDevHeapBytes - 1) & ~(std::uintptr_t(kDevHeapBytes) - 1);
  map_ = api_.mmap(kDevHeapBytes, info.map_offset, reinterpret_cast<void*>(aligned), &err);
  if (!map_) {
    ::munmap(res, 2 * kDevHeapBytes);
    api_.gem_close(handle_);
    fail("mmap of DEV_HEAP", err);
  }
  if (map_ == reinterpret_cast<void*>(aligned)) {  // trim the reservation around the fixed mapping
    if (aligned > base) ::munmap(res, aligned - base);
    const auto end = aligned + kDevHeapBytes, res_end = base + 2 * kDevHeapBytes;
    if (res_end > end) ::munmap(reinterpret_cast<void*>(end), res_end - end);
  } else {
    ::munmap(res, 2 * kDevHeapBytes);
  }
}

DevHeap::~DevHeap() {
  api_.munmap(map_, kDevHeapBytes);
  api_.gem_close(handle_);
}

}  // namespace flopwatt::npu::xdna

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

Bo::Bo(DriverApi& api, BoType type, std::size_t size, DevHeap* heap) : api_(api), size_(size) {
  CreateBo c{};
  c.size = size;
  c.type = type;
  int err = 0;
  // A DEV object that does not fit in the heap's chunks so far is EAGAIN
  // (amdxdna_gem.c: amdxdna_init_dev_bo); each retry follows one more chunk,
  // and the heap stops growing at its reservation or the driver's maximum.
  // ENOSPC is the driver's whole DEV range taken (amdxdna_gem_heap_alloc).
  while (api_.ioctl(kIoctlCreateBo, &c, &err) != 0) {
    if (type != kBoDev || (err != EAGAIN && err != ENOSPC)) fail("CREATE_BO", err);
    if (err == EAGAIN && heap && heap->grow()) continue;
    const std::string why = err == ENOSPC ? std::strerror(err)
                            : heap        ? "the heap cannot grow: " + heap->why_full()
                                          : std::string("there is no device heap");
    throw std::runtime_error(fmt::format("amdxdna CREATE_BO: a {} KiB DEV buffer does not fit in the {} MiB device heap; {}",
                                         (size + 1023) / 1024, heap ? heap->size() >> 20 : 0, why));
  }
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
    if (!heap || info.xdna_addr == kInvalidAddr || info.xdna_addr < base || info.xdna_addr - base > heap->size() ||
        size > heap->size() - (info.xdna_addr - base)) {
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

DevHeap::DevHeap(DriverApi& api, std::uint64_t max_bytes) : api_(api), max_bytes_(max_bytes) {
  if (max_bytes_ < kDevHeapBytes || max_bytes_ % kDevHeapBytes)
    throw std::invalid_argument(fmt::format("device heap maximum {} is not a multiple of {} MiB", max_bytes_, kDevHeapBytes >> 20));
  // The driver places DEV buffers relative to a heap mapped at a chunk-aligned
  // address, later chunks directly after the earlier ones (amdxdna_init_dev_bo
  // checks the user addresses are contiguous): reserve the whole range, no
  // access, plus a chunk of slack to align it, and map chunks into it.
  const std::size_t want = std::size_t(max_bytes_ + kDevHeapBytes);
  void* res = ::mmap(nullptr, want, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (res == MAP_FAILED) fail("address reservation for DEV_HEAP", errno);
  const auto base = reinterpret_cast<std::uintptr_t>(res);
  const auto aligned = (base + kDevHeapBytes - 1) & ~(std::uintptr_t(kDevHeapBytes) - 1);
  if (aligned > base) ::munmap(res, aligned - base);
  reservation_ = map_ = reinterpret_cast<void*>(aligned);
  reservation_bytes_ = want - (aligned - base);
  try {
    add_chunk();
  } catch (...) {
    ::munmap(reservation_, reservation_bytes_);
    throw;
  }
}

void DevHeap::add_chunk() {
  CreateBo c{};
  c.size = kDevHeapBytes;
  c.type = kBoDevHeap;
  int err = 0;
  if (api_.ioctl(kIoctlCreateBo, &c, &err) != 0) fail("CREATE_BO (DEV_HEAP)", err);
  GetBoInfo info{};
  info.handle = c.handle;
  if (api_.ioctl(kIoctlGetBoInfo, &info, &err) != 0) {
    api_.gem_close(c.handle);
    fail("GET_BO_INFO (DEV_HEAP)", err);
  }
  const std::uint64_t offset = size();
  if (!chunks_.empty() && info.xdna_addr != xdna_addr_ + offset) {
    api_.gem_close(c.handle);
    throw std::runtime_error(fmt::format("amdxdna placed a DEV_HEAP chunk at device address {:#x}, not after the heap's end {:#x}",
                                         info.xdna_addr, xdna_addr_ + offset));
  }
  void* at = static_cast<char*>(map_) + offset;
  void* p = api_.mmap(kDevHeapBytes, info.map_offset, at, &err);
  if (!p) {
    api_.gem_close(c.handle);
    fail("mmap of DEV_HEAP", err);
  }
  if (p != at) {
    api_.munmap(p, kDevHeapBytes);
    api_.gem_close(c.handle);
    throw std::runtime_error("amdxdna mmap of DEV_HEAP ignored the fixed address the heap needs");
  }
  if (chunks_.empty()) xdna_addr_ = info.xdna_addr;
  chunks_.push_back(c.handle);
}

bool DevHeap::grow() {
  if (size() + kDevHeapBytes > max_bytes_) {
    why_full_ = fmt::format("the {} MiB reserved for it are in use", max_bytes_ >> 20);
    return false;
  }
  try {
    add_chunk();
    return true;
  } catch (const std::runtime_error& e) {
    why_full_ = e.what();
    return false;
  }
}

DevHeap::~DevHeap() {
  const std::uint64_t mapped = size();
  for (std::size_t i = chunks_.size(); i-- > 0;) {
    api_.munmap(static_cast<char*>(map_) + i * kDevHeapBytes, kDevHeapBytes);
    api_.gem_close(chunks_[i]);
  }
  // Only the part of the reservation no chunk was mapped over is still ours.
  if (reservation_bytes_ > mapped) ::munmap(static_cast<char*>(reservation_) + mapped, reservation_bytes_ - mapped);
}

}  // namespace flopwatt::npu::xdna

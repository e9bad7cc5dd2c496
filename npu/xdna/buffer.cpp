#include "npu/xdna/buffer.h"

#include <sys/mman.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include <fmt/format.h>

namespace flopwatt::npu::xdna {

namespace {

[[noreturn]] void fail(const char* what, int err) {
  throw std::runtime_error(fmt::format("amdxdna {} failed: {}", what, std::strerror(err)));
}

}  // namespace

Bo::Bo(DriverApi& api, BoType type, std::size_t size) : api_(api), size_(size) {
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
  xdna_addr_ = info.xdna_addr;
  if (info.vaddr) {
    map_ = reinterpret_cast<void*>(info.vaddr);  // inside the mapped DEV heap
  } else {
    map_ = api_.mmap(size, info.map_offset, nullptr, &err);
    if (!map_) {
      api_.gem_close(handle_);
      fail("mmap of a buffer object", err);
    }
    owns_map_ = true;
  }
}

Bo::~Bo() {
  if (owns_map_) api_.munmap(map_, size_);
  api_.gem_close(handle_);
}

void Bo::sync(std::uint32_t direction) {
  SyncBo s{handle_, direction, 0, size_};
  int err = 0;
  if (api_.ioctl(kIoctlSyncBo, &s, &err) != 0) fail("SYNC_BO", err);
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

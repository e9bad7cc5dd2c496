// Buffer objects of the amdxdna driver: created with CREATE_BO, located with
// GET_BO_INFO (mmap offset, user address, device address), mapped, kept
// coherent by CPU cache flushes and closed with GEM_CLOSE. DEV buffers (PDIs,
// instruction streams) are carved from the 64 MiB DEV_HEAP buffer, which the
// process maps at a 64 MiB-aligned address first; SHMEM buffers hold data, CMD
// buffers command packets.
//
// The addresses follow the driver, not intuition: a SHMEM or CMD object's user
// address is AMDXDNA_INVALID_ADDR until it is mmapped (so it is mapped whenever
// it has an mmap offset), a DEV object has no mmap offset and lives at its
// offset inside the mapped heap, and in PASID mode a SHMEM object has no device
// address of its own: the device reaches it at its user address. This is what
// XRT's xdna shim does (amd/xdna-driver src/shim/buffer.cpp: buffer::mmap_drm_bo,
// buffer::vaddr, buffer::paddr).
#pragma once
#include <cstddef>
#include <cstdint>

#include "npu/xdna/driver_api.h"
#include "npu/xdna/uapi.h"

namespace flopwatt::npu::xdna {

class DevHeap;

class Bo {
 public:
  // DEV objects need the mapped heap they are carved from. Throws
  // std::runtime_error naming the ioctl.
  Bo(DriverApi& api, BoType type, std::size_t size, const DevHeap* heap = nullptr);
  ~Bo();
  Bo(const Bo&) = delete;
  Bo& operator=(const Bo&) = delete;

  std::uint32_t handle() const { return handle_; }
  std::uint64_t device_address() const { return xdna_addr_; }
  std::size_t size() const { return size_; }
  void* data() const { return map_; }
  // Makes the CPU's view and the device's agree (kSyncToDevice before a
  // command, kSyncFromDevice after): the NPU is not cache coherent, and the
  // driver's SYNC_BO FROM_DEVICE is reserved for debug objects (EINVAL on
  // others), so the cache lines are flushed here as XRT does (src/shim/
  // buffer.cpp: buffer::sync, clflush_data).
  void sync(std::uint32_t direction);

 private:
  DriverApi& api_;
  std::uint32_t handle_ = 0;
  std::size_t size_ = 0;
  void* map_ = nullptr;
  bool owns_map_ = false;
  std::uint64_t xdna_addr_ = 0;
};

class DevHeap {
 public:
  explicit DevHeap(DriverApi& api);
  ~DevHeap();
  DevHeap(const DevHeap&) = delete;
  DevHeap& operator=(const DevHeap&) = delete;

  void* data() const { return map_; }
  std::uint64_t device_address() const { return xdna_addr_; }

 private:
  DriverApi& api_;
  std::uint32_t handle_ = 0;
  void* map_ = nullptr;
  std::uint64_t xdna_addr_ = 0;
};

// Writes back and invalidates the CPU cache lines over [p, p + n).
void flush_cpu_cache(const void* p, std::size_t n);

}  // namespace flopwatt::npu::xdna

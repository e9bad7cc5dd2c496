// Buffer objects of the amdxdna driver: created with CREATE_BO, located with
// GET_BO_INFO (mmap offset, user address, device address), mapped, kept
// coherent by CPU cache flushes and closed with GEM_CLOSE. DEV buffers (PDIs,
// instruction streams) are carved from the device heap: DEV_HEAP objects of
// 64 MiB each, mapped back to back from a 64 MiB-aligned address. The heap
// starts with one; when a DEV buffer does not fit the driver says EAGAIN and
// one more is added, as XRT's shim does (amd/xdna-driver src/shim/kmq/
// pcidev.cpp: pdev_kmq::create_drm_bo), until the driver refuses (ENOSPC at
// its dev_heap_max_size: 64 MiB on npu1, 512 MiB on npu4). SHMEM buffers hold
// data, CMD buffers command packets.
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
#include <string>
#include <vector>

#include "npu/xdna/driver_api.h"
#include "npu/xdna/uapi.h"

namespace flopwatt::npu::xdna {

class DevHeap;

class Bo {
 public:
  // DEV objects need the mapped heap they are carved from, which grows when
  // they do not fit. Throws std::runtime_error naming the ioctl.
  Bo(DriverApi& api, BoType type, std::size_t size, DevHeap* heap = nullptr);
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
  // One chunk; room reserved for up to `max_bytes` (a multiple of kDevHeapBytes).
  explicit DevHeap(DriverApi& api, std::uint64_t max_bytes = kDevHeapMaxBytes);
  ~DevHeap();
  DevHeap(const DevHeap&) = delete;
  DevHeap& operator=(const DevHeap&) = delete;

  void* data() const { return map_; }
  std::uint64_t device_address() const { return xdna_addr_; }
  std::uint64_t size() const { return kDevHeapBytes * chunks_.size(); }
  // Adds a chunk; false once the reservation is used up or the driver
  // refuses, with the reason in why_full().
  bool grow();
  const std::string& why_full() const { return why_full_; }

 private:
  void add_chunk();  // throws std::runtime_error
  DriverApi& api_;
  std::vector<std::uint32_t> chunks_;  // DEV_HEAP handles, in address order
  void* map_ = nullptr;
  std::uint64_t xdna_addr_ = 0, max_bytes_ = 0;
  void* reservation_ = nullptr;
  std::size_t reservation_bytes_ = 0;
  std::string why_full_;
};

// Writes back and invalidates the CPU cache lines over [p, p + n).
void flush_cpu_cache(const void* p, std::size_t n);

}  // namespace flopwatt::npu::xdna

// Buffer objects of the amdxdna driver: created with CREATE_BO, located with
// GET_BO_INFO (mmap offset, user address, device address), mapped, synced
// with SYNC_BO and closed with GEM_CLOSE. DEV buffers (PDIs, instruction
// streams) are carved from the 64 MiB DEV_HEAP buffer, which the process maps
// at a 64 MiB-aligned address first; SHMEM buffers hold data, CMD buffers
// command packets.
#pragma once
#include <cstddef>
#include <cstdint>

#include "npu/xdna/driver_api.h"
#include "npu/xdna/uapi.h"

namespace flopwatt::npu::xdna {

class Bo {
 public:
  Bo(DriverApi& api, BoType type, std::size_t size);  // throws std::runtime_error naming the ioctl
  ~Bo();
  Bo(const Bo&) = delete;
  Bo& operator=(const Bo&) = delete;

  std::uint32_t handle() const { return handle_; }
  std::uint64_t device_address() const { return xdna_addr_; }
  std::size_t size() const { return size_; }
  void* data() const { return map_; }
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

 private:
  DriverApi& api_;
  std::uint32_t handle_ = 0;
  void* map_ = nullptr;
};

}  // namespace flopwatt::npu::xdna

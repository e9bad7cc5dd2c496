// An in-memory stand-in for the amdxdna driver and its firmware: it keeps
// buffer objects, checks every ioctl's arguments as the driver would, and
// "runs" a START_CU command by computing the design's GEMM (bf16 A and B,
// fp32 sums) into the C buffer. Lets the real backend's host flow run in
// tests end to end.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "npu/xdna/driver_api.h"
#include "npu/xdna/uapi.h"
#include "workloads/dtype.h"

namespace flopwatt::npu::xdna::test {

struct FakeBo {
  std::uint32_t type = 0;
  std::vector<std::uint8_t> mem;
  std::uint64_t xdna_addr = 0, map_offset = 0;
};

class FakeDriver : public DriverApi {
 public:
  struct Design {
    std::int64_t M = 0, N = 0, K = 0;
    DType out = DType::F32;
    std::vector<std::uint8_t> pdi;
  };
  explicit FakeDriver(Design d, std::string driver_name = "amdxdna") : d_(std::move(d)), name_(std::move(driver_name)) {}

  int ioctl(unsigned long request, void* arg, int* errno_out) override;
  void* mmap(std::size_t size, std::uint64_t offset, void* hint, int* errno_out) override;
  void munmap(void*, std::size_t) override {}
  int syncobj_wait(std::uint32_t syncobj, std::uint64_t point, std::int64_t timeout_ns) override;
  void gem_close(std::uint32_t handle) override { ++closed; bos_.erase(handle); }
  std::optional<DrmVersionInfo> version(int*) override { return DrmVersionInfo{name_, "20250101", "fake", 0, 1, 0}; }
  std::string path() const override { return "/dev/accel/accel0"; }

  // What happened, for assertions.
  int contexts = 0, configs = 0, execs = 0, syncs = 0, closed = 0;
  std::uint32_t last_max_opc = 0, last_num_tiles = 0;
  bool heap_created = false;
  std::uint64_t seq = 0;

 private:
  int fail(int* errno_out, int e) {
    if (errno_out) *errno_out = e;
    return -1;
  }
  FakeBo* by_addr(std::uint64_t a);
  Design d_;
  std::string name_;
  std::map<std::uint32_t, FakeBo> bos_;
  std::uint32_t next_handle_ = 1;
  std::uint64_t next_addr_ = 0x100000000ull;
};

}  // namespace flopwatt::npu::xdna::test

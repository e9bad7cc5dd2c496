// An in-memory stand-in for the amdxdna driver and its firmware, written from
// the upstream driver (amd/xdna-driver, drivers/accel/amdxdna/ and
// include/uapi/drm/amdxdna_accel.h) and its user-space shim (src/shim/), not
// from flopwatt's backend. Each behaviour in fake_driver.cpp names the
// upstream function it follows. It keeps buffer objects with the driver's
// address rules (user address only once mapped, device address invalid for
// SHMEM objects in PASID mode until mapped), a 64 MiB device heap that DEV
// objects are carved from, a per-device limit on live hardware contexts, and
// "runs" a START_CU command by computing the GEMM of the design whose PDI the
// context was configured with (bf16 A and B, fp32 sums), reading and writing
// only through the addresses the command carries.
#pragma once
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "npu/xdna/driver_api.h"
#include "npu/xdna/uapi.h"
#include "workloads/dtype.h"

namespace flopwatt::npu::xdna::test {

struct FakeDesign {
  std::int64_t M = 0, N = 0, K = 0;
  DType out = DType::F32;
  std::vector<std::uint8_t> pdi;  // CONFIG_CU with this PDI selects this design
};

struct FakeOptions {
  // PASID mode (IOMMU SVA): the device sees SHMEM objects at their user address.
  bool pasid = true;
  // npu1_regs.c: .hwctx_limit = 6 (Phoenix); npu4_regs.c: 16.
  std::uint32_t hwctx_limit = 6;
  std::uint32_t held_elsewhere = 0;  // contexts other processes hold against that limit
  std::uint16_t cols = 5;  // AIE metadata: Phoenix has 5 columns (first usable is 1)
  std::uint32_t mp_npu_mhz = 1267, h_clock_mhz = 1600;
  std::uint8_t power_mode = 0;  // POWER_MODE_DEFAULT
};

struct FakeBo {
  std::uint32_t type = 0;
  std::size_t size = 0;
  std::vector<std::uint8_t> store;      // the pages, until user space maps them at a fixed address
  std::uint8_t* fixed = nullptr;        // pages moved to a MAP_FIXED user mapping
  std::uint64_t uva = kInvalidAddr;     // amdxdna_mem.uva
  std::uint64_t dma_addr = kInvalidAddr;
  std::uint64_t dev_addr = kInvalidAddr;  // DEV_HEAP: heap base; DEV: offset into the heap's device range
  std::uint64_t map_offset = kInvalidAddr;
  bool mapped = false;
};

class FakeDriver : public DriverApi {
 public:
  using Design = FakeDesign;
  FakeDriver(std::vector<Design> designs, FakeOptions o = {}, std::string driver_name = "amdxdna")
      : designs_(std::move(designs)), opt_(o), name_(std::move(driver_name)) {}
  explicit FakeDriver(Design d, std::string driver_name = "amdxdna")
      : FakeDriver(std::vector<Design>{std::move(d)}, FakeOptions{}, std::move(driver_name)) {}
  ~FakeDriver() override;

  int ioctl(unsigned long request, void* arg, int* errno_out) override;
  void* mmap(std::size_t size, std::uint64_t offset, void* hint, int* errno_out) override;
  void munmap(void* p, std::size_t size) override;
  int syncobj_wait(std::uint32_t syncobj, std::uint64_t point, std::int64_t timeout_ns) override;
  void gem_close(std::uint32_t handle) override;
  std::optional<DrmVersionInfo> version(int*) override { return DrmVersionInfo{name_, "20250101", "fake", 0, 1, 0}; }
  std::string path() const override { return "/dev/accel/accel0"; }

  // Fault injection: the final ERT state of the next commands (ERROR, ABORT,
  // TIMEOUT), and commands whose fence never signals.
  std::deque<std::uint32_t> next_states;
  int hang_next = 0;

  // What happened, for assertions.
  int contexts_created = 0, contexts_destroyed = 0, max_live_contexts = 0, configs = 0, execs = 0;
  int sync_to_device = 0, sync_from_device_refused = 0, refused_contexts = 0;
  std::uint32_t last_max_opc = 0, last_num_tiles = 0, last_state = 0;
  bool heap_created = false;
  std::vector<std::size_t> design_runs;  // index into the designs, per command
  std::size_t live_contexts() const { return ctxs_.size(); }
  std::size_t live_bos() const { return bos_.size(); }

 private:
  struct Ctx {
    std::uint32_t syncobj = 0;
    std::uint64_t seq = 0, signalled = 0;
    int design = -1;  // set by CONFIG_CU
  };
  int fail(int* errno_out, int e) {
    if (errno_out) *errno_out = e;
    return -1;
  }
  std::uint8_t* data(FakeBo& b);
  std::uint64_t device_addr(const FakeBo& b) const;
  std::uint8_t* resolve(std::uint64_t addr, std::size_t len);
  FakeBo* heap();
  int create_bo(CreateBo* c, int* errno_out);
  int exec(ExecCmd* e, int* errno_out);
  int get_info(GetInfo* g, int* errno_out);

  std::vector<Design> designs_;
  FakeOptions opt_;
  std::string name_;
  std::map<std::uint32_t, FakeBo> bos_;
  std::map<std::uint32_t, Ctx> ctxs_;
  std::map<std::uint64_t, std::size_t> heap_used_;  // DEV objects: device address -> size
  std::uint32_t next_handle_ = 1, next_ctx_ = 1, next_syncobj_ = 100;
  std::uint64_t next_dma_ = 0x100000000ull, next_map_offset_ = 0x100000;
};

}  // namespace flopwatt::npu::xdna::test

// An in-memory stand-in for the amdxdna driver and its firmware, written from
// the upstream driver (mainline drivers/accel/amdxdna/ and amd/xdna-driver)
// and its user-space shim (amd/xdna-driver src/shim/), not from flopwatt's
// backend: the interface comes from upstream_uapi.h, never npu/xdna/uapi.h.
// Each behaviour in fake_driver.cpp names the upstream function it follows.
// It keeps buffer objects with the driver's address rules (user address only
// once mapped, device address invalid for SHMEM objects in PASID mode until
// mapped), a device heap made of 64 MiB DEV_HEAP chunks up to the device's
// dev_heap_max_size that DEV objects are carved from (EAGAIN when one does not
// fit in the chunks so far, which is the shim's cue to add one), a per-device
// limit on live hardware contexts, a timeline syncobj per context whose handle
// outlives the context until user space destroys it, and "runs" a START_CU
// command by computing the GEMM of the design whose PDI the CU it names was
// configured with (bf16 A and B, fp32 sums), reading and writing only through
// the addresses the command carries. It counts what is open so that a leak
// fails a test (FakeLedger).
#pragma once
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "npu/xdna/driver_api.h"
#include "tests/npu/xdna/upstream_uapi.h"
#include "workloads/dtype.h"

namespace flopwatt::npu::xdna::test {

struct FakeDesign {
  std::int64_t M = 0, N = 0, K = 0;
  DType out = DType::F32;
  std::vector<std::uint8_t> pdi;  // CONFIG_CU with this PDI selects this design
  // Where the design's kernel reads A, B and C in the register map (byte
  // offsets after the CU mask; mlir-aie's bo0..bo2 at 0x14, 0x1c, 0x24).
  std::uint32_t buffer_offset = 0x14;
};

// Which build of the driver the fake is: they differ in the QoS struct the
// driver copies at CREATE_HWCTX and in the version drmGetVersion reports.
enum class DriverBuild { Mainline, OutOfTree };

// What was still open when the fake was destroyed (with the process's file
// descriptor, in the real world): the backend owns the fake, so tests read
// leaks from here after it is gone.
struct FakeLedger {
  bool closed = false;
  std::size_t bos = 0, contexts = 0, syncobjs = 0;
};

struct FakeOptions {
  DriverBuild build = DriverBuild::Mainline;
  // npu1_regs.c: dev_heap_max_size = AIE2_DEVM_SIZE (64 MiB, Phoenix);
  // npu4/5/6_regs.c: AIE2_DEVM_MAX_SIZE (512 MiB).
  std::uint64_t dev_heap_max_size = upstream::kDevmSize;
  // aie2_pci.c: aie2_ops.hwctx_heap_expand is set; without it a second
  // DEV_HEAP object is EOPNOTSUPP (amdxdna_drm_create_dev_heap_bo).
  bool heap_expand = true;
  std::shared_ptr<FakeLedger> ledger;
  // PASID mode (IOMMU SVA): the device sees SHMEM objects at their user address.
  bool pasid = true;
  // npu1_regs.c: .hwctx_limit = 6 (Phoenix); npu4_regs.c: 16.
  std::uint32_t hwctx_limit = 6;
  std::uint32_t held_elsewhere = 0;  // contexts other processes hold against that limit
  std::uint16_t cols = 5;  // AIE metadata: Phoenix has 5 columns (first usable is 1)
  std::uint32_t mp_npu_mhz = 1267, h_clock_mhz = 1600;
  std::uint8_t power_mode = 0;  // POWER_MODE_DEFAULT
  // QUERY_SENSORS answers through amd-pmf (amd_pmf_get_npu_data); without it
  // EOPNOTSUPP. Mainline adds a temperature sensor when PMF reports one
  // (0xffff is AMDXDNA_INVALID_TEMPERATURE: none).
  bool pmf = true;
  std::uint16_t npu_temp = 0xffff;
  std::uint32_t npu_power_mw = 1234;
};

struct FakeBo {
  std::uint32_t type = 0;
  std::size_t size = 0;
  std::vector<std::uint8_t> store;      // the pages, until user space maps them at a fixed address
  std::uint8_t* fixed = nullptr;        // pages moved to a MAP_FIXED user mapping
  std::uint64_t uva = upstream::kInvalidAddr;     // amdxdna_mem.uva
  std::uint64_t dma_addr = upstream::kInvalidAddr;
  std::uint64_t dev_addr = upstream::kInvalidAddr;  // DEV_HEAP: heap base; DEV: offset into the heap's device range
  std::uint64_t map_offset = upstream::kInvalidAddr;
  bool mapped = false;
  bool handle_open = true;  // false: a heap chunk whose handle was closed (still part of the heap)
};

class FakeDriver : public DriverApi {
 public:
  using Design = FakeDesign;
  FakeDriver(std::vector<Design> designs, FakeOptions o = {}, std::string driver_name = upstream::kDrmDriverName)
      : designs_(std::move(designs)), opt_(o), name_(std::move(driver_name)) {}
  explicit FakeDriver(Design d, std::string driver_name = upstream::kDrmDriverName)
      : FakeDriver(std::vector<Design>{std::move(d)}, FakeOptions{}, std::move(driver_name)) {}
  ~FakeDriver() override;

  int ioctl(unsigned long request, void* arg, int* errno_out) override;
  std::size_t sensor_queries = 0;  // QUERY_SENSORS calls answered
  // Another process sharing this file closed it (a child at exec, the device
  // being O_CLOEXEC, or at exit). Mainline's amdxdna_flush, as first merged
  // (Linux drivers/accel/amdxdna/amdxdna_pci_drv.c), has no PID check: it
  // takes the client off the device and tears down every hardware context of
  // the file. The out-of-tree driver's (xdna-driver src/driver/amdxdna/
  // amdxdna_drm.c) returns at once when current's PID is not the opener's.
  void flush_from_child();
  int contexts_flushed = 0;
  void* mmap(std::size_t size, std::uint64_t offset, void* hint, int* errno_out) override;
  void munmap(void* p, std::size_t size) override;
  int syncobj_wait(std::uint32_t syncobj, std::uint64_t point, std::int64_t timeout_ns) override;
  void gem_close(std::uint32_t handle) override;
  int syncobj_destroy(std::uint32_t handle) override;
  std::optional<DrmVersionInfo> version(int*) override;
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
  int heap_chunks_refused = 0;
  // The QoS words past the mainline struct as the out-of-tree driver read them.
  std::uint32_t last_user_start_col = 0, last_qos_reserved = 0;
  std::vector<std::size_t> design_runs;  // index into the designs, per command
  std::vector<int> last_cu_designs;      // what the last CONFIG_CU gave each CU
  std::size_t live_contexts() const { return ctxs_.size(); }
  std::size_t live_bos() const;
  std::size_t live_syncobjs() const { return syncobjs_.size(); }
  std::uint64_t heap_bytes() const { return total_heap_size_; }

 private:
  struct Ctx {
    std::uint32_t syncobj = 0;
    std::uint64_t seq = 0;
    std::vector<int> cu_design;  // per CU, from CONFIG_CU: index into the designs
  };
  int fail(int* errno_out, int e) {
    if (errno_out) *errno_out = e;
    return -1;
  }
  std::uint8_t* data(FakeBo& b);
  std::uint64_t device_addr(const FakeBo& b) const;
  std::uint8_t* resolve(std::uint64_t addr, std::size_t len);
  FakeBo* heap_at(std::uint64_t dev_addr);
  FakeBo* lookup(std::uint32_t handle);  // nullptr for unknown or closed handles
  int create_bo(upstream::amdxdna_drm_create_bo* c, int* errno_out);
  int create_dev_heap(upstream::amdxdna_drm_create_bo* c, FakeBo& b, int* errno_out);
  int create_dev_bo(upstream::amdxdna_drm_create_bo* c, FakeBo& b, int* errno_out);
  int create_hwctx(upstream::amdxdna_drm_create_hwctx* c, int* errno_out);
  int config_hwctx(upstream::amdxdna_drm_config_hwctx* c, int* errno_out);
  int exec(upstream::amdxdna_drm_exec_cmd* e, int* errno_out);
  int get_info(upstream::amdxdna_drm_get_info* g, int* errno_out);
  int sensors(upstream::amdxdna_drm_get_info* g, int* errno_out);

  std::vector<Design> designs_;
  FakeOptions opt_;
  std::string name_;
  std::map<std::uint32_t, FakeBo> bos_;
  std::map<std::uint32_t, Ctx> ctxs_;
  std::vector<std::uint32_t> heaps_;                // DEV_HEAP handles in device-address order
  std::uint64_t total_heap_size_ = 0;
  std::map<std::uint64_t, std::size_t> heap_used_;  // DEV objects: device address -> size
  std::map<std::uint32_t, std::uint64_t> syncobjs_;  // handle -> last signalled point
  std::uint32_t next_handle_ = 1, next_ctx_ = 1, next_syncobj_ = 100;
  std::uint64_t next_dma_ = 0x100000000ull, next_map_offset_ = 0x100000;
};

}  // namespace flopwatt::npu::xdna::test

// Upstream references are to drivers/accel/amdxdna/*.c (the kernel driver,
// mainline and amd/xdna-driver), include/uapi/drm/amdxdna_accel.h and
// amd/xdna-driver src/include/uapi/drm_local/amdxdna_accel.h (the interface,
// transcribed in upstream_uapi.h) and amd/xdna-driver src/shim/*.cpp (the
// user-space shim XRT loads).
#include "tests/npu/xdna/fake_driver.h"

#include <sys/mman.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>

namespace flopwatt::npu::xdna::test {

namespace up = upstream;

namespace {

constexpr std::uint32_t kCoreRows = 4;  // AIE metadata core.row_count on npu1/npu4
// mlir-aie's generated host code starts the kernel with opcode 3 in its first argument.
constexpr std::uint64_t kMlirAieOpcode = 3;

}  // namespace

FakeDriver::~FakeDriver() {
  if (opt_.ledger) *opt_.ledger = FakeLedger{true, live_bos(), ctxs_.size(), syncobjs_.size()};
  for (auto& [h, b] : bos_)
    if (b.fixed) ::munmap(b.fixed, b.size);
}

std::optional<DrmVersionInfo> FakeDriver::version(int*) {
  // struct drm_driver amdxdna_drm_drv: same name and desc in both builds; the
  // out-of-tree one reports AMDXDNA_DRIVER_MAJOR 1, mainline 0 (no .date since v6.14).
  const bool oot = opt_.build == DriverBuild::OutOfTree;
  return DrmVersionInfo{name_, "", up::kDrmDriverDesc, oot ? up::kOotDriverMajor : up::kMainlineDriverMajor,
                        oot ? up::kOotDriverMinor : up::kMainlineDriverMinor, 0};
}

// The DEV_HEAP chunk whose device range holds dev_addr.
FakeBo* FakeDriver::heap_at(std::uint64_t dev_addr) {
  for (std::uint32_t h : heaps_) {
    FakeBo& b = bos_.at(h);
    if (dev_addr >= b.dev_addr && dev_addr - b.dev_addr < b.size) return &b;
  }
  return nullptr;
}

std::uint8_t* FakeDriver::data(FakeBo& b) {
  if (b.type == up::kBoDev) {
    // A DEV object spanning chunks relies on their user mappings being
    // contiguous, which amdxdna_init_dev_bo checked at creation.
    FakeBo* h = heap_at(b.dev_addr);
    return h ? data(*h) + (b.dev_addr - h->dev_addr) : nullptr;
  }
  if (b.fixed) return b.fixed;
  if (b.store.size() != b.size) b.store.assign(b.size, 0);  // pages appear on first touch
  return b.store.data();
}

// amdxdna_gem.c: amdxdna_gem_dev_addr(): the heap's and DEV objects' device
// addresses are their own; other objects use amdxdna_obj_dma_addr() (amdxdna_gem.h),
// the DMA address when PASID is off, else the user address, which is
// AMDXDNA_INVALID_ADDR until the object is mmapped.
std::uint64_t FakeDriver::device_addr(const FakeBo& b) const {
  if (b.type == up::kBoDevHeap || b.type == up::kBoDev) return b.dev_addr;
  return b.dma_addr != up::kInvalidAddr ? b.dma_addr : b.uva;
}

// What the array reaches at a device address: DEV objects inside the heap's
// device range, and SHMEM/CMD objects at their DMA address (PASID off) or at
// the user address they are mapped at (PASID on: the IOMMU walks the process's
// page tables; aie2_message.c: aie2_create_context passes the client's pasid).
// Anything else is an IO page fault: nullptr.
std::uint8_t* FakeDriver::resolve(std::uint64_t addr, std::size_t len) {
  if (addr == up::kInvalidAddr) return nullptr;
  for (auto& [h, b] : bos_) {
    if (b.type == up::kBoDevHeap) continue;
    const std::uint64_t base = device_addr(b);
    if (base == up::kInvalidAddr) continue;
    if (opt_.pasid && b.type != up::kBoDev && !b.mapped) continue;
    if (addr >= base && addr - base <= b.size && len <= b.size - (addr - base)) return data(b) + (addr - base);
  }
  return nullptr;
}

// amdxdna_drm_create_dev_heap_bo: a size that is not a non-zero multiple of
// dev_mem_size (64 MiB) is EINVAL; a second chunk without hwctx_heap_expand is
// EOPNOTSUPP; chunks beyond dev_heap_max_size are ENOSPC. Each chunk sits at
// dev_mem_base + the heap's size so far.
int FakeDriver::create_dev_heap(up::amdxdna_drm_create_bo* c, FakeBo& b, int* errno_out) {
  if (c->vaddr || c->size == 0 || c->size % up::kDevmSize) return fail(errno_out, EINVAL);
  if (!heaps_.empty() && !opt_.heap_expand) {
    ++heap_chunks_refused;
    return fail(errno_out, EOPNOTSUPP);
  }
  if (total_heap_size_ + c->size > opt_.dev_heap_max_size) {
    ++heap_chunks_refused;
    return fail(errno_out, ENOSPC);
  }
  b.dev_addr = up::kDevmBase + total_heap_size_;
  total_heap_size_ += c->size;
  b.map_offset = next_map_offset_;
  next_map_offset_ += c->size;
  heap_created = true;
  return 0;
}

// amdxdna_drm_create_dev_bo / amdxdna_gem_heap_alloc / amdxdna_init_dev_bo.
int FakeDriver::create_dev_bo(up::amdxdna_drm_create_bo* c, FakeBo& b, int* errno_out) {
  // The allocator spans [dev_mem_base, + dev_heap_max_size), not just the
  // chunks created so far: size 0 or beyond the maximum is EINVAL, a full
  // range is drm_mm_insert_node_generic's ENOSPC; nodes are 32 KiB aligned
  // (first fit here; upstream asks for DRM_MM_INSERT_BEST).
  const std::uint64_t size = (c->size + 4095) / 4096 * 4096;
  if (size == 0 || size > opt_.dev_heap_max_size) return fail(errno_out, EINVAL);
  std::uint64_t at = up::kDevmBase;
  for (const auto& [a, sz] : heap_used_) {
    if (a >= at + size) break;
    at = std::max(at, (a + sz + up::kDevBufAlign - 1) / up::kDevBufAlign * up::kDevBufAlign);
  }
  if (at + size > up::kDevmBase + opt_.dev_heap_max_size) return fail(errno_out, ENOSPC);
  // amdxdna_init_dev_bo: no chunk yet, a chunk under the object not mapped
  // (its uva invalid), or the object running past the last chunk: EAGAIN,
  // the node is released. Chunks under one object must be mapped contiguously.
  FakeBo* first = heap_at(at);
  if (!first) return fail(errno_out, EAGAIN);
  std::uint64_t expect_uva = first->uva;
  for (std::uint32_t h : heaps_) {
    const FakeBo& chunk = bos_.at(h);
    if (chunk.dev_addr + chunk.size <= at) continue;
    if (chunk.uva == up::kInvalidAddr) return fail(errno_out, EAGAIN);
    if (chunk.uva != expect_uva) return fail(errno_out, EINVAL);
    if (chunk.dev_addr + chunk.size >= at + size) {
      heap_used_[at] = size;
      b.size = size;
      b.dev_addr = at;
      // In PASID mode the user address follows the heap's mapping; else invalid.
      b.uva = opt_.pasid ? first->uva + (at - first->dev_addr) : up::kInvalidAddr;
      b.mapped = true;  // lives in the heap's pages
      return 0;
    }
    expect_uva += chunk.size;
  }
  return fail(errno_out, EAGAIN);
}

int FakeDriver::create_bo(up::amdxdna_drm_create_bo* c, int* errno_out) {
  // amdxdna_drm_create_bo_ioctl: flags must be zero; unknown types are EINVAL.
  if (c->flags) return fail(errno_out, EINVAL);
  FakeBo b;
  b.type = c->type;
  b.size = c->size;
  int r = 0;
  switch (c->type) {
    case up::kBoShare:
    case up::kBoCmd:
      // amdxdna_drm_create_share_bo: a non-zero vaddr imports user pages, not modelled here.
      if (c->vaddr || c->size == 0) return fail(errno_out, EINVAL);
      // amdxdna_gem_create_obj starts with dma_addr and uva invalid;
      // amdxdna_gem_obj_open DMA-maps the object only when PASID is off.
      if (!opt_.pasid) {
        b.dma_addr = next_dma_;
        next_dma_ += (c->size + 4095) / 4096 * 4096;
      }
      b.map_offset = next_map_offset_;
      next_map_offset_ += (c->size + 4095) / 4096 * 4096;
      break;
    case up::kBoDevHeap: r = create_dev_heap(c, b, errno_out); break;
    case up::kBoDev: r = create_dev_bo(c, b, errno_out); break;
    default: return fail(errno_out, EINVAL);
  }
  if (r != 0) return r;
  c->handle = next_handle_++;
  if (c->type == up::kBoDevHeap) heaps_.push_back(c->handle);
  bos_[c->handle] = std::move(b);
  return 0;
}

int FakeDriver::create_hwctx(up::amdxdna_drm_create_hwctx* c, int* errno_out) {
  // amdxdna_drm_create_hwctx_ioctl: ext must be zero; the QoS struct is copied
  // from user memory, sizeof the driver's own struct (EFAULT).
  if (c->ext || c->ext_flags) return fail(errno_out, EINVAL);
  if (!c->qos_p) return fail(errno_out, EFAULT);
  if (opt_.build == DriverBuild::OutOfTree) {
    up::amdxdna_qos_info_oot q;
    std::memcpy(&q, reinterpret_cast<const void*>(c->qos_p), sizeof q);
    last_user_start_col = q.user_start_col, last_qos_reserved = q.reserved;
  } else {
    up::amdxdna_qos_info q;
    std::memcpy(&q, reinterpret_cast<const void*>(c->qos_p), sizeof q);
  }
  // aie2_hwctx_init: the client's first DEV_HEAP chunk must exist (ENOENT).
  if (heaps_.empty()) return fail(errno_out, ENOENT);
  // aie2_hwctx_col_list: num_tiles / core rows columns, at least one, at most the array.
  const std::uint32_t cols = c->num_tiles / kCoreRows;
  if (!c->num_tiles || !cols || cols > opt_.cols) return fail(errno_out, EINVAL);
  // The firmware holds hwctx_limit contexts (npu1_regs.c: 6, npu4_regs.c: 16;
  // aie2_query_resource_info reports it as npu_task_max); its refusal of
  // CREATE_CONTEXT is a non-zero status, which aie_send_mgmt_msg_wait turns into EINVAL.
  if (ctxs_.size() + opt_.held_elsewhere >= opt_.hwctx_limit) {
    ++refused_contexts;
    return fail(errno_out, EINVAL);
  }
  last_max_opc = c->max_opc, last_num_tiles = c->num_tiles;
  // amdxdna_hwctx_id_alloc: ids from 1; aie2_ctx_syncobj_create: one timeline
  // per context, its handle in the caller's file.
  c->handle = next_ctx_++;
  c->syncobj_handle = next_syncobj_++;
  ctxs_[c->handle] = Ctx{c->syncobj_handle, 0, {}};
  syncobjs_[c->syncobj_handle] = 0;
  ++contexts_created;
  max_live_contexts = std::max(max_live_contexts, int(ctxs_.size()));
  return 0;
}

int FakeDriver::config_hwctx(up::amdxdna_drm_config_hwctx* c, int* errno_out) {
  // amdxdna_drm_config_hwctx_ioctl: pad zero, CONFIG_CU's buffer at most a page (E2BIG).
  if (c->pad || c->param_type != up::kHwctxConfigCu) return fail(errno_out, EINVAL);
  if (c->param_val_size > 4096) return fail(errno_out, E2BIG);
  auto ctx = ctxs_.find(c->handle);
  if (ctx == ctxs_.end()) return fail(errno_out, EINVAL);
  // aie2_hwctx_cu_config: no re-configuration, at least one CU, entries within the size.
  if (!ctx->second.cu_design.empty()) return fail(errno_out, EINVAL);
  up::amdxdna_hwctx_param_config_cu h;
  if (c->param_val_size < sizeof h) return fail(errno_out, EINVAL);
  std::memcpy(&h, reinterpret_cast<void*>(c->param_val), sizeof h);
  if (h.pad[0] || h.pad[1] || h.pad[2] || !h.num_cus ||
      sizeof h + std::size_t(h.num_cus) * sizeof(up::amdxdna_cu_config) > c->param_val_size)
    return fail(errno_out, EINVAL);
  std::vector<int> cu_design;
  for (std::uint16_t n = 0; n < h.num_cus; ++n) {
    up::amdxdna_cu_config cu;
    std::memcpy(&cu, reinterpret_cast<std::uint8_t*>(c->param_val) + sizeof h + n * sizeof cu, sizeof cu);
    // aie2_hwctx_hold_cu_bos: each PDI must be in a DEV object.
    FakeBo* b = lookup(cu.cu_bo);
    if (!b || b->type != up::kBoDev) return fail(errno_out, EINVAL);
    // The firmware loads the PDI each CU is pointed at; a PDI it does not
    // know fails the CONFIG_CU message (non-zero status: EINVAL).
    const std::uint8_t* pdi = data(*b);
    int design = -1;
    for (std::size_t d = 0; d < designs_.size() && design < 0; ++d)
      if (designs_[d].pdi.size() <= b->size && std::equal(designs_[d].pdi.begin(), designs_[d].pdi.end(), pdi))
        design = int(d);
    if (design < 0) return fail(errno_out, EINVAL);
    cu_design.push_back(design);
  }
  last_cu_designs = cu_design;
  ctx->second.cu_design = std::move(cu_design);
  ++configs;
  return 0;
}

int FakeDriver::ioctl(unsigned long request, void* arg, int* errno_out) {
  switch (request) {
    case up::kIoctlCreateBo: return create_bo(static_cast<up::amdxdna_drm_create_bo*>(arg), errno_out);
    case up::kIoctlGetBoInfo: {
      // amdxdna_drm_get_bo_info_ioctl: vaddr = amdxdna_gem_uva(), xdna_addr =
      // amdxdna_gem_dev_addr(); DEV objects have no mmap offset of their own.
      auto* i = static_cast<up::amdxdna_drm_get_bo_info*>(arg);
      if (i->ext || i->ext_flags || i->pad) return fail(errno_out, EINVAL);
      FakeBo* b = lookup(i->handle);
      if (!b) return fail(errno_out, ENOENT);
      i->vaddr = b->uva;
      i->xdna_addr = device_addr(*b);
      i->map_offset = b->map_offset;
      return 0;
    }
    case up::kIoctlSyncBo: {
      // amdxdna_drm_sync_bo_ioctl: flushes the CPU cache over the range
      // (amdxdna_flush_bo: offset beyond the object is EINVAL), then for
      // FROM_DEVICE calls amdxdna_hwctx_sync_debug_bo(), which only knows debug
      // objects assigned to a context: an ordinary object is EINVAL.
      auto* s = static_cast<up::amdxdna_drm_sync_bo*>(arg);
      FakeBo* b = lookup(s->handle);
      if (!b) return fail(errno_out, ENOENT);
      if (b->type != up::kBoDev && s->offset >= b->size) return fail(errno_out, EINVAL);
      if (s->direction == up::kSyncDirectFromDevice) {
        ++sync_from_device_refused;
        return fail(errno_out, EINVAL);
      }
      ++sync_to_device;
      return 0;
    }
    case up::kIoctlCreateHwctx: return create_hwctx(static_cast<up::amdxdna_drm_create_hwctx*>(arg), errno_out);
    case up::kIoctlDestroyHwctx: {
      // amdxdna_drm_destroy_hwctx_ioctl: pad must be zero; an unknown handle is
      // EINVAL. aie2_ctx_syncobj_destroy drops the driver's reference only:
      // "the syncobj_hdl is owned by user space and will be cleaned up separately".
      auto* d = static_cast<up::amdxdna_drm_destroy_hwctx*>(arg);
      if (d->pad) return fail(errno_out, EINVAL);
      if (!ctxs_.erase(d->handle)) return fail(errno_out, EINVAL);
      ++contexts_destroyed;
      return 0;
    }
    case up::kIoctlConfigHwctx: return config_hwctx(static_cast<up::amdxdna_drm_config_hwctx*>(arg), errno_out);
    case up::kIoctlExecCmd: return exec(static_cast<up::amdxdna_drm_exec_cmd*>(arg), errno_out);
    case up::kIoctlGetInfo: return get_info(static_cast<up::amdxdna_drm_get_info*>(arg), errno_out);
  }
  return fail(errno_out, ENOTTY);
}

int FakeDriver::exec(up::amdxdna_drm_exec_cmd* e, int* errno_out) {
  // amdxdna_drm_submit_cmd_ioctl / amdxdna_drm_submit_execbuf: ext zero, type
  // EXEC_BUF (0), one command, at most MAX_ARG_COUNT argument objects.
  if (e->ext || e->ext_flags || e->type != up::kCmdSubmitExecBuf) return fail(errno_out, EINVAL);
  if (e->arg_count > up::kMaxArgCount || e->cmd_count != 1) return fail(errno_out, EINVAL);
  // amdxdna_cmd_submit: the command object must be a CMD object, every
  // argument object must exist, the context must be the caller's.
  FakeBo* cmd = lookup(std::uint32_t(e->cmd_handles));
  if (!cmd || cmd->type != up::kBoCmd) return fail(errno_out, EINVAL);
  const auto* handles = reinterpret_cast<const std::uint32_t*>(e->args);
  for (std::uint32_t i = 0; i < e->arg_count; ++i)
    if (!lookup(handles[i])) return fail(errno_out, EINVAL);
  auto ctx = ctxs_.find(e->hwctx);
  if (ctx == ctxs_.end()) return fail(errno_out, EINVAL);
  Ctx& cx = ctx->second;
  e->seq = ++cx.seq;
  ++execs;

  // The firmware's view: the exec buffer (amdxdna_ctx.h: struct amdxdna_cmd;
  // XRT ert.h: header state[3:0], count[22:12], opcode[27:23]) and the START_CU
  // payload, the CU mask then the kernel's register map.
  std::uint8_t* cmem = data(*cmd);
  std::uint32_t header;
  std::memcpy(&header, cmem, 4);
  const std::uint32_t count = (header >> 12) & 0x7ff, opcode = (header >> 23) & 0x1f;
  std::vector<std::uint32_t> w(count + 1);
  if ((count + 1) * 4 > cmd->size) return fail(errno_out, EINVAL);
  std::memcpy(w.data(), cmem, w.size() * 4);
  auto u64 = [&](std::size_t i) { return std::uint64_t(w[i]) | (std::uint64_t(w[i + 1]) << 32); };

  // The CU the mask names runs the design of the PDI it was configured with.
  const FakeDesign* named = nullptr;
  if (count >= 6 && std::popcount(w[1]) == 1 && std::size_t(std::countr_zero(w[1])) < cx.cu_design.size())
    named = &designs_[std::size_t(cx.cu_design[std::size_t(std::countr_zero(w[1]))])];
  std::uint32_t state = up::kErtCmdStateCompleted;
  if (!next_states.empty()) {
    state = next_states.front();
    next_states.pop_front();
  } else if (opcode != up::kErtStartCu || !named || count < 1 + (named->buffer_offset + 24) / 4 ||
             u64(2) != kMlirAieOpcode) {
    state = up::kErtCmdStateError;  // aie2_sched_resp_handler: a failure status from the firmware is ERROR
  } else {
    const FakeDesign& d = *named;
    const std::size_t design = std::size_t(named - designs_.data());
    const std::size_t ob = d.out == DType::F32 ? 4 : 2;
    // mlir-aie's kernel: instructions at register-map offset 0x8, their count
    // at 0x10; the data buffers where the design's metadata puts them.
    const std::size_t at = 2 + d.buffer_offset / 4;
    const std::uint8_t* ins = resolve(u64(4), std::size_t(w[6]) * 4);
    const auto* a = reinterpret_cast<const bf16_t*>(resolve(u64(at), std::size_t(d.M * d.K) * 2));
    const auto* b = reinterpret_cast<const bf16_t*>(resolve(u64(at + 2), std::size_t(d.K * d.N) * 2));
    std::uint8_t* c = resolve(u64(at + 4), std::size_t(d.M * d.N) * ob);
    if (!ins || !w[6] || !a || !b || !c) {
      // An address the IOMMU cannot translate (or a transfer running off the
      // end of an object) stalls the array; the driver's timeout handler marks
      // the command TIMEOUT (aie2_ctx.c: aie2_sched_resp_handler, aie2_set_cmd_timeout).
      state = up::kErtCmdStateTimeout;
    } else {
      design_runs.push_back(design);
      for (std::int64_t i = 0; i < d.M; ++i)
        for (std::int64_t j = 0; j < d.N; ++j) {
          float s = 0;
          for (std::int64_t k = 0; k < d.K; ++k) s += bf16_to_f32(a[i * d.K + k]) * bf16_to_f32(b[k * d.N + j]);
          if (d.out == DType::F32) std::memcpy(c + (i * d.N + j) * 4, &s, 4);
          else {
            const bf16_t v = f32_to_bf16(s);
            std::memcpy(c + (i * d.N + j) * 2, &v, 2);
          }
        }
    }
  }
  // amdxdna_cmd_set_state / amdxdna_cmd_set_error write the final state into
  // the header's state bits, then aie2_sched_notify signals the fence.
  header = (header & ~0xfu) | (state & 0xf);
  std::memcpy(cmem, &header, 4);
  last_state = state;
  if (hang_next > 0) --hang_next;
  else syncobjs_[cx.syncobj] = e->seq;
  return 0;
}

// Mainline (xdna-driver drivers/accel/amdxdna/amdxdna_sensors.c
// amdxdna_query_sensors): "Total Power" in W with unitm -3, "Temperature"
// when PMF has one, then "Column %d Utilization" for min(total_col,
// AMDXDNA_NPU_MAX_PMF_COLUMNS = 8) columns. Out-of-tree (src/driver/amdxdna/
// aie2_pci.c aie2_query_sensors): the power sensor in "mW", no temperature,
// min(total_col, 8) columns. Both copy as many as fit, set buffer_size to
// what they copied and succeed.
int FakeDriver::sensors(up::amdxdna_drm_get_info* g, int* errno_out) {
  if (!opt_.pmf) return fail(errno_out, EOPNOTSUPP);
  ++sensor_queries;
  const bool mainline = opt_.build == DriverBuild::Mainline;
  std::vector<up::amdxdna_drm_query_sensor> all;
  auto add = [&](std::uint8_t type, std::uint32_t input, std::int8_t unitm, const std::string& label, const char* units) {
    up::amdxdna_drm_query_sensor q{};
    q.type = type, q.input = input, q.unitm = unitm;
    std::snprintf(reinterpret_cast<char*>(q.label), sizeof q.label, "%s", label.c_str());
    std::snprintf(reinterpret_cast<char*>(q.units), sizeof q.units, "%s", units);
    all.push_back(q);
  };
  add(up::kSensorTypePower, opt_.npu_power_mw, -3, "Total Power", mainline ? "W" : "mW");
  if (mainline && opt_.npu_temp != 0xffff) add(up::kSensorTypeTemperature, opt_.npu_temp, 0, "Temperature", "C");
  for (std::uint32_t i = 0; i < std::min<std::uint32_t>(opt_.cols, 8); ++i)
    add(up::kSensorTypeColumnUtilization, 10 * i, 0, "Column " + std::to_string(i) + " Utilization", "%");
  const std::size_t fit = std::min<std::size_t>(all.size(), g->buffer_size / sizeof(up::amdxdna_drm_query_sensor));
  std::memcpy(reinterpret_cast<void*>(g->buffer), all.data(), fit * sizeof(up::amdxdna_drm_query_sensor));
  g->buffer_size = std::uint32_t(fit * sizeof(up::amdxdna_drm_query_sensor));
  return 0;
}

void FakeDriver::flush_from_child() {
  if (opt_.build == DriverBuild::OutOfTree) return;
  // amdxdna_hwctx_remove_all: each context goes; its syncobj stays user space's.
  contexts_flushed += int(ctxs_.size());
  ctxs_.clear();
}

int FakeDriver::get_info(up::amdxdna_drm_get_info* g, int* errno_out) {
  auto put = [&](const void* v, std::size_t n, bool exact) {
    // Fixed-size answers are refused when the buffer is short; the clock and
    // power-mode answers are cut to min(buffer_size, size) (aie2_get_clock_metadata,
    // aie2_get_power_mode).
    if (exact && g->buffer_size < n) return fail(errno_out, EINVAL);
    std::memcpy(reinterpret_cast<void*>(g->buffer), v, std::min<std::size_t>(n, g->buffer_size));
    return 0;
  };
  switch (g->param) {
    case up::kQueryAieMetadata: {
      up::amdxdna_drm_query_aie_metadata m{};
      m.cols = opt_.cols, m.rows = 6, m.version = {2, 0};
      m.core = {4, 2, 2, 16, 128, {}};
      m.mem = {1, 1, 6, 64, 128, {}};
      m.shim = {1, 0, 2, 16, 128, {}};
      return put(&m, sizeof m, true);
    }
    case up::kQueryFirmwareVersion: {
      up::amdxdna_drm_query_firmware_version f{1, 5, 2, 380};
      return put(&f, sizeof f, true);
    }
    case up::kQueryClockMetadata: {
      up::amdxdna_drm_query_clock_metadata c{};
      std::snprintf(reinterpret_cast<char*>(c.mp_npu_clock.name), sizeof c.mp_npu_clock.name, "MP-NPU Clock");
      std::snprintf(reinterpret_cast<char*>(c.h_clock.name), sizeof c.h_clock.name, "H Clock");
      c.mp_npu_clock.freq_mhz = opt_.mp_npu_mhz, c.h_clock.freq_mhz = opt_.h_clock_mhz;
      return put(&c, sizeof c, false);
    }
    case up::kGetPowerMode: {
      up::amdxdna_drm_get_power_mode p{};
      p.power_mode = opt_.power_mode;
      return put(&p, sizeof p, false);
    }
    case up::kQueryResourceInfo: {
      // aie2_query_resource_info: npu_task_max is the context limit.
      up::amdxdna_drm_get_resource_info r{};
      r.npu_clk_max = opt_.h_clock_mhz, r.npu_task_max = opt_.hwctx_limit, r.npu_task_curr = ctxs_.size() + opt_.held_elsewhere;
      return put(&r, sizeof r, true);
    }
    case up::kGetForcePreemptState:
    case up::kGetFrameBoundaryPreemptState: {
      // amdxdna_get_{force,frame_boundary}_preempt_state: an attribute state,
      // cut to min(buffer_size, 8): a caller that meant another query gets
      // success and eight bytes of something else.
      up::amdxdna_drm_attribute_state a{};
      return put(&a, sizeof a, false);
    }
    case up::kQueryHwContexts: g->buffer_size = 0; return 0;
    case up::kQuerySensors: return sensors(g, errno_out);
  }
  // aie2_get_info: any other parameter is "Not supported request parameter": EOPNOTSUPP.
  return fail(errno_out, EOPNOTSUPP);
}

void* FakeDriver::mmap(std::size_t size, std::uint64_t offset, void* hint, int* errno_out) {
  for (auto& [h, b] : bos_) {
    if (b.map_offset != offset || b.map_offset == up::kInvalidAddr) continue;
    // drm_gem_mmap_obj: a mapping larger than the object is EINVAL.
    if (size > b.size || b.mapped) break;
    if (hint) {  // MAP_FIXED: the pages move to where the caller asked
      void* p = ::mmap(hint, b.size, PROT_READ | PROT_WRITE, MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (p == MAP_FAILED) break;
      if (!b.store.empty()) std::memcpy(p, b.store.data(), b.size);
      b.store = {};
      b.fixed = static_cast<std::uint8_t*>(p);
    }
    std::uint8_t* p = data(b);
    b.mapped = true;
    // amdxdna_hmm_register: with a DMA address (PASID off) the user address
    // is not recorded; otherwise the first mapping becomes mem.uva.
    if (b.dma_addr == up::kInvalidAddr) b.uva = reinterpret_cast<std::uint64_t>(p);
    if (b.type == up::kBoDevHeap && opt_.pasid)  // DEV objects follow the heap (amdxdna_init_dev_bo)
      for (auto& [h2, d] : bos_)
        if (d.type == up::kBoDev && d.dev_addr >= b.dev_addr && d.dev_addr - b.dev_addr < b.size)
          d.uva = b.uva + (d.dev_addr - b.dev_addr);
    return p;
  }
  if (errno_out) *errno_out = EINVAL;
  return nullptr;
}

void FakeDriver::munmap(void* p, std::size_t) {
  for (auto& [h, b] : bos_) {
    if (!b.mapped || b.type == up::kBoDev || data(b) != p) continue;
    if (b.fixed) {
      b.store.assign(b.fixed, b.fixed + b.size);
      ::munmap(b.fixed, b.size);
      b.fixed = nullptr;
    }
    b.mapped = false;
    // amdxdna_umap_release: the last mapping gone, mem.uva is invalid again.
    if (b.dma_addr == up::kInvalidAddr) b.uva = up::kInvalidAddr;
    return;
  }
}

void FakeDriver::gem_close(std::uint32_t handle) {
  auto it = bos_.find(handle);
  if (it == bos_.end() || !it->second.handle_open) return;
  // amdxdna_drm_create_dev_heap_bo took a reference for the client's
  // dev_heap_xa, dropped only when the file closes (amdxdna_client_cleanup):
  // a heap chunk outlives its handle and still counts against the maximum.
  if (it->second.type == up::kBoDevHeap) {
    it->second.handle_open = false;
    return;
  }
  if (it->second.type == up::kBoDev) heap_used_.erase(it->second.dev_addr);  // amdxdna_gem_heap_free
  if (it->second.fixed) ::munmap(it->second.fixed, it->second.size);
  bos_.erase(it);
}

FakeBo* FakeDriver::lookup(std::uint32_t handle) {
  auto it = bos_.find(handle);
  return it == bos_.end() || !it->second.handle_open ? nullptr : &it->second;
}

std::size_t FakeDriver::live_bos() const {
  return std::size_t(std::count_if(bos_.begin(), bos_.end(), [](const auto& kv) { return kv.second.handle_open; }));
}

// drmSyncobjTimelineWait on the context's syncobj: 0 once `point` has
// signalled, -ETIME when the timeout passes first (the shim's
// hwq::wait_command treats ETIME as "not done yet"). Nothing runs
// asynchronously here, so an unsignalled point has timed out at once.
int FakeDriver::syncobj_wait(std::uint32_t syncobj, std::uint64_t point, std::int64_t) {
  auto it = syncobjs_.find(syncobj);
  if (it == syncobjs_.end()) return -EINVAL;
  return point <= it->second ? 0 : -ETIME;
}

// DRM_IOCTL_SYNCOBJ_DESTROY (drm_syncobj_destroy): an unknown handle is EINVAL.
int FakeDriver::syncobj_destroy(std::uint32_t handle) { return syncobjs_.erase(handle) ? 0 : -EINVAL; }

}  // namespace flopwatt::npu::xdna::test

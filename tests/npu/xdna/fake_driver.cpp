#include "tests/npu/xdna/fake_driver.h"

#include <cerrno>
#include <cstring>

#include "npu/xdna/command.h"

namespace flopwatt::npu::xdna::test {

FakeBo* FakeDriver::by_addr(std::uint64_t a) {
  for (auto& [h, b] : bos_)
    if (b.xdna_addr == a) return &b;
  return nullptr;
}

int FakeDriver::ioctl(unsigned long request, void* arg, int* errno_out) {
  switch (request) {
    case kIoctlCreateBo: {
      auto* c = static_cast<CreateBo*>(arg);
      if (c->flags || c->vaddr || c->size == 0 || c->type < kBoShmem || c->type > kBoCmd) return fail(errno_out, EINVAL);
      if (c->type == kBoDev && !heap_created) return fail(errno_out, ENOMEM);  // DEV buffers come from the heap
      if (c->type == kBoDevHeap) heap_created = true;
      FakeBo b;
      b.type = c->type;
      b.mem.resize(c->size);
      b.xdna_addr = next_addr_;
      next_addr_ += (c->size + 4095) / 4096 * 4096;
      c->handle = next_handle_++;
      b.map_offset = std::uint64_t(c->handle) << 20;
      bos_[c->handle] = std::move(b);
      return 0;
    }
    case kIoctlGetBoInfo: {
      auto* i = static_cast<GetBoInfo*>(arg);
      auto it = bos_.find(i->handle);
      if (it == bos_.end()) return fail(errno_out, ENOENT);
      i->map_offset = it->second.map_offset;
      i->xdna_addr = it->second.xdna_addr;
      i->vaddr = it->second.type == kBoDev ? reinterpret_cast<std::uint64_t>(it->second.mem.data()) : 0;
      return 0;
    }
    case kIoctlSyncBo: {
      auto* s = static_cast<SyncBo*>(arg);
      if (!bos_.count(s->handle) || s->direction > 1) return fail(errno_out, EINVAL);
      ++syncs;
      return 0;
    }
    case kIoctlCreateHwctx: {
      auto* c = static_cast<CreateHwctx*>(arg);
      if (c->ext || c->ext_flags || !c->qos_p || !c->max_opc || !c->num_tiles) return fail(errno_out, EINVAL);
      last_max_opc = c->max_opc, last_num_tiles = c->num_tiles;
      c->handle = 1;
      c->syncobj_handle = 9;
      ++contexts;
      return 0;
    }
    case kIoctlDestroyHwctx: return 0;
    case kIoctlConfigHwctx: {
      auto* c = static_cast<ConfigHwctx*>(arg);
      if (c->handle != 1 || c->param_type != kConfigCu || c->param_val_size < sizeof(CuConfigHeader) + sizeof(CuConfig))
        return fail(errno_out, EINVAL);
      CuConfigHeader h;
      std::memcpy(&h, reinterpret_cast<void*>(c->param_val), sizeof h);
      CuConfig cu;
      std::memcpy(&cu, reinterpret_cast<std::uint8_t*>(c->param_val) + sizeof h, sizeof cu);
      auto it = bos_.find(cu.cu_bo);
      // The driver requires the PDI in a DEV buffer.
      if (h.num_cus != 1 || it == bos_.end() || it->second.type != kBoDev) return fail(errno_out, EINVAL);
      if (!std::equal(d_.pdi.begin(), d_.pdi.end(), it->second.mem.begin())) return fail(errno_out, EINVAL);
      ++configs;
      return 0;
    }
    case kIoctlExecCmd: {
      auto* e = static_cast<ExecCmd*>(arg);
      auto it = bos_.find(std::uint32_t(e->cmd_handles));
      if (e->hwctx != 1 || e->cmd_count != 1 || it == bos_.end() || it->second.type != kBoCmd) return fail(errno_out, EINVAL);
      std::vector<std::uint32_t> w(it->second.mem.size() / 4);
      std::memcpy(w.data(), it->second.mem.data(), w.size() * 4);
      const PacketHeader h = decode_header(w[0]);
      if (h.opcode != kErtStartCu || h.state != kErtStateNew || h.count != 12 || w[1] != 1 || w[2] != kMlirAieOpcode)
        return fail(errno_out, EINVAL);
      auto addr = [&](int i) { return std::uint64_t(w[i]) | (std::uint64_t(w[i + 1]) << 32); };
      FakeBo *ins = by_addr(addr(4)), *A = by_addr(addr(7)), *B = by_addr(addr(9)), *C = by_addr(addr(11));
      if (!ins || ins->mem.size() != std::size_t(w[6]) * 4 || !A || !B || !C) return fail(errno_out, EFAULT);
      const auto* handles = reinterpret_cast<const std::uint32_t*>(e->args);
      if (e->arg_count < 4) return fail(errno_out, EINVAL);
      for (std::uint32_t i = 0; i < e->arg_count; ++i)
        if (!bos_.count(handles[i])) return fail(errno_out, ENOENT);
      const auto* a = reinterpret_cast<const bf16_t*>(A->mem.data());
      const auto* b = reinterpret_cast<const bf16_t*>(B->mem.data());
      for (std::int64_t i = 0; i < d_.M; ++i)
        for (std::int64_t j = 0; j < d_.N; ++j) {
          float s = 0;
          for (std::int64_t k = 0; k < d_.K; ++k) s += bf16_to_f32(a[i * d_.K + k]) * bf16_to_f32(b[k * d_.N + j]);
          if (d_.out == DType::F32) reinterpret_cast<float*>(C->mem.data())[i * d_.N + j] = s;
          else reinterpret_cast<bf16_t*>(C->mem.data())[i * d_.N + j] = f32_to_bf16(s);
        }
      w[0] = (w[0] & ~0xfu) | kErtStateCompleted;
      std::memcpy(it->second.mem.data(), w.data(), 4);
      e->seq = ++seq;
      ++execs;
      return 0;
    }
    case kIoctlGetInfo: {
      auto* g = static_cast<GetInfo*>(arg);
      if (g->param == kQueryAieMetadata && g->buffer_size >= sizeof(AieMetadata)) {
        AieMetadata m{};
        m.cols = 5, m.rows = 6, m.version_major = 2;
        m.core = {4, 2, 2, 16, 128, {}};
        m.mem = {1, 1, 6, 64, 128, {}};
        m.shim = {1, 0, 2, 16, 128, {}};
        std::memcpy(reinterpret_cast<void*>(g->buffer), &m, sizeof m);
        return 0;
      }
      if (g->param == kQueryFirmwareVersion && g->buffer_size >= sizeof(FirmwareVersion)) {
        FirmwareVersion f{1, 5, 2, 380};
        std::memcpy(reinterpret_cast<void*>(g->buffer), &f, sizeof f);
        return 0;
      }
      if (g->param == kQueryHwContexts) {
        g->buffer_size = 0;
        return 0;
      }
      return fail(errno_out, EOPNOTSUPP);  // clocks and sensors: as on current drivers
    }
  }
  return fail(errno_out, ENOTTY);
}

void* FakeDriver::mmap(std::size_t size, std::uint64_t offset, void*, int* errno_out) {
  for (auto& [h, b] : bos_)
    if (b.map_offset == offset && b.mem.size() >= size) return b.mem.data();
  if (errno_out) *errno_out = EINVAL;
  return nullptr;
}

int FakeDriver::syncobj_wait(std::uint32_t syncobj, std::uint64_t point, std::int64_t) {
  return syncobj == 9 && point <= seq ? 0 : -ETIME;
}

}  // namespace flopwatt::npu::xdna::test

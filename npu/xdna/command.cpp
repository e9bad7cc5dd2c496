#include "npu/xdna/command.h"

#include <cerrno>
#include <chrono>
#include <iterator>
#include <cstring>
#include <stdexcept>

#include <fmt/format.h>

#include "npu/xdna/uapi.h"

namespace flopwatt::npu::xdna {

std::vector<std::uint32_t> start_cu_packet(std::uint32_t cu_index, const RegisterMap& map, std::uint64_t instr_addr,
                                           std::uint32_t instr_words, std::span<const std::uint64_t> buffer_addrs) {
  if (cu_index >= 32) throw std::runtime_error("CU index beyond the first CU mask word");
  if (buffer_addrs.size() > map.buffers.size())
    throw std::runtime_error(fmt::format("the kernel's register map has {} buffer arguments, the command needs {}",
                                         map.buffers.size(), buffer_addrs.size()));
  const std::uint32_t count = 1 + (map.bytes + 3) / 4;  // the CU mask, then the register map
  if (count >= (1u << 11)) throw std::runtime_error("command packet too long");
  std::vector<std::uint32_t> p(1 + count, 0);
  p[0] = (kErtStateNew & 0xf) | (count << 12) | ((kErtStartCu & 0x1f) << 23) | ((kErtTypeCu & 0xf) << 28);
  p[1] = 1u << cu_index;
  auto put = [&](std::uint32_t offset, std::uint64_t v, bool wide) {
    if (offset % 4 || std::uint64_t(offset) + (wide ? 8 : 4) > map.bytes)
      throw std::runtime_error(fmt::format("register map offset {:#x} is outside its {} bytes", offset, map.bytes));
    p[2 + offset / 4] = std::uint32_t(v);
    if (wide) p[3 + offset / 4] = std::uint32_t(v >> 32);
  };
  put(map.opcode, kMlirAieOpcode, true);
  put(map.instr, instr_addr, true);
  put(map.ninstr, instr_words, false);
  for (std::size_t i = 0; i < buffer_addrs.size(); ++i) put(map.buffers[i], buffer_addrs[i], true);
  return p;
}

std::vector<std::uint32_t> start_cu_packet(std::uint32_t cu_index, std::uint64_t instr_addr, std::uint32_t instr_words,
                                           std::span<const std::uint64_t> buffer_addrs) {
  return start_cu_packet(cu_index, RegisterMap{}, instr_addr, instr_words, buffer_addrs);
}

const char* ert_state_name(std::uint32_t s) {
  // amdxdna_ctx.h: enum ert_cmd_state.
  static constexpr const char* kNames[] = {"INVALID", "NEW",       "QUEUED",  "RUNNING",   "COMPLETED",
                                           "ERROR",   "ABORT",     "SUBMITTED", "TIMEOUT", "NORESPONSE"};
  return s < std::size(kNames) ? kNames[s] : "unknown";
}

PacketHeader decode_header(std::uint32_t h) {
  return {h & 0xf, (h >> 10) & 0x3, (h >> 12) & 0x7ff, (h >> 23) & 0x1f, (h >> 28) & 0xf};
}

Submission run_command(DriverApi& api, const HwContext& ctx, Bo& cmd, const std::vector<std::uint32_t>& packet,
                       const std::vector<std::uint32_t>& arg_handles, std::int64_t timeout_ns) {
  if (packet.size() * 4 > cmd.size()) throw std::runtime_error("command packet larger than its buffer");
  std::memcpy(cmd.data(), packet.data(), packet.size() * 4);
  cmd.sync(kSyncToDevice);
  ExecCmd e{};
  e.hwctx = ctx.handle();
  e.type = 0;
  e.cmd_handles = cmd.handle();
  e.args = reinterpret_cast<std::uint64_t>(arg_handles.data());
  e.cmd_count = 1;
  e.arg_count = std::uint32_t(arg_handles.size());
  Submission s;
  const auto t0 = std::chrono::steady_clock::now();
  int err = 0;
  if (api.ioctl(kIoctlExecCmd, &e, &err) != 0)
    throw std::runtime_error(fmt::format("amdxdna EXEC_CMD failed: {}", std::strerror(err)));
  const auto t1 = std::chrono::steady_clock::now();
  s.seq = e.seq;
  const int w = api.syncobj_wait(ctx.syncobj(), e.seq, timeout_ns);
  const auto t2 = std::chrono::steady_clock::now();
  if (w == -ETIME)
    throw std::runtime_error(fmt::format("command {} timed out after {:.3g} s without completing", e.seq, timeout_ns * 1e-9));
  if (w != 0) throw std::runtime_error(fmt::format("waiting for command {} failed: {}", e.seq, std::strerror(-w)));
  s.submit_s = std::chrono::duration<double>(t1 - t0).count();
  s.wait_s = std::chrono::duration<double>(t2 - t1).count();
  std::uint32_t header;
  std::memcpy(&header, cmd.data(), 4);
  const auto st = decode_header(header).state;
  if (st != kErtStateCompleted)
    throw std::runtime_error(fmt::format("command {} ended in ERT state {} ({}), not COMPLETED", e.seq, st, ert_state_name(st)));
  return s;
}

}  // namespace flopwatt::npu::xdna

#include "npu/xdna/command.h"

#include <cerrno>
#include <chrono>
#include <iterator>
#include <cstring>
#include <stdexcept>

#include <fmt/format.h>

#include "npu/xdna/uapi.h"

namespace flopwatt::npu::xdna {

std::vector<std::uint32_t> start_cu_packet(std::uint32_t cu_index, std::uint64_t instr_addr, std::uint32_t instr_words,
                                           std::span<const std::uint64_t> buffer_addrs) {
  if (cu_index >= 32) throw std::runtime_error("CU index beyond the first CU mask word");
  std::vector<std::uint32_t> p;
  p.push_back(0);                     // header, filled below
  p.push_back(1u << cu_index);        // CU mask
  auto u64 = [&](std::uint64_t v) {
    p.push_back(std::uint32_t(v));
    p.push_back(std::uint32_t(v >> 32));
  };
  u64(kMlirAieOpcode);
  u64(instr_addr);
  p.push_back(instr_words);
  for (auto a : buffer_addrs) u64(a);
  const std::uint32_t count = std::uint32_t(p.size() - 1);
  if (count >= (1u << 11)) throw std::runtime_error("command packet too long");
  p[0] = (kErtStateNew & 0xf) | (count << 12) | ((kErtStartCu & 0x1f) << 23) | ((kErtTypeCu & 0xf) << 28);
  return p;
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

// Command submission: an ERT START_CU packet in a CMD buffer, submitted with
// EXEC_CMD and completed through the context's timeline syncobj.
// Packet: header (state[3:0] = NEW, count[22:12] = words after the header,
// opcode[27:23] = START_CU, type[31:28]), the CU mask, then the kernel's
// register map: u64 opcode 3 (what mlir-aie's kernels expect), u64
// instruction buffer address, u32 instruction word count, one u64 device
// address per data buffer, each at the offset the design's metadata gives.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "npu/xdna/buffer.h"
#include "npu/xdna/driver_api.h"
#include "npu/xdna/hw_context.h"
#include "npu/xdna/xclbin.h"

namespace flopwatt::npu::xdna {

// The register map comes from the design's metadata (register_map); the
// overload without one uses mlir-aie's layout. Throws std::runtime_error for
// more buffers than the map has pointers, or a packet too long for the header.
std::vector<std::uint32_t> start_cu_packet(std::uint32_t cu_index, const RegisterMap& map, std::uint64_t instr_addr,
                                           std::uint32_t instr_words, std::span<const std::uint64_t> buffer_addrs);
std::vector<std::uint32_t> start_cu_packet(std::uint32_t cu_index, std::uint64_t instr_addr, std::uint32_t instr_words,
                                           std::span<const std::uint64_t> buffer_addrs);

struct PacketHeader {
  std::uint32_t state, extra_cu_masks, count, opcode, type;
};
PacketHeader decode_header(std::uint32_t h);
// "COMPLETED", "ERROR", "ABORT", "TIMEOUT", ...
const char* ert_state_name(std::uint32_t state);

struct Submission {
  std::uint64_t seq = 0;
  double submit_s = 0, wait_s = 0;
};

// Writes the packet into `cmd`, submits it with the buffers it uses and waits
// for completion; throws std::runtime_error on a failed ioctl, a timeout, or a
// final state other than COMPLETED.
Submission run_command(DriverApi& api, const HwContext& ctx, Bo& cmd, const std::vector<std::uint32_t>& packet,
                       const std::vector<std::uint32_t>& arg_handles, std::int64_t timeout_ns);

}  // namespace flopwatt::npu::xdna

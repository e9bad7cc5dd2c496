// Builders for NPU artifacts in tests: a minimal valid xclbin (AXLF with
// AIE_PARTITION, IP_LAYOUT and EMBEDDED_METADATA), a transaction-format
// instruction stream, and a control-code ELF written with libelf. Nothing is
// downloaded; every byte is made here so corrupt variants can be derived.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace flopwatt::npu::xdna::test {

inline std::vector<std::uint8_t> sample_pdi() { return std::vector<std::uint8_t>{0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4}; }

// A further IP_LAYOUT entry "<kernel>:<instance>". Its kernel goes into
// EMBEDDED_METADATA once, with the id and function of its first entry; a
// non-empty pdi adds a PDI serving kernel_id to AIE_PARTITION.
struct XclbinCu {
  std::string name;
  std::uint64_t kernel_id = 0;
  std::uint8_t functional = 0;
  std::vector<std::uint8_t> pdi;
  std::uint32_t ip_type = 7;  // IP_PS_KERNEL; 1 is IP_KERNEL (a PL kernel)
  std::uint32_t subtype = 1;  // ST_DPU; RyzenAI's XDP_KERNEL entry has 0
};

struct XclbinSpec {
  std::vector<std::uint8_t> pdi = sample_pdi();
  std::uint64_t kernel_id = 0x901;
  std::uint8_t functional = 0;
  std::string cu_name = "MLIR_AIE:MLIRAIE";
  std::uint32_t ops_per_cycle = 8192;
  std::uint16_t column_width = 4;
  bool ip_layout = true;
  bool metadata = true;
  // The register map the metadata lists: opcode, instr, ninstr at mlir-aie's
  // offsets, then bo0..bo4 from this offset (mlir-aie: 0x14); none when false.
  bool metadata_args = true;
  std::uint32_t first_buffer_offset = 0x14;
  // RyzenAI's DPU overlay convention: instruct/nistruct in place of instr/ninstr.
  bool overlay_args = false;
  std::vector<XclbinCu> more_cus = {};  // in IP_LAYOUT after the first; each PDI in AIE_PARTITION after the first
};

struct XclbinLayout {  // where things landed, for corrupting them
  std::uint64_t partition_offset = 0, ip_layout_offset = 0, metadata_offset = 0;
};

std::vector<std::uint8_t> build_xclbin(const XclbinSpec& s, XclbinLayout* layout = nullptr);

// Header + n_writes WRITE ops + one BLOCKWRITE + `patches` DDR_PATCH ops (arg 0..patches-1) + one sync.
std::vector<std::uint32_t> build_txn(int n_writes, int patches, int dev_gen = 3);

struct ElfSpec {
  std::uint8_t osabi = 69;  // aie2p
  bool ctrltext = true;
  bool relocations = true;
  std::uint32_t reloc_symbol = 1;  // index into .dynsym (2 symbols + the null one)
};
std::vector<std::uint8_t> build_ctrl_elf(const ElfSpec& s);

}  // namespace flopwatt::npu::xdna::test

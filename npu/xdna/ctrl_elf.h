// ELF control-code artifacts (the "full ELF" flow of newer XRT and mlir-aie):
// sections .ctrltext* (control code per column) and .ctrldata* (its data),
// optional .ctrlpkt*, relocations in .rela.dyn against .dynsym naming the
// buffers the host binds, and the OS ABI byte naming the platform (XRT
// xrt_elf.cpp: 69 AIE2P, 64 AIE2PS, 70 AIE2PS group/config). Parsed and
// validated with libelf.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace flopwatt::npu::xdna {

struct CtrlElfSection {
  std::string name;
  std::uint32_t type = 0;
  std::uint64_t offset = 0, size = 0;
};

struct CtrlElf {
  int elf_class = 0;        // 32 or 64
  std::uint8_t osabi = 0;
  std::string platform;     // "aie2p", "aie2ps", "aie2ps-group"
  std::vector<CtrlElfSection> sections;
  std::uint64_t ctrltext_bytes = 0, ctrldata_bytes = 0, ctrlpkt_bytes = 0;
  std::uint32_t relocations = 0;
  std::vector<std::string> patched_symbols;  // distinct symbol names relocations refer to
};

// Throws InputError(where, ...) when libelf rejects the image, the OS ABI is
// not an AIE platform, a section lies past the end, there is no .ctrltext, or
// a relocation names a symbol that does not exist.
CtrlElf parse_ctrl_elf(std::span<const std::uint8_t> bytes, const std::string& where);
CtrlElf load_ctrl_elf(const std::string& path);

}  // namespace flopwatt::npu::xdna

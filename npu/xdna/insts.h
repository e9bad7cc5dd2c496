// The instruction stream (runtime sequence) of an NPU design: the u32 words
// the START_CU command points the firmware at. mlir-aie writes it as binary
// (insts.bin, little-endian words) or text (insts.txt, one hex word a line).
// When it starts with a transaction header (mlir-aie include/aie/Runtime/
// TxnEncoding.h: word0 = rows<<24 | dev_gen<<16 | minor<<8 | major,
// word1 = mem tile rows<<8 | cols, word2 = op count, word3 = total bytes), the
// operations are walked and their sizes checked against the stream.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace flopwatt::npu::xdna {

struct InstStream {
  std::vector<std::uint32_t> words;
  bool transaction = false;  // has a transaction header
  int dev_gen = 0, rows = 0, cols = 0, mem_tile_rows = 0;
  std::uint32_t op_count = 0;
  std::uint32_t ops_checked = 0;   // operations walked and size-checked
  std::uint32_t ddr_patches = 0;   // buffer-address patches (one per bound buffer use)
  std::uint32_t max_patch_arg = 0; // highest buffer argument index patched
  std::string note;                // why the walk stopped early, if it did
};

// Throws InputError(where, ...) for an empty stream, a size that is not whole
// words, a header whose size disagrees, or an operation running past the end.
InstStream parse_insts(std::span<const std::uint8_t> bytes, const std::string& where);
InstStream parse_insts_text(const std::string& text, const std::string& where);
// Text when every byte is a hex digit, 'x' or white space and there is a line
// break (a binary stream's words hold bytes outside that set, its header a 0);
// binary otherwise, whatever the file's extension.
bool looks_like_insts_text(std::span<const std::uint8_t> bytes);
InstStream load_insts(const std::string& path);

}  // namespace flopwatt::npu::xdna

#include "npu/xdna/insts.h"

#include <cctype>
#include <cstring>
#include <sstream>

#include <fmt/format.h>

#include "npu/xdna/xclbin.h"
#include "workloads/error.h"

namespace flopwatt::npu::xdna {

namespace {

// Transaction opcodes (TxnEncoding.h) and where each keeps its size.
enum : std::uint32_t {
  kWrite = 0, kBlockWrite = 1, kMaskWrite = 3, kMaskPoll = 4, kPreempt = 6, kLoadPdi = 8,
  kCustomBegin = 0x80, kDdrPatch = 0x81,
};

void walk(InstStream& s, const std::string& where) {
  const auto& w = s.words;
  const std::size_t n = w.size();
  std::size_t i = 4;
  auto fail = [&](const std::string& what) {
    throw InputError(where, fmt::format("operation {} at word {}: {}", s.ops_checked, i, what),
                     "the instruction stream is truncated or corrupt; regenerate it with aiecc");
  };
  while (s.ops_checked < s.op_count) {
    if (i >= n) fail("the stream ends before the header's operation count");
    const std::uint32_t op = w[i] & 0xff;
    std::uint64_t words = 0;
    auto size_at = [&](std::size_t k) {
      if (i + k >= n) fail("size field past the end");
      const std::uint32_t bytes = w[i + k];
      if (bytes < 4 * (k + 1) || bytes % 4) fail(fmt::format("bad operation size {} bytes", bytes));
      return std::uint64_t(bytes / 4);
    };
    if (op == kWrite) words = size_at(5);
    else if (op == kBlockWrite) words = size_at(3);
    else if (op == kMaskWrite || op == kMaskPoll) words = size_at(6);
    else if (op == kPreempt) words = 1;
    else if (op == kLoadPdi) words = 4;
    else if (op >= kCustomBegin) words = size_at(1);
    else {
      s.note = fmt::format("operation {} has opcode {} which this reader does not decode; the rest is not checked",
                           s.ops_checked, op);
      return;
    }
    if (i + words > n) fail(fmt::format("{} words run past the end ({} words)", words, n));
    if (op == kDdrPatch && words >= 12) {
      ++s.ddr_patches;
      s.max_patch_arg = std::max(s.max_patch_arg, w[i + 8]);
    }
    i += std::size_t(words);
    ++s.ops_checked;
  }
  if (i != n) s.note = fmt::format("{} words follow the last operation", n - i);
}

InstStream from_words(std::vector<std::uint32_t> words, const std::string& where) {
  if (words.empty()) throw InputError(where, "empty instruction stream", "regenerate it with aiecc");
  InstStream s;
  s.words = std::move(words);
  const auto& w = s.words;
  const std::uint32_t gen = (w[0] >> 16) & 0xff;
  // A transaction header names an NPU generation (3 Phoenix/Hawk Point, 4 Strix/Krackan)
  // and the stream's own byte size.
  if (w.size() >= 4 && (gen == 3 || gen == 4) && (w[0] & 0xff) == 0) {
    if (w[3] != w.size() * 4)
      throw InputError(where, fmt::format("transaction header says {} bytes, the stream has {}", w[3], w.size() * 4),
                       "the instruction stream is truncated or corrupt; regenerate it with aiecc");
    s.transaction = true;
    s.dev_gen = int(gen);
    s.rows = int(w[0] >> 24);
    s.cols = int(w[1] & 0xff);
    s.mem_tile_rows = int((w[1] >> 8) & 0xff);
    s.op_count = w[2];
    walk(s, where);
  } else {
    s.note = "no transaction header: words passed to the firmware unchecked";
  }
  return s;
}

}  // namespace

InstStream parse_insts(std::span<const std::uint8_t> bytes, const std::string& where) {
  if (bytes.size() % 4)
    throw InputError(where, fmt::format("{} bytes is not a whole number of 32-bit words", bytes.size()),
                     "the instruction stream is truncated; regenerate it");
  std::vector<std::uint32_t> w(bytes.size() / 4);
  if (!w.empty()) std::memcpy(w.data(), bytes.data(), bytes.size());
  return from_words(std::move(w), where);
}

InstStream parse_insts_text(const std::string& text, const std::string& where) {
  std::vector<std::uint32_t> w;
  std::istringstream in(text);
  std::string line;
  int lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t')) line.pop_back();
    std::size_t b = line.find_first_not_of(" \t");
    if (b == std::string::npos) continue;
    std::string tok = line.substr(b);
    if (tok.rfind("0x", 0) == 0 || tok.rfind("0X", 0) == 0) tok = tok.substr(2);
    if (tok.empty() || tok.size() > 8 || tok.find_first_not_of("0123456789abcdefABCDEF") != std::string::npos)
      throw InputError(fmt::format("{}:{}", where, lineno), "'" + line + "' is not a hexadecimal 32-bit word",
                       "the text form holds one hex word per line");
    w.push_back(std::uint32_t(std::stoul(tok, nullptr, 16)));
  }
  return from_words(std::move(w), where);
}

bool looks_like_insts_text(std::span<const std::uint8_t> bytes) {
  bool newline = false;
  for (const std::uint8_t c : bytes) {
    if (c == '\n') newline = true;
    else if (!std::isxdigit(c) && c != 'x' && c != 'X' && c != '\r' && c != ' ' && c != '\t') return false;
  }
  return newline;
}

// mlir-aie's whole_array makefile names the stream insts_<suffix>.txt, while
// aiecc since Xilinx/mlir-aie#2041 writes translate_npu_to_binary's words as
// binary whatever the name; so the content decides, not the extension.
InstStream load_insts(const std::string& path) {
  const auto bytes = read_file_bytes(path);
  if (looks_like_insts_text(bytes)) return parse_insts_text(std::string(bytes.begin(), bytes.end()), path);
  return parse_insts(bytes, path);
}

}  // namespace flopwatt::npu::xdna

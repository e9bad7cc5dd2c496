#include "harness/store/run_doc.h"

#include <zstd.h>

#include <stdexcept>

namespace flopwatt::store {

namespace {
// Level 1 on a 90-row GEMM run's 137 KB of JSON: 20.0 KB in about 0.4 ms;
// zlib's default level made 21.2 KB in 3 ms, a fifth of an import's time.
constexpr int kLevel = 1;
}  // namespace

std::string pack_run_doc(const std::string& json) {
  // One context a thread, kept: making one costs more than compressing a run.
  // The frame carries a checksum of its content, so a damaged row is an
  // error when read rather than another document.
  struct Ctx {
    ZSTD_CCtx* c = ZSTD_createCCtx();
    ~Ctx() { ZSTD_freeCCtx(c); }
  };
  thread_local Ctx ctx;
  if (!ctx.c) throw std::runtime_error("cannot compress a run document: out of memory");
  ZSTD_CCtx_setParameter(ctx.c, ZSTD_c_compressionLevel, kLevel);
  ZSTD_CCtx_setParameter(ctx.c, ZSTD_c_checksumFlag, 1);
  std::string out(ZSTD_compressBound(json.size()), '\0');
  const std::size_t n = ZSTD_compress2(ctx.c, out.data(), out.size(), json.data(), json.size());
  if (ZSTD_isError(n)) throw std::runtime_error(std::string("cannot compress a run document: ") + ZSTD_getErrorName(n));
  out.resize(n);
  return out;
}

std::string unpack_run_doc(const std::string& bytes) {
  const unsigned long long size = ZSTD_getFrameContentSize(bytes.data(), bytes.size());
  // The size a frame claims is only trusted up to a bound: a damaged row must
  // not ask for terabytes. A run.json is far below 1 GiB.
  if (size == ZSTD_CONTENTSIZE_UNKNOWN || size == ZSTD_CONTENTSIZE_ERROR || size > (1ull << 30))
    throw std::runtime_error("a stored run document is damaged (not a Zstandard frame of known size)");
  std::string out(size, '\0');
  const std::size_t n = ZSTD_decompress(out.data(), out.size(), bytes.data(), bytes.size());
  if (ZSTD_isError(n) || n != size)
    throw std::runtime_error(std::string("a stored run document is damaged (") +
                             (ZSTD_isError(n) ? ZSTD_getErrorName(n) : "shorter than its frame says") + ")");
  return out;
}

std::string bytea_text(const std::string& bytes) {
  static const char* const kHex = "0123456789abcdef";
  std::string out = "\\x";
  out.reserve(2 + 2 * bytes.size());
  for (const unsigned char c : bytes) {
    out += kHex[c >> 4];
    out += kHex[c & 15];
  }
  return out;
}

std::string bytea_bytes(const std::string& text) {
  auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  if (text.size() < 2 || text[0] != '\\' || text[1] != 'x' || text.size() % 2)
    throw std::runtime_error("not bytea hex text");
  std::string out;
  out.reserve(text.size() / 2 - 1);
  for (std::size_t i = 2; i < text.size(); i += 2) {
    const int hi = nibble(text[i]), lo = nibble(text[i + 1]);
    if (hi < 0 || lo < 0) throw std::runtime_error("not bytea hex text");
    out += static_cast<char>(hi << 4 | lo);
  }
  return out;
}

}  // namespace flopwatt::store

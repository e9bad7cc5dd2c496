// Bounds-checked little-endian reads from an artifact's bytes: every offset
// and length is checked against the buffer before use, so a truncated or
// corrupt file becomes an InputError naming the file and the field, never an
// out-of-bounds read.
#pragma once
#include <cstdint>
#include <cstring>
#include <span>
#include <string>

#include "workloads/error.h"

namespace flopwatt::npu::xdna {

class ByteReader {
 public:
  ByteReader(std::span<const std::uint8_t> bytes, std::string where) : b_(bytes), where_(std::move(where)) {}

  std::size_t size() const { return b_.size(); }
  const std::string& where() const { return where_; }

  // Throws unless [off, off + len) lies inside the buffer (overflow-safe).
  void need(std::uint64_t off, std::uint64_t len, const std::string& what) const {
    if (off > b_.size() || len > b_.size() - off)
      throw InputError(where_, what + " at offset " + std::to_string(off) + " (+" + std::to_string(len) +
                                   " bytes) runs past the end of the " + std::to_string(b_.size()) + "-byte file",
                       "the file is truncated or corrupt; rebuild it");
  }
  template <class T>
  T get(std::uint64_t off, const std::string& what) const {
    need(off, sizeof(T), what);
    T v;
    std::memcpy(&v, b_.data() + off, sizeof(T));
    return v;
  }
  std::span<const std::uint8_t> slice(std::uint64_t off, std::uint64_t len, const std::string& what) const {
    need(off, len, what);
    return b_.subspan(std::size_t(off), std::size_t(len));
  }
  // A NUL-terminated string starting at off, which must end inside the buffer.
  std::string cstring(std::uint64_t off, const std::string& what) const {
    need(off, 1, what);
    const void* end = std::memchr(b_.data() + off, 0, b_.size() - std::size_t(off));
    if (!end) throw InputError(where_, what + " is not NUL-terminated", "the file is corrupt; rebuild it");
    return std::string(reinterpret_cast<const char*>(b_.data() + off));
  }
  // A fixed-size char field, up to its first NUL.
  std::string fixed_string(std::uint64_t off, std::size_t len, const std::string& what) const {
    const auto s = slice(off, len, what);
    std::size_t n = 0;
    while (n < len && s[n]) ++n;
    return std::string(reinterpret_cast<const char*>(s.data()), n);
  }

 private:
  std::span<const std::uint8_t> b_;
  std::string where_;
};

}  // namespace flopwatt::npu::xdna

// Element types of the GEMM interface and the bf16 conversions every backend
// and the reference agree on.
#pragma once
#include <cstdint>
#include <cstring>
#include <cmath>
#include <string>
#include <string_view>
#include <optional>

namespace flopwatt {

enum class DType { F32, BF16 };

inline std::string_view to_string(DType d) { return d == DType::F32 ? "fp32" : "bf16"; }
inline std::optional<DType> parse_dtype(std::string_view s) {
  if (s == "fp32" || s == "f32" || s == "float32") return DType::F32;
  if (s == "bf16" || s == "bfloat16") return DType::BF16;
  return std::nullopt;
}
inline std::size_t dtype_size(DType d) { return d == DType::F32 ? 4 : 2; }

using bf16_t = std::uint16_t;

// Round to nearest even, as AIE and AMX conversions do; NaN stays NaN (quiet).
inline bf16_t f32_to_bf16(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7f800000u) == 0x7f800000u && (u & 0x007fffffu)) return static_cast<bf16_t>((u >> 16) | 0x40);
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<bf16_t>(u >> 16);
}
inline float bf16_to_f32(bf16_t h) {
  std::uint32_t u = static_cast<std::uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
inline float round_to_bf16(float f) { return bf16_to_f32(f32_to_bf16(f)); }

}  // namespace flopwatt

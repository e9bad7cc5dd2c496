#include "harness/runners/gemm_operands.h"

#include <algorithm>
#include <string>

#include "sysfs/files.h"

namespace flopwatt {

GemmOperands make_gemm_operands(const GemmDesc& d, std::mt19937_64& rng) {
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  GemmOperands o;
  const std::size_t na = std::size_t(d.M) * d.K, nb = std::size_t(d.K) * d.N, nc = std::size_t(d.M) * d.N;
  o.a32.resize(na);
  o.b32.resize(nb);
  o.c.resize(nc);
  for (auto& x : o.a32) x = u(rng);
  for (auto& x : o.b32) x = u(rng);
  for (auto& x : o.c) x = u(rng);
  if (d.dtype_in == DType::BF16) {
    o.a16.resize(na);
    o.b16.resize(nb);
    for (std::size_t i = 0; i < na; ++i) o.a16[i] = f32_to_bf16(o.a32[i]);
    for (std::size_t i = 0; i < nb; ++i) o.b16[i] = f32_to_bf16(o.b32[i]);
  }
  return o;
}

std::size_t last_level_cache_bytes(const std::string& root) {
  std::size_t best = 0;
  for (const auto& c : sysfs::cpu0_caches(root)) best = std::max(best, c.bytes);
  return best ? best : (32u << 20);
}

int rotated_set_count(const GemmDesc& d, std::size_t rotate_bytes, const std::string& root) {
  const std::size_t rotate = rotate_bytes ? rotate_bytes : 2 * last_level_cache_bytes(root);
  // What one repetition touches: A and B in the input dtype, C in fp32.
  const std::size_t set_bytes =
      (std::size_t(d.M) * d.K + std::size_t(d.K) * d.N) * dtype_size(d.dtype_in) + std::size_t(d.M) * d.N * 4;
  return int(std::clamp<std::size_t>((rotate + set_bytes - 1) / set_bytes, 1, 8));
}

std::vector<GemmOperands> make_rotated_operands(const GemmDesc& d, std::mt19937_64& rng, std::size_t rotate_bytes,
                                                const std::string& root) {
  std::vector<GemmOperands> sets;
  const int n = rotated_set_count(d, rotate_bytes, root);
  sets.reserve(n);
  for (int s = 0; s < n; ++s) sets.push_back(make_gemm_operands(d, rng));
  return sets;
}

}  // namespace flopwatt

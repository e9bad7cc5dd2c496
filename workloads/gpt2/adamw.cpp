#include "workloads/gpt2/adamw.h"

#include <bit>
#include <cmath>

namespace flopwatt::gpt2 {

void adamw_update(float* p, const float* g, float* m, float* v, bf16_t* shadow, std::int64_t n,
                  const AdamWConfig& c, int t) {
  const float b1 = c.beta1, b2 = c.beta2, lr = c.lr, eps = c.eps, wd = c.weight_decay;
  const float bc1 = static_cast<float>(1.0 - std::pow(double(b1), t));
  const float bc2 = static_cast<float>(1.0 - std::pow(double(b2), t));
  // Two loop bodies instead of a branch per element keep both vectorized.
  if (shadow) {
#pragma omp parallel for simd schedule(static)
    for (std::int64_t i = 0; i < n; ++i) {
      const float gi = g[i];
      const float mi = b1 * m[i] + (1.0f - b1) * gi;
      const float vi = b2 * v[i] + (1.0f - b2) * gi * gi;
      m[i] = mi;
      v[i] = vi;
      const float pi = p[i] - lr * ((mi / bc1) / (std::sqrt(vi / bc2) + eps) + wd * p[i]);
      p[i] = pi;
      const std::uint32_t u = std::bit_cast<std::uint32_t>(pi);
      const bool nan = (u & 0x7fffffffu) > 0x7f800000u;
      shadow[i] = static_cast<bf16_t>(nan ? ((u >> 16) | 0x40u) : (u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
    }
  } else {
#pragma omp parallel for simd schedule(static)
    for (std::int64_t i = 0; i < n; ++i) {
      const float gi = g[i];
      const float mi = b1 * m[i] + (1.0f - b1) * gi;
      const float vi = b2 * v[i] + (1.0f - b2) * gi * gi;
      m[i] = mi;
      v[i] = vi;
      p[i] -= lr * ((mi / bc1) / (std::sqrt(vi / bc2) + eps) + wd * p[i]);
    }
  }
}

void adamw_update_reference(float* p, const float* g, float* m, float* v, std::int64_t n, const AdamWConfig& c,
                            int t) {
  const double bc1 = 1.0 - std::pow(double(c.beta1), t), bc2 = 1.0 - std::pow(double(c.beta2), t);
  for (std::int64_t i = 0; i < n; ++i) {
    const double mi = double(c.beta1) * m[i] + (1.0 - double(c.beta1)) * g[i];
    const double vi = double(c.beta2) * v[i] + (1.0 - double(c.beta2)) * double(g[i]) * g[i];
    m[i] = static_cast<float>(mi);
    v[i] = static_cast<float>(vi);
    p[i] = static_cast<float>(p[i] - double(c.lr) * ((mi / bc1) / (std::sqrt(vi / bc2) + c.eps) + c.weight_decay * double(p[i])));
  }
}

}  // namespace flopwatt::gpt2

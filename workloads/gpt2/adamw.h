// AdamW as llm.c's CPU trainer (and torch.optim.AdamW) defines it, for every
// parameter alike (no decay exemptions):
//   m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2
//   p -= lr (m / (1 - b1^t) / (sqrt(v / (1 - b2^t)) + eps) + wd p)
// One fused pass over p, g, m, v (28 bytes per parameter), OpenMP-parallel and
// vectorized; in bf16 mode the same pass refreshes the bf16 copy of p.
#pragma once
#include <cstdint>

#include "workloads/dtype.h"

namespace flopwatt::gpt2 {

struct AdamWConfig {
  float lr = 1e-4f;
  float beta1 = 0.9f;
  float beta2 = 0.999f;
  float eps = 1e-8f;
  float weight_decay = 0.0f;
};

// t counts updates from 1. shadow may be null.
void adamw_update(float* p, const float* g, float* m, float* v, bf16_t* shadow, std::int64_t n,
                  const AdamWConfig& c, int t);
// The same update, naive and in double: the kernel tests' oracle.
void adamw_update_reference(float* p, const float* g, float* m, float* v, std::int64_t n, const AdamWConfig& c, int t);

}  // namespace flopwatt::gpt2

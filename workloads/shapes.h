// GEMM shape sets: gpt2-124m (every distinct GEMM of one GPT-2 124M training
// step at B=4, T=64 in llm.c's layout), square, and custom "M,N,K;..." lists.
#pragma once
#include <string>
#include <vector>

#include "workloads/backend.h"

namespace flopwatt {

struct GemmShape {
  std::string op;          // "qkv", "fc", ...; "MxNxK" for custom/square
  std::string pass;        // "fwd" | "bwd" | "" (not from a model)
  GemmDesc desc;
  int count_per_step = 0;  // occurrences in one training step (0: not from a model)
};

struct Gpt2GemmConfig {
  int B = 4, T = 64, C = 768, L = 12, Vp = 50304;
};

std::vector<GemmShape> gpt2_gemm_shapes(const Gpt2GemmConfig& cfg = {});
std::vector<GemmShape> square_shapes();  // 256, 512, 1024, 2048, 4096
// "gpt2-124m" | "square" | "M,N,K[;M,N,K..]" (optionally ",NT"-style layout suffix).
// Throws InputError naming `flag` on a malformed list.
std::vector<GemmShape> parse_shapes(const std::string& spec, const std::string& flag);

}  // namespace flopwatt

// The parameter and activation tensors of GPT-2 as constexpr tables: one row
// per tensor, in llm.c's parameter order (which is also the checkpoint order).
// Sizes and arena offsets are generated from these tables; nothing keeps
// parallel arrays in step by hand.
#pragma once
#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "workloads/gpt2/config.h"

namespace flopwatt::gpt2 {

// Factors a tensor's size is the product of.
enum class Dim : std::uint8_t { L, Vp, MaxT, C, C3, C4, B, T, NH };

struct TensorSpec {
  const char* name;
  int rank;
  std::array<Dim, 5> dims;
  // Per-layer tensors lead with L and are sliced per layer.
  constexpr bool per_layer() const { return rank > 0 && dims[0] == Dim::L; }
};

// llm.c's 16 parameter tensors, in checkpoint order.
enum ParamId : int {
  kWte, kWpe, kLn1w, kLn1b, kQkvw, kQkvb, kAttprojw, kAttprojb,
  kLn2w, kLn2b, kFcw, kFcb, kFcprojw, kFcprojb, kLnfw, kLnfb, kNumParams
};

inline constexpr TensorSpec kParamSpecs[kNumParams] = {
    {"wte", 2, {Dim::Vp, Dim::C}},              // (Vp, C), rows >= V are padding
    {"wpe", 2, {Dim::MaxT, Dim::C}},            // (maxT, C)
    {"ln1w", 2, {Dim::L, Dim::C}},              // (L, C)
    {"ln1b", 2, {Dim::L, Dim::C}},              // (L, C)
    {"qkvw", 3, {Dim::L, Dim::C3, Dim::C}},     // (L, 3C, C)
    {"qkvb", 2, {Dim::L, Dim::C3}},             // (L, 3C)
    {"attprojw", 3, {Dim::L, Dim::C, Dim::C}},  // (L, C, C)
    {"attprojb", 2, {Dim::L, Dim::C}},          // (L, C)
    {"ln2w", 2, {Dim::L, Dim::C}},              // (L, C)
    {"ln2b", 2, {Dim::L, Dim::C}},              // (L, C)
    {"fcw", 3, {Dim::L, Dim::C4, Dim::C}},      // (L, 4C, C)
    {"fcb", 2, {Dim::L, Dim::C4}},              // (L, 4C)
    {"fcprojw", 3, {Dim::L, Dim::C, Dim::C4}},  // (L, C, 4C)
    {"fcprojb", 2, {Dim::L, Dim::C}},           // (L, C)
    {"lnfw", 1, {Dim::C}},                      // (C)
    {"lnfb", 1, {Dim::C}},                      // (C)
};

// Activations kept from the forward pass for the backward pass. Unlike llm.c,
// tensors the backward pass never reads (preatt, attproj, fcproj, probs) are not
// kept per layer: the projections land in the `proj` scratch, and the
// probabilities are recomputed from the logits and their log-sum-exp.
enum ActId : int {
  kEncoded, kLn1, kLn1Mean, kLn1Rstd, kQkv, kAtty, kAtt, kResidual2, kLn2, kLn2Mean,
  kLn2Rstd, kFch, kFchGelu, kResidual3, kLnf, kLnfMean, kLnfRstd, kLogits, kLosses,
  kLse, kProj, kNumActs
};

inline constexpr TensorSpec kActSpecs[kNumActs] = {
    {"encoded", 3, {Dim::B, Dim::T, Dim::C}},
    {"ln1", 4, {Dim::L, Dim::B, Dim::T, Dim::C}},
    {"ln1_mean", 3, {Dim::L, Dim::B, Dim::T}},
    {"ln1_rstd", 3, {Dim::L, Dim::B, Dim::T}},
    {"qkv", 4, {Dim::L, Dim::B, Dim::T, Dim::C3}},
    {"atty", 4, {Dim::L, Dim::B, Dim::T, Dim::C}},
    {"att", 5, {Dim::L, Dim::B, Dim::NH, Dim::T, Dim::T}},
    {"residual2", 4, {Dim::L, Dim::B, Dim::T, Dim::C}},
    {"ln2", 4, {Dim::L, Dim::B, Dim::T, Dim::C}},
    {"ln2_mean", 3, {Dim::L, Dim::B, Dim::T}},
    {"ln2_rstd", 3, {Dim::L, Dim::B, Dim::T}},
    {"fch", 4, {Dim::L, Dim::B, Dim::T, Dim::C4}},
    {"fch_gelu", 4, {Dim::L, Dim::B, Dim::T, Dim::C4}},
    {"residual3", 4, {Dim::L, Dim::B, Dim::T, Dim::C}},
    {"lnf", 3, {Dim::B, Dim::T, Dim::C}},
    {"lnf_mean", 2, {Dim::B, Dim::T}},
    {"lnf_rstd", 2, {Dim::B, Dim::T}},
    {"logits", 3, {Dim::B, Dim::T, Dim::Vp}},  // overwritten in place by dlogits in backward
    {"losses", 2, {Dim::B, Dim::T}},
    {"lse", 2, {Dim::B, Dim::T}},               // log-sum-exp of each logits row
    {"proj", 3, {Dim::B, Dim::T, Dim::C}},      // attproj / fcproj output before the residual add
};

// Gradients of activations: scratch reused by every layer (the backward pass
// walks one layer at a time, and the residual stream's gradient is one buffer
// that every residual branch adds into).
enum GradActId : int { kDResidual, kDLn, kDAtty, kDQkv, kDFch, kNumGradActs };

inline constexpr TensorSpec kGradActSpecs[kNumGradActs] = {
    {"dresidual", 3, {Dim::B, Dim::T, Dim::C}},
    {"dln", 3, {Dim::B, Dim::T, Dim::C}},
    {"datty", 3, {Dim::B, Dim::T, Dim::C}},
    {"dqkv", 3, {Dim::B, Dim::T, Dim::C3}},
    {"dfch", 3, {Dim::B, Dim::T, Dim::C4}},
};

struct Extents {
  std::int64_t L = 0, Vp = 0, MaxT = 0, C = 0, B = 0, T = 0, NH = 0;
  static Extents of(const Config& c, std::int64_t B = 0, std::int64_t T = 0) {
    return {c.L, c.Vp, c.maxT, c.C, B, T, c.NH};
  }
};

constexpr std::int64_t extent(Dim d, const Extents& e) {
  switch (d) {
    case Dim::L: return e.L;
    case Dim::Vp: return e.Vp;
    case Dim::MaxT: return e.MaxT;
    case Dim::C: return e.C;
    case Dim::C3: return 3 * e.C;
    case Dim::C4: return 4 * e.C;
    case Dim::B: return e.B;
    case Dim::T: return e.T;
    case Dim::NH: return e.NH;
  }
  return 0;
}

constexpr std::int64_t tensor_size(const TensorSpec& s, const Extents& e) {
  std::int64_t n = 1;
  for (int i = 0; i < s.rank; ++i) n *= extent(s.dims[i], e);
  return n;
}

// Tensors packed back to back in table order (llm.c's checkpoint layout when
// `align` is 1). Activation arenas align each tensor to 16 floats (64 bytes).
struct ArenaLayout {
  std::vector<std::int64_t> size, offset;
  std::int64_t total = 0;
};

inline ArenaLayout layout(std::span<const TensorSpec> specs, const Extents& e, std::int64_t align = 1) {
  ArenaLayout a;
  for (const auto& s : specs) {
    a.total = (a.total + align - 1) / align * align;
    a.size.push_back(tensor_size(s, e));
    a.offset.push_back(a.total);
    a.total += a.size.back();
  }
  return a;
}

// Bytes training at batch B, sequence T holds at least: parameters, their
// gradients and AdamW's two moments, activations and their gradients, all fp32.
// In double so that any B and T give a number to compare, never an overflow.
inline double training_bytes(const Config& c, std::int64_t B, std::int64_t T) {
  const Extents e = Extents::of(c, B, T);
  auto sum = [&](std::span<const TensorSpec> specs) {
    double n = 0;
    for (const auto& s : specs) {
      double m = 1;
      for (int i = 0; i < s.rank; ++i) m *= double(extent(s.dims[i], e));
      n += m;
    }
    return n;
  };
  return 4.0 * (4.0 * sum(kParamSpecs) + sum(kActSpecs) + sum(kGradActSpecs));
}

// 124,475,904 parameters for d12 (llm.c's count with Vp = 50304).
std::int64_t num_parameters(const Config& c);

}  // namespace flopwatt::gpt2

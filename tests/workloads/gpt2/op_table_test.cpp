// Analytic FLOPs: the d12 step total, and the GEMM part cross-checked against
// the independent shape list of workloads/shapes.cpp.
#include "workloads/gpt2/op_table.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

#include "cpu/bandwidth.h"
#include "workloads/shapes.h"

namespace flopwatt::gpt2 {
namespace {

TEST(OpTable, NamesAndPassesAreUniqueAndComplete) {
  std::set<std::string> seen;
  for (int i = 0; i < kNumOps; ++i) {
    const OpInfo& o = op_info(Op(i));
    EXPECT_EQ(int(o.op), i);
    EXPECT_TRUE(seen.insert(std::string(o.name) + "/" + o.pass).second) << o.name << " " << o.pass;
  }
  for (const char* name : {"embed", "ln1", "qkv", "attn", "attproj", "ln2", "fc", "gelu", "fcproj", "lnf",
                           "lm_head", "softmax_xent"}) {
    EXPECT_TRUE(seen.count(std::string(name) + "/fwd")) << name;
    EXPECT_TRUE(seen.count(std::string(name) + "/bwd")) << name;
  }
  EXPECT_TRUE(seen.count("residual/fwd"));
  EXPECT_TRUE(seen.count("adamw/opt"));
  EXPECT_TRUE(seen.count("zero_grad/bwd"));
}

TEST(OpTable, D12StepIsAbout1point9e11Flop) {
  const Config c = preset("d12");
  const double f = step_flop(c, 4, 64, DType::F32);
  EXPECT_GT(f, 1.85e11);
  EXPECT_LT(f, 1.95e11);
  // bf16 changes bytes, never FLOPs.
  EXPECT_EQ(step_flop(c, 4, 64, DType::BF16), f);
}

TEST(OpTable, GemmFlopsAgreeWithTheShapeList) {
  for (auto [B, T, model] : {std::tuple{4, 64, "d12"}, std::tuple{1, 7, "tiny"}, std::tuple{3, 65, "d24"}}) {
    const Config c = preset(model);
    double ours = 0;
    for (int i = 0; i < kNumOps; ++i) {
      const Op op = Op(i);
      if (!op_info(op).gemm) continue;
      const double N = double(B) * T;
      const bool bias = op != Op::LmHeadFwd && op != Op::LmHeadBwd;
      // Remove the bias/dbias term, which lives outside the GEMM.
      double oc = 0;
      switch (op) {
        case Op::QkvFwd: case Op::QkvBwd: oc = 3.0 * c.C; break;
        case Op::FcFwd: case Op::FcBwd: oc = 4.0 * c.C; break;
        case Op::LmHeadFwd: case Op::LmHeadBwd: oc = c.Vp; break;
        default: oc = c.C; break;
      }
      ours += op_occurrences(op, c) * (op_cost(op, c, B, T, DType::F32).flop - (bias ? N * oc : 0));
    }
    double theirs = 0;
    for (const auto& s : gpt2_gemm_shapes({B, T, c.C, c.L, c.Vp}))
      theirs += s.count_per_step * 2.0 * double(s.desc.M) * s.desc.N * s.desc.K;
    EXPECT_DOUBLE_EQ(ours, theirs) << model;
  }
}

TEST(OpTable, GemmsDominateD12AndAdamWIsNextLargest) {
  const Config c = preset("d12");
  double gemm = 0, total = step_flop(c, 4, 64, DType::F32);
  for (int i = 0; i < kNumOps; ++i)
    if (op_info(Op(i)).gemm) gemm += op_occurrences(Op(i), c) * op_cost(Op(i), c, 4, 64, DType::F32).flop;
  EXPECT_GT(gemm / total, 0.98);
  const double adamw = op_cost(Op::AdamW, c, 4, 64, DType::F32).flop;
  EXPECT_DOUBLE_EQ(adamw, 16.0 * 124475904);
  EXPECT_DOUBLE_EQ(op_cost(Op::AdamW, c, 4, 64, DType::F32).bytes, 28.0 * 124475904);
}

// The memory-bound ops' bytes, counted by hand from the kernels
// (workloads/gpt2/kernels.cpp): 4 bytes per float, an array read once, written
// once, or both when updated in place. d12, B=4, T=64: N = 256, C = 768.
TEST(OpTable, BytesOfTheMemoryBoundOpsAreTheirArraysByHand) {
  const Config c = preset("d12");
  const double N = 256, C = 768, V = 50257, Vp = 50304, n4 = N * 4 * C, Pn = 124475904;
  auto bytes = [&](Op op, DType dt = DType::F32) { return op_cost(op, c, 4, 64, dt).bytes; };
  // residual: a and b read, out written.
  EXPECT_DOUBLE_EQ(bytes(Op::ResidualFwd), 4 * (N * C + N * C + N * C));
  // layernorm forward: x read, out written, w and b read, mean and rstd written.
  EXPECT_DOUBLE_EQ(bytes(Op::Ln1Fwd), 4 * (N * C + N * C + 2 * C + 2 * N));
  // ln1/ln2 backward: dy, x read, dx += (read and written); w read, dw and db
  // +=; mean and rstd read.
  EXPECT_DOUBLE_EQ(bytes(Op::Ln2Bwd), 4 * (2 * N * C + 2 * N * C + C + 4 * C + 2 * N));
  // lnf backward starts the residual gradient: dx is written, never read.
  EXPECT_DOUBLE_EQ(bytes(Op::LnfBwd), 4 * (2 * N * C + N * C + C + 4 * C + 2 * N));
  // gelu: x read, out written; backward: x read, d *= in place.
  EXPECT_DOUBLE_EQ(bytes(Op::GeluFwd), 4 * (n4 + n4));
  EXPECT_DOUBLE_EQ(bytes(Op::GeluBwd), 4 * (n4 + 2 * n4));
  // softmax/cross-entropy forward: the real columns read once (each chunk's
  // exp pass rereads it from L1, not memory), losses and lse written, targets
  // read, the target logit again.
  EXPECT_DOUBLE_EQ(bytes(Op::SoftmaxXentFwd), 4 * (N * V + 2 * N + N + N));
  // softmax/cross-entropy backward, in place over the real columns, zeros
  // written to the padding, lse and targets read, the target logit again.
  EXPECT_DOUBLE_EQ(bytes(Op::SoftmaxXentBwd), 4 * (2 * N * V + N * (Vp - V) + 3 * N));
  // AdamW: g read; p, m, v read and written; in bf16 also the 2-byte copy of p.
  EXPECT_DOUBLE_EQ(bytes(Op::AdamW), 4 * (Pn + 2 * 3 * Pn));
  EXPECT_DOUBLE_EQ(bytes(Op::AdamW, DType::BF16), 4 * (Pn + 2 * 3 * Pn) + 2 * Pn);
}

// exps by hand from the kernels: one sigmoid per GELU element in either pass
// (the backward recomputes it), one exp per causal (query, key) pair in the
// attention forward (the backward reads the kept probabilities), one per real
// logit in the cross-entropy forward and again in its backward.
TEST(OpTable, ExpsAreTheKernelsExpsByHand) {
  const Config c = preset("d12");
  const double N = 256, V = 50257, n4 = N * 4 * 768, pairs = 4 * 12 * (64 * 65 / 2);
  std::map<Op, double> want = {{Op::GeluFwd, n4},        {Op::GeluBwd, n4},         {Op::AttnFwd, pairs},
                               {Op::SoftmaxXentFwd, N * V}, {Op::SoftmaxXentBwd, N * V}};
  for (int i = 0; i < kNumOps; ++i) {
    const Op op = static_cast<Op>(i);
    SCOPED_TRACE(std::string(op_info(op).name) + " " + op_info(op).pass);
    for (DType dt : {DType::F32, DType::BF16}) {
      const OpCost cost = op_cost(op, c, 4, 64, dt);
      EXPECT_DOUBLE_EQ(cost.exps, want.count(op) ? want[op] : 0.0);
      EXPECT_LE(cost.exps, cost.flop) << "each exp is also one of the op's FLOPs";
    }
  }
}

// Each memory-bound op names the `run peak` stream that bounds it; the GEMMs
// (compute-bound) none.
TEST(OpTable, EveryMemoryBoundOpNamesItsStreamPattern) {
  for (int i = 0; i < kNumOps; ++i) {
    const Op op = Op(i);
    SCOPED_TRACE(std::string(op_info(op).name) + "/" + op_info(op).pass);
    if (op_info(op).gemm) EXPECT_EQ(memory_pattern(op, DType::F32), nullptr);
    else EXPECT_NE(memory_pattern(op, DType::F32), nullptr);
  }
  EXPECT_STREQ(memory_pattern(Op::AdamW, DType::F32), "r1u3");
  EXPECT_STREQ(memory_pattern(Op::AdamW, DType::BF16), "r1u3h1");
  EXPECT_STREQ(memory_pattern(Op::ResidualFwd, DType::F32), "triad");
  EXPECT_STREQ(memory_pattern(Op::SoftmaxXentBwd, DType::F32), "update");
}

// A pattern moves per element what its op moves per element of its large
// arrays, so the op's bytes over the pattern's rate is the op's time at its
// roof; and every name is one `run peak` measures.
TEST(OpTable, PatternsMoveWhatTheirOpsMovePerElement) {
  std::map<std::string, cpu::Stream> streams;
  for (cpu::Stream s : cpu::all_streams()) streams[cpu::stream_name(s)] = s;
  for (DType dt : {DType::F32, DType::BF16})
    for (int i = 0; i < kNumOps; ++i) {
      if (const char* p = memory_pattern(Op(i), dt)) {
        EXPECT_TRUE(streams.count(p)) << p;
      }
    }
  const Config c = preset("d12");
  const double N = 256, C = 768, n4 = N * 4 * C, Pn = 124475904;
  auto per_element = [&](Op op, double elements, DType dt = DType::F32) {
    return op_cost(op, c, 4, 64, dt).bytes / elements;
  };
  auto pattern_bytes = [&](Op op, DType dt = DType::F32) {
    return double(cpu::stream_bytes_per_element(streams.at(memory_pattern(op, dt))));
  };
  EXPECT_DOUBLE_EQ(per_element(Op::AdamW, Pn), pattern_bytes(Op::AdamW));
  EXPECT_DOUBLE_EQ(per_element(Op::AdamW, Pn, DType::BF16), pattern_bytes(Op::AdamW, DType::BF16));
  EXPECT_DOUBLE_EQ(per_element(Op::ResidualFwd, N * C), pattern_bytes(Op::ResidualFwd));
  EXPECT_DOUBLE_EQ(per_element(Op::GeluFwd, n4), pattern_bytes(Op::GeluFwd));
  EXPECT_DOUBLE_EQ(per_element(Op::GeluBwd, n4), pattern_bytes(Op::GeluBwd));
  // LayerNorm's per-row and per-channel arrays add under 1%.
  EXPECT_NEAR(per_element(Op::Ln1Bwd, N * C), pattern_bytes(Op::Ln1Bwd), 0.01 * pattern_bytes(Op::Ln1Bwd));
  EXPECT_NEAR(per_element(Op::LnfBwd, N * C), pattern_bytes(Op::LnfBwd), 0.01 * pattern_bytes(Op::LnfBwd));
  EXPECT_NEAR(per_element(Op::Ln1Fwd, N * C), pattern_bytes(Op::Ln1Fwd), 0.01 * pattern_bytes(Op::Ln1Fwd));
  EXPECT_NEAR(per_element(Op::SoftmaxXentBwd, N * 50304), pattern_bytes(Op::SoftmaxXentBwd), 0.01 * 8);
}

TEST(OpTable, AttentionCountsOnlyCausalPairs) {
  Config c = preset("tiny");  // C=32, NH=2, hs=16
  const double f = op_cost(Op::AttnFwd, c, 1, 4, DType::F32).flop;
  EXPECT_DOUBLE_EQ(f, 1 * 2 * (4.0 * 5 / 2) * (4 * 16 + 6));
}

}  // namespace
}  // namespace flopwatt::gpt2

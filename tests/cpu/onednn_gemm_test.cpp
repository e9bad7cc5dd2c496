#include "cpu/onednn_gemm.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <vector>
#include <map>

#include "cpu/reference_gemm.h"
#include "gemm_test_support.h"
#include "workloads/error.h"
#include "workloads/verify.h"

namespace flopwatt::cpu {
namespace {

#if defined(FLOPWATT_WITH_ONEDNN)

// What oneDNN offers depends on the CPU: a bf16 matmul needs AVX512-BF16, AVX-512 or AMX (a Zen 3
// has none of them, and oneDNN then refuses it, which supports() reports), and its preferred
// weights layout equals the plain one on some ISAs, so there is nothing to pack. The tests check
// what this CPU offers and say what it does not.
bool has_bf16() {
  GemmDesc d;
  d.M = d.N = d.K = 64;
  d.dtype_in = DType::BF16;
  return make_onednn_backend()->supports(d);
}

std::vector<DType> dtypes_here() {
  if (has_bf16()) return {DType::F32, DType::BF16};
  std::printf("note: oneDNN has no bf16 matmul on this CPU; bf16 cases are not run here\n");
  return {DType::F32};
}

// Whether calling with unprepared weights reorders them on this CPU (Always mode copies in).
bool packs_here(const GemmDesc& d) {
  auto b = make_onednn_backend(OnednnPacking::Always);
  if (!b->supports(d)) return false;
  testing::Operands op = testing::make_operands(d, 1);
  std::vector<float> c(op.c.size());
  b->gemm(d, op.A(), op.B(), c.data());
  return b->last_breakdown() && b->last_breakdown()->copy_in > 0;
}

TEST(OnednnGemm, AvailableWithNotes) {
  auto b = make_onednn_backend();
  EXPECT_EQ(b->name(), "cpu:onednn");
  ASSERT_TRUE(b->availability().ok) << b->availability().reason;
  const auto note_list = b->notes();
  std::map<std::string, std::string> notes(note_list.begin(), note_list.end());
  EXPECT_FALSE(notes["onednn_version"].empty());
  EXPECT_FALSE(notes["onednn_cpu_isa"].empty());
  EXPECT_FALSE(notes["weights_packing"].empty());
}

TEST(OnednnGemm, MatchesReferenceInEveryLayout) {
  auto b = make_onednn_backend();
  for (DType dt : dtypes_here()) {
    const auto cases = testing::awkward_cases(dt);
    int checked = 0;
    for (const auto& f : testing::check_all(*b, cases, false, &checked)) ADD_FAILURE() << f;
    EXPECT_EQ(checked, int(cases.size())) << to_string(dt);
  }
}

// Same cases through prepare(): packed weights must give the same answers.
TEST(OnednnGemm, PackedWeightsMatchReference) {
  auto b = make_onednn_backend();
  for (DType dt : dtypes_here()) {
    const auto cases = testing::awkward_cases(dt);
    int checked = 0;
    for (const auto& f : testing::check_all(*b, cases, true, &checked)) ADD_FAILURE() << f;
    EXPECT_EQ(checked, int(cases.size())) << to_string(dt);
  }
}

// Unprepared weights in each packing mode. Auto passes every case through its
// trials (alternating plain and reordered) and then its decision.
TEST(OnednnGemm, EveryPackingModeMatchesReference) {
  for (OnednnPacking mode : {OnednnPacking::Never, OnednnPacking::Always, OnednnPacking::Auto}) {
    auto b = make_onednn_backend(mode);
    for (DType dt : dtypes_here()) {
      const auto cases = testing::awkward_cases(dt);
      for (int round = 0; round < 5; ++round) {
        int checked = 0;
        for (const auto& f : testing::check_all(*b, cases, false, &checked))
          ADD_FAILURE() << "mode " << int(mode) << " round " << round << ": " << f;
        EXPECT_EQ(checked, int(cases.size())) << to_string(dt);
      }
    }
  }
}

// Auto's decisions are reported, with the times they rest on, once made.
TEST(OnednnGemm, AutoChoicesAppearInNotes) {
  auto b = make_onednn_backend(OnednnPacking::Auto);
  auto choices = [&] {
    for (const auto& [k, v] : b->notes())
      if (k == "unpacked_weights_choices") return v;
    return std::string();
  };
  EXPECT_EQ(choices(), "");
  GemmDesc d;
  d.M = 64, d.N = 300, d.K = 200;  // NN: oneDNN's blocked weights differ from the plain layout
  if (!packs_here(d)) GTEST_SKIP() << "oneDNN's preferred weights layout is the plain one on this CPU: no choice to make";
  testing::Operands op = testing::make_operands(d, 3);
  std::vector<float> c(op.c.size());
  for (int i = 0; i < 4; ++i) b->gemm(d, op.A(), op.B(), c.data());
  const std::string n = choices();
  EXPECT_EQ(n.rfind("NN 64x300x200 fp32: ", 0), 0u) << n;
  EXPECT_NE(n.find(" ms vs "), std::string::npos) << n;
}

// With every call counted as long, a beta-0 shape times both ways in its first
// call (the second overwrites C, which must stay right) and is decided there;
// an accumulating shape needs a second call.
TEST(OnednnGemm, LongCallsAreDecidedInOneOrTwoCalls) {
  auto b = make_onednn_backend(OnednnPacking::Auto, 0.0);
  for (DType dt : dtypes_here()) {
    const auto cases = testing::awkward_cases(dt);
    for (int round = 0; round < 2; ++round) {
      int checked = 0;
      for (const auto& f : testing::check_all(*b, cases, false, &checked))
        ADD_FAILURE() << "round " << round << ": " << f;
      EXPECT_EQ(checked, int(cases.size()));
    }
  }
  auto fresh = make_onednn_backend(OnednnPacking::Auto, 0.0);
  auto choices = [&] {
    for (const auto& [k, v] : fresh->notes())
      if (k == "unpacked_weights_choices") return v;
    return std::string();
  };
  GemmDesc d;
  d.M = 64, d.N = 300, d.K = 200;
  if (!packs_here(d)) GTEST_SKIP() << "oneDNN's preferred weights layout is the plain one on this CPU: no choice to make";
  testing::Operands op = testing::make_operands(d, 4);
  std::vector<float> c(op.c.size());
  fresh->gemm(d, op.A(), op.B(), c.data());
  EXPECT_EQ(choices().rfind("NN 64x300x200 fp32: ", 0), 0u) << choices();
  GemmDesc acc = d;
  acc.beta = 1.0f;
  std::vector<float> c2 = op.c;
  fresh->gemm(acc, op.A(), op.B(), c2.data());
  EXPECT_EQ(choices().find("(scaled)"), std::string::npos) << "decided after one accumulating call: " << choices();
  fresh->gemm(acc, op.A(), op.B(), c2.data());
  EXPECT_NE(choices().find("NN 64x300x200 fp32 (scaled): "), std::string::npos) << choices();
}

TEST(OnednnGemm, PackingModeFromEnvironment) {
  ::setenv("FLOPWATT_ONEDNN_PACK", "always", 1);
  auto b = make_onednn_backend();
  const auto note_list = b->notes();
  std::map<std::string, std::string> notes(note_list.begin(), note_list.end());
  EXPECT_EQ(notes["unpacked_weights"].rfind("FLOPWATT_ONEDNN_PACK=always", 0), 0u) << notes["unpacked_weights"];
  ::setenv("FLOPWATT_ONEDNN_PACK", "sometimes", 1);
  try {
    make_onednn_backend();
    ADD_FAILURE() << "an unknown mode was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("auto, always or never"), std::string::npos) << e.what();
  }
  ::unsetenv("FLOPWATT_ONEDNN_PACK");
}

// After prepare(), B changes in place (a training step): the stale packed copy
// must not be used.
TEST(OnednnGemm, ChangedWeightsAfterPrepareAreNotStale) {
  auto b = make_onednn_backend();
  GemmDesc d;
  d.M = 33, d.N = 70, d.K = 65, d.trans_b = true;
  testing::Operands op = testing::make_operands(d, 5);
  b->prepare(d, op.B());
  for (auto& x : op.b32) x = -0.5f * x + 0.25f;
  std::vector<double> ref(std::size_t(d.M * d.N));
  reference_gemm_f64(d, op.A(), op.B(), op.c.data(), ref.data());
  std::vector<float> got = op.c;
  b->gemm(d, op.A(), op.B(), got.data());
  EXPECT_TRUE(passes(rel_frobenius_error(got.data(), ref.data(), got.size()), 1e-4));
}

// A training step's weights are unprepared: the in-call reorder (Always) is
// reported as copy_in apart from the matmul; in place (Never) and prepared
// weights copy nothing the call could time apart.
TEST(OnednnGemm, BreakdownSeparatesInCallReorderFromCompute) {
  GemmDesc d;
  d.M = 64, d.N = 300, d.K = 257, d.trans_b = true, d.dtype_in = DType::BF16;
  if (!has_bf16()) d.dtype_in = DType::F32;  // the same breakdown, on what this CPU offers
  if (!packs_here(d)) GTEST_SKIP() << "oneDNN's preferred weights layout is the plain one on this CPU: nothing is reordered";
  testing::Operands op = testing::make_operands(d, 7);
  std::vector<float> c = op.c;
  {
    auto b = make_onednn_backend(OnednnPacking::Always);
    b->gemm(d, op.A(), op.B(), c.data());
    const auto bd = b->last_breakdown();
    ASSERT_TRUE(bd.has_value());
    EXPECT_GT(bd->compute, 0.0);
    EXPECT_GT(bd->copy_in, 0.0) << "bf16 weights in the plain layout are reordered in the call";
    b->prepare(d, op.B());
    b->gemm(d, op.A(), op.B(), c.data());
    ASSERT_TRUE(b->last_breakdown().has_value());
    EXPECT_EQ(b->last_breakdown()->copy_in, 0.0) << "prepared weights are not reordered again";
    EXPECT_GT(b->last_breakdown()->compute, 0.0);
  }
  auto never = make_onednn_backend(OnednnPacking::Never);
  never->gemm(d, op.A(), op.B(), c.data());
  ASSERT_TRUE(never->last_breakdown().has_value());
  EXPECT_EQ(never->last_breakdown()->copy_in, 0.0);
  EXPECT_GT(never->last_breakdown()->compute, 0.0);
}

TEST(OnednnGemm, NanInInputIsCaught) {
  auto b = make_onednn_backend();
  GemmDesc d;
  d.M = 65, d.N = 7, d.K = 257;
  EXPECT_TRUE(testing::nan_in_input_is_caught(*b, d));
  if (!has_bf16()) GTEST_SKIP() << "oneDNN has no bf16 matmul on this CPU (fp32 checked)";
  d.dtype_in = DType::BF16;
  EXPECT_TRUE(testing::nan_in_input_is_caught(*b, d));
}

#else

TEST(OnednnGemm, TwinSaysWhyAndHowToFix) {
  auto b = make_onednn_backend();
  EXPECT_FALSE(b->availability().ok);
  EXPECT_NE(b->availability().reason.find("libdnnl-dev"), std::string::npos);
  GemmDesc d;
  d.M = d.N = d.K = 1;
  EXPECT_FALSE(b->supports(d));
}

#endif

}  // namespace
}  // namespace flopwatt::cpu

#include "cpu/openblas_gemm.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <map>

#include "gemm_test_support.h"

namespace flopwatt::cpu {
namespace {

#if defined(FLOPWATT_WITH_OPENBLAS)

TEST(OpenblasGemm, AvailableWithNotes) {
  auto b = make_openblas_backend();
  EXPECT_EQ(b->name(), "cpu:openblas");
  EXPECT_TRUE(b->availability().ok) << b->availability().reason;
  const auto note_list = b->notes();
  std::map<std::string, std::string> notes(note_list.begin(), note_list.end());
  EXPECT_FALSE(notes["openblas_config"].empty());
  EXPECT_FALSE(notes["openblas_corename"].empty());
  EXPECT_FALSE(notes["openblas_parallel"].empty());
  EXPECT_FALSE(notes["bf16"].empty());
}

// Debian 12's OpenBLAS falls back to SSE3 "Prescott" kernels on CPU models newer
// than itself; the backend must have re-selected unless the user chose a core.
TEST(OpenblasGemm, DoesNotRunPrescottKernelsOnAnAvx2Cpu) {
  if (std::getenv("OPENBLAS_CORETYPE")) GTEST_SKIP() << "OPENBLAS_CORETYPE set by the user";
  if (!__builtin_cpu_supports("avx2")) GTEST_SKIP() << "CPU without AVX2";
  auto b = make_openblas_backend();
  const auto note_list = b->notes();
  std::map<std::string, std::string> notes(note_list.begin(), note_list.end());
  EXPECT_NE(notes["openblas_corename"], "Prescott");
}

TEST(OpenblasGemm, Fp32MatchesReferenceInEveryLayout) {
  auto b = make_openblas_backend();
  const auto cases = testing::awkward_cases(DType::F32);
  int checked = 0;
  for (const auto& f : testing::check_all(*b, cases, false, &checked)) ADD_FAILURE() << f;
  EXPECT_EQ(checked, int(cases.size()));
}

// bf16 goes through cblas_sbgemm when the library exports it; otherwise
// supports() must say no (never a silent fp32 fallback).
TEST(OpenblasGemm, Bf16MatchesReferenceOrIsRejected) {
  auto b = make_openblas_backend();
  const auto note_list = b->notes();
  std::map<std::string, std::string> notes(note_list.begin(), note_list.end());
  const bool has_sbgemm = notes["bf16"] == "cblas_sbgemm";
  const auto cases = testing::awkward_cases(DType::BF16);
  int checked = 0;
  for (const auto& f : testing::check_all(*b, cases, false, &checked)) ADD_FAILURE() << f;
  EXPECT_EQ(checked, has_sbgemm ? int(cases.size()) : 0);
}

TEST(OpenblasGemm, NanInInputIsCaught) {
  auto b = make_openblas_backend();
  GemmDesc d;
  d.M = 65, d.N = 7, d.K = 257;
  EXPECT_TRUE(testing::nan_in_input_is_caught(*b, d));
}

#else

TEST(OpenblasGemm, TwinSaysWhyAndHowToFix) {
  auto b = make_openblas_backend();
  EXPECT_FALSE(b->availability().ok);
  EXPECT_NE(b->availability().reason.find("libopenblas"), std::string::npos);
  GemmDesc d;
  d.M = d.N = d.K = 1;
  EXPECT_FALSE(b->supports(d));
}

#endif

}  // namespace
}  // namespace flopwatt::cpu

#include "workloads/gpt2/config.h"

#include <gtest/gtest.h>

#include "workloads/error.h"
#include "workloads/gpt2/tensor_table.h"

namespace flopwatt::gpt2 {
namespace {

TEST(Config, PresetsAreGpt2Sizes) {
  const Config d12 = preset("d12");
  EXPECT_EQ(d12.L, 12);
  EXPECT_EQ(d12.C, 768);
  EXPECT_EQ(d12.Vp, 50304);
  EXPECT_EQ(preset("d24").C, 1024);
  EXPECT_EQ(preset("d36").C, 1280);
  EXPECT_EQ(preset("d48").C, 1600);
  EXPECT_EQ(preset("d48").NH, 25);
  for (const auto& n : preset_names()) EXPECT_NO_THROW(validate(preset(n), n));
}

TEST(Config, PaddedVocabIsAMultipleOf128) {
  EXPECT_EQ(padded_vocab(50257), 50304);
  EXPECT_EQ(padded_vocab(128), 128);
  EXPECT_EQ(padded_vocab(1), 128);
}

TEST(Config, UnknownPresetNamesTheFlag) {
  try {
    preset("d13", "--model");
    ADD_FAILURE();
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), "--model d13");
    EXPECT_NE(e.fix().find("tiny|d12"), std::string::npos);
  }
}

TEST(TensorTable, LayoutIsLlmcOrderPackedBackToBack) {
  const Config c = preset("tiny");
  const ArenaLayout a = layout(kParamSpecs, Extents::of(c));
  EXPECT_EQ(a.offset[kWte], 0);
  EXPECT_EQ(a.offset[kWpe], std::int64_t(c.Vp) * c.C);
  EXPECT_EQ(a.size[kQkvw], std::int64_t(c.L) * 3 * c.C * c.C);
  EXPECT_EQ(a.offset[kLnfb] + a.size[kLnfb], a.total);
  for (int i = 1; i < kNumParams; ++i) EXPECT_EQ(a.offset[i], a.offset[i - 1] + a.size[i - 1]);
  const ArenaLayout acts = layout(kActSpecs, Extents::of(c, 3, 5), 16);
  for (int i = 0; i < kNumActs; ++i) EXPECT_EQ(acts.offset[i] % 16, 0) << kActSpecs[i].name;
  EXPECT_EQ(acts.size[kAtt], std::int64_t(c.L) * 3 * c.NH * 5 * 5);
}

}  // namespace
}  // namespace flopwatt::gpt2

// The fused backward model's DRAM bytes against hand counts on a small shape,
// for every order and partitioning, and the chooser's and devices' behaviour.
//
// Shape: M = 256 tokens, N = 128 output features, K = 256 input features;
// bf16 operands (e = 2), fp32 partial sums and gradients (a = 4), granule 64.
//   |dY| = 256*128*2 = 65536 B   |X| = 256*256*2 = 131072 B  |W| = 128*256*2 = 65536 B
//   |dX| = 256*256*4 = 262144 B  |dW| = 128*256*4 = 131072 B
#include "npu/sim/fused_backward.h"
#include "npu/sim/kim2023_workloads.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "workloads/error.h"

namespace flopwatt::npu {
namespace {

const BwdShape kShape{256, 128, 256};
constexpr double kDY = 65536, kX = 131072, kW = 65536, kDX = 262144, kDW = 131072;

void expect_bytes(const BwdTraffic& t, double dY, double X, double W, double dX, double dW, double psw, double psr) {
  EXPECT_DOUBLE_EQ(t.dY, dY);
  EXPECT_DOUBLE_EQ(t.X, X);
  EXPECT_DOUBLE_EQ(t.W, W);
  EXPECT_DOUBLE_EQ(t.dX, dX);
  EXPECT_DOUBLE_EQ(t.dW, dW);
  EXPECT_DOUBLE_EQ(t.psum_write, psw);
  EXPECT_DOUBLE_EQ(t.psum_read, psr);
}

// 128 KiB of scratchpad: a dY tile, two streams and their double buffers.
//   dx-major: a 64x64 dY tile (2 x 8 KiB double-buffered) + X/dX slices
//   (2 x 64 deep x 64 rows x 6 B = 48 KiB) + W/dW slices (48 KiB) = 112 KiB is
//   the only fit (a 64x128 or 128x64 tile needs 176 KiB; keeping X/dX panels
//   64 x 256 x 6 B = 96 KiB does not fit beside them). So 4 row blocks x 2
//   column blocks: dY once; X and the dX partial sums once per column block
//   (2x: one extra write and read of dX); W and the dW partial sums once per
//   row block (4x: three extra writes and reads of dW).
TEST(FusedBackward, DxMajorHandCount) {
  std::int64_t tm = 0, tn = 0;
  const BwdTraffic t = core_traffic(BwdOrder::DxMajor, kShape, 128 * 1024, 64, 2, 4, &tm, &tn);
  EXPECT_EQ(tm, 64);
  EXPECT_EQ(tn, 64);
  expect_bytes(t, kDY, 2 * kX, 4 * kW, kDX, kDW, 1 * kDX + 3 * kDW, 1 * kDX + 3 * kDW);
}

// The mirror: 2 column blocks of dY outer, 4 row blocks inner, and again no
// panel fits beside the 64x64 tile: W and dW stream once per inner row block
// (4x, three extra dW), X and dX once per outer column block (2x, one extra
// dX). With square tiles and nothing resident both fused orders move the same
// bytes; the next test gives them room to differ.
TEST(FusedBackward, DwMajorHandCount) {
  std::int64_t tm = 0, tn = 0;
  const BwdTraffic t = core_traffic(BwdOrder::DwMajor, kShape, 128 * 1024, 64, 2, 4, &tm, &tn);
  EXPECT_EQ(tm, 64);
  EXPECT_EQ(tn, 64);
  expect_bytes(t, kDY, 2 * kX, 4 * kW, kDX, kDW, 1 * kDX + 3 * kDW, 1 * kDX + 3 * kDW);
}

// Where the two fused orders part: 160 KiB holds one 64-row panel of the
// outer side (64 x 256 x (2 + 4) B = 96 KiB) beside a double-buffered 64x64
// dY tile (16 KiB) and the inner side's 64-deep slices (48 KiB), and no more.
//   dx-major (row blocks of dY outer): the X/dX panel of a row block stays,
//     so X is read once and dX has no partial sums; W streams once per row
//     block (4x) with three write-and-read-backs of dW.
//   dw-major (column blocks outer): the W/dW panel stays, W once, no dW
//     partial sums; X streams once per column block (2x), one extra dX.
// A model that swapped the two orders' operands fails both.
TEST(FusedBackward, DxMajorAndDwMajorKeepDifferentPanels) {
  const std::int64_t S = 160 * 1024;
  expect_bytes(core_traffic(BwdOrder::DxMajor, kShape, S, 64, 2, 4), kDY, kX, 4 * kW, kDX, kDW, 3 * kDW, 3 * kDW);
  expect_bytes(core_traffic(BwdOrder::DwMajor, kShape, S, 64, 2, 4), kDY, 2 * kX, kW, kDX, kDW, kDX, kDX);
}

// Standard, 128 KiB each GEMM. dX = dY W (P=256, Q=256, R=128): the best
// output block is 128x128 (64 KiB of fp32 partial sums + 2 x 64 x 256 x 2 B of
// slices = 128 KiB... minus the 32 KiB double buffers leaves exactly 128
// columns), so dY and W are each read twice. dW = dY^T X (P=128, Q=256,
// R=256): a 128x128 block, dY read twice (2 column blocks), X once.
TEST(FusedBackward, StandardHandCount) {
  const BwdTraffic t = core_traffic(BwdOrder::Standard, kShape, 128 * 1024, 64, 2, 4);
  expect_bytes(t, 2 * kDY + 2 * kDY, kX, 2 * kW, kDX, kDW, 0, 0);
}

// Only interleaving: the two GEMMs' output blocks share the scratchpad; the
// best of the 1/4, 1/2, 3/4 splits is the even one, 64 KiB each, where each
// GEMM's best output block is 64x64 (a 128-row block leaves no room):
// dX reads dY 4x and W 4x; dW reads dY 4x and X 2x; the two first sweeps over
// dY coincide, saving one. (32 KiB for one GEMM fits no 64x64 block at all.)
TEST(FusedBackward, OnlyInterleavingHandCount) {
  const BwdTraffic t = core_traffic(BwdOrder::OnlyInterleaving, kShape, 128 * 1024, 64, 2, 4);
  expect_bytes(t, 4 * kDY + 4 * kDY - kDY, 2 * kX, 4 * kW, kDX, kDW, 0, 0);
}

// A scratchpad that holds everything: each fused order reads every operand
// once; standard still reads dY twice.
TEST(FusedBackward, EverythingFitsCompulsoryTraffic) {
  const std::int64_t S = 8 << 20;
  for (BwdOrder o : {BwdOrder::DxMajor, BwdOrder::DwMajor, BwdOrder::OnlyInterleaving}) {
    SCOPED_TRACE(to_string(o));
    expect_bytes(core_traffic(o, kShape, S, 64, 2, 4), kDY, kX, kW, kDX, kDW, 0, 0);
  }
  expect_bytes(core_traffic(BwdOrder::Standard, kShape, S, 64, 2, 4), 2 * kDY, kX, kW, kDX, kDW, 0, 0);
}

ScratchpadNpu two_cores() {
  ScratchpadNpu d;
  d.name = "test";
  d.cores = 2;
  d.scratchpad_bytes = 8 << 20;
  d.granule = 64;
  d.macs_per_s = 1e12;
  d.dram_bytes_per_s = 1e10;
  d.static_w = 1;
  d.pj_per_mac = 1;
  d.pj_per_byte_dram = 10;
  d.pj_per_byte_sram = 1;
  return d;
}

// Two cores, everything fits per core (dx-major):
//   m: each core 128 rows; both read all of W; the second core's dW is a
//      partial sum written and read back once.
//   n: each core 64 output features; both read all of X; dX partial sums.
//   k: each core 128 input features; both read all of dY; no partial sums.
TEST(FusedBackward, PartitioningHandCount) {
  const ScratchpadNpu d = two_cores();
  expect_bytes(model_backward(d, kShape, BwdOrder::DxMajor, BwdPartition::M).bytes, kDY, kX, 2 * kW, kDX, kDW, kDW,
               kDW);
  expect_bytes(model_backward(d, kShape, BwdOrder::DxMajor, BwdPartition::N).bytes, kDY, 2 * kX, kW, kDX, kDW, kDX,
               kDX);
  expect_bytes(model_backward(d, kShape, BwdOrder::DxMajor, BwdPartition::K).bytes, 2 * kDY, kX, kW, kDX, kDW, 0, 0);
}

TEST(FusedBackward, TimeIsTheRooflineAndEnergyAddsItsParts) {
  const ScratchpadNpu d = two_cores();
  const BwdResult r = model_backward(d, kShape, BwdOrder::DxMajor, BwdPartition::K);
  EXPECT_DOUBLE_EQ(r.macs, 2.0 * 256 * 128 * 256);
  EXPECT_DOUBLE_EQ(r.compute_s, 2.0 * 256 * 128 * 128 / 1e12);  // the busier core's half of K
  EXPECT_DOUBLE_EQ(r.memory_s, r.bytes.total() / 1e10);
  EXPECT_DOUBLE_EQ(r.time_s, std::max(r.compute_s, r.memory_s));
  EXPECT_NEAR(r.energy_j, r.time_s + 1e-12 * (r.macs + 10 * r.bytes.total() + 2 * r.bytes.total()), 1e-15);
}

TEST(FusedBackward, ChooserPicksTheLeastTimeAndNeverLosesToStandard) {
  ScratchpadNpu d = two_cores();
  d.scratchpad_bytes = 256 << 10;
  d.dram_bytes_per_s = 2e9;  // memory-bound, so bytes decide
  for (const BwdShape s : {BwdShape{1024, 768, 768}, BwdShape{1024, 3072, 768}, BwdShape{1024, 50304, 768},
                           BwdShape{77, 33, 129}}) {
    const BwdResult best = choose_backward(d, s), std_ = best_standard(d, s);
    EXPECT_LE(best.time_s, std_.time_s);
    for (BwdOrder o : kAllOrders)
      for (BwdPartition p : kAllPartitions) EXPECT_LE(best.time_s, model_backward(d, s, o, p).time_s);
  }
  // Many tokens, a small weight (the paper's "skinny W"): W and dW stay on
  // chip, so a fused order reads dY once where the standard order reads it
  // twice, and the chooser takes it.
  const BwdResult skinny = choose_backward(d, {65536, 64, 64});
  EXPECT_NE(skinny.order, BwdOrder::Standard);
  EXPECT_DOUBLE_EQ(skinny.bytes.dY, 65536.0 * 64 * 2);
  EXPECT_DOUBLE_EQ(best_standard(d, {65536, 64, 64}).bytes.dY, 2 * 65536.0 * 64 * 2);
  EXPECT_LT(skinny.time_s, best_standard(d, {65536, 64, 64}).time_s);
}

TEST(FusedBackward, AuthorsDevicesLoadAndAreMarkedAsTheirs) {
  const auto names = systolic_npu_names();
  ASSERT_NE(std::find(names.begin(), names.end(), "kim2023-large"), names.end());
  ASSERT_NE(std::find(names.begin(), names.end(), "kim2023-small"), names.end());
  const ScratchpadNpu large = load_scratchpad_npu("kim2023-large"), small = load_scratchpad_npu("kim2023-small");
  EXPECT_NE(large.taken_from.find("Kim"), std::string::npos);
  EXPECT_EQ(large.scratchpad_bytes, 8 << 20);
  EXPECT_EQ(large.granule, 128);
  EXPECT_DOUBLE_EQ(large.macs_per_s, 128.0 * 128 * 1050e6);
  EXPECT_EQ(small.cores, 1);
  EXPECT_EQ(small.scratchpad_bytes, 1 << 20);
  EXPECT_EQ(small.granule, 45);
  EXPECT_DOUBLE_EQ(small.macs_per_s, 45.0 * 45 * 1024e6);
  const ScratchpadNpu phx = load_scratchpad_npu("xdna:phoenix");
  EXPECT_EQ(phx.cores, 4);
  EXPECT_GT(phx.scratchpad_bytes, 512 << 10);
  EXPECT_THROW(load_scratchpad_npu("no-such-npu"), InputError);
}

// Issue 24 item 4 for the systolic files: each one's modelled peak meets the
// published peak of the chip it follows within 15%, or is off by what it states.
TEST(FusedBackward, SystolicPeaksMeetTheirPublishedChips) {
  for (const auto& name : systolic_npu_names()) {
    const ScratchpadNpu d = load_scratchpad_npu(name);
    const auto rows = calibrate_systolic(d);
    ASSERT_FALSE(rows.empty()) << name << " names no published peak";
    for (const auto& r : rows) EXPECT_TRUE(r.accounted_for()) << name << ": " << r.model << " vs " << r.figure.value;
  }
  const auto large = calibrate_systolic(load_scratchpad_npu("kim2023-large"));
  EXPECT_NEAR(large.at(0).model, 275.25, 0.01);  // 8 x 128 x 128 x 1.05 GHz x 2
  ScratchpadNpu halved = load_scratchpad_npu("kim2023-large");
  halved.cores = 4;  // --cores 4: half the chip, no longer its published peak
  EXPECT_FALSE(calibrate_systolic(halved).at(0).accounted_for());
}

TEST(FusedBackward, SystolicPublishedEntryNamesTheField) {
  const auto p = std::filesystem::temp_directory_path() / "flopwatt_bad_systolic_published.json";
  std::ifstream in(std::string(FLOPWATT_SOURCE_DIR) + "/npu/sim/devices/systolic/kim2023-small.json");
  auto j = nlohmann::json::parse(in);
  j["published"][0]["metric"] = "tops";
  std::ofstream(p) << j.dump();
  try {
    load_systolic_npu_file(p.string());
    ADD_FAILURE();
  } catch (const InputError& e) {
    EXPECT_NE(e.where().find("published[0].metric"), std::string::npos) << e.what();
  }
  std::filesystem::remove(p);
}

TEST(FusedBackward, BadSystolicFileNamesTheField) {
  const auto p = std::filesystem::temp_directory_path() / "flopwatt_bad_systolic.json";
  std::ofstream(p) << R"({"schema": "flopwatt-npu-systolic/1", "name": "x", "taken_from": "y", "params": {}})";
  try {
    load_systolic_npu_file(p.string());
    ADD_FAILURE();
  } catch (const InputError& e) {
    EXPECT_NE(e.where().find("params.cores"), std::string::npos) << e.what();
  }
  std::filesystem::remove(p);
}

TEST(FusedBackward, Gpt2StepAddsItsParts) {
  const ScratchpadNpu d = load_scratchpad_npu("kim2023-small");
  const Gpt2Step st = model_gpt2_step(d, {768, 12, 50304, 4 * 1024}, {{"other", 1e9, 1e9}});
  ASSERT_EQ(st.layers.size(), 5u);
  double std_s = 0, cho_s = 0;
  for (const auto& l : st.layers) {
    std_s += l.count * l.standard.time_s;
    cho_s += l.count * l.chosen.time_s;
    EXPECT_LE(l.chosen.time_s, l.standard.time_s) << l.layer;
  }
  EXPECT_DOUBLE_EQ(st.backward_linear_standard_s, std_s);
  EXPECT_DOUBLE_EQ(st.backward_linear_chosen_s, cho_s);
  EXPECT_DOUBLE_EQ(st.step_standard_s, st.forward_gemm_s + st.other_s + std_s);
  EXPECT_GT(st.other_s, 0);
}

}  // namespace
}  // namespace flopwatt::npu

namespace flopwatt::npu {
namespace {

// Issue 24 item 6: the layer tables follow the models' published sizes.
TEST(Kim2023Workloads, LayerTablesFollowTheModels) {
  const auto& w = kim2023_workloads();
  ASSERT_EQ(w.size(), 6u);
  auto macs_per_row = [](const KimWorkload& x) {
    double m = 0;
    for (const auto& l : x.layers) m += double(l.count) * double(l.in) * double(l.out);
    return m;
  };
  // BERT-large: 24 x (4 x 1024^2 + 2 x 1024 x 4096); T5-small: 6 x 4 + 6 x 8 projections of 512^2 and 12 FFNs.
  EXPECT_DOUBLE_EQ(macs_per_row(w[1]), 24.0 * (4 * 1024.0 * 1024 + 2 * 1024.0 * 4096));
  EXPECT_DOUBLE_EQ(macs_per_row(w[2]), 72.0 * 512 * 512 + 24.0 * 512 * 2048);
  for (const auto& x : w) EXPECT_FALSE(x.source.empty()) << x.name;
}

TEST(Kim2023Workloads, ChosenOrderNeverSlowerAndPaperFiguresNamed) {
  for (const char* name : {"kim2023-large", "kim2023-small"}) {
    const ScratchpadNpu d = load_scratchpad_npu(name);
    const auto rows = model_kim2023_workloads(d, d.batch, 128);
    ASSERT_EQ(rows.size(), 6u);
    for (const auto& r : rows) {
      EXPECT_LE(r.backward_chosen_s, r.backward_standard_s * (1 + 1e-12)) << name << " " << r.name;
      EXPECT_GT(r.forward_s, 0) << r.name;
    }
    EXPECT_EQ(rows[0].M, std::int64_t(d.batch) * 128);  // NLP: tokens
    EXPECT_EQ(rows[4].M, d.batch);                        // NCF: samples
    const std::string text = format_kim2023(d, d.batch, 128, rows);
    EXPECT_NE(text.find(std::string(name) == "kim2023-large" ? "+15%" : "+29%"), std::string::npos) << text;
  }
  EXPECT_EQ(kim2023_published_speedup("xdna:phoenix"), 0);
}

}  // namespace
}  // namespace flopwatt::npu

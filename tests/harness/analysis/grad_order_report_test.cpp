// The gradient-order section of `flopwatt report`: rows per linear layer's
// backward and the step, the order each layer ran, the modelled bytes of that
// order times the layer's occurrences, the time against the standard-order run
// of the same backend, and the NPU model's rows labelled simulated.
#include "harness/analysis/grad_order_report.h"

#include <gtest/gtest.h>

#include "harness/run/statistics.h"

namespace flopwatt {
namespace {

using nlohmann::json;

Measurement op_row(const std::string& op, const std::string& pass, double median_s, int count, bool sim = false) {
  Measurement m;
  m.workload = "gpt2";
  m.op = op;
  if (!pass.empty()) m.pass = pass;
  m.backend = "cpu:llmc";
  m.count_per_step = count;
  m.flop = 1e9;
  m.rep_times_s = {median_s, median_s, median_s};
  m.reps = 3;
  m.time_s = summarize(m.rep_times_s);
  m.flop_per_s = m.flop / m.time_s.median;
  m.simulated = sim;
  return m;
}

LoadedRun gpt2_run(const std::string& label, const std::string& order, const std::string& fc_ran, double fc_s,
                   double step_s) {
  Run r;
  r.run_id = label;
  r.complete = true;
  json layers = {{"cache_bytes_for_a_block", 1 << 20}};
  for (const char* l : {"qkv", "attproj", "fc", "fcproj", "lm_head"})
    layers[l] = {{"order", std::string(l) == "fc" ? fc_ran : "standard"},
                 {"block_rows", 64},
                 {"modelled_bytes_standard", 1000.0},
                 {"modelled_bytes_interleaved", 600.0}};
  r.context = {{"gpt2",
                {{"grad_order", order}, {"gemm_backend", "cpu:llmc"}, {"model", "d12"}, {"batch", 4}, {"seq", 64},
                 {"grad_order_layers", layers}}}};
  r.measurements = {op_row("fc", "bwd", fc_s, 12), op_row("fc", "fwd", 1.0, 12), op_row("step", "", step_s, 1)};
  Measurement per_step = op_row("step", "", 9.0, 1);
  per_step.step = 0;  // a single step's row is not the aggregate
  r.measurements.push_back(per_step);
  return {label, label, r};
}

TEST(GradOrderReport, RowsBytesAndTimeAgainstTheStandardRun) {
  const std::vector<LoadedRun> runs = {gpt2_run("std", "standard", "standard", 2.0, 10.0),
                                       gpt2_run("int", "interleaved", "interleaved", 1.5, 9.5)};
  const json j = grad_order_json(runs);
  ASSERT_FALSE(j.is_null());
  const json* fc_int = nullptr;
  const json* step_int = nullptr;
  for (const auto& r : j["rows"]) {
    if (r["run"] == "int" && r["layer"] == "fc") fc_int = &r;
    if (r["run"] == "int" && r["layer"] == "step") step_int = &r;
  }
  ASSERT_TRUE(fc_int && step_int) << j.dump(1);
  EXPECT_EQ((*fc_int)["ran"], "interleaved");
  EXPECT_DOUBLE_EQ((*fc_int)["modelled_dram_bytes"].get<double>(), 12 * 600.0);  // 12 occurrences
  EXPECT_DOUBLE_EQ((*fc_int)["time_median_s"].get<double>(), 1.5);               // the bwd row, not fwd
  EXPECT_DOUBLE_EQ((*fc_int)["time_vs_standard"].get<double>(), 0.75);
  EXPECT_DOUBLE_EQ((*step_int)["time_vs_standard"].get<double>(), 0.95);  // the aggregate, not step 0
  // Layers without a measurement have no bytes, so neither has the step's sum.
  EXPECT_FALSE(step_int->contains("modelled_dram_bytes"));
  const std::string md = grad_order_markdown(runs);
  EXPECT_NE(md.find("## gradient order"), std::string::npos) << md;
  EXPECT_NE(md.find("| int | cpu:llmc | interleaved | fc | interleaved | 64 | 0.0 | 1500.000 |"), std::string::npos)
      << md;
  EXPECT_NE(md.find("0.750x"), std::string::npos) << md;
}

TEST(GradOrderReport, NothingWithoutAnOrderAndTheNpuModelIsLabelledSimulated) {
  LoadedRun plain = gpt2_run("plain", "standard", "standard", 1, 1);
  plain.run.context = json::object();
  EXPECT_TRUE(grad_order_json({plain}).is_null());
  EXPECT_EQ(grad_order_markdown({plain}), "");

  LoadedRun sim = gpt2_run("sim", "auto", "standard", 1, 1);
  for (auto& m : sim.run.measurements) m.simulated = true;
  auto res = [](double s, const char* order) {
    return json{{"order", order}, {"partition", "m"}, {"bytes", {{"total", 2e6}}}, {"time_s", s},
                {"flop_per_s", 1e12}, {"flop_per_j", 1e11}};
  };
  sim.run.context["gpt2"]["grad_order_npu_model"] = {
      {"simulated", true},
      {"device", {{"name", "xdna:phoenix"}}},
      {"layers",
       {{{"layer", "fc"}, {"count", 12}, {"shape", {{"M", 256}, {"N", 3072}, {"K", 768}}},
         {"standard", res(2e-3, "standard")}, {"chosen", res(1e-3, "dx-major")}}}},
      {"step", {{"step_s", {{"standard", 0.2}, {"chosen", 0.1}}}, {"backward_s", {{"standard", 0.1}, {"chosen", 0.05}}}}}};
  const std::string md = grad_order_markdown({sim});
  EXPECT_NE(md.find("cpu:llmc (sim)"), std::string::npos) << md;
  EXPECT_NE(md.find("NPU fused-backward model of xdna:phoenix [simulated]"), std::string::npos) << md;
  EXPECT_NE(md.find("| fc | 256x3072x768 |"), std::string::npos) << md;
  EXPECT_NE(md.find("dx-major/m"), std::string::npos) << md;
  EXPECT_NE(md.find("2.000x"), std::string::npos) << md;
  EXPECT_EQ(grad_order_json({sim})["npu_model"].size(), 1u);
}

}  // namespace
}  // namespace flopwatt

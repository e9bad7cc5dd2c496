// The console summary's pivot: which measurements share a row.
#include "harness/output/console_writer.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

namespace flopwatt {
namespace {

std::string summary_of(const Run& run) {
  std::FILE* f = std::tmpfile();
  EXPECT_NE(f, nullptr);
  print_summary(f, run, "/tmp/out");
  std::rewind(f);
  std::string s;
  char buf[4096];
  for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) s.append(buf, n);
  std::fclose(f);
  return s;
}

// The summary lines that mention every word in `words`.
std::vector<std::string> lines_with(const std::string& text, const std::vector<std::string>& words) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    bool all = true;
    for (const auto& w : words) all = all && line.find(w) != std::string::npos;
    if (all) out.push_back(line);
  }
  return out;
}

Measurement gpt2_op(const std::string& op, const std::string& pass, double flop_per_s) {
  Measurement m;
  m.workload = "gpt2";
  m.op = op;
  m.pass = pass;
  m.backend = "cpu:test";
  m.shape = Shape{256, 2304, 768};  // a backward row carries its op's forward shape
  m.reps = 2;
  m.flop_per_s = flop_per_s;
  return m;
}

TEST(ConsoleSummary, ForwardAndBackwardOfOneOpAreTwoRows) {
  flopwatt::Run run;
  run.measurements.push_back(gpt2_op("qkv", "fwd", 12.5e9));
  run.measurements.push_back(gpt2_op("qkv", "bwd", 7.25e9));
  const std::string s = summary_of(run);
  const auto fwd = lines_with(s, {"gpt2", "qkv", "fwd"});
  const auto bwd = lines_with(s, {"gpt2", "qkv", "bwd"});
  ASSERT_EQ(fwd.size(), 1u) << s;
  ASSERT_EQ(bwd.size(), 1u) << s;
  EXPECT_NE(fwd[0].find("12.5"), std::string::npos) << s;
  EXPECT_NE(bwd[0].find("7.2"), std::string::npos) << s;
  EXPECT_EQ(lines_with(s, {"qkv"}).size(), 2u) << s;
}

// Rows without a pass (GPT-2 steps, custom GEMM shapes) still share one row per key.
TEST(ConsoleSummary, RowsWithoutAPassShareOneRow) {
  flopwatt::Run run;
  Measurement step = gpt2_op("step", "", 3e9);
  step.pass.reset();
  step.shape.reset();
  step.step = 0;
  run.measurements.push_back(step);
  step.step.reset();  // the aggregate after the per-step rows takes the cell
  step.flop_per_s = 4e9;
  run.measurements.push_back(step);
  const std::string s = summary_of(run);
  ASSERT_EQ(lines_with(s, {"workload", "op", "pass", "shape", "dtype", "cpu:test"}).size(), 1u) << s;
  const auto rows = lines_with(s, {"gpt2", "step"});
  ASSERT_EQ(rows.size(), 1u) << s;
  EXPECT_NE(rows[0].find("4.0"), std::string::npos) << s;
  EXPECT_EQ(lines_with(s, {"report: /tmp/out/run.json"}).size(), 1u) << s;
}

// The pass heading sits where a row's pass does, and so on for the shape.
TEST(ConsoleSummary, PassColumnLinesUpWithTheHeader) {
  flopwatt::Run run;
  run.measurements.push_back(gpt2_op("attproj", "bwd", 1e9));
  const std::string s = summary_of(run);
  const auto header = lines_with(s, {"workload", "pass"});
  const auto row = lines_with(s, {"attproj"});
  ASSERT_EQ(header.size(), 1u) << s;
  ASSERT_EQ(row.size(), 1u) << s;
  EXPECT_EQ(header[0].find("pass"), row[0].find("bwd")) << s;
  EXPECT_EQ(header[0].find("shape"), row[0].find("256x2304x768")) << s;
}

}  // namespace
}  // namespace flopwatt

#include "harness/output/writer.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <stdexcept>

#include <nlohmann/json.hpp>

namespace flopwatt {
namespace {

Measurement gemm_row(const std::string& op) {
  Measurement m;
  m.workload = "gemm";
  m.op = op;
  m.backend = "cpu:test";
  m.shape = Shape{64, 32, 16};
  m.reps = 3;
  m.flop = 2.0 * 64 * 32 * 16;
  m.time_s.median = 1e-3;
  m.flop_per_s = m.flop / m.time_s.median;
  return m;
}

struct Files {
  std::map<std::string, std::string> text;
  int writes = 0;
  WriterTarget target() {
    WriterTarget t;
    t.replace_file = [this](const std::string& name, const std::string& s) {
      text[name] = s;
      ++writes;
    };
    return t;
  }
};

TEST(Writer, FileWritersRewriteTheirWholeFileOnEveryEvent) {
  Files files;
  auto json = make_writer("json", files.target());
  auto csv = make_writer("csv", files.target());
  flopwatt::Run run;
  run.run_id = "r1";
  json->context(run);
  csv->context(run);
  EXPECT_EQ(nlohmann::json::parse(files.text.at("run.json"))["measurements"].size(), 0u);
  run.measurements.push_back(gemm_row("a"));
  json->measurement(run, run.measurements.back());
  csv->measurement(run, run.measurements.back());
  run.measurements.push_back(gemm_row("b"));
  json->measurement(run, run.measurements.back());
  csv->measurement(run, run.measurements.back());
  run.complete = true;
  json->finalize(run);
  csv->finalize(run);
  const auto j = nlohmann::json::parse(files.text.at("run.json"));
  EXPECT_EQ(j["measurements"].size(), 2u);
  EXPECT_TRUE(j["complete"].get<bool>());
  const std::string& c = files.text.at("measurements.csv");
  EXPECT_EQ(std::count(c.begin(), c.end(), '\n'), 3) << c;  // header and two rows
  EXPECT_EQ(files.writes, 8);
}

TEST(Writer, ConsoleWriterPrintsHeaderRowsAndSummary) {
  char* buf = nullptr;
  std::size_t len = 0;
  std::FILE* f = open_memstream(&buf, &len);
  WriterTarget t;
  t.stream = f;
  t.out_dir = "some/dir";
  auto console = make_writer("console", t);
  flopwatt::Run run;
  run.measurements.push_back(gemm_row("qkv"));
  console->context(run);
  console->measurement(run, run.measurements.back());
  console->finalize(run);
  std::fclose(f);
  const std::string out(buf, len);
  std::free(buf);
  EXPECT_NE(out.find("FLOP/s"), std::string::npos) << out;
  EXPECT_NE(out.find("cpu:test"), std::string::npos) << out;
  EXPECT_NE(out.find("report: some/dir/run.json"), std::string::npos) << out;
}

TEST(Writer, UnknownNameSaysWhichExist) {
  try {
    make_writer("xml", WriterTarget{});
    FAIL() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("json, csv, console"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace flopwatt

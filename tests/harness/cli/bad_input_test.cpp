// The bad-input matrix: every row is a command line a hostile or careless user
// could type, and each must end the same way: exit 2, exactly one line on
// stderr that names the offending input, and nothing half-written: no output
// directory appears, no temporary is left, and the files the command was given
// are untouched. Each row runs in a fresh scratch directory holding the
// fixtures below ({S} in a row is that directory, {OUT} a path inside it that
// must not exist afterwards).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "tests/harness/cli_support.h"

namespace {

namespace fs = std::filesystem;
using flopwatt::testing::CommandResult;
using flopwatt::testing::run_command_line;
using flopwatt::testing::slurp;

struct Row {
  std::string args;   // after the binary; {S} and {OUT} are substituted
  std::string names;  // what the one stderr line must contain
};

const std::string G = "run gemm --idle 0 --no-peak --min-time 0 --min-reps 1 --power none --backend cpu:reference ";
const std::string G8 = G + "--shapes 8,8,8 ";
const std::string T = "run gpt2 --model tiny --steps 1 --batch 1 --seq 8 --idle 0 --power none --min-time 0 --min-reps 1 ";
const std::string D = "run default --min-time 0 --min-reps 1 --idle 0 --power none --gpt2-model tiny ";

const std::vector<Row> kRows = {
    // run gemm: shapes
    {G + "--shapes 1,2 --out {OUT}", "--shapes"},
    {G + "--shapes 1,-2,3 --out {OUT}", "--shapes"},
    {G + "--shapes 4,4,4,XY --out {OUT}", "--shapes"},
    {G + "--shapes 0,4,4 --out {OUT}", "--shapes"},
    {G + "--shapes a,b,c --out {OUT}", "--shapes"},
    {G + "--shapes '' --out {OUT}", "--shapes"},
    {G + "--shapes 3000000000,1,1 --out {OUT}", "--shapes 3000000000,1,1"},
    {G + "--shapes 9223372036854775807,1,1 --out {OUT}", "--shapes"},
    {G + "--shapes 1,9223372036854775807,9223372036854775807 --out {OUT}", "--shapes"},
    {G + "--shapes 100000,100000,100000 --out {OUT}", "--shapes 100000,100000,100000"},
    {G + "--shapes 99999999999999999999,1,1 --out {OUT}", "--shapes"},
    {G + "--shapes 4,4 --out {OUT}", "--shapes"},
    {G + "--shapes 4,4,4,4,4 --out {OUT}", "--shapes"},
    {G + "--shapes 4,4,4,QQ --out {OUT}", "--shapes"},
    {G + "--shapes 4.5,4,4 --out {OUT}", "--shapes"},
    {G + "--shapes 0x10,4,4 --out {OUT}", "--shapes"},
    {G + "--shapes nope --out {OUT}", "--shapes"},
    {G + "--shapes ' ,,' --out {OUT}", "--shapes"},
    // run gemm: other flags
    {G8 + "--dtype fp8 --out {OUT}", "--dtype"},
    {G8 + "--dtype '' --out {OUT}", "--dtype"},
    {"run gemm --idle 0 --no-peak --min-time 0 --min-reps 1 --power none --shapes 8,8,8 --backend cpu:nope --out {OUT}",
     "--backend"},
    {"run gemm --idle 0 --no-peak --min-time 0 --min-reps 1 --power none --shapes 8,8,8 --backend npu:xdna --out {OUT}",
     "--backend"},
    {"run gemm --idle 0 --no-peak --min-time 0 --min-reps 1 --power none --shapes 8,8,8 --backend '' --out {OUT}",
     "--backend"},
    {G8 + "--threads 100000 --out {OUT}", "--threads"},
    {G8 + "--threads 30000 --out {OUT}", "--threads"},
    {G8 + "--threads -1 --out {OUT}", "--threads"},
    {G8 + "--threads 99999999999 --out {OUT}", "--threads"},
    {G8 + "--threads abc --out {OUT}", "--threads"},
    {G8 + "--min-time -1 --out {OUT}", "--min-time"},
    {G8 + "--min-time nan --out {OUT}", "--min-time"},
    {G8 + "--min-time inf --out {OUT}", "--min-time"},
    {G8 + "--min-time abc --out {OUT}", "--min-time"},
    {G8 + "--min-reps 0 --out {OUT}", "--min-reps"},
    {G8 + "--min-reps -5 --out {OUT}", "--min-reps"},
    {G8 + "--min-reps 99999999999 --out {OUT}", "--min-reps"},
    {G8 + "--idle -1 --out {OUT}", "--idle"},
    {G8 + "--idle nan --out {OUT}", "--idle"},
    {G8 + "--idle abc --out {OUT}", "--idle"},
    {G8 + "--sample-period 0 --out {OUT}", "--sample-period"},
    {G8 + "--sample-period 100 --out {OUT}", "--sample-period"},
    {G8 + "--sample-period nan --out {OUT}", "--sample-period"},
    {G8 + "--sample-period -1 --out {OUT}", "--sample-period"},
    {G8 + "--power no-such-source --out {OUT}", "--power"},
    {G8 + "--power-log {S}/missing.log --out {OUT}", "--power-log"},
    {G8 + "--power-log {S}/empty.log --out {OUT}", "--power-log"},
    {G8 + "--counters , --out {OUT}", "--counters"},
    {G8 + "--counters perf::CYCLES,,perf::INSTRUCTIONS --out {OUT}", "--counters"},
    {G8 + "--power-log {S}/garbage.log --out {OUT}", "--power-log"},
    {G8 + "--power-log {S}/huge.log --out {OUT}", "--power-log"},
    {G8 + "--power-log {S}/negative.log --out {OUT}", "--power-log"},
    {G8 + "--power-log {S}/dir --out {OUT}", "--power-log"},
    {G8 + "--out /proc/flopwatt/nope", "--out"},
    {G8 + "--out {S}/file.txt", "--out"},
    {G8 + "--out {S}/link-to-dir", "--out"},
    {G8 + "--out {S}/prev-run", "--out"},
    {G8 + "--out {S}/file.txt/sub", "--out"},
    {G8 + "--no-such-flag --out {OUT}", "--no-such-flag"},
    {G8 + "--out {OUT} stray-argument", "stray-argument"},
    // run gpt2
    {T + "--model nope --out {OUT}", "--model"},
    {T + "--batch 0 --out {OUT}", "--batch"},
    {T + "--batch -1 --out {OUT}", "--batch"},
    {T + "--batch 2147483647 --out {OUT}", "--batch"},
    {T + "--batch 99999999999 --out {OUT}", "--batch"},
    {T + "--seq 0 --out {OUT}", "--seq"},
    {T + "--seq 100000 --out {OUT}", "--seq"},
    {T + "--seq 2147483647 --out {OUT}", "--seq"},
    {T + "--steps 0 --out {OUT}", "--steps"},
    {T + "--steps -3 --out {OUT}", "--steps"},
    {T + "--grad-order dx-major --out {OUT}", "--grad-order"},
    {T + "--warmup 5 --out {OUT}", "--warmup"},
    {T + "--warmup -1 --out {OUT}", "--warmup"},
    {T + "--lr 0 --out {OUT}", "--lr"},
    {T + "--lr -1 --out {OUT}", "--lr"},
    {T + "--lr nan --out {OUT}", "--lr"},
    {T + "--lr abc --out {OUT}", "--lr"},
    {T + "--dtype fp8 --out {OUT}", "--dtype"},
    {T + "--gemm-backend cpu:nope --out {OUT}", "--gemm-backend"},
    {T + "--checkpoint {S}/missing.bin --out {OUT}", "--checkpoint"},
    {T + "--checkpoint /dev/zero --out {OUT}", "--checkpoint /dev/zero"},
    {T + "--checkpoint {S}/dir --out {OUT}", "--checkpoint"},
    {T + "--checkpoint {S}/short.bin --out {OUT}", "--checkpoint"},
    {T + "--checkpoint {S}/garbage.bin --out {OUT}", "--checkpoint"},
    {T + "--checkpoint {S}/empty.log --out {OUT}", "--checkpoint"},
    {T + "--counters perf::CYCLES, --out {OUT}", "--counters"},
    {T + "--data {S}/missing.bin --out {OUT}", "--data"},
    {T + "--data /dev/null --out {OUT}", "--data /dev/null"},
    {T + "--data {S}/short.bin --out {OUT}", "--data"},
    {T + "--data {S}/garbage.bin --out {OUT}", "--data"},
    {T + "--data {S}/dir --out {OUT}", "--data"},
    {T + "--save {S}/missing-dir/x.bin --out {OUT}", "--save"},
    {T + "--save {S}/dir --out {OUT}", "--save"},
    {T + "--save {S}/file.txt/x.bin --out {OUT}", "--save"},
    {T + "--threads 100000 --out {OUT}", "--threads"},
    {T + "--out {S}/prev-run", "--out"},
    // run default, run peak
    {D + "--threads 100000 --out {OUT}", "--threads"},
    {D + "--min-reps 0 --out {OUT}", "--min-reps"},
    {D + "--gpt2-model nope --out {OUT}", "--gpt2-model"},
    {D + "--out {S}/file.txt", "--out"},
    {"run peak --threads 100000 --out {OUT}", "--threads"},
    {"run peak --seconds -1 --out {OUT}", "--seconds"},
    {"run peak --seconds 1e9 --out {OUT}", "--seconds"},
    // npu
    {"npu plan 0,4,4", "0,4,4"},
    {"npu plan 4,4", "4,4"},
    {"npu plan a,b,c", "a,b,c"},
    {"npu plan 64,64,64 --device nope", "'nope'"},
    {"npu plan 64,64,64 --dtype fp8", "--dtype"},
    {"npu plan 64,64,64 --out-dtype fp8", "--out-dtype"},
    {"npu plan 64,64,64 --tile 0,0,0", "--tile"},
    {"npu plan 64,64,64 --tile 1,1,1", "--tile"},
    {"npu plan 64,64,64 --tile 4096,4096,4096", "--tile"},
    {"npu plan 64,64,64 --tile x", "--tile"},
    {"npu plan 64,64,64 --tile 32,32,32 --cols -1", "--cols"},
    {"npu plan 64,64,64 --tile 32,32,32 --cols 1000", "--cols"},
    {"npu plan 64,64,64 --host-gbs -1", "--host-gbs"},
    {"npu plan 64,64,64 --host-gbs abc", "--host-gbs"},
    {"npu sweep --shapes random:0", "--shapes"},
    {"npu sweep --shapes random:abc", "--shapes"},
    {"npu sweep --shapes random:4:99999999999", "--shapes"},
    {"npu sweep --shapes 1,2", "--shapes"},
    {"npu sweep --device nope --shapes 64,64,64", "'nope'"},
    {"npu sweep --shapes 64,64,64 --out {S}/missing-dir/x.csv", "--out"},
    {"npu selftest --timeout -1", "--timeout"},
    {"npu selftest --timeout abc", "--timeout"},
    {"npu sweep --shapes 64,64,64 --out {S}/dir", "--out"},
    {"npu fused-backward --device nope", "--device nope"},
    {"npu fused-backward --seq 0", "--seq"},
    {"npu fused-backward --batch -1", "--batch"},
    {"npu fused-backward --model d99", "--model"},
    // report, plot
    {"report {S}/missing", "missing"},
    {"report {S}/empty-dir", "empty-dir"},
    {"report {S}/file.txt", "file.txt"},
    {"report {S}/loop-run", "run.json"},
    {"report {S}/dir-run", "run.json"},
    {"report {S}/garbage-run", "run.json"},
    {"report {S}/array-run", "run.json"},
    {"report {S}/schema-run", "run.json"},
    {"report {S}/string-measurements-run", "run.json"},
    {"report {S}/wrong-type-run", "run.json"},
    {"report {S}/camp-types", "campaign.json"},
    {"report {S}/camp-garbage", "campaign.json"},
    {"report {S}/camp-no-phases", "campaign.json"},
    {"report {S}/good-run --format nope", "--format"},
    {"report {S}/good-run --baseline 99999999999999999999999", "--baseline"},
    {"report {S}/good-run --baseline 0", "--baseline"},
    {"report {S}/good-run --baseline nope", "--baseline"},
    {"report {S}/good-run --out {S}/missing-dir/r.md", "--out"},
    {"report {S}/good-run --out {S}/dir", "--out"},
    {"report {S}/good-run --paper --format csv", "--format"},
    {"report {S}/good-run --paper --baseline 1", "--baseline"},
    {"plot {S}/missing", "missing"},
    {"plot {S}/empty-dir", "empty-dir"},
    {"plot {S}/loop-run", "run.json"},
    {"plot {S}/camp-types", "campaign.json"},
    {"plot {S}/good-run --out {S}/file.txt", "--out"},
    {"plot {S}/good-run --formats gif", "--formats"},
    // sources, backends, campaign
    {"sources --power-log {S}/missing.log", "--power-log"},
    {"sources --measure -1", "--measure"},
    {"backends --nope", "--nope"},
    {"campaign mains-vs-battery --suite nope --non-interactive --out {OUT}", "--suite"},
    {"campaign mains-vs-battery --min-battery 200 --non-interactive --out {OUT}", "--min-battery"},
    {"campaign mains-vs-battery --poll 0 --non-interactive --out {OUT}", "--poll"},
};

// A checkpoint-sized lump of bytes that is no checkpoint.
std::string garbage(std::size_t n) {
  std::string s(n, '\0');
  for (std::size_t i = 0; i < n; ++i) s[i] = char((i * 7919 + 13) & 0xff);
  return s;
}

void write(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << text;
}

std::string good_run_json() {
  return R"({"schema_version": 1, "flopwatt_version": "0", "run_id": "x", "complete": true, "context": {},
             "power_sources": [], "measurements": []})";
}

void make_fixtures(const fs::path& s) {
  write(s / "empty.log", "");
  write(s / "garbage.log", "this is not, a power log\n\x01\x02\n");
  write(s / "huge.log", "6e66,5\n");
  write(s / "negative.log", "0,-5\n1,-5\n");
  write(s / "short.bin", "0123456789");
  write(s / "garbage.bin", garbage(4096));
  write(s / "file.txt", "a file\n");
  fs::create_directories(s / "dir");
  fs::create_directories(s / "real-dir");
  fs::create_symlink(s / "real-dir", s / "link-to-dir");
  write(s / "prev-run" / "run.json", good_run_json());
  fs::create_directories(s / "empty-dir");
  fs::create_directories(s / "loop-run");
  fs::create_symlink("run.json", s / "loop-run" / "run.json");
  fs::create_directories(s / "dir-run" / "run.json");
  write(s / "garbage-run" / "run.json", "{\"schema_version\": 1, \"measure");
  write(s / "array-run" / "run.json", "[1, 2, 3]");
  write(s / "schema-run" / "run.json", "{\"schema_version\": \"one\", \"measurements\": []}");
  write(s / "string-measurements-run" / "run.json", "{\"schema_version\": 1, \"measurements\": \"none\"}");
  write(s / "wrong-type-run" / "run.json",
        R"({"schema_version": 1, "run_id": 5, "complete": "yes", "context": [], "measurements": [{"op": 7}]})");
  write(s / "camp-types" / "campaign.json", R"({"kind": "flopwatt-campaign", "phases": [5, "x"]})");
  write(s / "camp-garbage" / "campaign.json", "{{{");
  write(s / "camp-no-phases" / "campaign.json", R"({"kind": "flopwatt-campaign"})");
  write(s / "good-run" / "run.json", good_run_json());
}

// Every entry below `root` with its size (links by their target text), to prove nothing changed.
void snapshot_into(const fs::path& root, const fs::path& dir, std::map<std::string, std::string>& m) {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const fs::path p = e.path();
    struct stat st {};
    ::lstat(p.c_str(), &st);
    std::string v = std::to_string(st.st_mode) + ":" + std::to_string(st.st_size);
    if (S_ISLNK(st.st_mode)) v += ":" + fs::read_symlink(p).string();
    else if (S_ISREG(st.st_mode)) v += ":" + std::to_string(std::hash<std::string>{}(slurp(p)));
    m[p.lexically_relative(root).string()] = v;
    if (S_ISDIR(st.st_mode)) snapshot_into(root, p, m);  // lstat: never into a link
  }
}

// Every entry below `root` with its mode, size and content hash (links by their target text).
std::map<std::string, std::string> snapshot(const fs::path& root) {
  std::map<std::string, std::string> m;
  snapshot_into(root, root, m);
  return m;
}

std::string substitute(std::string s, const fs::path& scratch) {
  for (const auto& [key, value] : {std::pair<std::string, std::string>{"{OUT}", (scratch / "out").string()},
                                   {"{S}", scratch.string()}}) {
    for (std::size_t at; (at = s.find(key)) != std::string::npos;) s.replace(at, key.size(), value);
  }
  return s;
}

TEST(BadInput, TableHasAtLeastOneHundredRows) { EXPECT_GE(kRows.size(), 100u); }

class BadInputRow : public ::testing::TestWithParam<std::size_t> {};

TEST_P(BadInputRow, ExitsTwoWithOneLineNamingTheInputAndWritesNothing) {
  const Row& row = kRows[GetParam()];
  const fs::path s = flopwatt::testing::temp_dir("bad_input", std::to_string(GetParam()));
  make_fixtures(s);
  const auto before = snapshot(s);
  const std::string args = substitute(row.args, s);
  const std::string names = substitute(row.names, s);
  // No sensors, no NPU artifacts from the machine: the same answer everywhere.
  const CommandResult r = run_command_line("cd " + s.string() + " && FLOPWATT_SYSFS_ROOT=" + (s / "empty-dir").string() +
                                           " FLOPWATT_NPU_ARTIFACTS=" + (s / "empty-dir").string() + " timeout -k 5 30 " +
                                           FLOPWATT_BINARY + " " + args);
  // FLOPWATT_PRINT_TABLE=1 prints each row's outcome, for a report of what was tried.
  if (std::getenv("FLOPWATT_PRINT_TABLE"))
    std::printf("row %zu | exit %d | %s | %s", GetParam(), r.code, row.args.c_str(), r.err.empty() ? "\n" : r.err.c_str());
  EXPECT_EQ(r.code, 2) << args << "\nstderr: " << r.err << "\nstdout: " << r.out.substr(0, 400);
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << args << "\n" << r.err;
  EXPECT_NE(r.err.find(names), std::string::npos) << args << "\nexpected to name: " << names << "\n" << r.err;
  EXPECT_EQ(r.err.find("internal error"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("Traceback"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(s / "out")) << args;
  EXPECT_EQ(snapshot(s), before) << args << ": the command changed its inputs or left files";
  fs::remove_all(s);
}

INSTANTIATE_TEST_SUITE_P(Matrix, BadInputRow, ::testing::Range<std::size_t>(0, kRows.size()));

// One broken optional file (an NPU manifest, a device file) makes only its own
// backend unavailable: commands that never use it still exit 0.
TEST(BadInput, BrokenOptionalFilesBreakOnlyTheirOwnBackend) {
  const fs::path s = flopwatt::testing::temp_dir("bad_input", "optional");
  write(s / "art" / "manifest.json",
        R"({"schema":"flopwatt-npu-artifacts/1","designs":[{"name":"a","device":"npu1","xclbin":"x","insts":"i",)"
        R"("M":256,"N":256,"K":256,"tile":{"m":4294967296,"k":64,"n":64},"array":{"rows":4294967297,"cols":4},)"
        R"("dtype_in":"bf16","dtype_out":"fp32"}]})");
  write(s / "art" / "x", "");
  write(s / "art" / "i", "");
  write(s / "art2" / "manifest.json", R"({"schema": 5, "designs": []})");
  const std::string dev = slurp(FLOPWATT_SOURCE_DIR "/npu/sim/devices/phoenix.json");
  ASSERT_FALSE(dev.empty());
  std::string bad = dev;
  const auto at = bad.find("\"bf16_mmul_shape\"");
  ASSERT_NE(at, std::string::npos);
  const auto lb = bad.find('[', at), rb = bad.find(']', at);
  bad.replace(lb, rb - lb + 1, "[4294967297, 128, 1]");
  write(s / "devs" / "phoenix.json", bad);
  write(s / "devs2" / "phoenix.json", R"({"schema": [1]})");
  for (const std::string& env : {"FLOPWATT_NPU_ARTIFACTS=" + (s / "art").string(),
                                "FLOPWATT_NPU_ARTIFACTS=" + (s / "art2").string(),
                                "FLOPWATT_NPU_DEVICES=" + (s / "devs").string(),
                                "FLOPWATT_NPU_DEVICES=" + (s / "devs2").string()}) {
    for (const std::string& cmd : {std::string("backends"), std::string("npu info"), std::string(G8) + "--out " + (s / "run").string()}) {
      const CommandResult r = run_command_line(env + " timeout 60 " FLOPWATT_BINARY " " + cmd);
      EXPECT_EQ(r.code, 0) << env << " " << cmd << "\n" << r.err;
      fs::remove_all(s / "run");
    }
  }
  fs::remove_all(s);
}

}  // namespace

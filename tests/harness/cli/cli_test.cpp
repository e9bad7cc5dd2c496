// End-to-end tests of the flopwatt binary: exit codes, one-line errors,
// schema-valid reports, and an interrupted run that leaves valid files.
#include <gtest/gtest.h>
#include <omp.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <thread>

#include "tests/harness/cli_support.h"

namespace {

namespace fs = std::filesystem;

using Result = flopwatt::testing::CommandResult;
using flopwatt::testing::slurp;
fs::path temp_dir(const std::string& tag) { return flopwatt::testing::temp_dir("cli", tag); }
Result run(const std::string& args) {
  return flopwatt::testing::run_command_line(std::string(FLOPWATT_BINARY) + " " + args);
}

// Validates against the published schema with Debian's python3-jsonschema.
bool schema_valid(const fs::path& run_json) {
  const std::string cmd = "/usr/bin/python3 -c \"import json,sys,jsonschema; "
                          "jsonschema.validate(json.load(open(sys.argv[1])), json.load(open(sys.argv[2])))\" " +
                          run_json.string() + " " + FLOPWATT_SOURCE_DIR "/results/schema/run.schema.json";
  return std::system(cmd.c_str()) == 0;
}

// Small GEMMs in place of GPT-2 124M's: those take minutes under the sanitizers,
// verified against the float64 oracle on every shape.
const std::string kFastShapes = "64,48,32;32,24,16";
const std::string kFastDefault =
    "run default --min-time 0 --min-reps 1 --idle 0 --power none --gpt2-model tiny --shapes '" + kFastShapes + "' ";

int count_lines(const std::string& s) { return int(std::count(s.begin(), s.end(), '\n')); }

// A bad flag gives exit 2 and exactly one stderr line that names the flag.
void expect_usage_error(const std::string& args, const std::string& names) {
  Result r = run(args);
  EXPECT_EQ(r.code, 2) << args << "\n" << r.err;
  EXPECT_EQ(count_lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find(names), std::string::npos) << r.err;
}

TEST(Cli, BadInputExitsTwoWithOneLine) {
  const std::string base = "run gemm --idle 0 --no-peak --min-time 0 --min-reps 1 ";
  expect_usage_error(base + "--backend cpu:nope --shapes 2,2,2", "--backend");
  expect_usage_error(base + "--shapes 1,2", "--shapes");
  expect_usage_error(base + "--shapes 1,-2,3", "--shapes");
  expect_usage_error(base + "--shapes 4,4,4,XY", "--shapes");
  expect_usage_error(base + "--shapes 2,2,2 --dtype fp8", "--dtype");
  expect_usage_error("run gemm --idle 0 --min-time -1 --shapes 2,2,2", "--min-time");
  expect_usage_error(base + "--shapes 2,2,2 --out /proc/flopwatt/nope", "--out");
  expect_usage_error(base + "--shapes 2,2,2 --power no-such-source", "--power");
  expect_usage_error("run gemm --no-such-flag", "--no-such-flag");
  expect_usage_error("frobnicate", "frobnicate");
  // run default checks its GPT-2 flags before the GEMMs, so these are quick.
  expect_usage_error("run default --idle 0 --gpt2-steps -1", "--gpt2-steps");
  expect_usage_error("run default --idle 0 --gpt2-model d13", "--gpt2-model");
}

// A backend asked for by name that cannot run is an error, not a run without
// its rows; `available` keeps skipping what cannot run.
TEST(Cli, NamedBackendThatCannotRunExitsTwo) {
  const fs::path root = temp_dir("no-npu");  // no /dev/accel, no NPU PCI function
  const std::string env = "FLOPWATT_SYSFS_ROOT=" + root.string() + " ";
  const std::string args = "run gemm --idle 0 --no-peak --min-time 0 --min-reps 1 --power none --shapes 8,8,8 ";
  Result r = flopwatt::testing::run_command_line(env + FLOPWATT_BINARY " " + args + "--backend npu:xdna --out " +
                                                 (root / "named").string());
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_EQ(count_lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("--backend npu:xdna: unavailable: no amdxdna device"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("fix:"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(root / "named" / "run.json"));

  r = flopwatt::testing::run_command_line(env + FLOPWATT_BINARY " " + args +
                                          "--backend cpu:reference,npu:xdna --out " + (root / "mixed").string());
  EXPECT_EQ(r.code, 2) << r.err;

  r = flopwatt::testing::run_command_line(env + FLOPWATT_BINARY " " + args + "--backend available --out " +
                                          (root / "available").string());
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(fs::exists(root / "available" / "run.json"));
  fs::remove_all(root);
}

// run peak adds the memory ceilings: every stream at every working-set level
// the cache topology gives (here a fixture tree's: 32 KiB L1d, 1 MiB L2,
// 16 MiB L3, so DRAM is 64 MiB), verified, with bytes and every repetition.
TEST(Cli, PeakReportsVerifiedBandwidthCeilings) {
  const fs::path root = temp_dir("peak-root");
  const auto cache = [&](int idx, const char* level, const char* type, const char* size, const char* shared) {
    const fs::path d = root / "sys/devices/system/cpu/cpu0/cache" / ("index" + std::to_string(idx));
    fs::create_directories(d);
    std::ofstream(d / "level") << level << "\n";
    std::ofstream(d / "type") << type << "\n";
    std::ofstream(d / "size") << size << "\n";
    std::ofstream(d / "shared_cpu_list") << shared << "\n";
  };
  cache(0, "1", "Data", "32K", "0");
  cache(1, "2", "Unified", "1024K", "0");
  cache(2, "3", "Unified", "16384K", "0-1");
  const fs::path out = temp_dir("peak-out");
  const fs::path peaks = temp_dir("peak-store");
  ::setenv("FLOPWATT_PEAK_DIR", peaks.c_str(), 1);
  Result r = run("run peak --seconds 0.02 --idle 0 --power none --sysfs-root " + root.string() + " --out " + out.string());
  ::unsetenv("FLOPWATT_PEAK_DIR");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(schema_valid(out / "run.json"));
  const auto j = nlohmann::json::parse(slurp(out / "run.json"));
  std::map<std::string, int> seen;
  for (const auto& m : j["measurements"]) {
    if (m["workload"] != "bandwidth") continue;
    SCOPED_TRACE(m["op"].get<std::string>());
    EXPECT_EQ(m["verified"], true);
    EXPECT_GT(m["bytes"].get<double>(), 0);
    EXPECT_GE(m["reps"].get<int>(), 5);
    EXPECT_EQ(m["rep_times_s"].size(), m["reps"].get<std::size_t>());
    ++seen[m["op"].get<std::string>()];
  }
  for (const char* level : {"l1", "l2", "llc", "dram"})
    for (const char* stream : {"read", "write", "copy", "triad", "update", "r1u1", "r2u1", "r1u3", "r1u3h1"})
      EXPECT_GE(seen[std::string(level) + "_" + stream], 1) << level << "_" << stream;
  EXPECT_NE(r.out.find("4x the last-level cache"), std::string::npos) << r.out;
  // The exp rate at every thread count, stored with the rest.
  std::set<int> exp_threads;
  for (const auto& m : j["measurements"])
    if (m["workload"] == "exp") {
      EXPECT_GT(m["flop_per_s"].get<double>(), 0) << m.dump();
      exp_threads.insert(m["threads"].get<int>());
    }
  EXPECT_EQ(exp_threads.size(), std::size_t(omp_get_max_threads())) << "one exp row per thread count";
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(peaks)) files.push_back(e.path());
  ASSERT_EQ(files.size(), 1u) << "run peak stores one file for this machine";
  const auto stored = nlohmann::json::parse(slurp(files[0]));
  EXPECT_GE(stored["format"].get<int>(), 3) << "format 3 added the exp rate";
  EXPECT_EQ(stored["by_threads"].size(), std::size_t(omp_get_max_threads()));
  for (const auto& c : stored["by_threads"]) EXPECT_GT(c["exp_per_s"].get<double>(), 0) << c.dump();
  // The cores' round trip the ceilings were measured under: the run's start
  // probe (when it finished) first, then one taken after the measurement.
  for (const auto& c : stored["by_threads"]) {
    ASSERT_TRUE(c["core_round_trip_ns"].is_array()) << c.dump();
    if (j["context"]["core_round_trip_ns"].is_number()) {
      ASSERT_GE(c["core_round_trip_ns"].size(), 1u) << c.dump();
      EXPECT_EQ(c["core_round_trip_ns"][0], j["context"]["core_round_trip_ns"]);
    }
  }
  fs::remove_all(peaks);
  fs::remove_all(root);
  fs::remove_all(out);
}

// The headline source follows power::choose_headline: on mains a charging,
// full or idle battery (tests/fixtures/power/*-on-mains, not-charging) never
// gives the headline FLOP/J; the choice, runner-up and rule are in the context.
TEST(Cli, HeadlineIsNeverABatteryThatIsNotDischarging) {
  for (const char* fixture : {"charging-on-mains", "full-on-mains", "not-charging"}) {
    SCOPED_TRACE(fixture);
    const fs::path out = temp_dir(std::string("headline-") + fixture);
    Result r = run("run gemm --backend cpu:reference --shapes 8,8,8 --min-time 0 --min-reps 1 --idle 0 --no-peak "
                   "--sysfs-root " FLOPWATT_TEST_FIXTURES "/power/" + std::string(fixture) + " --out " + out.string());
    ASSERT_EQ(r.code, 0) << r.err;
    const auto j = nlohmann::json::parse(slurp(out / "run.json"));
    // Each row's own judgement passes the battery over and says why; the run's headline is theirs.
    ASSERT_FALSE(j["measurements"].empty());
    for (const auto& m : j["measurements"]) {
      EXPECT_NE(m["headline_source"], "battery:BAT0") << m.dump();
      if (m["headline_source"].is_string()) {
        EXPECT_EQ(j["headline_source"], m["headline_source"]);
      }
      EXPECT_NE(m["headline_why"].get<std::string>().find("battery:BAT0"), std::string::npos) << m["headline_why"];
    }
    EXPECT_FALSE(j["context"]["headline"]["rule"].get<std::string>().empty());
    EXPECT_TRUE(schema_valid(out / "run.json"));
    fs::remove_all(out);
  }
}

TEST(Cli, BackendsListsEveryBackendWithStatus) {
  Result r = run("backends");
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("cpu:reference"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("available"), std::string::npos);
}

TEST(Cli, GemmRunWritesSchemaValidReport) {
  const fs::path d = temp_dir("report");
  Result r = run("run gemm --backend cpu:reference --shapes '7,5,3;65,1,257,TN' --min-time 0 --min-reps 3 --idle 0 "
                 "--no-peak --out " + d.string());
  ASSERT_EQ(r.code, 0) << r.err << r.out;
  const auto j = nlohmann::json::parse(slurp(d / "run.json"));
  EXPECT_TRUE(j["complete"].get<bool>());
  ASSERT_EQ(j["measurements"].size(), 2u);
  EXPECT_EQ(j["measurements"][1]["layout"], "TN");
  EXPECT_EQ(j["measurements"][0]["shape"]["M"], 7);
  EXPECT_EQ(j["measurements"][0]["flop"].get<double>(), 2.0 * 7 * 5 * 3);
  EXPECT_EQ(count_lines(slurp(d / "measurements.csv")), 3);
  EXPECT_TRUE(fs::exists(d / "samples.csv"));
  EXPECT_TRUE(schema_valid(d / "run.json")) << "run.json does not match results/schema/run.schema.json";
  fs::remove_all(d);
}

TEST(Cli, InterruptedRunLeavesValidPartialReport) {
  const fs::path d = temp_dir("sigint");
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    const std::string out = d.string();
    freopen("/dev/null", "w", stdout);
    execl(FLOPWATT_BINARY, FLOPWATT_BINARY, "run", "gemm", "--backend", "cpu:reference", "--shapes",
          "3,3,3;160,160,160;160,160,160;160,160,160;160,160,160", "--min-time", "1", "--min-reps", "1", "--idle", "0", "--no-peak", "--out",
          out.c_str(), (char*)nullptr);
    _exit(127);
  }
  // Wait until the first measurement is on disk, then interrupt the second.
  bool started = false;
  for (int i = 0; i < 600 && !started; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    try {
      started = nlohmann::json::parse(slurp(d / "run.json"))["measurements"].size() >= 1;
    } catch (...) {
    }
  }
  ASSERT_TRUE(started);
  kill(pid, SIGINT);
  int st = 0;
  waitpid(pid, &st, 0);
  ASSERT_TRUE(WIFEXITED(st));
  EXPECT_EQ(WEXITSTATUS(st), 130);
  const auto j = nlohmann::json::parse(slurp(d / "run.json"));
  EXPECT_FALSE(j["complete"].get<bool>());
  EXPECT_GE(j["measurements"].size(), 1u);
  EXPECT_LT(j["measurements"].size(), 5u);
  fs::remove_all(d);
}

// CPU time (utime + stime, clock ticks) of a process, -1 once it is gone.
long cpu_ticks(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(f, line)) return -1;
  std::istringstream rest(line.substr(line.rfind(')') + 2));
  std::string field;
  long utime = 0, stime = 0;
  for (int i = 3; i <= 15 && rest >> field; ++i) {
    if (i == 14) utime = std::stol(field);
    if (i == 15) stime = std::stol(field);
  }
  return utime + stime;
}

// Whether the process has a handler for SIGINT (bit 1 of SigCgt).
bool catches_sigint(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(f, line);)
    if (line.rfind("SigCgt:", 0) == 0) return (std::stoull(line.substr(7), nullptr, 16) >> (SIGINT - 1)) & 1;
  return false;
}

// A Ctrl-C while the peak is measured, before the run's directory exists,
// still ends in a partial report and exit 130 (the handler used to be
// installed only when the run opened, so the signal killed the process).
TEST(Cli, InterruptDuringPeakStillLeavesAReport) {
  const fs::path d = temp_dir("sigint_peak");
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    const std::string out = (d / "run").string();
    freopen("/dev/null", "w", stdout);
    // An empty peak directory: this machine's stored ceilings (another test may
    // have left them) would let the run skip the peak and finish before the signal.
    setenv("FLOPWATT_PEAK_DIR", (d / "peaks").c_str(), 1);
    execl(FLOPWATT_BINARY, FLOPWATT_BINARY, "run", "gemm", "--backend", "cpu:reference", "--shapes", "8,8,8",
          "--min-time", "0", "--min-reps", "1", "--idle", "0", "--power", "none", "--out", out.c_str(), (char*)nullptr);
    _exit(127);
  }
  // Interrupt once the process catches SIGINT and has then burnt 100 ms more
  // of CPU, inside the peak. Counting CPU from exec instead sent the signal
  // before the handler once in CI: a cold start (page faults of freshly linked
  // libraries) had taken 120 ms of CPU before main. Should the peak finish
  // sooner, the run has opened and the same promise holds: exit 130 and an
  // incomplete run.json.
  const long hz = sysconf(_SC_CLK_TCK);
  long handler_ticks = -1;
  for (int i = 0; i < 5000 && handler_ticks < 0 && !fs::exists(d / "run" / "run.json"); ++i) {
    if (catches_sigint(pid)) handler_ticks = cpu_ticks(pid);
    else std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_GE(handler_ticks, 0) << "flopwatt never caught SIGINT before its run opened";
  // The peak takes seconds of CPU; a handler installed only after it (as once,
  // when the run opened) would be seen this late.
  EXPECT_LT(handler_ticks, hz) << "SIGINT was caught only after a second of CPU time";
  for (int i = 0; i < 5000 && !fs::exists(d / "run" / "run.json"); ++i) {
    const long t = cpu_ticks(pid);
    if (t < 0 || (t - handler_ticks) * 1000 >= 100 * hz) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  const bool before_run = !fs::exists(d / "run" / "run.json");
  kill(pid, SIGINT);
  int st = 0;
  waitpid(pid, &st, 0);
  ASSERT_TRUE(WIFEXITED(st)) << "killed by signal " << (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
  EXPECT_EQ(WEXITSTATUS(st), 130);
  const auto j = nlohmann::json::parse(slurp(d / "run" / "run.json"));
  EXPECT_FALSE(j["complete"].get<bool>());
  if (before_run) {
    EXPECT_EQ(j["measurements"].size(), 0u);
  }
  fs::remove_all(d);
}

TEST(Cli, DefaultRunHasGemmAndGpt2RowsInOneReport) {
  const fs::path d = temp_dir("default");
  Result r = run(kFastDefault + "--gpt2-steps 2 --out " + d.string());
  ASSERT_EQ(r.code, 0) << r.err << r.out;
  const auto j = nlohmann::json::parse(slurp(d / "run.json"));
  EXPECT_TRUE(j["complete"].get<bool>());
  EXPECT_TRUE(schema_valid(d / "run.json")) << "run.json does not match results/schema/run.schema.json";
  EXPECT_EQ(j["context"]["command"], "run default");
  EXPECT_EQ(j["context"]["shapes"], kFastShapes);
  EXPECT_EQ(j["context"]["gpt2"]["model"], "tiny");
  EXPECT_EQ(j["context"]["gpt2"]["steps"], 2);
  EXPECT_EQ(j["context"]["gpt2"]["warmup_steps"], 1);
  EXPECT_EQ(j["context"]["gpt2"]["batch"], 4);
  EXPECT_EQ(j["context"]["gpt2"]["seq"], 64);
  EXPECT_EQ(j["context"]["gpt2"]["dtype"], "fp32");
  const std::string gpt2_backend = j["context"]["gpt2"]["gemm_backend"];
  std::size_t gemm = 0, steps = 0, qkv_passes = 0;
  bool gemm_before_gpt2 = true, seen_gpt2 = false;
  for (const auto& m : j["measurements"]) {
    if (m["workload"] == "gemm") {
      ++gemm;
      gemm_before_gpt2 = gemm_before_gpt2 && !seen_gpt2;
      EXPECT_NE(m["backend"], "cpu:reference") << "the oracle is not part of the suite";
      continue;
    }
    ASSERT_EQ(m["workload"], "gpt2") << m.dump();
    seen_gpt2 = true;
    EXPECT_EQ(m["backend"], gpt2_backend);
    if (m["op"] == "step" && !m["step"].is_null()) ++steps;
    if (m["op"] == "qkv") ++qkv_passes;
  }
  EXPECT_GT(gemm, 0u);
  EXPECT_TRUE(gemm_before_gpt2) << "the GPT-2 run comes after the GEMM suite";
  EXPECT_EQ(steps, 2u);
  EXPECT_EQ(qkv_passes, 2u) << "fwd and bwd";
  EXPECT_EQ(count_lines(slurp(d / "measurements.csv")), int(j["measurements"].size()) + 1);
  // Stdout: the GPT-2 per-op table, then one summary whose rows keep qkv's passes apart.
  EXPECT_NE(r.out.find("Per-op, median over 1 steps"), std::string::npos) << r.out;
  const auto summary = r.out.find("Summary: GFLOP/s");
  ASSERT_NE(summary, std::string::npos) << r.out;
  std::istringstream lines(r.out.substr(summary));
  int qkv_rows = 0;
  for (std::string l; std::getline(lines, l);)
    qkv_rows += l.rfind("gpt2", 0) == 0 && l.find(" qkv ") != std::string::npos &&
                (l.find(" fwd ") != std::string::npos || l.find(" bwd ") != std::string::npos);
  EXPECT_EQ(qkv_rows, 2) << r.out;
  EXPECT_NE(r.out.find("(complete)", summary), std::string::npos) << r.out;
  fs::remove_all(d);
}

TEST(Cli, DefaultRunInterruptedDuringGpt2LeavesValidPartialReport) {
  const fs::path d = temp_dir("default_sigint");
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    const std::string out = d.string();
    freopen("/dev/null", "w", stdout);
    // Far more steps than the test waits for: the run only ends by the signal.
    execl(FLOPWATT_BINARY, FLOPWATT_BINARY, "run", "default", "--min-time", "0", "--min-reps", "1", "--idle", "0",
          "--power", "none", "--gpt2-model", "tiny", "--gpt2-steps", "100000000", "--shapes", "64,48,32", "--out", out.c_str(),
          (char*)nullptr);
    _exit(127);
  }
  struct Reap {  // a failed assertion must not leave the child training
    pid_t pid;
    bool done = false;
    ~Reap() {
      if (done) return;
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
    }
  } reap{pid};
  // The GEMM suite comes first; wait for GPT-2 steps on disk, then interrupt.
  bool training = false;
  for (int i = 0; i < 6000 && !training; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    try {
      const auto ms = nlohmann::json::parse(slurp(d / "run.json"))["measurements"];
      training = !ms.empty() && ms.back()["workload"] == "gpt2" && ms.back()["step"].get<int>() >= 2;
    } catch (...) {
    }
  }
  ASSERT_TRUE(training);
  kill(pid, SIGINT);
  int st = 0;
  waitpid(pid, &st, 0);
  reap.done = true;
  ASSERT_TRUE(WIFEXITED(st));
  EXPECT_EQ(WEXITSTATUS(st), 130);
  const auto j = nlohmann::json::parse(slurp(d / "run.json"));
  EXPECT_FALSE(j["complete"].get<bool>());
  EXPECT_TRUE(schema_valid(d / "run.json")) << "run.json does not match results/schema/run.schema.json";
  std::size_t gemm = 0, steps = 0, ops = 0;
  for (const auto& m : j["measurements"]) {
    if (m["workload"] == "gemm") ++gemm;
    else if (m["op"] == "step" && !m["step"].is_null()) ++steps;
    else ++ops;
  }
  EXPECT_GT(gemm, 0u);
  EXPECT_GE(steps, 3u);
  // The steps after warm-up that did finish still give their per-op figures.
  EXPECT_GT(ops, 0u);
  fs::remove_all(d);
}

}  // namespace

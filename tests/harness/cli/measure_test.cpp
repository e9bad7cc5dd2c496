// `flopwatt measure -- CMD`: exit status, stdin and stdout of the child as a
// shell would give them (POSIX sh: 128 + N for a child killed by signal N, 127
// for a command not found, 126 for one that cannot be executed), signals sent
// to flopwatt forwarded, and the energy of the child's window from a meter
// whose power is known (an external log at 20 W).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <map>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "tests/harness/cli_support.h"

namespace fs = std::filesystem;
using flopwatt::testing::CommandResult;
using flopwatt::testing::run_command_line;
using nlohmann::json;

namespace {

class MeasureTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = flopwatt::testing::temp_dir("measure", "t"); }
  void TearDown() override { fs::remove_all(dir_); }
  std::string measure(const std::string& opts, const std::string& out) const {
    return std::string(FLOPWATT_BINARY) + " measure --no-store --out " + (dir_ / out).string() + " " + opts;
  }
  // An external meter at a constant 20 W over the next `seconds`, on the realtime clock.
  fs::path meter_log(double seconds) const {
    const fs::path p = dir_ / "meter.log";
    std::ofstream f(p);
    f << "# clock: realtime\n";
    const double now = double(std::time(nullptr));
    for (double t = now - 5; t < now + seconds + 10; t += 0.1) f << std::fixed << t << ",20.0\n";
    return p;
  }
  json run_json(const std::string& out) const {
    std::ifstream f(dir_ / out / "run.json");
    return json::parse(f);
  }
  fs::path dir_;
};

TEST_F(MeasureTest, TheChildsExitStatusPassesThrough) {
  EXPECT_EQ(run_command_line(measure("--power none", "a") + " -- true").code, 0);
  EXPECT_EQ(run_command_line(measure("--power none", "b") + " -- sh -c 'exit 3'").code, 3);
  // Killed by SIGTERM: 128 + 15, as a shell reports it.
  EXPECT_EQ(run_command_line(measure("--power none", "c") + " -- sh -c 'kill -TERM $$'").code, 143);
  // The run is kept either way, as what happened: incomplete, with the child's fate.
  EXPECT_EQ(run_json("b")["measurements"][0]["reps"], 1);
  EXPECT_TRUE(run_json("a")["complete"].get<bool>());
  EXPECT_EQ(run_json("a")["context"]["measured_exit"]["status"], 0);
  const json b = run_json("b");
  EXPECT_FALSE(b["complete"].get<bool>());
  EXPECT_EQ(b["context"]["measured_exit"]["status"], 3);
  EXPECT_TRUE(b["context"]["measured_exit"]["signal"].is_null());
  EXPECT_NE(b["context"]["incomplete_reason"].get<std::string>().find("exited with status 3"), std::string::npos);
  const json c = run_json("c");
  EXPECT_FALSE(c["complete"].get<bool>());
  EXPECT_EQ(c["context"]["measured_exit"]["signal"], 15);
  EXPECT_EQ(c["context"]["measured_exit"]["signal_name"], "SIGTERM");
  EXPECT_NE(c["context"]["incomplete_reason"].get<std::string>().find("killed by signal 15"), std::string::npos);
  // A program that cannot start leaves a run without a measurement, incomplete and saying why.
  EXPECT_EQ(run_command_line(measure("--power none", "d") + " -- /nonexistent/prog").code, 127);
  const json d = run_json("d");
  EXPECT_FALSE(d["complete"].get<bool>());
  EXPECT_TRUE(d["measurements"].empty());
  EXPECT_FALSE(d["context"]["measured_exit"]["started"].get<bool>());
}

// The store records what happened: `store ls` shows a failed program's run as incomplete.
TEST_F(MeasureTest, TheStoreKeepsAFailedProgramsRunAsIncomplete) {
  const std::string store = (dir_ / "s.db").string();
  const std::string base = std::string(FLOPWATT_BINARY) + " measure --power none --store " + store + " --out ";
  ASSERT_EQ(run_command_line(base + (dir_ / "ok").string() + " -- true").code, 0);
  ASSERT_EQ(run_command_line(base + (dir_ / "bad").string() + " -- sh -c 'exit 3'").code, 3);
  const CommandResult ls = run_command_line(std::string(FLOPWATT_BINARY) + " store ls --format json --store " + store);
  ASSERT_EQ(ls.code, 0) << ls.err;
  const json runs = json::parse(ls.out);
  ASSERT_EQ(runs.size(), 2u) << ls.out;
  std::map<std::string, bool> complete;
  for (const auto& r : runs) complete[r["run_id"].get<std::string>()] = r["complete"].get<bool>();
  EXPECT_TRUE(complete.at(run_json("ok")["run_id"].get<std::string>()));
  EXPECT_FALSE(complete.at(run_json("bad")["run_id"].get<std::string>()));
}

// `history` keeps each command line its own series: `sleep 0.05` and `sleep 0.1` are two programs'
// runs, never one series with a "change" between them; an op the store does not hold lists those it does.
TEST_F(MeasureTest, HistoryKeysAProgramsSeriesByItsWholeCommandLine) {
  const std::string store = (dir_ / "h.db").string();
  const char* runs[][2] = {{"h0", "0.05"}, {"h1", "0.1"}, {"h2", "0.05"}};
  for (const auto& [name, secs] : runs) {
    const std::string out = (dir_ / name).string();
    ASSERT_EQ(run_command_line(std::string(FLOPWATT_BINARY) + " measure --power none --store " + store + " --out " +
                               out + " -- sleep " + secs).code, 0);
  }
  const std::string hist = std::string(FLOPWATT_BINARY) + " history median_s --store " + store;
  const CommandResult h = run_command_line(hist + " --format json");
  ASSERT_EQ(h.code, 0) << h.err;
  std::map<std::string, int> per_series;
  for (const auto& p : json::parse(h.out)) ++per_series[p["configuration"].get<std::string>()];
  EXPECT_EQ(per_series, (std::map<std::string, int>{{"sleep 0.05", 2}, {"sleep 0.1", 1}})) << h.out;
  const CommandResult bad = run_command_line(hist + " --op nosuchop");
  EXPECT_EQ(bad.code, 2) << bad.out;
  EXPECT_NE(bad.err.find("sleep 0.05"), std::string::npos) << bad.err;
}

// Without a power source and without --flop, a program's time is still what report shows;
// with --flop, FLOP/s is printed whether or not any source is sampled.
TEST_F(MeasureTest, TimeWithoutFlopAndFlopPerSecondWithoutPowerAreShown) {
  CommandResult r = run_command_line(measure("--power none --flop 2e9", "f") + " -- sleep 0.1");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("GFLOP/s"), std::string::npos) << r.err;
  r = run_command_line(measure("--power none", "g") + " -- sleep 0.1");
  ASSERT_EQ(r.code, 0) << r.err;
  const CommandResult rep = run_command_line(std::string(FLOPWATT_BINARY) + " report " + (dir_ / "g").string());
  ASSERT_EQ(rep.code, 0) << rep.err;
  EXPECT_EQ(rep.out.find("No comparable measurements"), std::string::npos) << rep.out;
  EXPECT_NE(rep.out.find("| sleep 0.1 |"), std::string::npos) << rep.out;
  // The JSON and CSV reports carry it too: a program and its time, no FLOP/s.
  const std::string report = std::string(FLOPWATT_BINARY) + " report " + (dir_ / "g").string();
  const CommandResult js = run_command_line(report + " --format json");
  ASSERT_EQ(js.code, 0) << js.err;
  const json programs = json::parse(js.out).value("programs", json::array());
  ASSERT_EQ(programs.size(), 1u) << js.out;
  EXPECT_EQ(programs[0]["program"], "sleep 0.1");
  EXPECT_NEAR(programs[0]["time"]["median_s"].get<double>(), 0.1, 0.09);
  EXPECT_TRUE(programs[0]["flop_per_s"].is_null());
  const CommandResult csv = run_command_line(report + " --format csv");
  ASSERT_EQ(csv.code, 0) << csv.err;
  EXPECT_NE(csv.out.find("\ng,measure,sleep 0.1,"), std::string::npos) << csv.out;
}

TEST_F(MeasureTest, ACommandThatCannotStartIs127Or126WithAMessage) {
  CommandResult r = run_command_line(measure("--power none", "a") + " -- /nonexistent/program");
  EXPECT_EQ(r.code, 127);
  EXPECT_NE(r.err.find("cannot run '/nonexistent/program'"), std::string::npos) << r.err;
  const fs::path plain = dir_ / "not-executable";
  std::ofstream(plain) << "data\n";
  r = run_command_line(measure("--power none", "b") + " -- " + plain.string());
  EXPECT_EQ(r.code, 126) << r.err;
  r = run_command_line(std::string(FLOPWATT_BINARY) + " measure --power none --no-store");
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("no command to run"), std::string::npos) << r.err;
}

TEST_F(MeasureTest, StdinAndStdoutAreTheChilds) {
  const CommandResult r =
      // Braced: run_command_line's own stdin (/dev/null) goes to the group, the pipe to flopwatt.
      run_command_line("{ printf 'abc\\n' | " + measure("--power none", "a") + " -- sh -c 'cat; echo done'; }");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "abc\ndone\n");  // flopwatt's own lines go to stderr
  EXPECT_NE(r.err.find("flopwatt measure: sh"), std::string::npos) << r.err;
}

// kill -INT to flopwatt reaches the child, which decides how it ends.
TEST_F(MeasureTest, SigintSentToFlopwattIsForwardedToTheChild) {
  const std::string out = (dir_ / "a").string();
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::execl(FLOPWATT_BINARY, FLOPWATT_BINARY, "measure", "--power", "none", "--no-store", "--out", out.c_str(), "--",
            "sh", "-c", "trap 'exit 42' INT; i=0; while [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done; exit 7",
            static_cast<char*>(nullptr));
    ::_exit(99);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(800));
  ::kill(pid, SIGINT);
  int st = 0;
  ASSERT_EQ(::waitpid(pid, &st, 0), pid);
  ASSERT_TRUE(WIFEXITED(st));
  EXPECT_EQ(WEXITSTATUS(st), 42);
}

// A 20 ms and a 20 s program against a meter at a known 20 W.
TEST_F(MeasureTest, EnergyOfAShortAndALongProgramFromAKnownMeter) {
  const fs::path log = meter_log(25);
  for (const auto& [out, secs] : {std::pair<std::string, std::string>{"short", "0.02"}, {"long", "20"}}) {
    const CommandResult r =
        run_command_line(measure("--power-log " + log.string() + " --flop 1e9", out) + " -- sleep " + secs);
    ASSERT_EQ(r.code, 0) << r.err;
    const json m = run_json(out)["measurements"][0];
    const double t = m["time"]["median_s"].get<double>();
    EXPECT_GE(t, std::stod(secs)) << out;
    EXPECT_EQ(m["headline_source"], "external:meter") << m.dump();
    const json& e = m["energy"]["external:meter"];
    EXPECT_NEAR(e["avg_power_w"].get<double>(), 20.0, 0.2) << out << " " << e.dump();
    // The window is the child's run: 20 W over its time.
    EXPECT_NEAR(e["j"].get<double>(), 20.0 * t, 0.05 * 20.0 * t) << out << " " << e.dump();
    EXPECT_NEAR(e["flop_per_j"].get<double>(), 1e9 / e["j"].get<double>(), 1e-3) << out;
    EXPECT_NE(r.err.find("headline: external:meter"), std::string::npos) << r.err;
  }
}

TEST_F(MeasureTest, RepeatGivesTheSpreadAndStopsAtAFailure) {
  CommandResult r = run_command_line(measure("--power none --repeat 3", "a") + " -- true");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(run_json("a")["measurements"][0]["reps"], 3);
  EXPECT_NE(r.err.find("(3 runs)"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("min "), std::string::npos) << r.err;
  r = run_command_line(measure("--power none --repeat 3", "b") + " -- false");
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(run_json("b")["measurements"][0]["reps"], 1);
  EXPECT_FALSE(run_json("b")["complete"].get<bool>());
  // The second of three runs fails: the figures are over the first alone, never a median over
  // a failed run, and the run says which repetition failed.
  const fs::path flag = dir_ / "ran-once";
  r = run_command_line(measure("--power none --repeat 3", "c") + " -- sh -c 'test -e " + flag.string() +
                       " && exit 4; touch " + flag.string() + "; sleep 0.2'");
  EXPECT_EQ(r.code, 4) << r.err;
  const json c = run_json("c");
  EXPECT_FALSE(c["complete"].get<bool>());
  ASSERT_EQ(c["measurements"].size(), 1u);
  EXPECT_EQ(c["measurements"][0]["reps"], 1);
  EXPECT_GE(c["measurements"][0]["time"]["median_s"].get<double>(), 0.2);
  EXPECT_EQ(c["context"]["measured_exit"]["repetition"], 2);
  EXPECT_NE(r.err.find("repetition 2 of 3"), std::string::npos) << r.err;
}

}  // namespace

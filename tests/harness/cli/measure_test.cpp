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
  // The run is kept either way.
  EXPECT_EQ(run_json("b")["measurements"][0]["reps"], 1);
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
}

}  // namespace

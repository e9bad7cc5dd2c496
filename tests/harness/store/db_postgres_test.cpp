// Nothing waits forever on a PostgreSQL server: a loopback listener that
// accepts TCP and never answers (the kernel completes the handshake from the
// listen backlog) stands for a hung server or a firewall that swallows
// packets. connect ends at connect_timeout (10 s unless the string sets it), a
// stop request within 100 ms, and `run` with such a --store keeps its run in
// the local store and says how to push it, even when SIGTERM arrives meanwhile.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <thread>

#include <fmt/core.h>

#include "harness/store/db.h"
#include "tests/harness/cli_support.h"
#include "tests/harness/net_support.h"

namespace fs = std::filesystem;
using flopwatt::testing::run_command_line;
using flopwatt::testing::slurp;
using flopwatt::testing::temp_dir;
using Clock = std::chrono::steady_clock;

namespace {

const std::string kBin = FLOPWATT_BINARY;

using flopwatt::testing::SilentServer;

// `sh -c cmd` as a child, its pid (-1 when fork failed); with `exec` in cmd the
// pid is the command's own.
pid_t start_shell(const std::string& cmd) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  return pid;
}

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

}  // namespace

TEST(DbPostgres, ConnectToASilentServerEndsAtConnectTimeout) {
  SilentServer server;
  ASSERT_GT(server.port(), 0);
  const auto t0 = Clock::now();
  try {
    flopwatt::store::open_postgres(fmt::format("host=127.0.0.1 port={} dbname=x user=u connect_timeout=2", server.port()));
    FAIL() << "connected to a server that never answers";
  } catch (const flopwatt::store::DbError& e) {
    EXPECT_TRUE(e.lost()) << e.what();
    EXPECT_NE(std::string(e.what()).find("connect_timeout 2 s"), std::string::npos) << e.what();
  }
  const double took = seconds_since(t0);
  EXPECT_GE(took, 1.5);
  EXPECT_LT(took, 5.0);
}

TEST(DbPostgres, AStopRequestEndsTheWaitWithinAQuarterSecond) {
  SilentServer server;
  ASSERT_GT(server.port(), 0);
  std::atomic<bool> stop{false};
  std::thread stopper([&stop] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    stop.store(true);
  });
  const auto t0 = Clock::now();
  // connect_timeout=0: wait as long as it takes; only the stop request ends it.
  EXPECT_THROW(flopwatt::store::open_postgres(
                   fmt::format("postgresql://u@127.0.0.1:{}/x?connect_timeout=0", server.port()), &stop),
               flopwatt::store::DbError);
  stopper.join();
  EXPECT_LT(seconds_since(t0), 0.55);
}

TEST(DbPostgres, StoreCommandsEndWithAClearErrorAtTheDefaultTimeout) {
  SilentServer server;
  ASSERT_GT(server.port(), 0);
  const auto t0 = Clock::now();
  const auto r = run_command_line("PGCONNECT_TIMEOUT= " + kBin + fmt::format(" store ls --store 'postgresql://u@127.0.0.1:{}/x'", server.port()));
  const double took = seconds_since(t0);
  EXPECT_EQ(r.code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("no answer from the server"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("connect_timeout 10 s"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_GE(took, 9.5);
  EXPECT_LT(took, 14.0);
}

TEST(DbPostgres, RunWithASilentServerKeepsTheRunLocallyAndSigtermEndsTheWait) {
  SilentServer server;
  ASSERT_GT(server.port(), 0);
  const fs::path d = temp_dir("pg", "silent");
  const std::string url = fmt::format("postgresql://u@127.0.0.1:{}/x", server.port());
  const std::string cmd = "XDG_DATA_HOME=" + (d / "data").string() + " FLOPWATT_STORE= PGCONNECT_TIMEOUT= exec " + kBin +
                          " run gemm --backend cpu:reference --shapes 48,40,32 --min-time 0.005 --min-reps 3 --idle 0 "
                          "--no-peak --power none --out " + (d / "r").string() + " --store '" + url + "' >" +
                          (d / "out").string() + " 2>" + (d / "err").string();
  const pid_t pid = start_shell(cmd);
  ASSERT_GE(pid, 0);
  // The run measures, then connects to the store: the connection arrives once measuring is done.
  const bool connected = server.accept_one(std::chrono::seconds(60));
  EXPECT_TRUE(connected) << slurp(d / "err");
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  const auto t0 = Clock::now();
  ::kill(pid, SIGTERM);
  int status = 0;
  pid_t done = 0;
  while ((done = ::waitpid(pid, &status, WNOHANG)) == 0 && seconds_since(t0) < 5)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  if (done == 0) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, &status, 0);
  }
  EXPECT_LT(seconds_since(t0), 1.0) << "SIGTERM did not end the wait for the store";
  ASSERT_TRUE(WIFEXITED(status)) << "killed by signal " << WTERMSIG(status);
  const std::string err = slurp(d / "err");
  EXPECT_TRUE(fs::exists(d / "r/run.json"));
  EXPECT_NE(err.find("kept in " + (d / "data/flopwatt/results.sqlite3").string()), std::string::npos) << err;
  EXPECT_NE(err.find("flopwatt store push '" + url + "' --store"), std::string::npos) << err;
  const auto ls = run_command_line(kBin + " store ls --format csv --store " + (d / "data/flopwatt/results.sqlite3").string());
  EXPECT_EQ(ls.code, 0) << ls.err;
  EXPECT_EQ(std::count(ls.out.begin(), ls.out.end(), '\n'), 2) << ls.out;
  fs::remove_all(d);
}

// A password typed on the command line is in /proc/PID/cmdline, which every
// user reads (ps), for as long as the command runs: flopwatt overwrites it in
// its own argv before it connects. Each form libpq takes is checked while the
// command waits on a server that never answers.
TEST(DbPostgres, APasswordOnTheCommandLineIsNotShownToOtherUsers) {
  SilentServer server;
  ASSERT_GT(server.port(), 0);
  const std::string uri = fmt::format("postgresql://u:s3cretpw@127.0.0.1:{}/x", server.port());
  const std::string kv = fmt::format("host=127.0.0.1 port={} user=u password=s3cretpw dbname=x", server.port());
  for (const std::string& args : {"store ls --store '" + uri + "'", "store ls '--store=" + uri + "'",
                                  "store ls --store '" + kv + "'"}) {
    SCOPED_TRACE(args);
    const std::string cmd = "PGCONNECT_TIMEOUT=5 exec " + kBin + " " + args + " >/dev/null 2>&1";
    const pid_t pid = start_shell(cmd);
    ASSERT_GE(pid, 0);
    // Connected: the arguments were parsed, and hidden before that.
    const bool connected = server.accept_one(std::chrono::seconds(10));
    const std::string cmdline = slurp("/proc/" + std::to_string(pid) + "/cmdline");
    ::kill(pid, SIGTERM);
    ::waitpid(pid, nullptr, 0);
    ASSERT_TRUE(connected);
    EXPECT_NE(cmdline.find("store"), std::string::npos) << cmdline;
    EXPECT_EQ(cmdline.find("s3cretpw"), std::string::npos) << cmdline;
    EXPECT_NE(cmdline.find("127.0.0.1"), std::string::npos) << "the rest of the spec stays readable: " << cmdline;
  }
}

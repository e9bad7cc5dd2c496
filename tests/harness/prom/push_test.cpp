#include "harness/prom/push.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>

#include "tests/harness/cli_support.h"
#include "tests/harness/net_support.h"
#include "workloads/error.h"

using namespace flopwatt;
using namespace flopwatt::prom;

TEST(Push, UrlCheckedAndNamedInTheError) {
  ::unsetenv("FLOPWATT_PUSHGATEWAY");
  EXPECT_EQ(resolve_pushgateway(""), "");
  EXPECT_EQ(resolve_pushgateway("http://127.0.0.1:9091/"), "http://127.0.0.1:9091");
  for (const char* bad : {"127.0.0.1:9091", "ftp://x:1", "http://", "http:///x", "http://h:1/a b"}) {
    try {
      resolve_pushgateway(bad);
      ADD_FAILURE() << bad << " accepted";
    } catch (const InputError& e) {
      EXPECT_EQ(e.where(), std::string("--pushgateway ") + bad);
    }
  }
  ::setenv("FLOPWATT_PUSHGATEWAY", "gateway:9091", 1);
  try {
    resolve_pushgateway("");
    ADD_FAILURE() << "a bad FLOPWATT_PUSHGATEWAY accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), "FLOPWATT_PUSHGATEWAY gateway:9091");
  }
  ::setenv("FLOPWATT_PUSHGATEWAY", "http://gw:9091", 1);
  EXPECT_EQ(resolve_pushgateway(""), "http://gw:9091");
  EXPECT_EQ(resolve_pushgateway("http://flag:1"), "http://flag:1");  // the flag wins
  ::unsetenv("FLOPWATT_PUSHGATEWAY");
}

TEST(Push, GroupingKeyIsBase64SoAnyValueNamesOneGroup) {
  // The Pushgateway's README: "label_name@base64/<base64url of the value>".
  EXPECT_EQ(push_url("http://g:9091", "a/b", "20260101-x"),
            "http://g:9091/metrics/job/flopwatt/machine@base64/YS9i/run_id@base64/MjAyNjAxMDEteA==");
  EXPECT_EQ(push_url("http://g:9091", "", "r"), "http://g:9091/metrics/job/flopwatt/machine@base64/=/run_id@base64/cg==");
}

TEST(Push, AGatewayThatNeverAnswersCostsTheTimeoutAndAWarning) {
  // A listening socket nobody accepts on: the kernel completes the handshake,
  // the request is sent, and no answer ever comes.
  flopwatt::testing::SilentServer gateway;
  ASSERT_GT(gateway.port(), 0);
  flopwatt::Run run;
  run.run_id = "silent";
  PushOptions o{"http://127.0.0.1:" + std::to_string(gateway.port()), 1.0};
  char* text = nullptr;
  std::size_t size = 0;
  std::FILE* err = ::open_memstream(&text, &size);
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_FALSE(push_run(run, o, err));
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::fclose(err);
  const std::string warning(text, size);
  std::free(text);
  EXPECT_GE(took, 0.9);
  EXPECT_LT(took, 3.0) << "the push outlived its stated timeout";
  EXPECT_NE(warning.find("warning: run silent not pushed to --pushgateway http://127.0.0.1:"), std::string::npos) << warning;
  EXPECT_EQ(std::count(warning.begin(), warning.end(), '\n'), 1) << warning;
}

TEST(Push, MeasureWithAGatewayDownKeepsTheRunAndItsStatus) {
  // A port nobody listens on: connection refused at once.
  const int port = flopwatt::testing::free_loopback_port();
  ASSERT_GT(port, 0);
  const auto dir = flopwatt::testing::temp_dir("prom", "measure");
  const std::string store = (dir / "store.sqlite3").string();
  const auto r = flopwatt::testing::run_command_line(
      std::string(FLOPWATT_BINARY) + " measure --power none --store " + store + " --out " + (dir / "run").string() +
      " --pushgateway http://127.0.0.1:" + std::to_string(port) + " -- true");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("not pushed to --pushgateway"), std::string::npos) << r.err;
  EXPECT_TRUE(std::filesystem::exists(dir / "run/run.json"));
  const auto ls = flopwatt::testing::run_command_line(std::string(FLOPWATT_BINARY) + " store ls --format csv --store " + store);
  EXPECT_EQ(ls.code, 0) << ls.err;
  EXPECT_NE(ls.out.find("measure"), std::string::npos) << ls.out;

  const auto bad = flopwatt::testing::run_command_line(std::string(FLOPWATT_BINARY) +
                                                       " measure --power none --no-store --pushgateway gateway:9091 -- true");
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("--pushgateway gateway:9091"), std::string::npos) << bad.err;
  EXPECT_EQ(std::count(bad.err.begin(), bad.err.end(), '\n'), 1) << bad.err;
}

// The results store on a real PostgreSQL 15 server that this suite starts:
// initdb and pg_ctl on a Unix socket in a temporary directory, as an
// unprivileged user (the server refuses root), stopped afterwards. Without the
// server binaries the cases skip with the reason; under CI=true they fail.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <thread>

#include <fmt/core.h>

#include "harness/store/db.h"
#include "harness/store/store.h"
#include "tests/harness/cli_support.h"
#include "tests/harness/store/store_support.h"

namespace fs = std::filesystem;
using flopwatt::testing::run_command_line;
using flopwatt::testing::slurp;
using namespace flopwatt;

namespace {

const std::string kBin = FLOPWATT_BINARY;
// Debian's postgresql-15 (not on PATH); FLOPWATT_PG_BINDIR points elsewhere,
// e.g. at a missing directory to check that CI=true fails the skipped cases.
const fs::path kPgBin = [] {
  const char* d = std::getenv("FLOPWATT_PG_BINDIR");
  return fs::path(d && *d ? d : "/usr/lib/postgresql/15/bin");
}();

class PgServer : public ::testing::Environment {
 public:
  void SetUp() override {
    if (!fs::exists(kPgBin / "initdb") || !fs::exists(kPgBin / "pg_ctl")) {
      missing_ = "PostgreSQL 15 server binaries not found in " + kPgBin.string() +
                 " (install the Debian package postgresql-15, listed in scripts/packages.txt)";
      return;
    }
    dir_ = fs::temp_directory_path() / ("flopwatt_pg_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "sock");
    // The server will not run as root: run it as nobody, who must own its directories.
    if (::geteuid() == 0) {
      as_ = "runuser -u nobody -- ";
      if (run_command_line("chown -R nobody " + dir_.string()).code != 0) {
        error_ = "cannot chown " + dir_.string() + " to nobody";
        return;
      }
    }
    const auto init = run_command_line(as_ + (kPgBin / "initdb").string() + " -D " + (dir_ / "data").string() +
                                       " -A trust -U flopwatt -E UTF8 --no-sync");
    if (init.code != 0) {
      error_ = "initdb failed: " + init.err + init.out;
      return;
    }
    if (!start()) error_ = "pg_ctl start failed: " + slurp(dir_ / "log");
  }
  void TearDown() override {
    if (!dir_.empty()) {
      stop_immediate();
      fs::remove_all(dir_);
    }
  }
  bool start() {
    // No TCP at all; fsync off: a stopped server process loses nothing the kernel holds, and the suite stays fast.
    return run_command_line(as_ + (kPgBin / "pg_ctl").string() + " -D " + (dir_ / "data").string() + " -o \"-k " +
                            (dir_ / "sock").string() + " -c listen_addresses='' -c fsync=off\" -l " +
                            (dir_ / "log").string() + " -w start")
               .code == 0;
  }
  void stop_immediate() {
    run_command_line(as_ + (kPgBin / "pg_ctl").string() + " -D " + (dir_ / "data").string() + " -m immediate -w stop");
  }
  std::string conninfo(const std::string& db = "postgres") const {
    return "host=" + (dir_ / "sock").string() + " user=flopwatt dbname=" + db;
  }
  const std::string& missing() const { return missing_; }
  const std::string& error() const { return error_; }

 private:
  fs::path dir_;
  std::string as_, missing_, error_;
};

PgServer* const g_pg = static_cast<PgServer*>(::testing::AddGlobalTestEnvironment(new PgServer));

bool in_ci() {
  const char* ci = std::getenv("CI");
  return ci && std::string(ci) == "true";
}

#define REQUIRE_SERVER()                                                                  \
  do {                                                                                    \
    if (!g_pg->missing().empty()) {                                                       \
      if (in_ci()) FAIL() << g_pg->missing() << " (CI=true: a skipped server test fails)"; \
      GTEST_SKIP() << g_pg->missing();                                                    \
    }                                                                                     \
    ASSERT_TRUE(g_pg->error().empty()) << g_pg->error();                                  \
  } while (0)

long count(store::Db& db, const std::string& sql) { return std::atol(db.query(sql).at(0).at(0)->c_str()); }

// A database of its own for each case: cases share the server when the suite
// runs in one process.
std::string fresh_db(const std::string& name) {
  auto admin = store::open_postgres(g_pg->conninfo());
  admin->exec("DROP DATABASE IF EXISTS " + name);
  admin->exec("CREATE DATABASE " + name);
  return g_pg->conninfo(name);
}

}  // namespace

TEST(PgStore, EightConcurrentWritersMakeExactly200Runs) {
  REQUIRE_SERVER();
  const std::string conn = fresh_db("writers");
  std::atomic<int> failures{0};
  std::vector<std::thread> writers;
  for (int w = 0; w < 8; ++w)
    writers.emplace_back([w, &failures, &conn] {
      try {
        // Each opens the fresh server itself: the schema's creation races too.
        auto s = store::Store::open(store::resolve(conn), true);
        for (int i = 0; i < 25; ++i)
          if (!s->record(flopwatt::testing::variant(fmt::format("w{}-{}", w, i), "2026-01-01T00:00:00Z"), {}))
            ++failures;
      } catch (const std::exception& e) {
        ADD_FAILURE() << "writer " << w << ": " << e.what();
        ++failures;
      }
    });
  for (auto& t : writers) t.join();
  EXPECT_EQ(failures.load(), 0);
  auto db = store::open_postgres(conn);
  EXPECT_EQ(count(*db, "SELECT COUNT(*) FROM runs"), 200);
  EXPECT_EQ(count(*db, "SELECT COUNT(DISTINCT run_id) FROM runs"), 200);
  EXPECT_EQ(count(*db, "SELECT COUNT(*) FROM measurements"), 200 * 9);
  EXPECT_EQ(count(*db, "SELECT COUNT(*) FROM schema_version"), 1);
  // A writer repeating a run adds nothing.
  auto s = store::Store::open(store::resolve(conn), true);
  EXPECT_FALSE(s->record(flopwatt::testing::variant("w3-7", "2026-01-01T00:00:00Z"), {}));
  EXPECT_EQ(count(*db, "SELECT COUNT(*) FROM runs"), 200);
}

TEST(PgStore, ServerStoppedMidPushThenRestartedLeavesNoPartialRun) {
  REQUIRE_SERVER();
  const std::string conn = fresh_db("crash");
  const fs::path d = flopwatt::testing::temp_dir("pg", "crash");
  const fs::path local = d / "local.sqlite3";
  constexpr int kRuns = 200;
  {
    auto s = store::Store::open(store::resolve(local.string()), true);
    for (int i = 0; i < kRuns; ++i)
      ASSERT_TRUE(s->record(flopwatt::testing::variant("c" + std::to_string(i), "2026-02-01T00:00:00Z"), {"crash"}));
  }
  ASSERT_EQ(run_command_line(kBin + " store init '" + conn + "'").code, 0);
  const std::string push = kBin + " store push '" + conn + "' --store " + local.string();
  run_command_line("( " + push + " >" + (d / "out").string() + " 2>" + (d / "err").string() + "; echo $? >" +
                   (d / "rc").string() + " ) &");
  {
    auto db = store::open_postgres(conn);
    const auto t0 = std::chrono::steady_clock::now();
    while (count(*db, "SELECT COUNT(*) FROM runs") < 5 && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(20))
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  g_pg->stop_immediate();
  for (int i = 0; i < 2000 && slurp(d / "rc").empty(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_EQ(slurp(d / "rc"), "1\n") << "the push should have been cut off: " << slurp(d / "out") << slurp(d / "err");
  EXPECT_NE(slurp(d / "err").find("again when the server is back"), std::string::npos) << slurp(d / "err");
  ASSERT_TRUE(g_pg->start());
  {
    auto db = store::open_postgres(conn);
    const long before = count(*db, "SELECT COUNT(*) FROM runs");
    EXPECT_GT(before, 0);
    EXPECT_LT(before, kRuns);
    // No run without all of its rows.
    EXPECT_EQ(count(*db, "SELECT COUNT(*) FROM runs r WHERE (SELECT COUNT(*) FROM measurements m WHERE m.run_id = "
                         "r.run_id) <> 9"), 0);
  }
  const auto again = run_command_line(push);
  ASSERT_EQ(again.code, 0) << again.err;
  auto db = store::open_postgres(conn);
  EXPECT_EQ(count(*db, "SELECT COUNT(*) FROM runs"), kRuns);
  EXPECT_EQ(count(*db, "SELECT COUNT(*) FROM measurements"), kRuns * 9);
  EXPECT_EQ(count(*db, "SELECT COUNT(*) FROM run_tags"), kRuns);
  fs::remove_all(d);
}

TEST(PgStore, PushIsKeyedByRunIdAndKeepsAwkwardTags) {
  REQUIRE_SERVER();
  const std::string conn = fresh_db("push");
  const fs::path d = flopwatt::testing::temp_dir("pg", "push");
  const fs::path local = d / "local.sqlite3";
  const std::vector<std::string> tags = {"it's \"x\"; DROP TABLE runs; --", store::clean_text("raw\xff\xfe" "end"),
                                         "semi;colon"};
  {
    auto s = store::Store::open(store::resolve(local.string()), true);
    for (int i = 0; i < 3; ++i) ASSERT_TRUE(s->record(flopwatt::testing::variant("p" + std::to_string(i), "2026-03-01T00:00:00Z"), tags));
  }
  const std::string push = kBin + " store push '" + conn + "' --store " + local.string();
  auto r = run_command_line(push);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("pushed 3 run(s)"), std::string::npos) << r.out;
  r = run_command_line(push);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("pushed 0 run(s)"), std::string::npos) << r.out;
  auto remote = store::Store::open(store::resolve(conn), false);
  EXPECT_EQ(remote->run_ids().size(), 3u);
  auto want = tags;
  std::sort(want.begin(), want.end());
  EXPECT_EQ(remote->tags("p1"), want);
  store::ListFilter f;
  f.tag = "raw\xff\xfe" "end";
  EXPECT_EQ(remote->list(f).size(), 3u);
  // compare and history read the server as they read a file.
  r = run_command_line(kBin + " compare p0 p2 --fail-on-regression 5 --store '" + conn + "'");
  EXPECT_EQ(r.code, 0) << r.err;
  r = run_command_line(kBin + " history flop_per_s --format csv --store '" + conn + "'");
  EXPECT_EQ(r.code, 0) << r.err;
  fs::remove_all(d);
}

TEST(PgStore, NewerSchemaIsRefused) {
  REQUIRE_SERVER();
  const std::string conn = fresh_db("newer");
  store::Store::open(store::resolve(conn), true);
  store::open_postgres(conn)->exec("INSERT INTO schema_version (version) VALUES (99)");
  const auto r = run_command_line(kBin + " store ls --store '" + conn + "'");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("schema version 99"), std::string::npos) << r.err;
}

// A server's store of schema 3 (each row's config_key and label in the row,
// no configs table), made by taking schema 4 back, is migrated in place by
// `store init` as the owner: every row keeps its configuration, and history
// reads it by its key.
TEST(PgStore, ASchema3StoreIsMigratedInPlaceKeepingEveryRowsConfiguration) {
  REQUIRE_SERVER();
  const std::string conn = fresh_db("schema3");
  {
    auto s = store::Store::open(store::resolve(conn), true);
    for (int i = 0; i < 3; ++i)
      ASSERT_TRUE(s->record(flopwatt::testing::variant("m" + std::to_string(i), "2026-05-0" + std::to_string(i + 1) + "T00:00:00Z"), {}));
  }
  auto db = store::open_postgres(conn);
  const std::string by_row =
      "SELECT string_agg(c.config_key || '/' || c.label, ',' ORDER BY m.run_id, m.idx) FROM measurements m JOIN "
      "configs c ON c.config_id = m.config_id";
  const auto want = db->query(by_row).at(0).at(0);
  ASSERT_TRUE(want);
  db->exec("ALTER TABLE measurements ADD COLUMN config_key TEXT, ADD COLUMN label TEXT; UPDATE measurements m SET "
           "config_key = c.config_key, label = c.label FROM configs c WHERE c.config_id = m.config_id; ALTER TABLE "
           "measurements DROP COLUMN config_id; DROP TABLE configs; UPDATE schema_version SET version = 3");
  auto r = run_command_line(kBin + " store ls --store '" + conn + "'");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("older schema (version 3)"), std::string::npos) << r.err;
  r = run_command_line(kBin + " store init --store '" + conn + "'");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("schema version 4"), std::string::npos) << r.out;
  EXPECT_EQ(db->query(by_row).at(0).at(0), want);
  EXPECT_EQ(count(*db, "SELECT COUNT(*) FROM information_schema.columns WHERE table_name = 'measurements' AND "
                       "column_name IN ('config_key', 'label')"),
            0);
  r = run_command_line(kBin + " history median_s --format csv --store '" + conn + "'");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("m2"), std::string::npos) << r.out;
}

TEST(PgStore, SamplesAreStoredOnlyWithStoreSamples) {
  REQUIRE_SERVER();
  const std::string conn = fresh_db("samples");
  const fs::path d = flopwatt::testing::temp_dir("pg", "samples");
  auto r = run_command_line(flopwatt::testing::sampled_run(kBin, d / "plain", "--store '" + conn + "'"));
  ASSERT_EQ(r.code, 0) << r.err;
  r = run_command_line(flopwatt::testing::sampled_run(kBin, d / "with", "--store '" + conn + "' --store-samples"));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.err.find("warning"), std::string::npos) << r.err;
  const long want = flopwatt::testing::samples_csv_rows(d / "with");
  ASSERT_GT(want, 0) << "the fixture run wrote no samples";
  auto db = store::open_postgres(conn);
  EXPECT_EQ(count(*db, "SELECT COUNT(*) FROM runs"), 2);
  auto s = store::Store::open(store::resolve(conn), false);
  EXPECT_TRUE(s->samples(flopwatt::testing::run_id_of(d / "plain")).empty());
  EXPECT_EQ(static_cast<long>(s->samples(flopwatt::testing::run_id_of(d / "with")).size()), want);
  fs::remove_all(d);
}

TEST(PgStore, PushCarriesSamplesOnceInTheRunsTransaction) {
  REQUIRE_SERVER();
  const std::string conn = fresh_db("pushsamples");
  const fs::path d = flopwatt::testing::temp_dir("pg", "pushsamples");
  const fs::path local = d / "local.sqlite3";
  auto r = run_command_line(flopwatt::testing::sampled_run(kBin, d / "with", "--store " + local.string() + " --store-samples"));
  ASSERT_EQ(r.code, 0) << r.err;
  r = run_command_line(flopwatt::testing::sampled_run(kBin, d / "plain", "--store " + local.string()));
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string with = flopwatt::testing::run_id_of(d / "with");
  const long want = flopwatt::testing::samples_csv_rows(d / "with");
  ASSERT_GT(want, 0);
  auto l = store::Store::open(store::resolve(local.string()), false);
  ASSERT_EQ(static_cast<long>(l->samples(with).size()), want);
  const std::string push = kBin + " store push '" + conn + "' --store " + local.string();
  r = run_command_line(push);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("pushed 2 run(s)"), std::string::npos) << r.out;
  auto remote = store::Store::open(store::resolve(conn), false);
  const auto got = remote->samples(with);
  ASSERT_EQ(static_cast<long>(got.size()), want);
  const auto sent = l->samples(with);
  for (std::size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].source_id, sent[i].source_id) << i;
    EXPECT_EQ(got[i].t_ns, sent[i].t_ns) << i;
    EXPECT_EQ(std::strtod(got[i].value->c_str(), nullptr), std::strtod(sent[i].value->c_str(), nullptr)) << i;
    EXPECT_EQ(got[i].unit, sent[i].unit) << i;
  }
  EXPECT_TRUE(remote->samples(flopwatt::testing::run_id_of(d / "plain")).empty());
  // A second push (a retry) sends nothing twice.
  r = run_command_line(push);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("pushed 0 run(s)"), std::string::npos) << r.out;
  EXPECT_EQ(count(*store::open_postgres(conn), "SELECT COUNT(*) FROM samples"), want);
  // A run whose samples the server refuses is not there at all: not its row, not half its samples.
  auto admin = store::open_postgres(conn);
  admin->exec("DELETE FROM samples; DELETE FROM energy; DELETE FROM measurements; DELETE FROM run_tags; DELETE FROM runs");
  admin->exec("ALTER TABLE samples ADD CONSTRAINT refuse_late CHECK (t_ns < " +
              std::to_string(std::stoll(sent.at(sent.size() / 2).t_ns)) + ")");
  r = run_command_line(push);
  EXPECT_NE(r.code, 0) << r.out;
  EXPECT_EQ(count(*admin, "SELECT COUNT(*) FROM runs WHERE run_id = '" + with + "'"), 0);
  EXPECT_EQ(count(*admin, "SELECT COUNT(*) FROM samples"), 0);
  fs::remove_all(d);
}

TEST(PgStore, WriterRoleRecordsNpuRunsAndFillsTheMachineOnceGranted) {
  REQUIRE_SERVER();
  const std::string conn = fresh_db("writerrole");
  store::Store::open(store::resolve(conn), true);
  auto admin = store::open_postgres(conn);
  admin->exec("DROP ROLE IF EXISTS fw_writer");
  admin->exec("CREATE ROLE fw_writer LOGIN; GRANT SELECT, INSERT ON ALL TABLES IN SCHEMA public TO fw_writer");
  std::string writer = conn;
  writer.replace(writer.find("user=flopwatt"), 13, "user=fw_writer");
  auto s = store::Store::open(store::resolve(writer), true);
  ASSERT_TRUE(s->record(flopwatt::testing::variant("wr-0", "2026-04-01T00:00:00Z"), {}));
  const std::string npu = "SELECT COUNT(*) FROM machines WHERE npu_device = '/dev/accel/accel0 (npu4)' AND "
                          "npu_firmware = '1.5.2.380'";
  // Without UPDATE on the NPU columns the run is still recorded, the machine left as it was.
  flopwatt::Run with = flopwatt::testing::variant("wr-1", "2026-04-02T00:00:00Z");
  flopwatt::testing::add_xdna_backend(with);
  ASSERT_TRUE(s->record(with, {}));
  EXPECT_EQ(count(*admin, npu), 0);
  EXPECT_EQ(count(*admin, "SELECT COUNT(*) FROM runs"), 2);
  admin->exec("GRANT UPDATE (npu_device, npu_firmware) ON machines TO fw_writer");
  with.run_id = "wr-2";
  ASSERT_TRUE(s->record(with, {}));
  EXPECT_EQ(count(*admin, npu), 1);
  EXPECT_EQ(count(*admin, "SELECT COUNT(*) FROM machines"), 1);
}

TEST(PgStore, AReadOnlyRoleIsToldToAskForInsertNotToRunInit) {
  REQUIRE_SERVER();
  const std::string conn = fresh_db("readerrole");
  store::Store::open(store::resolve(conn), true);
  auto admin = store::open_postgres(conn);
  admin->exec("DROP ROLE IF EXISTS fw_reader");
  admin->exec("CREATE ROLE fw_reader LOGIN; GRANT SELECT ON ALL TABLES IN SCHEMA public TO fw_reader");
  std::string reader = conn;
  reader.replace(reader.find("user=flopwatt"), 13, "user=fw_reader");
  const fs::path d = flopwatt::testing::temp_dir("pg", "reader");
  flopwatt::testing::write_run_dir(flopwatt::testing::variant("rd-0", "2026-05-01T00:00:00Z"), d / "a");
  auto r = run_command_line(kBin + " store import " + (d / "a").string() + " --store '" + reader + "'");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.err.find("lacks a privilege"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("GRANT SELECT, INSERT"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("move"), std::string::npos) << r.err;
  // Reading works for it.
  r = run_command_line(kBin + " store ls --store '" + reader + "'");
  EXPECT_EQ(r.code, 0) << r.err;
  fs::remove_all(d);
}

TEST(PgStore, LibpqsOwnErrorTextIsScrubbedOfThePassword) {
  REQUIRE_SERVER();
  // The server repeats the database name in its error; here it is the password too.
  const std::string conn = g_pg->conninfo("s3cr3tpw") + " password=s3cr3tpw";
  const auto r = run_command_line(kBin + " store ls --store '" + conn + "'");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.err.find("database \"***\" does not exist"), std::string::npos) << r.err;
  // Once only: as the dbname of the spec the message names, never as libpq's text or the password.
  const auto first = r.err.find("s3cr3tpw");
  EXPECT_NE(first, std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("s3cr3tpw", first + 1), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("password=s3cr3tpw"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("carries a password"), std::string::npos) << r.err;
}

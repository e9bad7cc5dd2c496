// The results store on SQLite, end to end through the built binary: every run
// recorded, two writers at once, files that are not ours left untouched,
// import idempotent, awkward tags, compare and history.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "harness/store/db.h"
#include "harness/store/store.h"
#include "tests/harness/cli_support.h"
#include "tests/harness/store/store_support.h"

namespace fs = std::filesystem;
using flopwatt::testing::run_command_line;
using flopwatt::testing::slurp;
using flopwatt::testing::temp_dir;
using flopwatt::testing::variant;
using flopwatt::testing::write_run_dir;

namespace {

const std::string kBin = FLOPWATT_BINARY;

// A short GEMM run: no power sources, no idle baseline, no peak.
std::string quick_run(const fs::path& out, const std::string& extra) {
  return kBin + " run gemm --backend cpu:reference --shapes 48,40,32 --min-time 0.005 --min-reps 3 --idle 0 --no-peak "
                "--power none --out " + out.string() + " " + extra;
}

std::string ls(const fs::path& store, const std::string& extra = "") {
  return kBin + " store ls --format csv --store " + store.string() + " " + extra;
}

std::size_t lines(const std::string& s) { return static_cast<std::size_t>(std::count(s.begin(), s.end(), '\n')); }

}  // namespace

TEST(Store, RunIsRecordedInTheDefaultStoreUnlessNoStore) {
  const fs::path d = temp_dir("store", "default");
  const std::string env = "XDG_DATA_HOME=" + (d / "data").string() + " FLOPWATT_STORE= ";
  auto r = run_command_line(env + quick_run(d / "r1", ""));
  ASSERT_EQ(r.code, 0) << r.err;
  const fs::path file = d / "data/flopwatt/results.sqlite3";
  ASSERT_TRUE(fs::exists(file)) << r.err;
  r = run_command_line(env + quick_run(d / "r2", "--no-store"));
  ASSERT_EQ(r.code, 0) << r.err;
  r = run_command_line(ls(file));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(lines(r.out), 2u) << r.out;  // header + r1 only
  // FLOPWATT_STORE chooses another file.
  r = run_command_line("FLOPWATT_STORE=" + (d / "env.sqlite3").string() + " " + quick_run(d / "r3", ""));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(fs::exists(d / "env.sqlite3"));
  fs::remove_all(d);
}

// The store's "$N" placeholders reach SQLite as bare "?" when they come in
// order, else as numbered ones: either way each binds its own value however
// often and in whatever order it appears, and "$1" inside quoted text stays text.
TEST(Store, SqlitePlaceholdersBindByNumberAndQuotedTextIsLeftAlone) {
  const fs::path dir = temp_dir("store", "placeholders");
  auto db = flopwatt::store::open_sqlite((dir / "p.sqlite3").string(), true);
  const auto rows = db->query("SELECT $2, '$1 it''s', $1, \"$1\" FROM (SELECT 7 AS \"$1\"), (SELECT $2)", {"a", "b"});
  ASSERT_EQ(rows.size(), 1u);
  ASSERT_EQ(rows[0].size(), 4u);
  EXPECT_EQ(rows[0][0], "b");
  EXPECT_EQ(rows[0][1], "$1 it's");
  EXPECT_EQ(rows[0][2], "a");
  EXPECT_EQ(rows[0][3], "7");
  // In order, each once (every INSERT of the store): bare "?", the same slots.
  const auto in_order = db->query("SELECT $1, '$3', $2, $3", {"a", "b", "c"});
  ASSERT_EQ(in_order.size(), 1u);
  EXPECT_EQ(in_order[0][0], "a");
  EXPECT_EQ(in_order[0][1], "$3");
  EXPECT_EQ(in_order[0][2], "b");
  EXPECT_EQ(in_order[0][3], "c");
  fs::remove_all(dir);
}

TEST(Store, TwoRunsWritingOneFileAtOnceAreBothKept) {
  const fs::path d = temp_dir("store", "concurrent");
  const fs::path store = d / "s.sqlite3";
  // Four at once onto a file none of them has created yet: creation and
  // inserts both race.
  auto file = [&d](const char* what, int i) { return d / fmt::format("{}{}", what, i); };
  std::string cmd;
  for (int i = 0; i < 4; ++i)
    cmd += fmt::format("( {} >{} 2>&1; echo $? >{} ) & ", quick_run(file("r", i), "--store " + store.string()),
                       file("o", i).string(), file("rc", i).string());
  run_command_line(cmd + "wait");
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(slurp(file("rc", i)), "0\n") << slurp(file("o", i));
    EXPECT_EQ(slurp(file("o", i)).find("warning: run"), std::string::npos) << slurp(file("o", i));
  }
  const auto l = run_command_line(ls(store));
  ASSERT_EQ(l.code, 0) << l.err;
  EXPECT_EQ(lines(l.out), 5u) << l.out;
  fs::remove_all(d);
}

TEST(Store, CorruptOrForeignFileIsRefusedNamedAndLeftUntouched) {
  const fs::path d = temp_dir("store", "foreign");
  // Not a database at all.
  const fs::path junk = d / "junk.sqlite3";
  std::ofstream(junk) << std::string(5000, 'x');
  // Another program's SQLite database.
  const fs::path other = d / "other.sqlite3";
  {
    auto db = flopwatt::store::open_sqlite(other.string(), true);
    db->exec("CREATE TABLE notes (t TEXT); INSERT INTO notes VALUES ('mine')");
  }
  // A flopwatt store whose header got damaged.
  const fs::path damaged = d / "damaged.sqlite3";
  write_run_dir(variant("run-a", "2026-01-01T00:00:00Z"), d / "a");
  auto r = run_command_line(kBin + " store import " + (d / "a").string() + " --store " + damaged.string());
  ASSERT_EQ(r.code, 0) << r.err;
  {
    std::fstream f(damaged, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(0);
    f << "garbage garbage!";
  }
  for (const fs::path& p : {junk, other, damaged}) {
    const std::string before = slurp(p);
    r = run_command_line(ls(p));
    EXPECT_EQ(r.code, 2) << p << r.out;
    EXPECT_NE(r.err.find(p.string()), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    // A run with such a store still succeeds, warns once naming the file, and leaves the file alone.
    r = run_command_line(quick_run(d / ("run_" + p.stem().string()), "--store " + p.string()));
    EXPECT_EQ(r.code, 0) << r.err;
    EXPECT_NE(r.err.find("warning: run"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(p.string()), std::string::npos) << r.err;
    EXPECT_TRUE(fs::exists(d / ("run_" + p.stem().string()) / "run.json"));
    EXPECT_EQ(slurp(p), before) << p;
    EXPECT_FALSE(fs::exists(p.string() + "-wal")) << p;
  }
  fs::remove_all(d);
}

TEST(Store, DamagePastTheHeaderIsBadInputNamingTheStore) {
  const fs::path d = temp_dir("store", "deep");
  const fs::path store = d / "s.sqlite3";
  const std::string campaign = std::string(FLOPWATT_TEST_FIXTURES) + "/runs/campaign-gemm-smoke";
  ASSERT_EQ(run_command_line(kBin + " store import " + campaign + " --store " + store.string()).code, 0);
  {
    // Pages 3 and on overwritten; the 100-byte header and the first pages stay valid.
    std::fstream f(store, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(2 * 4096);
    f << std::string(64 * 1024, '\x5a');
  }
  const auto r = run_command_line(kBin + " store export --format json --store " + store.string());
  EXPECT_EQ(r.code, 2) << r.out.substr(0, 200) << r.err;
  EXPECT_NE(r.err.find(store.string()), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  fs::remove_all(d);
}

TEST(Store, NewerSchemaIsRefused) {
  const fs::path d = temp_dir("store", "newer");
  const fs::path store = d / "s.sqlite3";
  write_run_dir(variant("run-a", "2026-01-01T00:00:00Z"), d / "a");
  ASSERT_EQ(run_command_line(kBin + " store import " + (d / "a").string() + " --store " + store.string()).code, 0);
  {
    auto db = flopwatt::store::open_sqlite(store.string(), false);
    db->exec("PRAGMA user_version = 99");
  }
  auto r = run_command_line(ls(store));
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("schema version 99"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("newer"), std::string::npos) << r.err;
  r = run_command_line(kBin + " store import " + (d / "a").string() + " --store " + store.string());
  EXPECT_EQ(r.code, 2) << r.out;
  fs::remove_all(d);
}

TEST(Store, ImportTwiceAddsNothing) {
  const fs::path d = temp_dir("store", "import");
  const fs::path store = d / "s.sqlite3";
  const std::string campaign = std::string(FLOPWATT_TEST_FIXTURES) + "/runs/campaign-gemm-smoke";
  auto r = run_command_line(kBin + " store import " + campaign + " --store " + store.string());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("imported 2 run(s)"), std::string::npos) << r.out;
  const std::string before = run_command_line(kBin + " store export --format csv --store " + store.string()).out;
  r = run_command_line(kBin + " store import " + campaign + " --store " + store.string());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("imported 0 run(s)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("2 already there"), std::string::npos) << r.out;
  EXPECT_EQ(run_command_line(kBin + " store export --format csv --store " + store.string()).out, before);
  EXPECT_EQ(lines(before), 1u + 18u);  // header + 9 rows per run
  fs::remove_all(d);
}

TEST(Store, TagsAndLabelsWithQuotesSemicolonsAndNonUtf8) {
  const fs::path d = temp_dir("store", "tags");
  const fs::path store = d / "s.sqlite3";
  const std::string evil = "it's \"x\"; DROP TABLE runs; --";
  auto r = run_command_line(quick_run(d / "r", "--store " + store.string() + " --tag '" + "it'\"'\"'s \"x\"; DROP TABLE runs; --" +
                                               "' --tag \"$(printf 'raw\\377\\376end')\" --label \"$(printf 'lab;\\300')\""));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.err.find("warning"), std::string::npos) << r.err;
  // run.json stays valid JSON and carries the tags (invalid bytes as \xNN).
  const auto j = nlohmann::json::parse(slurp(d / "r/run.json"));
  ASSERT_EQ(j["context"]["tags"].size(), 2u);
  EXPECT_EQ(j["context"]["tags"][0], evil);
  EXPECT_EQ(j["context"]["tags"][1], "raw\\xff\\xfeend");
  EXPECT_EQ(j["context"]["machine_label"], "lab;\\xc0");
  // Found by the same bytes on the command line.
  r = run_command_line(ls(store, "--tag \"$(printf 'raw\\377\\376end')\""));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(lines(r.out), 2u) << r.out;
  r = run_command_line(kBin + " store ls --format json --store " + store.string() + " --tag '" +
                       "it'\"'\"'s \"x\"; DROP TABLE runs; --" + "'");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto l = nlohmann::json::parse(r.out);
  ASSERT_EQ(l.size(), 1u);
  EXPECT_EQ(l[0]["machine_label"], "lab;\\xc0");
  fs::remove_all(d);
}

TEST(Store, PasswordNeverPrinted) {
  const fs::path d = temp_dir("store", "password");
  const auto r = run_command_line(
      quick_run(d / "r", "--store 'postgresql://fw:s3cr3tpw@/nodb?host=" + (d / "nosock").string() + "'"));
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("warning: run"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("postgresql://fw@/nodb"), std::string::npos) << r.err;
  // The server out of reach: the run waits in the local store for `store push`.
  EXPECT_NE(r.err.find("kept in"), std::string::npos) << r.err;
  EXPECT_EQ((r.out + r.err + slurp(d / "r/run.json")).find("s3cr3tpw"), std::string::npos);
  // The command line is kept, the password removed.
  const auto ctx = nlohmann::json::parse(slurp(d / "r/run.json"))["context"];
  EXPECT_NE(ctx["command_line"].get<std::string>().find("--store 'postgresql://fw@/nodb?host="), std::string::npos)
      << ctx.dump();
  fs::remove_all(d);
}

TEST(Store, PasswordInAnyFormNeverReachesRunJsonTheStoreOrTheTerminal) {
  const fs::path d = temp_dir("store", "pwforms");
  const std::string sock = (d / "nosock").string();
  const std::string forms[] = {
      "host=" + sock + " dbname=x password = s3cr3tpw",
      "host=" + sock + " dbname=x password='s3cr3tpw'",
      "postgresql:///x?host=" + sock + "&p%61ssword=s3cr3tpw",
      "postgresql://fw:s3cr3tpw@/x?host=" + sock,
  };
  int i = 0;
  for (const auto& f : forms) {
    SCOPED_TRACE(f);
    const fs::path data = d / fmt::format("data{}", i), out = d / fmt::format("r{}", i++);
    const auto r = run_command_line("XDG_DATA_HOME=" + data.string() + " " + quick_run(out, "--store \"" + f + "\""));
    EXPECT_EQ(r.code, 0) << r.err;
    EXPECT_NE(r.err.find("carries a password"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("kept in"), std::string::npos) << r.err;
    // Not in the output, run.json, or the local store's bytes (its command_line and run_json columns).
    EXPECT_EQ((r.out + r.err).find("s3cr3tpw"), std::string::npos) << r.err;
    EXPECT_EQ(slurp(out / "run.json").find("s3cr3tpw"), std::string::npos);
    const fs::path local = data / "flopwatt/results.sqlite3";
    ASSERT_TRUE(fs::exists(local));
    EXPECT_EQ(slurp(local).find("s3cr3tpw"), std::string::npos);
    EXPECT_EQ(run_command_line(kBin + " store export --format json --store " + local.string()).out.find("s3cr3tpw"),
              std::string::npos);
  }
  fs::remove_all(d);
}

TEST(Store, OtherSchemesAreRefusedAndNeverBecomeFiles) {
  const fs::path d = temp_dir("store", "schemes");
  write_run_dir(variant("run-a", "2026-01-01T00:00:00Z"), d / "a");
  const std::string local = (d / "local.sqlite3").string();
  ASSERT_EQ(run_command_line(kBin + " store import " + (d / "a").string() + " --store " + local).code, 0);
  for (const std::string url : {"postgressql://fw:s3cr3tpw@h/db", "mysql://fw:s3cr3tpw@h/db", "x://u:s3cr3tpw@y"}) {
    SCOPED_TRACE(url);
    const fs::path cwd = d / "cwd";
    fs::create_directories(cwd);
    auto r = run_command_line("cd " + cwd.string() + " && " + kBin + " store push '" + url + "' --store " + local);
    EXPECT_EQ(r.code, 2) << r.out << r.err;
    EXPECT_NE(r.err.find("scheme"), std::string::npos) << r.err;
    EXPECT_EQ((r.out + r.err).find("s3cr3tpw"), std::string::npos) << r.err;
    r = run_command_line("cd " + cwd.string() + " && " + quick_run(d / "r", "--store '" + url + "'"));
    EXPECT_EQ(r.code, 2) << r.out << r.err;
    EXPECT_FALSE(fs::exists(d / "r/run.json")) << "measured with a store spec that is no store";
    EXPECT_EQ((r.out + r.err).find("s3cr3tpw"), std::string::npos) << r.err;
    EXPECT_TRUE(fs::is_empty(cwd)) << "a file was made from the URL";
    fs::remove_all(d / "r");
  }
  // A connection string libpq refuses is refused too, not made a file.
  auto r = run_command_line("cd " + d.string() + " && " + kBin + " store ls --store 'k=v.sqlite3'");
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_FALSE(fs::exists(d / "k=v.sqlite3"));
  // A path with '=' in it stays a path, as --store, FLOPWATT_STORE or XDG_DATA_HOME.
  const fs::path eq = d / "a=b";
  r = run_command_line(kBin + " store import " + (d / "a").string() + " --store " + (eq / "s.sqlite3").string());
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(fs::exists(eq / "s.sqlite3"));
  r = run_command_line("cd " + d.string() + " && FLOPWATT_STORE=./k=v.sqlite3 " + kBin + " store import " + (d / "a").string());
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(fs::exists(d / "k=v.sqlite3"));
  r = run_command_line("FLOPWATT_STORE= XDG_DATA_HOME=" + (eq / "x=y").string() + " " + kBin + " store import " + (d / "a").string());
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(fs::exists(eq / "x=y/flopwatt/results.sqlite3"));
  fs::remove_all(d);
}

TEST(Store, CompareFailsOnRegressionWithExit3) {
  const fs::path d = temp_dir("store", "compare");
  const fs::path store = d / "s.sqlite3";
  write_run_dir(variant("base-run", "2026-01-01T00:00:00Z"), d / "base");
  write_run_dir(variant("same-run", "2026-01-02T00:00:00Z"), d / "same");
  write_run_dir(variant("slow-run", "2026-01-03T00:00:00Z", 1.2), d / "slow");
  // Directories.
  auto r = run_command_line(kBin + " compare " + (d / "base").string() + " " + (d / "same").string() +
                            " --fail-on-regression 5");
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  r = run_command_line(kBin + " compare " + (d / "base").string() + " " + (d / "slow").string() +
                       " --fail-on-regression 5");
  EXPECT_EQ(r.code, 3) << r.out << r.err;
  EXPECT_NE(r.out.find("+20.0%"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("regression"), std::string::npos) << r.out;
  // Without the flag the same comparison reports but passes; a 25% threshold passes too.
  EXPECT_EQ(run_command_line(kBin + " compare " + (d / "base").string() + " " + (d / "slow").string()).code, 0);
  EXPECT_EQ(run_command_line(kBin + " compare " + (d / "base").string() + " " + (d / "slow").string() +
                             " --fail-on-regression 25").code, 0);
  // Stored runs by id, latest and previous.
  ASSERT_EQ(run_command_line(kBin + " store import " + (d / "base").string() + " " + (d / "same").string() + " " +
                             (d / "slow").string() + " --store " + store.string()).code, 0);
  r = run_command_line(kBin + " compare previous latest --fail-on-regression 5 --format json --store " + store.string());
  EXPECT_EQ(r.code, 3) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["base"], "same-run");
  EXPECT_EQ(j["new"], "slow-run");
  EXPECT_EQ(j["rows"].size(), 9u);
  r = run_command_line(kBin + " compare base-run same-run --fail-on-regression 5 --store " + store.string());
  EXPECT_EQ(r.code, 0) << r.err;
  r = run_command_line(kBin + " compare base-run nosuchrun --store " + store.string());
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("NEW nosuchrun"), std::string::npos) << r.err;
  fs::remove_all(d);
}

TEST(Store, HistoryMarksTheStep) {
  const fs::path d = temp_dir("store", "history");
  const fs::path store = d / "s.sqlite3";
  std::string dirs;
  for (int i = 0; i < 8; ++i) {
    const fs::path p = d / fmt::format("r{}", i);
    write_run_dir(variant(fmt::format("run-{}", i), fmt::format("2026-01-0{}T00:00:00Z", i + 1), i < 4 ? 1.0 : 1.5), p);
    dirs += ' ';
    dirs += p.string();
  }
  ASSERT_EQ(run_command_line(kBin + " store import" + dirs + " --store " + store.string()).code, 0);
  auto r = run_command_line(kBin + " history median_s --backend cpu:onednn --format json --store " + store.string());
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_FALSE(j.empty());
  std::size_t marked = 0;
  for (const auto& p : j) {
    EXPECT_EQ(p["backend"], "cpu:onednn");
    if (p["change_point"].get<bool>()) {
      ++marked;
      EXPECT_EQ(p["run_id"].get<std::string>(), "run-4") << p.dump();
    }
  }
  EXPECT_EQ(marked * 8, j.size());  // one step per series of 8 runs
  // --plot: the same series as SVG, each change point circled.
  r = run_command_line(kBin + " history median_s --backend cpu:onednn --plot " + (d / "h.svg").string() +
                       " --store " + store.string());
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string svg = slurp(d / "h.svg");
  EXPECT_EQ(svg.rfind("<svg", 0), 0u) << svg;
  std::size_t circles = 0;
  for (auto p = svg.find("class=\"change\""); p != std::string::npos; p = svg.find("class=\"change\"", p + 1)) ++circles;
  EXPECT_EQ(circles, marked);
  r = run_command_line(kBin + " history bogus --store " + store.string());
  EXPECT_EQ(r.code, 2);
  fs::remove_all(d);
}

TEST(Store, ReportGroupsAFleetByMachineAndSupply) {
  const fs::path d = temp_dir("store", "fleet");
  const fs::path store = d / "s.sqlite3";
  const std::string campaign = std::string(FLOPWATT_TEST_FIXTURES) + "/runs/campaign-gemm-smoke";
  ASSERT_EQ(run_command_line(kBin + " store import " + campaign + " --store " + store.string()).code, 0);
  auto r = run_command_line(kBin + " report --store " + store.string() + " --group-by supply --format json");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["runs"].size(), 2u) << r.out;
  EXPECT_EQ(j["runs"][0]["label"], "battery");
  EXPECT_EQ(j["runs"][1]["label"], "mains");
  r = run_command_line(kBin + " report --store " + store.string() + " --group-by machine,supply");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("/mains"), std::string::npos) << r.out;
  r = run_command_line(kBin + " report --store " + store.string() + " --group-by colour");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--group-by colour"), std::string::npos) << r.err;
  r = run_command_line(kBin + " report");
  EXPECT_EQ(r.code, 2);
  fs::remove_all(d);
}

TEST(Store, SamplesAreStoredOnlyWithStoreSamples) {
  const fs::path d = temp_dir("store", "samples");
  const fs::path store = d / "s.sqlite3";
  auto r = run_command_line(flopwatt::testing::sampled_run(kBin, d / "plain", "--store " + store.string()));
  ASSERT_EQ(r.code, 0) << r.err;
  r = run_command_line(flopwatt::testing::sampled_run(kBin, d / "with", "--store " + store.string() + " --store-samples"));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.err.find("warning"), std::string::npos) << r.err;
  const long want = flopwatt::testing::samples_csv_rows(d / "with");
  ASSERT_GT(want, 0) << "the fixture run wrote no samples";
  ASSERT_GT(flopwatt::testing::samples_csv_rows(d / "plain"), 0);
  auto s = flopwatt::store::Store::open(flopwatt::store::resolve(store.string()), false);
  EXPECT_TRUE(s->samples(flopwatt::testing::run_id_of(d / "plain")).empty());
  const auto rows = s->samples(flopwatt::testing::run_id_of(d / "with"));
  EXPECT_EQ(static_cast<long>(rows.size()), want);
  for (const auto& x : rows) {
    EXPECT_FALSE(x.source_id.empty());
    EXPECT_TRUE(x.value && x.unit);
  }
  fs::remove_all(d);
}

TEST(Store, MachineNpuDeviceAndFirmwareComeFromTheRunsBackends) {
  const fs::path d = temp_dir("store", "npu");
  const fs::path store = d / "s.sqlite3";
  // The same machine three times: first without an NPU backend, then with the
  // device unusable (its note says why), then with the device and its firmware.
  flopwatt::Run plain = variant("npu-0", "2026-01-01T00:00:00Z");
  flopwatt::Run absent = variant("npu-1", "2026-01-02T00:00:00Z");
  absent.context["backends"]["npu:xdna"] = {{"device", "none: no /dev/accel/accel* node"}, {"firmware", "n/a"}};
  flopwatt::Run with = variant("npu-2", "2026-01-03T00:00:00Z");
  flopwatt::testing::add_xdna_backend(with);
  with.context["backends"]["npu:sim-strix"] = {{"device file", "strix.json"}};
  write_run_dir(plain, d / "a");
  write_run_dir(absent, d / "b");
  write_run_dir(with, d / "c");
  const std::string npu = "SELECT npu_device, npu_firmware FROM machines";
  for (const char* dir : {"a", "b"}) {
    ASSERT_EQ(run_command_line(kBin + " store import " + (d / dir).string() + " --store " + store.string()).code, 0);
    const auto rows = flopwatt::store::open_sqlite(store.string(), false)->query(npu);
    ASSERT_EQ(rows.size(), 1u) << dir;
    EXPECT_FALSE(rows[0][0]) << dir << ": " << *rows[0][0];
    EXPECT_FALSE(rows[0][1]) << dir << ": " << *rows[0][1];
  }
  ASSERT_EQ(run_command_line(kBin + " store import " + (d / "c").string() + " --store " + store.string()).code, 0);
  const auto rows = flopwatt::store::open_sqlite(store.string(), false)->query(npu);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0][0].value_or("NULL"), "/dev/accel/accel0 (npu4)");
  EXPECT_EQ(rows[0][1].value_or("NULL"), "1.5.2.380");
  fs::remove_all(d);
}

TEST(Store, SixteenFirstUsesOfANewFileAllRecordTheirRun) {
  // The schema is made by whichever process opens first; the others must see
  // all of it or none of it. Processes, not threads: the header reads the old
  // code made outside one transaction lost a run in 2 of 30 trials of 16
  // processes, and none in 30 of 16 threads. 30 trials catch a 1-in-10 race.
  const fs::path d = temp_dir("store", "firstuse");
  constexpr int kTrials = 30, kWriters = 16;
  const flopwatt::Run base = variant("base", "2026-01-01T00:00:00Z");
  for (int trial = 0; trial < kTrials; ++trial) {
    const fs::path file = d / fmt::format("t{}.sqlite3", trial);
    std::vector<pid_t> writers;
    for (int w = 0; w < kWriters; ++w) {
      const pid_t pid = ::fork();
      ASSERT_GE(pid, 0);
      if (pid == 0) {
        int code = 0;
        try {
          flopwatt::Run r = base;
          r.run_id = fmt::format("t{}-w{}", trial, w);
          auto s = flopwatt::store::Store::open(flopwatt::store::resolve(file.string()), true);
          code = s->record(r, {}) ? 0 : 3;
        } catch (const std::exception& e) {
          std::fprintf(stderr, "trial %d writer %d: %s\n", trial, w, e.what());
          code = 2;
        }
        ::_exit(code);
      }
      writers.push_back(pid);
    }
    for (int w = 0; w < kWriters; ++w) {
      int status = 0;
      ::waitpid(writers[static_cast<std::size_t>(w)], &status, 0);
      ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "trial " << trial << " writer " << w;
    }
    auto s = flopwatt::store::Store::open(flopwatt::store::resolve(file.string()), false);
    ASSERT_EQ(s->run_ids().size(), static_cast<std::size_t>(kWriters)) << "trial " << trial;
  }
  fs::remove_all(d);
}

TEST(Store, ImportRecordsEveryValidRunNamesEachBadOneAndFailsAfter) {
  const fs::path d = temp_dir("store", "badruns");
  const fs::path runs = d / "runs", store = d / "s.sqlite3";
  for (const char* id : {"a-good", "d-good", "e-good"}) write_run_dir(variant(id, "2026-01-01T00:00:00Z"), runs / id);
  // Cut off mid-file.
  write_run_dir(variant("b-cut", "2026-01-01T00:00:00Z"), runs / "b-cut");
  const std::string whole = slurp(runs / "b-cut/run.json");
  std::ofstream(runs / "b-cut/run.json", std::ios::trunc) << whole.substr(0, whole.size() / 2);
  // No run id, twice: neither may be stored as '' (nor drop the other as "already there").
  for (const char* dir : {"c-noid", "c-noid2"}) {
    auto j = nlohmann::json::parse(to_json(variant("x", "2026-01-01T00:00:00Z")).dump());
    j.erase("run_id");
    fs::create_directories(runs / dir);
    std::ofstream(runs / dir / "run.json") << j.dump();
  }
  auto r = run_command_line(kBin + " store import " + runs.string() + " --store " + store.string());
  EXPECT_EQ(r.code, 2) << r.out << r.err;
  EXPECT_NE(r.out.find("imported 3 run(s)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("3 refused"), std::string::npos) << r.out;
  for (const char* dir : {"b-cut", "c-noid", "c-noid2"})
    EXPECT_NE(r.err.find((runs / dir / "run.json").string()), std::string::npos) << dir << ": " << r.err;
  EXPECT_NE(r.err.find("run_id"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 3) << r.err;
  r = run_command_line(ls(store));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(lines(r.out), 4u) << r.out;
  for (const char* id : {"a-good", "d-good", "e-good"}) EXPECT_NE(r.out.find(id), std::string::npos) << r.out;
  // Recording a run without an id through the library is refused too.
  auto s = flopwatt::store::Store::open(flopwatt::store::resolve(store.string()), true);
  EXPECT_THROW(s->record(variant("", "2026-01-01T00:00:00Z"), {}), flopwatt::InputError);
  fs::remove_all(d);
}

namespace {

// RFC 4180: records of fields, quoted fields holding commas, quotes ("") and line breaks.
std::vector<std::vector<std::string>> parse_csv(const std::string& s) {
  std::vector<std::vector<std::string>> rows(1, std::vector<std::string>(1));
  bool quoted = false;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (quoted) {
      if (c == '"' && i + 1 < s.size() && s[i + 1] == '"') rows.back().back() += s[++i];
      else if (c == '"') quoted = false;
      else rows.back().back() += c;
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      rows.back().emplace_back();
    } else if (c == '\n') {
      rows.emplace_back(1);
    } else {
      rows.back().back() += c;
    }
  }
  if (rows.back().size() == 1 && rows.back()[0].empty()) rows.pop_back();
  return rows;
}

// The '|' of a markdown line that are cell borders (not escaped as "\|").
std::size_t borders(const std::string& line) {
  std::size_t n = 0;
  for (std::size_t i = 0; i < line.size(); ++i) n += line[i] == '|' && (i == 0 || line[i - 1] != '\\');
  return n;
}

// Every table line of a markdown text has `cells` + 1 borders, and no raw control character is in it.
void expect_safe_markdown(const std::string& md, std::size_t cells) {
  for (char c : md) ASSERT_FALSE((static_cast<unsigned char>(c) < 0x20 && c != '\n') || c == 0x7f) << md;
  std::istringstream in(md);
  for (std::string line; std::getline(in, line);)
    if (!line.empty() && line[0] == '|') {
      EXPECT_EQ(borders(line), cells + 1) << line;
    }
}

std::size_t column(const std::vector<std::string>& header, const std::string& name) {
  return static_cast<std::size_t>(std::find(header.begin(), header.end(), name) - header.begin());
}

}  // namespace

TEST(Store, HostileIdsLabelsBackendsAndTagsPrintEscapedAndParseBack) {
  const fs::path d = temp_dir("store", "hostile");
  const fs::path store = d / "s.sqlite3";
  const std::string id = "ev,il\"id\nnext\x1b[31m|x", label = "lab,\"el\x1b]0;pwn\x07|y\r\n",
                    backend = "cpu:b,a\"d\n\x1b|z", tag = "t,a\"g\n\x1b|";
  for (int i = 0; i < 2; ++i) {
    flopwatt::Run r = variant(id + std::to_string(i), fmt::format("2026-01-0{}T00:00:00Z", i + 1), 1 + i);
    r.context["machine_label"] = label;
    r.context["tags"] = {tag};
    for (auto& m : r.measurements) m.backend = backend;
    write_run_dir(r, d / fmt::format("r{}", i));
  }
  ASSERT_EQ(run_command_line(kBin + " store import " + (d / "r0").string() + " " + (d / "r1").string() + " --store " +
                             store.string()).code, 0);
  const std::string s = " --store " + store.string();
  // CSV: every record as wide as the header, the hostile text read back exactly.
  struct Csv {
    std::string cmd, id_col, other_col, other;
  };
  for (const Csv& c : {Csv{"store ls --format csv", "run_id", "machine", label},
                       Csv{"store ls --format csv", "run_id", "tags", tag},
                       Csv{"store export --format csv", "run_id", "backend", backend},
                       Csv{"history flop_per_s --format csv", "run_id", "backend", backend},
                       Csv{"history flop_per_s --format csv", "run_id", "machine", label}}) {
    SCOPED_TRACE(c.cmd);
    const auto r = run_command_line(kBin + " " + c.cmd + s);
    ASSERT_EQ(r.code, 0) << r.err;
    const auto rows = parse_csv(r.out);
    ASSERT_GT(rows.size(), 2u) << r.out;
    const std::size_t ic = column(rows[0], c.id_col), oc = column(rows[0], c.other_col);
    ASSERT_LT(ic, rows[0].size());
    ASSERT_LT(oc, rows[0].size());
    for (std::size_t k = 1; k < rows.size(); ++k) {
      ASSERT_EQ(rows[k].size(), rows[0].size()) << r.out;
      EXPECT_EQ(rows[k][ic].substr(0, id.size()), id);
      EXPECT_EQ(rows[k][oc], c.other);
    }
  }
  auto r = run_command_line(kBin + " compare '" + id + "0' '" + id + "1' --format csv" + s);
  ASSERT_EQ(r.code, 0) << r.err;
  const auto rows = parse_csv(r.out);
  ASSERT_EQ(rows.size(), 10u) << r.out;
  for (std::size_t k = 1; k < rows.size(); ++k) EXPECT_EQ(rows[k][column(rows[0], "backend")], backend);
  // Markdown: no raw control character, no cell broken by a '|', the id shown escaped.
  r = run_command_line(kBin + " store ls" + s);
  ASSERT_EQ(r.code, 0) << r.err;
  expect_safe_markdown(r.out, 8);
  EXPECT_NE(r.out.find("ev,il\"id\\nnext\\x1b[31m\\|x0"), std::string::npos) << r.out;
  r = run_command_line(kBin + " history flop_per_s" + s);
  ASSERT_EQ(r.code, 0) << r.err;
  expect_safe_markdown(r.out, 6);
  r = run_command_line(kBin + " compare '" + id + "0' '" + id + "1'" + s);
  ASSERT_EQ(r.code, 0) << r.err;
  expect_safe_markdown(r.out, 10);
  fs::remove_all(d);
}

namespace {

// The fixture with each row's headline judged apart: even rows on the
// package's RAPL, odd rows on the battery (the run's summary, derived from them, is "mixed").
flopwatt::Run mixed_headlines(const std::string& id) {
  flopwatt::Run r = variant(id, "2026-01-01T00:00:00Z");
  for (std::size_t i = 0; i < r.measurements.size(); ++i) {
    auto& m = r.measurements[i];
    m.headline_source = i % 2 ? "battery:BAT0" : "rapl-powercap:package-0";
    m.energy["battery:BAT0"].flop_per_j = 1e9 + double(i);  // a figure of its own per row
    m.energy["battery:BAT0"].j = 10 + double(i);
  }
  return r;
}

// Each exported row's headline columns against the run's own rows.
void expect_rows_headlines(const std::string& csv, const flopwatt::Run& run) {
  const auto rows = parse_csv(csv);
  ASSERT_EQ(rows.size(), run.measurements.size() + 1) << csv;
  const std::size_t src = column(rows[0], "headline_source"), ej = column(rows[0], "energy_j"),
                    fj = column(rows[0], "flop_per_j");
  for (std::size_t i = 0; i < run.measurements.size(); ++i) {
    const auto& m = run.measurements[i];
    const auto& e = m.energy.at(*m.headline_source);
    EXPECT_EQ(rows[i + 1][src], *m.headline_source) << i;
    EXPECT_EQ(std::strtod(rows[i + 1][ej].c_str(), nullptr), e.j) << i;
    EXPECT_EQ(std::strtod(rows[i + 1][fj].c_str(), nullptr), *e.flop_per_j) << i;
  }
}

}  // namespace

TEST(Store, EachRowKeepsItsOwnHeadlineSourceAndFigure) {
  const fs::path d = temp_dir("store", "rowheadline");
  const fs::path store = d / "s.sqlite3";
  const flopwatt::Run run = mixed_headlines("mixed");
  write_run_dir(run, d / "r");
  ASSERT_EQ(run_command_line(kBin + " store import " + (d / "r").string() + " --store " + store.string()).code, 0);
  auto r = run_command_line(kBin + " store export --format csv --store " + store.string());
  ASSERT_EQ(r.code, 0) << r.err;
  expect_rows_headlines(r.out, run);
  // history flop_per_j reads the same per-row figures.
  r = run_command_line(kBin + " history flop_per_j --format json --store " + store.string());
  ASSERT_EQ(r.code, 0) << r.err;
  const auto h = nlohmann::json::parse(r.out);
  ASSERT_EQ(h.size(), run.measurements.size());
  std::multiset<double> want, got;
  for (const auto& m : run.measurements) want.insert(*m.energy.at(*m.headline_source).flop_per_j);
  for (const auto& p : h) got.insert(p["flop_per_j"].get<double>());
  EXPECT_EQ(got, want);
  fs::remove_all(d);
}

namespace {

// A store as release `version` (1, 2 or 3) left it, made from one the
// current binary writes: version 3 kept each row's config_key and label in
// the row (no configs table); version 2 also kept run.json as text in
// run_json, each row's repetition times in rep_times_s and an index on
// (config_key, backend); version 1 also had no per-row headline column,
// every row's energy under the run's headline source (here the sentinel 7
// shows the backfill ran).
void make_old_store(const fs::path& file, const fs::path& run_dir, int version) {
  ASSERT_EQ(run_command_line(kBin + " store import " + run_dir.string() + " --store " + file.string()).code, 0);
  auto db = flopwatt::store::open_sqlite(file.string(), false);
  db->exec("ALTER TABLE measurements ADD COLUMN config_key TEXT; ALTER TABLE measurements ADD COLUMN label TEXT; "
           "UPDATE measurements SET config_key = (SELECT c.config_key FROM configs c WHERE c.config_id = "
           "measurements.config_id), label = (SELECT c.label FROM configs c WHERE c.config_id = measurements.config_id); "
           "ALTER TABLE measurements DROP COLUMN config_id; DROP TABLE configs");
  if (version <= 2) {
    const std::string text = slurp(run_dir / "run.json");
    db->query("UPDATE runs SET run_json = $1", {text});
    db->exec("ALTER TABLE runs DROP COLUMN run_doc; CREATE INDEX measurements_key ON measurements (config_key, backend); "
             "UPDATE measurements SET rep_times_s = '[0.5]'");
  }
  if (version == 1)
    db->exec("ALTER TABLE measurements DROP COLUMN headline_source; UPDATE measurements SET energy_j = 7, flop_per_j = 7");
  db->exec(fmt::format("DELETE FROM schema_version; INSERT INTO schema_version VALUES ({0}); PRAGMA user_version = {0}",
                       version));
}

// What schema 4 keeps: every run.json compressed in run_doc, nothing in
// run_json or rep_times_s, no (config_key, backend) index, and each row's
// configuration once in configs (its key and label as the run model makes them).
void expect_schema_4(const fs::path& file, const flopwatt::Run& run) {
  auto db = flopwatt::store::open_sqlite(file.string(), false, true);
  EXPECT_EQ(*db->query("SELECT COUNT(*) FROM runs WHERE run_doc IS NULL OR run_json != ''").at(0).at(0), "0");
  EXPECT_EQ(*db->query("SELECT COUNT(*) FROM measurements WHERE rep_times_s IS NOT NULL").at(0).at(0), "0");
  EXPECT_EQ(*db->query("SELECT COUNT(*) FROM sqlite_master WHERE name = 'measurements_key'").at(0).at(0), "0");
  EXPECT_EQ(*db->query("SELECT COUNT(*) FROM pragma_table_info('measurements') WHERE name IN ('config_key', 'label')")
                 .at(0)
                 .at(0),
            "0");
  const auto rows = db->query("SELECT c.config_key, c.label FROM measurements m JOIN configs c ON c.config_id = "
                              "m.config_id WHERE m.run_id = $1 ORDER BY m.idx",
                              {run.run_id});
  ASSERT_EQ(rows.size(), run.measurements.size());
  for (std::size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(rows[i][0], flopwatt::config_key(run.measurements[i]));
    EXPECT_EQ(rows[i][1], flopwatt::config_label(run.measurements[i]));
  }
}

}  // namespace

TEST(Store, AStoreOfThePreviousSchemaIsMigratedInPlace) {
  const fs::path d = temp_dir("store", "oldschema");
  const flopwatt::Run run = mixed_headlines("old-run");
  write_run_dir(run, d / "r");
  write_run_dir(variant("later-run", "2026-02-01T00:00:00Z"), d / "later");
  for (const int version : {1, 2, 3}) {
    SCOPED_TRACE(version);
    const fs::path a = d / fmt::format("a{}.sqlite3", version), b = d / fmt::format("b{}.sqlite3", version);
    make_old_store(a, d / "r", version);
    // A reading command says so and names the fix; `store init` migrates, keeping the run.
    auto r = run_command_line(kBin + " store ls --store " + a.string());
    EXPECT_EQ(r.code, 2) << r.out;
    EXPECT_NE(r.err.find(fmt::format("older schema (version {})", version)), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("flopwatt store init --store " + a.string()), std::string::npos) << r.err;
    r = run_command_line(kBin + " store init --store " + a.string());
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_NE(r.out.find("schema version 4"), std::string::npos) << r.out;
    expect_schema_4(a, run);
    r = run_command_line(kBin + " store export --format csv --store " + a.string());
    ASSERT_EQ(r.code, 0) << r.err;
    expect_rows_headlines(r.out, run);
    // The run reads back whole from its compressed document: its repetition times too.
    r = run_command_line(kBin + " store export --format json --store " + a.string());
    ASSERT_EQ(r.code, 0) << r.err;
    const auto exported = nlohmann::json::parse(r.out);
    ASSERT_EQ(exported.size(), 1u) << r.out;
    EXPECT_EQ(exported[0].at("measurements").at(0).at("rep_times_s"),
              nlohmann::json::parse(slurp(d / "r" / "run.json")).at("measurements").at(0).at("rep_times_s"));
    // A writing command migrates on its own.
    make_old_store(b, d / "r", version);
    r = run_command_line(kBin + " store import " + (d / "later").string() + " --store " + b.string());
    ASSERT_EQ(r.code, 0) << r.err;
    r = run_command_line(ls(b));
    EXPECT_EQ(lines(r.out), 3u) << r.out << r.err;
    expect_schema_4(b, run);
  }
  fs::remove_all(d);
}

TEST(Store, ANewerVersionInEitherMarkerIsRefused) {
  const fs::path d = temp_dir("store", "newertable");
  const fs::path store = d / "s.sqlite3";
  write_run_dir(variant("run-a", "2026-01-01T00:00:00Z"), d / "a");
  ASSERT_EQ(run_command_line(kBin + " store import " + (d / "a").string() + " --store " + store.string()).code, 0);
  flopwatt::store::open_sqlite(store.string(), false)->exec("DELETE FROM schema_version; INSERT INTO schema_version VALUES (99)");
  auto r = run_command_line(ls(store));
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("schema version 99"), std::string::npos) << r.err;
  r = run_command_line(kBin + " store import " + (d / "a").string() + " --store " + store.string());
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("schema version 99"), std::string::npos) << r.err;
  fs::remove_all(d);
}

namespace {

// The store commands as a user who may read the test's files but not write
// them: `nobody` when the tests run as root (root ignores permissions), else
// this user with the modes taken away.
std::string as_reader() { return ::geteuid() == 0 ? "runuser -u nobody -- " : ""; }

}  // namespace

TEST(Store, AReadOnlyDirectoryOrFileListsAndRefusesWritesSayingSo) {
  const fs::path d = temp_dir("store", "readonly");
  write_run_dir(variant("run-a", "2026-01-01T00:00:00Z"), d / "a");
  write_run_dir(variant("run-b", "2026-01-02T00:00:00Z"), d / "b");
  // A store in a directory this user cannot write (no -shm file can be made there).
  const fs::path rodir = d / "rodir", store = rodir / "s.sqlite3";
  fs::create_directories(rodir);
  ASSERT_EQ(run_command_line(kBin + " store import " + (d / "a").string() + " --store " + store.string()).code, 0);
  ASSERT_FALSE(fs::exists(store.string() + "-wal"));
  fs::permissions(rodir, fs::perms::owner_read | fs::perms::owner_exec | fs::perms::group_read | fs::perms::group_exec |
                             fs::perms::others_read | fs::perms::others_exec);
  fs::permissions(store, fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read);
  fs::permissions(d, fs::perms::all);
  fs::permissions(d / "b", fs::perms::all);
  // The reader runs a copy of the binary beside the store: the build tree may
  // be out of its reach (a checkout under root's 0700 home, on a fresh machine).
  const std::string bin = (d / "flopwatt").string();
  fs::copy_file(kBin, bin);
  fs::permissions(bin, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec | fs::perms::others_read |
                           fs::perms::others_exec);
  auto r = run_command_line(as_reader() + bin + " store ls --format csv --store " + store.string());
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(lines(r.out), 2u) << r.out;
  r = run_command_line(as_reader() + bin + " store export --format csv --store " + store.string());
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(lines(r.out), 10u) << r.out;
  r = run_command_line(as_reader() + bin + " store import " + (d / "b").string() + " --store " + store.string());
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.err.find("read-only"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("write access"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("move"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  fs::permissions(rodir, fs::perms::all);
  fs::remove_all(d);
}

TEST(Store, AFullDiskIsSaidAsSuchAndLosesNothingRecorded) {
  const fs::path d = temp_dir("store", "full");
  const fs::path store = d / "s.sqlite3";
  write_run_dir(variant("first", "2026-01-01T00:00:00Z"), d / "first");
  ASSERT_EQ(run_command_line(kBin + " store import " + (d / "first").string() + " --store " + store.string()).code, 0);
  std::string dirs;
  for (int i = 0; i < 20; ++i) {
    write_run_dir(variant(fmt::format("more-{}", i), "2026-01-02T00:00:00Z"), d / fmt::format("m{}", i));
    dirs += ' ';
    dirs += (d / fmt::format("m{}", i)).string();
  }
  // The file size limit stands for a full filesystem: past it a write comes
  // back short, which is what SQLite reports as SQLITE_FULL (os_unix.c unixWrite).
  const long blocks = static_cast<long>(fs::file_size(store) / 512) + 16;
  auto r = run_command_line(fmt::format("sh -c \"trap '' XFSZ; ulimit -f {}; exec {} store import{} --store {}\"", blocks,
                                        kBin, dirs, store.string()));
  EXPECT_EQ(r.code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("no space left"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("free space"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("move"), std::string::npos) << r.err;
  // What was recorded before is all there, and no run is there in part.
  r = run_command_line(ls(store));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("first"), std::string::npos) << r.out;
  auto s = flopwatt::store::Store::open(flopwatt::store::resolve(store.string()), false);
  for (const auto& id : s->run_ids()) {
    const auto n = s->db().query("SELECT COUNT(*) FROM measurements WHERE run_id = $1", {id});
    EXPECT_EQ(n.at(0).at(0).value_or(""), "9") << id;
  }
  fs::remove_all(d);
}

// `store show --format csv` is the table alone (it printed "tags:" and a blank
// line above the header); markdown names the tags when the run has some.
TEST(Store, ShowAsCsvIsPureCsvAndMarkdownNamesTags) {
  const fs::path d = temp_dir("store", "show_csv");
  const fs::path store = d / "s.sqlite3";
  ASSERT_EQ(run_command_line(quick_run(d / "r", "--store " + store.string() + " --tag nightly")).code, 0);
  auto r = run_command_line(kBin + " store show latest --format csv --store " + store.string());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("run,workload,op,", 0), 0u) << r.out;
  EXPECT_EQ(lines(r.out), 2u) << r.out;  // header + the one GEMM row
  r = run_command_line(kBin + " store show latest --store " + store.string());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("tags: nightly\n", 0), 0u) << r.out;
  fs::remove_all(d);
}

// Ctrl-C during a long import ends it between runs (exit 130) with every run
// it recorded committed; the same command again imports the rest and counts
// those as already there. It used to go on to the end.
TEST(Store, AnInterruptedImportKeepsWhatItStoredAndTheSameCommandFinishesIt) {
  const fs::path d = temp_dir("store", "interrupted_import");
  const fs::path store = d / "s.sqlite3", runs = d / "runs";
  write_run_dir(variant("import-seed-run", "2026-06-01T00:00:00Z"), d / "seed");
  const std::string text = slurp(d / "seed" / "run.json");
  constexpr int kRuns = 1000;
  for (int i = 0; i < kRuns; ++i) {
    std::string t = text;
    for (auto at = t.find("import-seed-run"); at != std::string::npos; at = t.find("import-seed-run", at + 1))
      t.replace(at, 15, fmt::format("import-{:08d}", i));
    fs::create_directories(runs / fmt::format("r{:05d}", i));
    std::ofstream(runs / fmt::format("r{:05d}", i) / "run.json") << t;
  }
  auto stored = [&store]() -> long {
    try {
      auto db = flopwatt::store::open_sqlite(store.string(), false, true);
      return std::atol(db->query("SELECT COUNT(*) FROM runs").at(0).at(0)->c_str());
    } catch (const std::exception&) {
      return 0;  // not made yet, or its schema not yet committed
    }
  };
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    freopen("/dev/null", "w", stdout);
    freopen((d / "err.txt").c_str(), "w", stderr);
    execl(FLOPWATT_BINARY, FLOPWATT_BINARY, "store", "import", runs.c_str(), "--store", store.c_str(), (char*)nullptr);
    _exit(127);
  }
  // Interrupted once a batch is committed, well before the end.
  for (int i = 0; i < 3000 && stored() == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  kill(pid, SIGINT);
  int st = 0;
  waitpid(pid, &st, 0);
  ASSERT_TRUE(WIFEXITED(st)) << "killed by signal " << (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
  const std::string err = slurp(d / "err.txt");
  EXPECT_EQ(WEXITSTATUS(st), 130) << err;
  EXPECT_NE(err.find("interrupted after"), std::string::npos) << err;
  const long kept = stored();
  EXPECT_GT(kept, 0);
  EXPECT_LT(kept, kRuns) << "the import ran to its end";
  const auto r = run_command_line(kBin + " store import " + runs.string() + " --store " + store.string());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find(fmt::format("imported {} run(s)", kRuns - kept)), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(fmt::format("{} already there", kept)), std::string::npos) << r.out;
  EXPECT_EQ(stored(), kRuns);
  fs::remove_all(d);
}

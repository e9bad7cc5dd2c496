// The results store on SQLite, end to end through the built binary: every run
// recorded, two writers at once, files that are not ours left untouched,
// import idempotent, awkward tags, compare and history.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <fmt/core.h>

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
  EXPECT_NE(r.err.find("fw:***@"), std::string::npos) << r.err;
  // The server out of reach: the run waits in the local store for `store push`.
  EXPECT_NE(r.err.find("kept in"), std::string::npos) << r.err;
  EXPECT_EQ((r.out + r.err + slurp(d / "r/run.json")).find("s3cr3tpw"), std::string::npos);
  // The command line is kept, the password masked.
  const auto ctx = nlohmann::json::parse(slurp(d / "r/run.json"))["context"];
  EXPECT_NE(ctx["command_line"].get<std::string>().find("--store 'postgresql://fw:***@/nodb?host="), std::string::npos)
      << ctx.dump();
  EXPECT_EQ(flopwatt::store::masked("host=/s password='a b\\'c' dbname=x"), "host=/s password=*** dbname=x");
  EXPECT_EQ(flopwatt::store::masked("postgresql://u@h/db?password=zz&sslmode=verify-full"),
            "postgresql://u@h/db?password=***&sslmode=verify-full");
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

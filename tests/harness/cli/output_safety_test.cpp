// Files a run writes into --out (and --save) never follow a link planted there,
// get explicit modes whatever the umask, never replace another run unasked and
// leave no temporary behind when a write fails. The planted-link cases run as
// an unprivileged user through setpriv: root would be the worst case for the
// victim, but an unprivileged writer is the one the directory's permissions
// let through, so that is what the attacker's links have to fool.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "tests/harness/cli_support.h"

namespace {

namespace fs = std::filesystem;
using flopwatt::testing::CommandResult;
using flopwatt::testing::run_command_line;
using flopwatt::testing::slurp;

const std::string kRun =
    " run gemm --backend cpu:reference --shapes 8,8,8 --idle 0 --no-peak --min-time 0 --min-reps 1 --power none";

unsigned mode_of(const fs::path& p) {
  struct stat st {};
  if (::lstat(p.c_str(), &st) != 0) return 0;
  return st.st_mode & 07777;
}

bool is_regular_file_not_link(const fs::path& p) {
  struct stat st {};
  return ::lstat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

int count_temporaries(const fs::path& dir) {
  int n = 0;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.path().filename().string().find(".tmp") != std::string::npos ||
        e.path().filename().string().find("write-test") != std::string::npos)
      ++n;
  return n;
}

// A world-writable shared directory (like /tmp) holding the victim's file, a
// copy of flopwatt nobody can run, and an output directory an attacker filled.
struct SharedDir {
  fs::path root = flopwatt::testing::temp_dir("output_safety", ::testing::UnitTest::GetInstance()->current_test_info()->name());
  fs::path bin = root / "flopwatt";
  fs::path victim = root / "victim.txt";
  fs::path out = root / "shared" / "out";
  SharedDir() {
    ::chmod(root.c_str(), 0755);
    fs::copy_file(FLOPWATT_BINARY, bin, fs::copy_options::overwrite_existing);
    ::chmod(bin.c_str(), 0755);
    std::ofstream(victim) << "precious\n";
    // The victim is nobody's own file: a write through a link would succeed.
    EXPECT_EQ(::chown(victim.c_str(), 65534, 65534), 0);
    ::chmod(victim.c_str(), 0644);
    fs::create_directories(out);
    ::chmod((root / "shared").c_str(), 01777);
    ::chmod(out.c_str(), 0777);
  }
  ~SharedDir() { fs::remove_all(root); }
  void plant(const std::string& name) { fs::create_symlink(victim, out / name); }
  CommandResult run_as_nobody(const std::string& args) {
    return run_command_line("setpriv --reuid=65534 --regid=65534 --clear-groups " + bin.string() + args);
  }
};

bool can_switch_user() { return geteuid() == 0 && std::system("command -v setpriv >/dev/null 2>&1") == 0; }

TEST(OutputSafety, PlantedTemporaryAndProbeLinksAreNeverWrittenThrough) {
  if (!can_switch_user()) GTEST_SKIP() << "needs root and setpriv (util-linux) to run as nobody";
  SharedDir d;
  // The names the writer used to create with a plain open(): each would have
  // truncated or overwritten the victim.
  for (const char* n : {"run.json.tmp", "measurements.csv.tmp", ".flopwatt-write-test"}) d.plant(n);
  const CommandResult r = d.run_as_nobody(kRun + " --out " + d.out.string());
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(slurp(d.victim), "precious\n");
  EXPECT_TRUE(is_regular_file_not_link(d.out / "run.json"));
  EXPECT_NE(slurp(d.out / "run.json").find("\"complete\": true"), std::string::npos);
}

TEST(OutputSafety, PlantedOutputLinksAreRefusedThenReplacedNotFollowed) {
  if (!can_switch_user()) GTEST_SKIP() << "needs root and setpriv (util-linux) to run as nobody";
  SharedDir d;
  for (const char* n : {"samples.csv", "run.json", "measurements.csv"}) d.plant(n);
  const CommandResult refused = d.run_as_nobody(kRun + " --out " + d.out.string());
  EXPECT_EQ(refused.code, 2) << refused.err;
  EXPECT_NE(refused.err.find("--out"), std::string::npos) << refused.err;
  EXPECT_NE(refused.err.find("--overwrite"), std::string::npos) << refused.err;
  EXPECT_EQ(slurp(d.victim), "precious\n");

  const CommandResult r = d.run_as_nobody(kRun + " --overwrite --out " + d.out.string());
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(slurp(d.victim), "precious\n");
  for (const char* n : {"samples.csv", "run.json", "measurements.csv"}) {
    EXPECT_TRUE(is_regular_file_not_link(d.out / n)) << n;
    EXPECT_EQ(mode_of(d.out / n), 0644u) << n;
  }
  EXPECT_EQ(slurp(d.out / "samples.csv").rfind("source_id,t_ns,value,unit\n", 0), 0u);
}

TEST(OutputSafety, OutputDirectoryThatIsALinkIsRefused) {
  if (!can_switch_user()) GTEST_SKIP() << "needs root and setpriv (util-linux) to run as nobody";
  SharedDir d;
  const fs::path elsewhere = d.root / "victims_dir";
  fs::create_directories(elsewhere);
  ::chown(elsewhere.c_str(), 65534, 65534);
  fs::create_symlink(elsewhere, d.root / "shared" / "run1");
  const CommandResult r = d.run_as_nobody(kRun + " --out " + (d.root / "shared" / "run1").string());
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_TRUE(fs::is_empty(elsewhere));
}

TEST(OutputSafety, SaveNeverWritesThroughAPlantedLink) {
  if (!can_switch_user()) GTEST_SKIP() << "needs root and setpriv (util-linux) to run as nobody";
  SharedDir d;
  d.plant("model.bin.tmp");
  const CommandResult r = d.run_as_nobody(
      " run gpt2 --model tiny --steps 1 --batch 1 --seq 8 --idle 0 --power none --min-time 0 --min-reps 1 --out " +
      (d.out / "run").string() + " --save " + (d.out / "model.bin").string());
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(slurp(d.victim), "precious\n");
  EXPECT_TRUE(is_regular_file_not_link(d.out / "model.bin"));
  EXPECT_EQ(mode_of(d.out / "model.bin"), 0644u);
}

TEST(OutputSafety, ModesDoNotComeFromTheUmask) {
  const fs::path root = flopwatt::testing::temp_dir("output_safety", "umask");
  for (const char* mask : {"000", "077"}) {
    const fs::path out = root / mask / "nested" / "run";
    const CommandResult r =
        run_command_line(std::string("umask ") + mask + "; " FLOPWATT_BINARY + kRun + " --out " + out.string());
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_EQ(mode_of(out), 0755u) << mask;
    EXPECT_EQ(mode_of(out.parent_path()), 0755u) << mask;
    for (const char* n : {"samples.csv", "run.json", "measurements.csv"}) EXPECT_EQ(mode_of(out / n), 0644u) << mask << n;
  }
  fs::remove_all(root);
}

TEST(OutputSafety, AnotherRunIsKeptUnlessOverwriteAndItsPlotsGoWithIt) {
  const fs::path out = flopwatt::testing::temp_dir("output_safety", "rerun");
  ASSERT_EQ(run_command_line(FLOPWATT_BINARY + kRun + " --out " + out.string()).code, 0);
  const std::string first = slurp(out / "run.json");
  fs::create_directories(out / "plots");
  std::ofstream(out / "plots" / "flops.png") << "old";
  const CommandResult again = run_command_line(FLOPWATT_BINARY + kRun + " --out " + out.string());
  EXPECT_EQ(again.code, 2);
  EXPECT_EQ(slurp(out / "run.json"), first);
  EXPECT_TRUE(fs::exists(out / "plots" / "flops.png"));
  const CommandResult over = run_command_line(FLOPWATT_BINARY + kRun + " --overwrite --out " + out.string());
  EXPECT_EQ(over.code, 0) << over.err;
  EXPECT_NE(slurp(out / "run.json"), first);
  EXPECT_FALSE(fs::exists(out / "plots"));
  fs::remove_all(out);
}

TEST(OutputSafety, AFailedWriteLeavesNoTemporary) {
  const fs::path out = flopwatt::testing::temp_dir("output_safety", "full");
  // A file-size limit of 1 KiB makes run.json's write fail (EFBIG) as a full disk would.
  const CommandResult r = run_command_line("trap '' XFSZ; ulimit -f 1; " FLOPWATT_BINARY + kRun + " --out " +
                                           (out / "run").string());
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.code, -1);
  EXPECT_EQ(count_temporaries(out), 0);
  fs::remove_all(out);
}

// A file name (or a sysfs name) that is not UTF-8 cannot go into JSON as it
// is: it becomes U+FFFD instead of costing the whole report (was exit 1 and no
// run.json). The power log's name is part of its source id.
TEST(OutputSafety, InvalidUtf8InANameStillGivesAReport) {
  const fs::path root = flopwatt::testing::temp_dir("output_safety", "utf8");
  const fs::path log = root / "meter\xff.csv";
  std::ofstream(log) << "# clock: relative\n0,5\n0.5,5\n1,5\n";
  const CommandResult r = run_command_line(
      FLOPWATT_BINARY " run gemm --backend cpu:reference --shapes 8,8,8 --idle 0 --no-peak --min-time 0 --min-reps 1 "
      "--sysfs-root " + root.string() + " --power-log '" + log.string() + "' --out " + (root / "run").string());
  EXPECT_EQ(r.code, 0) << r.err;
  const std::string j = slurp(root / "run" / "run.json");
  EXPECT_NE(j.find("\"complete\": true"), std::string::npos) << j.substr(0, 200);
  EXPECT_NE(j.find("external:meter\xef\xbf\xbd"), std::string::npos);  // U+FFFD in UTF-8
  fs::remove_all(root);
}

}  // namespace

// The man page and the bash completion the binary prints (harness/cli/docs.cpp):
// the man page's EXIT STATUS, ENVIRONMENT and FILES sections, the environment
// held against every variable the source tree reads, and what completion offers
// after a flag, a command and `measure --`, run through bash as a user's TAB would.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "tests/harness/cli_support.h"

namespace {

namespace fs = std::filesystem;
using flopwatt::testing::run_command_line;

std::string man_page() {
  const auto r = run_command_line(std::string(FLOPWATT_BINARY) + " --help-man");
  EXPECT_EQ(r.code, 0) << r.err;
  return r.out;
}

// The text of one `.SH NAME` section, up to the next.
std::string section(const std::string& man, const std::string& name) {
  const std::string head = ".SH " + name + "\n";
  const auto at = man.find(head);
  if (at == std::string::npos) return "";
  const auto end = man.find("\n.SH ", at + head.size());
  return man.substr(at + head.size(), end == std::string::npos ? std::string::npos : end - at - head.size());
}

// Every environment variable a source file of flopwatt reads: getenv("X"),
// the NPU simulator's env("X") and the replay's k...Env = "X" constant.
std::set<std::string> variables_read() {
  static const std::regex read_call(R"re((?:getenv|\benv)\("([A-Z][A-Z0-9_]+)"\)|Env\s*=\s*"([A-Z][A-Z0-9_]+)")re");
  std::set<std::string> names;
  for (const char* dir : {"api", "cpu", "harness", "npu", "power", "sysfs", "workloads"}) {
    for (const auto& e : fs::recursive_directory_iterator(fs::path(FLOPWATT_SOURCE_DIR) / dir)) {
      const auto ext = e.path().extension();
      if (!e.is_regular_file() || (ext != ".cpp" && ext != ".h" && ext != ".py")) continue;
      const std::string text = flopwatt::testing::slurp(e.path());
      for (std::sregex_iterator m(text.begin(), text.end(), read_call), end; m != end; ++m)
        names.insert((*m)[1].matched ? (*m)[1].str() : (*m)[2].str());
    }
  }
  return names;
}

TEST(ManPage, ExitStatusListsEveryStatus) {
  const std::string s = section(man_page(), "EXIT STATUS");
  for (const char* status : {"0", "1", "2", "3", "130", "measure"})
    EXPECT_NE(s.find(".B " + std::string(status) + "\n"), std::string::npos) << status << " missing from:\n" << s;
  EXPECT_NE(s.find("regression"), std::string::npos) << s;
}

TEST(ManPage, EnvironmentListsEveryVariableTheProgramReads) {
  const std::set<std::string> read = variables_read();
  // The scan itself: it must see the variables the issue found missing.
  for (const char* v : {"FLOPWATT_SYSFS_ROOT", "FLOPWATT_MACHINE_LABEL", "FLOPWATT_PEAK_DIR", "XDG_DATA_HOME",
                        "FLOPWATT_REPLAY_START", "FLOPWATT_NPU_TIMING_ONLY"})
    EXPECT_TRUE(read.count(v)) << "the scan of getenv calls did not find " << v;
  const std::string s = section(man_page(), "ENVIRONMENT");
  for (const auto& v : read) EXPECT_NE(s.find(".B " + v), std::string::npos) << v << " is read but not in ENVIRONMENT";
}

TEST(ManPage, FilesNamesTheDataDirectoryTheStoreAndThePeakCache) {
  const std::string s = section(man_page(), "FILES");
  for (const char* f : {"flopwatt/runs/<run\\-id>/", "flopwatt/results.sqlite3", "flopwatt/peaks/"})
    EXPECT_NE(s.find(f), std::string::npos) << f << " missing from:\n" << s;
}

TEST(Help, FooterPrintsTheSameTables) {
  const auto r = run_command_line(std::string(FLOPWATT_BINARY) + " --help");
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* s : {"Exit status:", "Environment:", "Files:", "130", "FLOPWATT_PEAK_DIR", "XDG_DATA_HOME",
                        "results.sqlite3", "--help-man"})
    EXPECT_NE(r.out.find(s), std::string::npos) << s;
  // Only the top level: a subcommand's help is its own options.
  const auto sub = run_command_line(std::string(FLOPWATT_BINARY) + " run gemm --help");
  EXPECT_EQ(sub.out.find("Environment:"), std::string::npos);
}

class Completion : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = flopwatt::testing::temp_dir("docs", "completion");
    const auto r = run_command_line(std::string(FLOPWATT_BINARY) + " --help-bash-completion");
    ASSERT_EQ(r.code, 0) << r.err;
    std::ofstream(dir_ / "flopwatt.bash") << r.out;
    std::ofstream(dir_ / "first_file.txt") << "x";
  }
  void TearDown() override { fs::remove_all(dir_); }

  // What TAB offers at the end of `line`, with bash's default word breaks.
  // The first word is the program completion runs for the store's run ids.
  std::set<std::string> complete(const std::string& line) {
    std::ofstream(dir_ / "line") << line;
    const std::string script = "source '" + (dir_ / "flopwatt.bash").string() + "'\n" +
                               "COMP_LINE=$(< '" + (dir_ / "line").string() + "')\n" +
                               "COMP_POINT=${#COMP_LINE}\n"
                               "COMP_WORDBREAKS=$' \\t\\n\"\\'><=;|&(:'\n"
                               "read -ra COMP_WORDS <<< \"$COMP_LINE\"\n"
                               "[[ $COMP_LINE == *' ' ]] && COMP_WORDS+=(\"\")\n"
                               "COMP_CWORD=$((${#COMP_WORDS[@]} - 1))\n"
                               "_flopwatt\n"
                               "printf '%s\\n' \"${COMPREPLY[@]}\"\n";
    std::ofstream(dir_ / "run.sh") << script;
    const auto r = run_command_line("bash '" + (dir_ / "run.sh").string() + "'");
    EXPECT_EQ(r.code, 0) << r.err;
    std::set<std::string> words;
    std::istringstream in(r.out);
    for (std::string w; std::getline(in, w);)
      if (!w.empty()) words.insert(w);
    return words;
  }
  fs::path dir_;
};

TEST_F(Completion, BackendsAfterBackendFlags) {
  const auto gemm = complete("flopwatt run gemm --backend ");
  for (const char* b : {"cpu:reference", "cpu:llmc", "npu:sim-phoenix", "npu:xdna", "available", "all"})
    EXPECT_TRUE(gemm.count(b)) << b;
  const auto gpt2 = complete("flopwatt run gpt2 --gemm-backend ");
  EXPECT_TRUE(gpt2.count("cpu:llmc"));
  EXPECT_FALSE(gpt2.count("available"));  // one backend, not a list
  // After "cpu:" bash replaces only what follows the colon; after a comma, the next item.
  EXPECT_EQ(complete("flopwatt run gemm --backend cpu:ll"), std::set<std::string>{"llmc"});
  EXPECT_EQ(complete("flopwatt run gemm --backend cpu:llmc,cpu:re"), std::set<std::string>{"reference"});
}

TEST_F(Completion, ListedValuesOfFormatShapesModelAndHistoryMetric) {
  EXPECT_EQ(complete("flopwatt report --format "), (std::set<std::string>{"md", "csv", "json", "html"}));
  EXPECT_EQ(complete("flopwatt store export --format "), (std::set<std::string>{"csv", "json"}));
  EXPECT_EQ(complete("flopwatt run gemm --shapes "), (std::set<std::string>{"gpt2-124m", "square"}));
  EXPECT_EQ(complete("flopwatt run gpt2 --model d"), (std::set<std::string>{"d12", "d24", "d36", "d48"}));
  EXPECT_EQ(complete("flopwatt history "),
            (std::set<std::string>{"flop_per_s", "flop_per_j", "median_s", "energy_j"}));
  EXPECT_EQ(complete("flopwatt history flop_per_j --format j"), std::set<std::string>{"json"});
}

TEST_F(Completion, OpsAfterOp) {
  const auto ops = complete("flopwatt history flop_per_j --op ");
  for (const char* op : {"qkv", "fc_dweight", "lm_head_dinp", "adamw", "step", "softmax_xent"})
    EXPECT_TRUE(ops.count(op)) << op;
}

TEST_F(Completion, CommandsAndFlags) {
  EXPECT_EQ(complete("flopwatt ru"), std::set<std::string>{"run"});
  const auto run = complete("flopwatt run ");
  for (const char* c : {"gemm", "gpt2", "peak", "default"}) EXPECT_TRUE(run.count(c)) << c;
  EXPECT_TRUE(complete("flopwatt measure --re").count("--repeat"));
}

TEST_F(Completion, MeasureCompletesACommandThenFiles) {
  EXPECT_TRUE(complete("flopwatt measure --repeat 3 -- bas").count("bash"));
  const std::string prefix = (dir_ / "first_").string();
  EXPECT_EQ(complete("flopwatt measure -- cat " + prefix), std::set<std::string>{prefix + "file.txt"});
  // A flag's value that is a path: files.
  EXPECT_EQ(complete("flopwatt run gemm --out " + prefix), std::set<std::string>{prefix + "file.txt"});
}

TEST_F(Completion, StoredRunIdsAfterCompareAndStoreShow) {
  // A run recorded in the test's store (XDG_DATA_HOME, tests/test_environment.cpp).
  const fs::path out = dir_ / "run";
  const auto r = run_command_line(std::string(FLOPWATT_BINARY) + " measure --power none --out " + out.string() + " -- true");
  ASSERT_EQ(r.code, 0) << r.err;
  std::smatch m;
  const std::string run_json = flopwatt::testing::slurp(out / "run.json");
  ASSERT_TRUE(std::regex_search(run_json, m, std::regex(R"re("run_id"\s*:\s*"([^"]+)")re")));
  const std::string id = m[1];
  const auto base = complete(std::string(FLOPWATT_BINARY) + " compare ");
  for (const std::string& w : {id, std::string("latest"), std::string("previous")}) EXPECT_TRUE(base.count(w)) << w;
  EXPECT_TRUE(complete(std::string(FLOPWATT_BINARY) + " store show " + id.substr(0, id.size() - 1)).count(id));
  // The directory of a run is a side too.
  EXPECT_TRUE(complete(std::string(FLOPWATT_BINARY) + " compare " + out.string().substr(0, out.string().size() - 1))
                  .count(out.string()));
}

}  // namespace

// `flopwatt plot DIR`: renders PNG and SVG figures of a run or campaign with
// scripts/plot.py (matplotlib from the distribution's python3-matplotlib).
#include <fmt/core.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "harness/cli/commands.h"
#include "harness/analysis/report.h"
#include "harness/output/headline_view.h"
#include "harness/output/version.h"
#include "npu/xdna/fork_guard.h"
#include "workloads/error.h"

namespace fs = std::filesystem;

namespace flopwatt {

namespace {

struct PlotArgs {
  std::string dir, out, formats = "png,svg";
};

// The distribution's interpreter, where python3-matplotlib installs; a
// virtualenv's python3 on PATH may lack it.
constexpr const char* kPython = "/usr/bin/python3";

std::string plot_script() {
  const char* env = std::getenv("FLOPWATT_SCRIPTS");
  const fs::path p = env && *env ? fs::path(env) / "plot.py" : fs::path(FLOPWATT_SOURCE_DIR) / "scripts" / "plot.py";
  if (!fs::exists(p))
    throw InputError(p.string(), "plot script not found",
                     "set FLOPWATT_SCRIPTS to the directory holding plot.py (scripts/ of the flopwatt sources)");
  return p.string();
}

// plot.py reads each row's judged headline (run.json's measurements[].headline_source) and has no
// rule of its own. Runs written before rows recorded theirs get it here, from the one rule
// (headline_of), in a copy of the directory plot.py reads; the user's files are left as they are.
// Returns the copy's root, or "" when every row already has its headline.
std::string with_row_headlines(const std::string& dir) {
  std::vector<fs::path> files;
  for (auto it = fs::recursive_directory_iterator(dir); it != fs::recursive_directory_iterator(); ++it) {
    if (it.depth() > 2) it.disable_recursion_pending();
    if (it->is_regular_file() && it->path().filename() == "run.json") files.push_back(it->path());
  }
  std::vector<std::pair<fs::path, nlohmann::json>> patched;
  for (const auto& f : files) {
    std::ifstream in(f);
    nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
    if (j.is_discarded() || !j.contains("measurements") || !j["measurements"].is_array()) continue;
    bool missing = false;
    for (const auto& m : j["measurements"]) missing = missing || (m.is_object() && !m.contains("headline_source"));
    if (!missing) continue;
    const Run run = run_from_json(j);
    for (std::size_t i = 0; i < run.measurements.size() && i < j["measurements"].size(); ++i)
      if (!j["measurements"][i].contains("headline_source")) {
        const auto h = headline_of(run, run.measurements[i]).source;
        j["measurements"][i]["headline_source"] = h ? nlohmann::json(*h) : nlohmann::json(nullptr);
      }
    patched.emplace_back(fs::relative(f, dir), std::move(j));
  }
  if (patched.empty()) return "";
  char tmpl[] = "/tmp/flopwatt-plot-XXXXXX";
  if (!mkdtemp(tmpl)) throw std::runtime_error(std::string("mkdtemp: ") + std::strerror(errno));
  const fs::path copy = fs::path(tmpl) / fs::path(dir).lexically_normal().filename();
  fs::copy(dir, copy, fs::copy_options::recursive);
  for (const auto& [rel, j] : patched) std::ofstream(copy / rel, std::ios::trunc) << j.dump(1) << "\n";
  return copy.string();
}

int run_plot(PlotArgs& a) {
  load_runs(a.dir);  // the same one-line error as `flopwatt report` for a bad directory
  const std::string script = plot_script();
  if (access(kPython, X_OK) != 0)
    throw InputError(kPython, "not found", "install python3-matplotlib (apt-get install python3-matplotlib)");
  const std::string out = fs::absolute(a.out.empty() ? (fs::path(a.dir) / "plots") : fs::path(a.out)).string();
  const std::string copy = with_row_headlines(a.dir);
  struct Cleanup {
    std::string dir;
    ~Cleanup() {
      std::error_code ec;
      if (!dir.empty()) fs::remove_all(fs::path(dir).parent_path(), ec);
    }
  } cleanup{copy};
  std::vector<std::string> args = {kPython, script, copy.empty() ? a.dir : copy, "--out", out, "--formats", a.formats};
  std::vector<char*> argv;
  for (auto& s : args) argv.push_back(s.data());
  argv.push_back(nullptr);
  std::fflush(stdout);
  npu::xdna::release_contexts_before_fork();  // a child's close would end them (npu/xdna/fork_guard.h)
  const pid_t pid = fork();
  if (pid == 0) {
    execv(kPython, argv.data());
    std::fprintf(stderr, "flopwatt: cannot run %s: %s\n", kPython, std::strerror(errno));
    _exit(127);
  }
  if (pid < 0) throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  // plot.py follows the CLI contract itself (2: bad input with one line on stderr).
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

}  // namespace

void register_plot(CLI::App& app, CliState& st) {
  auto* cmd = app.add_subcommand("plot", "PNG/SVG figures of a run or campaign: power trace, FLOP/s, FLOP/J, mains vs battery");
  auto a = std::make_shared<PlotArgs>();
  cmd->add_option("dir", a->dir, "Run directory (run.json) or campaign directory (campaign.json)")->required();
  cmd->add_option("--out", a->out, "Directory for the figures (default DIR/plots)");
  cmd->add_option("--formats", a->formats, "Comma-separated: png,svg (default both)");
  cmd->callback([a, &st] { st.exit_code = run_plot(*a); });
}

}  // namespace flopwatt

#include "harness/run/session.h"

#include <csignal>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <random>
#include <unistd.h>

#include "harness/output/headline_view.h"
#include "harness/output/text.h"
#include "harness/run/statistics.h"
#include "workloads/error.h"

namespace fs = std::filesystem;

namespace flopwatt {

namespace {

extern "C" void on_signal(int) { g_interrupted.store(true); }

}  // namespace

void install_interrupt_handler() {
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

std::string make_run_id() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  localtime_r(&t, &tm);
  char b[32];
  std::strftime(b, sizeof b, "%Y%m%d-%H%M%S", &tm);
  std::random_device rd;
  char s[8];
  std::snprintf(s, sizeof s, "-%04x", rd() & 0xffff);
  return std::string(b) + s;
}

// What a run leaves in its directory (plots/ is `flopwatt plot`'s default).
constexpr const char* kRunFiles[] = {"run.json", "measurements.csv", "samples.csv", "plots"};

Session::Session(Run header, std::string out_dir, bool overwrite)
    : run_(std::move(header)), out_dir_(std::move(out_dir)), dir_(out_dir_, "--out") {
  if (dir_.holds_any({kRunFiles[0], kRunFiles[1], kRunFiles[2]})) {
    if (!overwrite)
      throw InputError("--out " + out_dir_, "already holds a run (run.json, measurements.csv or samples.csv)",
                       "pass a new directory, or --overwrite to replace that run");
    for (const char* f : kRunFiles) dir_.remove(f);
  }
  samples_ = dir_.create_fresh("samples.csv");
  const std::string head = "source_id,t_ns,value,unit\n";
  if (!write_all(samples_, head.data(), head.size()))
    throw InputError("--out " + out_dir_, "cannot write samples.csv", "check free space in the --out directory");
  WriterTarget target;
  target.replace_file = [this](const std::string& name, const std::string& text) { dir_.replace(name, text); };
  target.out_dir = out_dir_;
  for (const char* name : {"json", "csv"}) writers_.push_back(make_writer(name, target));
  save();
}

Session::~Session() {
  if (samples_ >= 0) ::close(samples_);
}

void Session::save() {
  for (auto& w : writers_) w->context(run_);
}

void Session::add(Measurement m) {
  set_window_basis(m);
  place_measurement(m, roofs_);
  run_.measurements.push_back(std::move(m));
  for (auto& w : writers_) w->measurement(run_, run_.measurements.back());
}

void Session::add_samples(const std::vector<power::SourceSamples>& ss) {
  std::ostringstream os;
  for (const auto& s : ss)
    for (const auto& x : s.samples) os << csv_escape(s.id) << ',' << x.t_ns << ',' << x.value << ',' << s.unit << '\n';
  const std::string text = os.str();
  if (!write_all(samples_, text.data(), text.size()))
    throw InputError("--out " + out_dir_ + "/samples.csv", "write failed", "check free space in the --out directory");
}

void Session::finish(bool complete) {
  run_.complete = complete;
  const RunHeadline h = run_headline(run_);
  run_.energy_roofline =
      energy_roofline_json(run_, h.sources.empty() ? std::nullopt : std::optional(h.sources.front().first), roofs_);
  for (auto& w : writers_) w->finalize(run_);
}

}  // namespace flopwatt

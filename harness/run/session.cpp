#include "harness/run/session.h"

#include <csignal>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <random>

#include "harness/output/text.h"
#include "workloads/error.h"

namespace fs = std::filesystem;

namespace flopwatt {

namespace {

extern "C" void on_signal(int) { g_interrupted.store(true); }

// Write to a sibling temp file and rename over the target, so a reader (or a
// run killed mid-write) never sees a half-written file.
void write_atomically(const fs::path& path, const std::string& text) {
  const fs::path tmp = path.string() + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) throw InputError(path.string(), "cannot write", "check the --out directory's permissions and free space");
    f << text;
    f.flush();
    if (!f) throw InputError(path.string(), "write failed", "check free space in the --out directory");
  }
  fs::rename(tmp, path);
}

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

Session::Session(Run header, std::string out_dir) : run_(std::move(header)), out_dir_(std::move(out_dir)) {
  std::error_code ec;
  fs::create_directories(out_dir_, ec);
  if (ec || !fs::is_directory(out_dir_))
    throw InputError("--out " + out_dir_, "cannot create the output directory (" + ec.message() + ")",
                     "pass a writable directory with --out");
  const fs::path probe = fs::path(out_dir_) / ".flopwatt-write-test";
  {
    std::ofstream f(probe);
    if (!f) throw InputError("--out " + out_dir_, "directory is not writable", "pass a writable directory with --out");
  }
  fs::remove(probe, ec);
  samples_.open(fs::path(out_dir_) / "samples.csv", std::ios::trunc);
  samples_ << "source_id,t_ns,value,unit\n";
  samples_.flush();
  WriterTarget target;
  target.replace_file = [dir = fs::path(out_dir_)](const std::string& name, const std::string& text) {
    write_atomically(dir / name, text);
  };
  target.out_dir = out_dir_;
  for (const char* name : {"json", "csv"}) writers_.push_back(make_writer(name, target));
  save();
}

Session::~Session() = default;

void Session::save() {
  for (auto& w : writers_) w->context(run_);
}

void Session::add(Measurement m) {
  run_.measurements.push_back(std::move(m));
  for (auto& w : writers_) w->measurement(run_, run_.measurements.back());
}

void Session::add_samples(const std::vector<power::SourceSamples>& ss) {
  for (const auto& s : ss)
    for (const auto& x : s.samples) samples_ << csv_escape(s.id) << ',' << x.t_ns << ',' << x.value << ',' << s.unit << '\n';
  samples_.flush();
}

void Session::finish(bool complete) {
  run_.complete = complete;
  for (auto& w : writers_) w->finalize(run_);
}

}  // namespace flopwatt

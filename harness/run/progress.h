// A one-line progress display for long runs: current item, done/total,
// elapsed and ETA, redrawn in place on stderr with \r. Silent unless stdout
// and stderr are both terminals, so piped or redirected output (CI logs,
// scripts reading the tables) never carries control characters.
#pragma once
#include <cstddef>
#include <cstdio>
#include <optional>
#include <string>

namespace flopwatt {

// Remaining seconds extrapolated from the mean time per finished item;
// nullopt before the first item finishes (no rate to extrapolate from).
std::optional<double> eta_seconds(std::size_t done, std::size_t total, double elapsed_s);
// "7s", "1:05", "1:02:03": short enough for one terminal line.
std::string format_duration(double s);
// "[ 3/12] 25% cpu:openblas qkv | elapsed 0:12 | ETA 0:36", cut to `width`
// columns (the item is shortened first, the counters are kept).
std::string format_progress(const std::string& item, std::size_t done, std::size_t total, double elapsed_s,
                            std::size_t width);

class Progress {
 public:
  // enabled=nullopt: decide from isatty(stdout) && isatty(stderr).
  explicit Progress(std::optional<bool> enabled = std::nullopt, std::FILE* out = stderr);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  bool enabled() const { return enabled_; }
  // Shows `item` as the one being worked on, with `done` of `total` finished.
  void update(const std::string& item, std::size_t done, std::size_t total);
  // Shows a free-form line instead (a wait that counts seconds, not items).
  void status(const std::string& line);
  // Erases the line, so ordinary output can be printed; the next update redraws it.
  void clear();
  double elapsed_s() const;

 private:
  bool enabled_;
  std::FILE* out_;
  long long t0_ns_;
  bool drawn_ = false;
};

}  // namespace flopwatt

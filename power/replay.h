// A capture (power/capture.h) played back as a moving machine. Nothing is
// written: while a replay is installed, every read of one of its timeline's
// files through the machine-file layer (sysfs/files.h: read_text,
// read_u64_file, ...) gets the value the recording had at that moment of the
// replay, computed from the reader's own CLOCK_MONOTONIC when it reads. The
// rest of the tree (names, units, limits, directories) is read from the
// capture directory itself, which is the replay's root.
//
// Why no writer: a thread that rewrites the files every millisecond falls
// behind when the CPUs are busy (a counter read stale over half a window reads
// half the power), and one given SCHED_FIFO to keep up takes its CPU time from
// the very sampler that reads it. A value computed at the read has neither
// problem: a window's energy is the recording's, whatever the load.
//
// Between two rows an energy counter (powercap energy_uj, hwmon energy*_input)
// moves linearly, as RAPL's ~1 ms steps look from 100 ms apart; every other
// file keeps its last recorded value until its next row, as battery gauges
// that update every few seconds do. After the last row the timeline starts
// over: gauges repeat, and counters (battery energy_now and charge_now
// included) go on from where they ended, so a run longer than the capture
// still sees energy move and never a counter reset that was not recorded.
#pragma once
#include <cstdint>
#include <cstdio>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "sysfs/files.h"

namespace flopwatt::power {

struct TimelinePoint {
  double t = 0;
  std::string value;
};

struct TimelineSeries {
  enum class Kind { Gauge, Counter, Level };  // Counter: interpolated; Level: stepped but carried across loops
  Kind kind = Kind::Gauge;
  std::vector<TimelinePoint> points;  // ascending t
  std::uint64_t modulus = 0;          // Counter wrap (max_energy_range_uj + 1); 0: does not wrap
  std::vector<double> unwrapped;      // Counter and Level: the values with wraps undone, parsed once
};

struct Timeline {
  double duration_s = 0;
  std::map<std::string, TimelineSeries, std::less<>> series;  // path relative to the root; found by string_view
};

// dir holds capture.json and timeline.csv.
bool is_capture_dir(const std::string& dir);

// Throws ConfigError naming the file and line ("DIR/timeline.csv line 7: ...").
Timeline load_timeline(const std::string& dir);

// The file's content at t seconds from the start of the replay (t >= 0).
std::string value_at(const Timeline& tl, const TimelineSeries& s, double t);

// The environment variable through which a replay's start reaches the
// flopwatt processes it starts (a campaign's runs), so they play the same
// moment of the same capture: "<CLOCK_MONOTONIC ns> <capture directory>".
inline constexpr const char* kReplayStartEnv = "FLOPWATT_REPLAY_START";

class Replay : public sysfs::Overlay {
 public:
  // Loads the capture; throws ConfigError for a malformed one. Time 0 of the
  // recording is start_ns on CLOCK_MONOTONIC. Not installed until install().
  Replay(const std::string& capture_dir, std::int64_t start_ns);
  ~Replay() override;  // uninstalls itself
  Replay(const Replay&) = delete;
  Replay& operator=(const Replay&) = delete;

  // The root to read below: the capture directory.
  const std::string& root() const { return root_; }
  const Timeline& timeline() const { return tl_; }
  std::int64_t start_ns() const { return start_ns_; }
  // Seconds of the recording at CLOCK_MONOTONIC t_ns (0 before the start).
  double seconds_at(std::int64_t t_ns) const;

  // Answers reads through the machine-file layer from now on.
  void install();
  bool read(std::string_view path, std::string& text) const override;

 private:
  const TimelineSeries* series_for(std::string_view path) const;
  Timeline tl_;
  std::string root_;
  std::vector<std::string> prefixes_;  // root_ as given and canonical, each with a trailing '/'
  std::int64_t start_ns_ = 0;
  bool installed_ = false;
};

// root itself unless it is a capture directory; then also a replay of it is
// installed for the rest of the process (a note on `note` says so), starting
// now or at the moment FLOPWATT_REPLAY_START carries from a parent replaying
// the same capture, and the variable is set for the processes this one starts.
std::string replay_if_capture(const std::string& root, std::FILE* note);

}  // namespace flopwatt::power

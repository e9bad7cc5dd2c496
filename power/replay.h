// A capture (power/capture.h) played back as a moving machine: its tree is
// copied to a temporary root and a thread writes the timeline's values there
// at their times, so everything that reads --sysfs-root sees the counters
// and gauges move as they moved on the recorded machine.
//
// Between two rows an energy counter (powercap energy_uj, hwmon energy*_input)
// moves linearly, as RAPL's ~1 ms steps look from 100 ms apart; every other
// file keeps its last recorded value until its next row, as battery gauges
// that update every few seconds do. After the last row the timeline starts
// over: gauges repeat, and counters (battery energy_now and charge_now
// included) go on from where they ended, so a run longer than the capture
// still sees energy move and never a counter reset that was not recorded.
#pragma once
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

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
  std::map<std::string, TimelineSeries> series;  // path relative to the root
};

// dir holds capture.json and timeline.csv.
bool is_capture_dir(const std::string& dir);

// Throws ConfigError naming the file and line ("DIR/timeline.csv line 7: ...").
Timeline load_timeline(const std::string& dir);

// The file's content at t seconds from the start of the replay (t >= 0).
std::string value_at(const Timeline& tl, const TimelineSeries& s, double t);

class Replay {
 public:
  // Copies the capture to a temporary root and starts writing; throws
  // ConfigError for a malformed capture.
  explicit Replay(const std::string& capture_dir);
  ~Replay();
  Replay(const Replay&) = delete;
  Replay& operator=(const Replay&) = delete;
  const std::string& root() const { return root_; }
  const Timeline& timeline() const { return tl_; }

 private:
  void write_all(double t);
  Timeline tl_;
  std::string root_;
  std::map<std::string, std::string> written_;
  std::int64_t t0_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// root itself unless it is a capture directory; then a replay of it, kept
// for the rest of the process, whose temporary root is returned (a note on
// `note` says so).
std::string replay_if_capture(const std::string& root, std::FILE* note);

}  // namespace flopwatt::power

// An external meter (a wall-socket logger, a lab supply) delivering
// `t_seconds,watts` lines through a file or a FIFO. A header states the clock:
//   # clock: realtime   (seconds since the epoch, CLOCK_REALTIME)
//   # clock: relative   (seconds since flopwatt opened the log)
// Domain `wall`: everything behind the plug.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "power/config_error.h"
#include "power/source.h"

namespace flopwatt::power {

// Turns log text into monotonic-clock samples; throws ConfigError naming the
// file and line on anything it cannot read.
class PowerLogParser {
 public:
  // opened_mono_ns: the moment "relative" time 0 refers to.
  PowerLogParser(std::string path, std::int64_t opened_mono_ns);
  // Feeds a chunk (may end mid-line); appends complete samples to out.
  void feed(const char* data, std::size_t n, std::vector<Sample>& out);
  // Parses a final line without a newline (end of a finished file).
  void finish(std::vector<Sample>& out);
  std::size_t dropped_out_of_order() const { return dropped_; }
  bool saw_clock() const { return clock_ != Clock::Unknown; }

 private:
  enum class Clock { Unknown, Realtime, Relative };
  void line(const std::string& l, std::vector<Sample>& out);
  std::string path_;
  std::int64_t opened_mono_ns_;
  std::int64_t real_minus_mono_ns_;
  Clock clock_ = Clock::Unknown;
  std::string partial_;
  std::size_t line_no_ = 0;
  std::int64_t last_t_ = INT64_MIN;
  std::size_t dropped_ = 0;
};

// "external:" + the file name without directory and extension.
std::string external_source_id(const std::string& path);

// Validates what the log holds now; throws ConfigError for a missing file, a
// log with neither a clock header nor a sample, or a malformed line. A FIFO is
// not opened (only its permissions checked): opening and closing it would
// leave its writer without a reader. A file with only its header is a meter
// that has just started: accepted, and read on as it grows.
void check_power_log(const std::string& path);

// Opens the log as a source, once: a FIFO or a growing file is read as a
// stream through that one descriptor. Throws ConfigError like check_power_log.
std::unique_ptr<PowerSource> open_power_log(const std::string& path);

}  // namespace flopwatt::power

// `flopwatt capture`: a machine's power interfaces recorded as a fixture tree
// that flopwatt reads back with --sysfs-root, plus a timeline of every counter
// and gauge under a short load, so a laptop nobody here owns can be replayed
// as a moving machine (power/replay.h).
//
// Layout of a capture directory, the same as a hand-written fixture under
// tests/fixtures/power/ so either reads as a static tree:
//   sys/..., proc/...   attribute files as read at the start, as plain files
//                       (sysfs symlinks such as /sys/class/powercap/intel-rapl:0
//                       become real directories, as the fixtures have them)
//   timeline.csv        "t_s,path,value": each moving file from the first
//                       pass and whenever its value changed, stamped at the
//                       middle of its own read; path relative to the root
//   capture.json        format, duration, load window, what was left out and why
#pragma once
#include <string>
#include <vector>

namespace flopwatt::power {

struct CaptureOptions {
  std::string root = "/";
  std::string out;          // must not exist yet, or be empty
  double seconds = 10;      // sampling time, the load included
  double period_s = 0.1;
  bool load = true;         // spin every CPU for the second half of the sampling time
};

struct CaptureSkip {
  std::string path, why;  // path relative to the root
};

struct CaptureSummary {
  std::vector<std::string> files;    // copied, relative to the root
  std::vector<std::string> moving;   // sampled into the timeline
  std::vector<CaptureSkip> skipped;  // unreadable (root-only energy_uj) or left out as identifiers
  std::size_t rows = 0;              // timeline rows written
};

// Copies the power-related files below opt.root into opt.out, then samples the
// moving ones for opt.seconds. Throws ConfigError naming --out when the output
// directory cannot be used.
CaptureSummary capture_machine(const CaptureOptions& opt);

// The tree only (no timeline, no capture.json); capture_machine's first step.
CaptureSummary copy_power_tree(const std::string& root, const std::string& out);

// Files whose value changes while the machine runs (counters, gauges, supply
// state), by their path relative to the root.
bool is_moving_file(const std::string& rel);

// Content with identifiers removed: nullopt drops the file altogether (serial
// numbers), otherwise MAC-like strings and the host's name are masked and
// /proc/cpuinfo keeps only the lines that describe the model and topology.
struct Scrubbed {
  bool keep = true;
  std::string text;
  std::string why;  // when !keep
};
Scrubbed scrub(const std::string& rel, const std::string& content);

}  // namespace flopwatt::power

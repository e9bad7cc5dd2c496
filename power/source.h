// A power or energy source: one RAPL domain, one battery, one hwmon channel,
// one external meter. Power logic (units, wrap, sign) lives in the source;
// how its bytes are read (sysfs file, MSR device, perf fd, libsensors) is the
// access layer beneath it, so each can be tested against a fixture tree.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace flopwatt::power {

enum class Kind { Counter, Gauge };  // counter: cumulative energy in J; gauge: instantaneous power in W

inline const char* to_string(Kind k) { return k == Kind::Counter ? "counter" : "gauge"; }

struct Sample {
  std::int64_t t_ns = 0;  // CLOCK_MONOTONIC
  double value = 0;       // J since the source was opened (wrap already undone) or W
};

class PowerSource {
 public:
  virtual ~PowerSource() = default;
  virtual std::string id() const = 0;      // "rapl-powercap:package-0", "battery:BAT0"
  virtual std::string domain() const = 0;  // package, core, uncore, dram, psys, battery, npu, wall
  virtual Kind kind() const = 0;
  virtual std::string unit() const { return kind() == Kind::Counter ? "J" : "W"; }
  // How often the underlying value changes, seconds (nominal until measured).
  virtual double update_interval_s() const = 0;
  virtual bool simulated() const { return false; }
  // Never throws; nullopt when this read failed (the sampler records a gap).
  virtual std::optional<Sample> read() = 0;

  // Added for the sampler. Sources that deliver several timestamped samples
  // per read (an external meter's log) override read_many; it appends to out
  // and returns how many it appended.
  virtual std::size_t read_many(std::vector<Sample>& out);
  // The sampler reads this source no more often than this: fast counters
  // every period, slow gauges (an ACPI battery read can take milliseconds)
  // a few times per update interval.
  virtual double min_read_interval_s() const;
  // Spacing between consecutive samples the sampler should expect at this
  // period; a gap of more than twice this lowers a window's confidence.
  virtual double expected_spacing_s(double period_s) const;
  // True once update_interval_s() is measured rather than nominal.
  virtual bool interval_measured() const { return false; }
  // Why the last read failed or the source stopped ("energy_uj: EACCES"); empty when fine.
  virtual std::string last_error() const { return {}; }
  // Counter resets seen so far (a step the hardware cannot have made): the
  // energy between the read before and the read that saw it is lost, so a
  // window overlapping that interval is low confidence. 0 for gauges.
  virtual std::uint64_t resets() const { return 0; }
};

// What discovery found: every candidate, available or not, with why and the fix.
struct SourceStatus {
  std::string id;
  std::string domain;
  Kind kind = Kind::Counter;
  bool available = false;
  std::string reason;  // empty when available
  std::string fix;     // the exact command or setting that would make it available
  double update_interval_s = 0;
  std::vector<std::string> contains;  // ids of domains this one includes (package contains core)
  std::vector<std::string> sum_of;    // a summed source: the ids it adds up (never headline beside it)
  std::vector<std::string> aliases;   // other views of the same physical counter, listed but not sampled
  std::string alias_of;               // set on such a view: the id that is sampled instead
  std::string note;  // how it was read or anything a reader of the report should know
};

struct DiscoverOptions {
  std::string root = "/";                 // --sysfs-root / FLOPWATT_SYSFS_ROOT
  std::vector<std::string> select;        // empty = auto (all available); else ids or id prefixes
  std::string power_log;                  // --power-log FILE (external meter), empty = none
};

struct Discovery {
  std::vector<std::unique_ptr<PowerSource>> sources;  // available and selected
  std::vector<SourceStatus> status;                   // every candidate, found or missing
};

// Probes every access path under opts.root; never throws.
Discovery discover(const DiscoverOptions& opts);

// True when `id` is picked by a --power selection entry (exact id or id prefix).
bool selected(const std::string& id, const std::vector<std::string>& select);

}  // namespace flopwatt::power

// The hardware counters of a run (`--counters default|none|LIST`): opened once
// before the run, begun and ended around each measurement window by the
// runners, their status (available, or why not) in run.json's context.
#pragma once
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cpu/perf_counters.h"

namespace flopwatt {

// `--counters`' help, one text for every command that takes it.
inline constexpr const char* kCountersHelp =
    "Hardware counters per measurement window: default (cycles, instructions, LLC misses, DRAM read/write bytes "
    "from the memory controllers' uncore PMU, system-wide) | none | E[,E..] with libpfm4 event strings, perf-style "
    "sysfs events PMU/EVENT/, dram_read_bytes, dram_write_bytes";

class RunCounters {
 public:
  // Parses the spec (InputError naming `flag` for a bad list) and opens each
  // event through `access` (the real perf_event_open when null); `root` is
  // where /sys/bus/event_source/devices tells why an event cannot be opened.
  RunCounters(const std::string& spec, const std::string& root, const std::string& flag = "--counters",
              std::unique_ptr<cpu::CounterAccess> access = nullptr);
  // Whether any event counts; a measurement carries counters only then.
  bool active() const { return set_ && set_->any_available(); }
  void begin();
  // The window's counts by event string, null where the event does not count;
  // empty when no event counts.
  std::map<std::string, std::optional<double>> end();
  // context.counters: [{event, available, reason, fix}], null for "none".
  nlohmann::json status_json() const;
  // One console line: which events count, or why none does ("" for none asked).
  std::string summary() const;

 private:
  std::unique_ptr<cpu::CounterAccess> access_;
  std::unique_ptr<cpu::CounterSet> set_;
};

}  // namespace flopwatt

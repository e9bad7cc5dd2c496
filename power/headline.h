// Which source gives the headline of one measurement window: the one rule
// every consumer (a run, its report, the bench counters, a campaign's
// comparison) calls, so they can never disagree.
#pragma once
#include <optional>
#include <string>
#include <vector>

namespace flopwatt::power {

// A battery source's state over the window, from the supply track
// (power/supply_track.h); NotBattery for every other source.
enum class ChargeState { NotBattery, Discharging, Charging, Idle, Unknown, Changed };
const char* to_string(ChargeState s);  // "discharging", "charging", "idle", ...

struct HeadlineCandidate {
  std::string id;                // "rapl-powercap:package", "battery:BAT0"
  std::string domain;            // wall, psys, package, battery, npu, core, uncore, dram
  bool summed = false;           // a sum over sockets or batteries: preferred over each part
  std::vector<std::string> parts;  // for a sum: the ids it adds up (never headline next to it)
  ChargeState charge = ChargeState::NotBattery;
  bool has_energy = false;       // the source produced an energy figure for this window
  bool low_confidence = false;   // that figure's confidence is low
  std::string why_low;
};

struct HeadlineChoice {
  std::optional<std::string> source;     // nullopt: nothing qualifies
  std::optional<std::string> runner_up;  // what would have been chosen without `source`
  bool low_confidence = false;           // true when no adequate candidate existed
  std::string rule;                      // the rule in words, for run.json
  std::string why;                       // why this source, and why the wider ones were passed over
};

// Pure: same input, same answer. `only_domain` (from --headline-domain)
// restricts the choice to that domain; empty = any.
HeadlineChoice choose_headline(const std::vector<HeadlineCandidate>& candidates,
                               const std::string& only_domain = {});

// The rule as choose_headline applies it, for README and run.json.
const char* headline_rule_text();

}  // namespace flopwatt::power

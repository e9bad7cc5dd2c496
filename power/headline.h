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

// What did the work a window measured: bounds the FLOP/J a figure may claim,
// and which device's power may stand for it.
enum class DeviceClass { Cpu, Npu, Gpu };
// "npu:..." -> Npu, "gpu:..." -> Gpu, else Cpu
DeviceClass device_class_of_backend(const std::string& backend);

// Whether a source of `domain` can measure work done on `device`. The domains
// of a device beside the CPU -- a discrete GPU's board ("gpu"), a drive
// ("storage"), a board or firmware sensor that does not say what it meters
// ("platform"), a chip no kernel source tells flopwatt about ("device") --
// measure that device, never the CPU's or the NPU's work; "gpu" measures a
// GPU's own work. power/hwmon.h's hwmon_device_class gives hwmon sources
// these domains from the driver and the device.
bool domain_measures(const std::string& domain, DeviceClass device);

// The physics bounds figure_usability applies, stated once (docs/headline.md quotes them).
// A laptop or desktop package, psys, battery or wall domain draws at least
// this much while a workload runs: below it is a unit error (mW read as uW)
// or a counter that barely moves (a VM's).
inline constexpr double kLoadFloorW = 0.5;
// No client machine or two-socket server draws more through one domain.
inline constexpr double kDomainCeilingW = 2000;
// FLOP per joule of the whole domain that no device of the class reaches: an
// order of magnitude past the best whole-chip figures published for CPUs
// (tens of GFLOP/J) and for NPUs (about a TFLOP/J at bf16); a figure beyond it
// is a unit or counter error, not a measurement.
inline constexpr double kMaxFlopPerJCpu = 1e12;
inline constexpr double kMaxFlopPerJNpu = 1e13;

struct HeadlineCandidate {
  std::string id;                // "rapl-powercap:package", "battery:BAT0"
  std::string domain;            // wall, psys, package, battery, npu, core, uncore, dram
  bool summed = false;           // a sum over sockets or batteries: preferred over each part
  std::vector<std::string> parts;  // for a sum: the ids it adds up (never headline next to it)
  ChargeState charge = ChargeState::NotBattery;
  bool has_energy = false;       // the source produced an energy figure for this window
  bool low_confidence = false;   // that figure's confidence is low
  std::string why_low;
  // The supply over the window: true while an adapter was online, false while
  // none was, nullopt where nothing tells (no adapter seen: a desktop or VM).
  std::optional<bool> on_mains;
  // What the window measured, for the physics checks; nullopt skips a check
  // (the choice at the start of a run, before any window).
  std::optional<double> avg_power_w;
  std::optional<double> flop_per_j;
  DeviceClass device = DeviceClass::Cpu;  // what did the work: bounds FLOP/J
  // The window had the workload running (not an idle baseline): a source of
  // the whole machine or package then draws at least kLoadFloorW.
  bool under_load = true;
};

// Whether one source's figure over one window may be quoted as FLOP/J at all,
// and why not: supply state (a battery only while the machine runs from it
// alone), a figure at all, physical plausibility (a floor and a ceiling on
// the power of a whole-machine or package domain under load, a counter that
// does not advance, a domain of another device than the one that did the work, a FLOP/J past what the device class can reach). The one
// judgement every front end applies, through choose_headline or directly.
struct Usability {
  bool usable = true;
  std::string why;  // empty when usable
};
Usability figure_usability(const HeadlineCandidate& c);

struct HeadlineChoice {
  std::optional<std::string> source;     // nullopt: nothing qualifies
  std::optional<std::string> runner_up;  // what would have been chosen without `source`
  bool low_confidence = false;           // true when no adequate candidate existed
  std::string rule;                      // the rule in words, for run.json
  std::string why;                       // why this source, and why the wider ones were passed over
  // figure_usability of every candidate, in the candidates' order (also those
  // outside only_domain): a caller that refuses the unusable figures
  // (judge_window) takes it from here rather than judging each figure again.
  std::vector<Usability> usability;
};

// Pure: same input, same answer. `only_domain` (from --headline-domain)
// restricts the choice to that domain; empty = any.
HeadlineChoice choose_headline(const std::vector<HeadlineCandidate>& candidates,
                               const std::string& only_domain = {});

// The rule as choose_headline applies it, for docs/headline.md and run.json.
const char* headline_rule_text();

}  // namespace flopwatt::power

// One window of the run's energy meter as the public flopwatt::WindowResult:
// the energy per source, judged by the one rule every row of `flopwatt run`
// gets (judge_window: power::figure_usability and power::choose_headline),
// with the supply state over the window. Meter::end returns it; flopwatt_bench
// turns it into Google Benchmark counters with gbench::set_counters, so a
// user's suite and flopwatt_bench take one path from samples to counters.
// Internal to flopwatt (not installed).
#pragma once
#include <cstdint>
#include <map>
#include <string>

#include "flopwatt/meter.h"
#include "harness/run/energy.h"
#include "power/supply_track.h"

namespace flopwatt {

struct WindowSpan {
  std::int64_t t0_ns = 0, t1_ns = 0;
  double flop = 0;
  // Wait for every source's next sample after t1 (flopwatt_bench: its loops
  // are long), or only the headline source's (the Meter: windows may be short).
  bool wait_all = false;
};

// The window's time and FLOP figures alone, with `why` as headline_why: what
// a window gets when no energy can be judged for it.
WindowResult timing_only(const WindowSpan& span, std::string why);

// `supply` may be null (no power supply class): then `supply` stays empty.
// `domains` maps source ids to their domains (EnergyMeter::status()).
WindowResult window_result(EnergyMeter& energy, power::SupplyMonitor* supply,
                           const std::map<std::string, std::string>& domains, const WindowSpan& span);

std::map<std::string, std::string> source_domains(const EnergyMeter& energy);

}  // namespace flopwatt

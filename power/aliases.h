// One physical counter, one reader: powercap, perf and the MSR device can all
// show the same RAPL register. Discovery keeps one view of each and lists the
// others as aliases, so the sampler does not read a register three times per
// period.
#pragma once
#include <optional>
#include <string>

#include "power/source.h"

namespace flopwatt::power {

// "package/0", "psys/0", "dram/1" for a RAPL view of a hardware counter
// ("package/sum" for the sums over sockets); nullopt for anything without a
// counterpart in another interface (per-die zones, AMD's one-core zone, the
// per-core PMU sum, batteries, hwmon other than zenergy sockets).
std::optional<std::string> rapl_counter_key(const std::string& id, const std::string& domain);

// Lower is preferred: powercap 0, perf 1, MSR 2; other ids 100.
int rapl_view_rank(const std::string& id);

// Drops every available source whose counter another, preferred view also
// reads; its status becomes unavailable with alias_of set, and the kept
// source's status lists it in aliases.
void apply_aliases(Discovery& d);

}  // namespace flopwatt::power

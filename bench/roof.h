// A host row of flopwatt_bench on this machine's stored ceilings, as `run`
// places its rows: the GEMM rows and the GPT-2 op rows share it, so both are
// judged and flagged alike.
#pragma once
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include "harness/output/run_model.h"
#include "harness/run/roofline.h"

namespace flopwatt::gbench {

// m: the row's FLOPs and bytes of one iteration. With host ceilings in *roofs
// (none: nothing happens), sets `roof_fraction` from the loop's seconds and,
// above kRoofTolerance, a label and an entry in *above_roof (may be null) for
// the warning after the run.
void place_on_stored_roof(benchmark::State& st, Measurement m, double seconds, const RooflineSet* roofs,
                          std::vector<std::string>* above_roof);

}  // namespace flopwatt::gbench

// Runs for the store's tests: copies of a recorded fixture run under new ids,
// written as run directories or recorded straight into a store.
#pragma once
#include <filesystem>
#include <string>

#include "harness/output/run_model.h"

namespace flopwatt::testing {

// tests/fixtures/runs/campaign-gemm-smoke/mains/run.json (9 GEMM rows, 2 threads).
Run fixture_run();
// The fixture under `id`, started at `started_utc`, its repetition times and
// medians scaled by `time_scale` (2 = twice as slow).
Run variant(const std::string& id, const std::string& started_utc, double time_scale = 1.0);
// A short `run` (flopwatt binary `bin`, output in `out`) on the laptop power
// fixture, sampled every 5 ms: it writes samples.csv, for --store-samples.
std::string sampled_run(const std::string& bin, const std::filesystem::path& out, const std::string& extra);
// How many rows of samples.csv in a run directory (its header left out).
long samples_csv_rows(const std::filesystem::path& run_dir);
// run.json's run id in a run directory.
std::string run_id_of(const std::filesystem::path& run_dir);
// What harness/run/context.cpp writes for a run on an amdxdna NPU: npu:xdna's
// notes with the device node, generation and firmware.
void add_xdna_backend(Run& r);
// Writes r as DIR/run.json.
void write_run_dir(const Run& r, const std::filesystem::path& dir);

}  // namespace flopwatt::testing

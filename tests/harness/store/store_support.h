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
// Writes r as DIR/run.json.
void write_run_dir(const Run& r, const std::filesystem::path& dir);

}  // namespace flopwatt::testing

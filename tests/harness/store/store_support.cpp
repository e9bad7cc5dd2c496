#include "tests/harness/store/store_support.h"

#include <fstream>

#include "tests/harness/cli_support.h"

namespace flopwatt::testing {

Run fixture_run() {
  return run_from_json(nlohmann::json::parse(
      slurp(std::filesystem::path(FLOPWATT_TEST_FIXTURES) / "runs/campaign-gemm-smoke/mains/run.json")));
}

Run variant(const std::string& id, const std::string& started_utc, double time_scale) {
  Run r = fixture_run();
  r.run_id = id;
  r.context["started_utc"] = started_utc;
  for (auto& m : r.measurements) {
    for (double& t : m.rep_times_s) t *= time_scale;
    for (double TimeStats::*f : {&TimeStats::median, &TimeStats::p10, &TimeStats::p90, &TimeStats::total,
                                 &TimeStats::mean, &TimeStats::min, &TimeStats::max, &TimeStats::ci95_lo,
                                 &TimeStats::ci95_hi})
      m.time_s.*f *= time_scale;
    m.flop_per_s /= time_scale;
  }
  return r;
}

void write_run_dir(const Run& r, const std::filesystem::path& dir) {
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "run.json") << to_json(r).dump(1);
}

}  // namespace flopwatt::testing

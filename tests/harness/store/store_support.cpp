#include "tests/harness/store/store_support.h"

#include <algorithm>
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

std::string sampled_run(const std::string& bin, const std::filesystem::path& out, const std::string& extra) {
  return bin + " run gemm --backend cpu:reference --shapes 48,40,32 --min-time 0.005 --min-reps 3 --idle 0 --no-peak "
               "--sysfs-root " + (std::filesystem::path(FLOPWATT_TEST_FIXTURES) / "power/laptop").string() +
         " --sample-period 0.005 --out " + out.string() + " " + extra;
}

long samples_csv_rows(const std::filesystem::path& run_dir) {
  const std::string s = slurp(run_dir / "samples.csv");
  return static_cast<long>(std::count(s.begin(), s.end(), '\n')) - 1;
}

std::string run_id_of(const std::filesystem::path& run_dir) {
  return nlohmann::json::parse(slurp(run_dir / "run.json"))["run_id"].get<std::string>();
}

void add_xdna_backend(Run& r) {
  r.context["backends"]["npu:xdna"] = {{"device", "/dev/accel/accel0"}, {"firmware", "1.5.2.380"},
                                       {"generation", "npu4"}, {"power_mode", "default"}};
}

void write_run_dir(const Run& r, const std::filesystem::path& dir) {
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "run.json") << to_json(r).dump(1);
}

}  // namespace flopwatt::testing

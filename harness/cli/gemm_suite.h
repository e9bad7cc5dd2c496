// What `run gemm` and `run default` share: the GEMM flags, the plan they
// settle before the run opens, and the suite's loop with its console rows.
#pragma once
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/run/counters.h"
#include "harness/run/roofline.h"
#include "harness/run/run_options.h"
#include "harness/run/run_setup.h"
#include "harness/runners/gemm_runner.h"

namespace flopwatt {

struct GemmArgs {
  RunCommonOptions common;
  std::string backends = "available";
  std::string shapes = "gpt2-124m";
  std::string dtype = "fp32";
  bool no_peak = false;
  std::string counters = "default";  // --counters
};

// What the GEMM suite runs, settled before the run opens.
struct GemmPlan {
  GemmRunOptions go;
  std::vector<std::unique_ptr<Backend>> backends;
  nlohmann::json context;  // dtype, shapes, peak and roofline for run.json's context
  RooflineSet roofs;       // the ceilings run_suite places each measurement against
  std::shared_ptr<RunCounters> counters;  // counted around each measurement window
};

// Checks the GEMM flags and settles the ceilings (reused or measured, harness/run/ceilings_store.h). Call after finalize_run_common_options.
// skip_reference drops cpu:reference (it verifies the others; timing it is not the suite's point).
GemmPlan plan_gemm(const GemmArgs& a, bool skip_reference);

// Settles the ceilings on the open run (reused or measured, then stored:
// harness/run/ceilings_store.h), after the run opened so that bad input never
// leaves a stored peak behind; records them in the context and sets the
// session's roofline and the plan's peak.
void settle_gemm_ceilings(GemmPlan& p, const GemmArgs& a, OpenRun& r);

std::vector<const Backend*> const_raw(const std::vector<std::unique_ptr<Backend>>& v);

// Runs the suite on the open run, one line per measurement under a progress
// line. Returns false when interrupted.
bool run_suite(const GemmPlan& p, OpenRun& r, std::FILE* out);

// 1 (with the first failure on stderr) when a GEMM failed verification, else 0.
int verification_status(const Run& run);

}  // namespace flopwatt

// The GPT-2 training workload on an open run, shared by `run gpt2` and
// `run default`: trains llm.c's GPT-2 for a few steps and adds one measurement
// per step (op "step", with the loss) and, over the steps after warm-up, one
// measurement per op (and per layer on request), each with analytic FLOPs and
// bytes, time and energy; prints the steps and a per-op table.
#pragma once
#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/run/counters.h"
#include "harness/run/roofline.h"
#include "harness/run/run_setup.h"
#include "workloads/backend.h"
#include "workloads/gpt2/adamw.h"
#include "workloads/gpt2/config.h"
#include "workloads/gpt2/grad_order.h"
#include "workloads/gpt2/model.h"
#include "workloads/gpt2/token_data.h"

namespace flopwatt {

struct Gpt2Options {
  std::string model = "d12";  // the preset's name, recorded in the context
  std::string checkpoint;     // empty: random init
  std::string data;           // empty: deterministic random tokens
  int batch = 4, seq = 64, steps = 10, warmup = 1;
  std::uint64_t seed = 1337;
  DType dtype = DType::F32;
  std::string gemm_backend;   // empty: the fastest available CPU backend
  gpt2::AdamWConfig adamw;
  bool per_layer = false;
  gpt2::GradOrder grad_order = gpt2::GradOrder::Standard;  // each linear backward's GEMM order
  RunCounters* counters = nullptr;  // hardware counters around each op; null: none
  std::string sysfs_root = "/";     // whose cpu0 caches size the backward blocks (--sysfs-root)
};

class Gpt2Runner {
 public:
  // Checks the options against the model config, picks the GEMM backend and
  // reads the token file. Throws InputError naming `run gpt2`'s flag (--batch,
  // --seq, --steps, --warmup, --lr, ..., --gemm-backend, --data).
  Gpt2Runner(const Gpt2Options& o, const gpt2::Config& cfg);
  ~Gpt2Runner();

  // Allocates the model, then loads the checkpoint or initialises at random.
  // Throws InputError for a bad checkpoint, so a command with one calls this
  // before opening its run; train() calls it otherwise.
  void build_model();
  gpt2::Model& model();
  const Backend& backend() const { return *backend_; }
  // The run.json context's "gpt2" block.
  nlohmann::json context() const;

  // Trains on `r`, adding the measurements to its session and printing on
  // `out`. sample_period_s decides when per-op energies are low-confidence.
  // Returns false when g_interrupted stopped it; what was measured stays.
  bool train(OpenRun& r, double sample_period_s, std::FILE* out);

  struct StepRecord;  // one training step: times, loss, the profiler's op records
  struct OpRow;       // one op (and layer) over the measured steps

 private:
  Measurement base(const std::string& op) const;
  // The training loop: one "step" measurement per step; false when interrupted.
  bool run_steps(OpenRun& run, gpt2::Profiler& prof, std::vector<StepRecord>& steps, std::FILE* out);
  Measurement op_measurement(const OpRow& row, const gpt2::Profiler& prof, OpenRun& run,
                             double sample_period_s) const;
  Measurement steps_measurement(const std::vector<const StepRecord*>& measured, const gpt2::Profiler& prof,
                                OpenRun& run, double sample_period_s) const;

  Gpt2Options o_;
  gpt2::Config cfg_;
  std::unique_ptr<Backend> backend_;
  std::optional<gpt2::BatchLoader> loader_;
  std::unique_ptr<gpt2::Model> model_;
  double step_flop_ = 0, step_bytes_ = 0, gemm_flop_ = 0;
  int step_now_ = 0;  // the step run_steps is in, for the counter hook
  // Hardware counts per (op, layer) over the steps after warm-up (layer -1:
  // all layers), null where an event did not count.
  std::map<std::pair<int, int>, std::map<std::string, std::optional<double>>> op_counts_;
  void count_op(int op, int layer, const std::map<std::string, std::optional<double>>& c);
};

// What places an op on the roofline, for one step of (cfg, B, T, dtype) on
// backend b: FLOPs and bytes of its n occurrences (n: op_occurrences, or the
// per-layer count when layer >= 0), the working set of one occurrence and the
// op's stream pattern. The runner's per-op rows and flopwatt_bench's step
// roof are both built on it. b nullptr: a row of the host's own kernels
// (backend "host"), as flopwatt_bench's op benchmarks, which run no GEMM.
Measurement gpt2_op_roof_row(gpt2::Op op, const gpt2::Config& cfg, int B, int T, DType dtype, const Backend* b,
                             int layer = -1);
// The step's roofline limit (step_roofline_limit over every op, each at its
// own ceiling) without running it; nullopt when an op has no roof (no host
// ceilings) or the backend is simulated (its GEMMs are the model's).
std::optional<double> gpt2_step_roof_limit(const gpt2::Config& cfg, int B, int T, DType dtype, const Backend& b,
                                           const RooflineSet& roofs);

}  // namespace flopwatt

// GEMM benchmarks for flopwatt_bench: gemm/<backend>/<op> for every selected
// backend and shape, registered at run time with benchmark::RegisterBenchmark.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "bench/energy.h"
#include "harness/run/roofline.h"
#include "workloads/backend.h"

namespace flopwatt::gbench {

struct GemmBenchOptions {
  std::string shapes = "gpt2-124m";  // as `flopwatt run gemm --shapes`
  std::string backends;              // empty: every available backend but the naive oracle
  DType dtype = DType::F32;
  // This machine's stored ceilings (null: none stored): each host row gets a
  // `roof_fraction` counter, and a row above kRoofTolerance of its roof a
  // label saying so and an entry in *above_roof.
  const RooflineSet* roofs = nullptr;
  std::vector<std::string>* above_roof = nullptr;
};

struct Registered {
  int count = 0;
  std::vector<std::string> skipped;  // "backend: why", for the context
};

// How a benchmark on backend b is timed, for every registration: a simulated
// backend's modelled time (deterministic, and simulating is slow on the host,
// so `simulated_iterations` iterations); otherwise real time, since OpenMP
// threads do the work and the calling thread's CPU time is not the work's.
void time_as_backend(benchmark::internal::Benchmark* bm, const Backend& b, benchmark::TimeUnit unit,
                     int simulated_iterations);

class GemmBenchmarks {
 public:
  GemmBenchmarks(EnergyMeter* meter, EnergyOptions eo);
  ~GemmBenchmarks();
  // Throws InputError for a bad shape or backend list.
  Registered register_all(const GemmBenchOptions& o);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace flopwatt::gbench

// A user's own Google Benchmark suite with flopwatt's energy counters: one
// line in the benchmark function. flopwatt's options come before Google
// Benchmark's: gbench_example [--power-log F] [--sysfs-root D] [--benchmark_*..]
#include <benchmark/benchmark.h>
#include <flopwatt/benchmark.h>

#include <cstring>
#include <vector>

static void BM_saxpy(benchmark::State& state) {
  const std::size_t n = std::size_t(state.range(0));
  std::vector<float> x(n, 1.0f), y(n, 2.0f);
  flopwatt::gbench::EnergyCounters energy(state, /*flop_per_iter=*/2.0 * double(n));
  for (auto _ : state) {
    for (std::size_t i = 0; i < n; ++i) y[i] += 0.5f * x[i];
    benchmark::DoNotOptimize(y.data());
  }
}
BENCHMARK(BM_saxpy)->Arg(1 << 16)->MinTime(0.3)->UseRealTime();

int main(int argc, char** argv) {
  flopwatt::MeterOptions o;
  int k = 1;
  for (; k + 1 < argc && !std::strncmp(argv[k], "--", 2) && std::strncmp(argv[k], "--benchmark", 11); k += 2) {
    if (!std::strcmp(argv[k], "--power-log")) o.power_log = argv[k + 1];
    else if (!std::strcmp(argv[k], "--sysfs-root")) o.sysfs_root = argv[k + 1];
  }
  flopwatt::gbench::set_meter_options(o);
  argv[k - 1] = argv[0];
  int rest = argc - k + 1;
  benchmark::Initialize(&rest, argv + k - 1);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
}

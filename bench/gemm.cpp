#include "bench/gemm.h"

#include <random>
#include <set>

#include "bench/roof.h"
#include "harness/run/backend_registry.h"
#include "harness/runners/gemm_runner.h"
#include "harness/runners/gemm_operands.h"
#include "workloads/shapes.h"

namespace flopwatt::gbench {

namespace {

// Only one shape's operands live at a time: benchmarks run in registration
// order (shape-major), and the GPT-2 lm_head operands alone take ~200 MB.
class OperandCache {
 public:
  std::vector<GemmOperands>& get(const GemmDesc& d, Backend* b, const std::string& root) {
    const std::string key = std::to_string(d.M) + "x" + std::to_string(d.N) + "x" + std::to_string(d.K) +
                            d.layout() + std::string(to_string(d.dtype_in));
    if (key != key_) {
      sets_.clear();
      prepared_.clear();
      key_ = key;
      // Rotated as in `flopwatt run gemm`, so consecutive iterations do not find their inputs warm in the cache.
      std::mt19937_64 rng(20250403);
      sets_ = make_rotated_operands(d, rng, 0, root);
    }
    if (!prepared_.count(b)) {  // weight packing happens outside the timed loop, as in the harness
      for (auto& s : sets_) b->prepare(d, s.B(d.dtype_in));
      prepared_.insert(b);
    }
    return sets_;
  }

 private:
  std::string key_;
  std::vector<GemmOperands> sets_;
  std::set<Backend*> prepared_;
};

double breakdown_total(const Breakdown& x) { return x.copy_in + x.compute + x.copy_out + x.submit + x.reconfigure; }

}  // namespace

struct GemmBenchmarks::Impl {
  EnergyMeter* meter;
  EnergyOptions eo;
  std::vector<std::unique_ptr<Backend>> backends;
  OperandCache cache;
  const RooflineSet* roofs = nullptr;
  std::vector<std::string>* above_roof = nullptr;

  struct Case {
    Impl* impl;
    Backend* b;
    GemmShape shape;
    GemmDesc d;
    std::string skip;  // why not, when the backend does not support the shape
  };
  std::vector<std::unique_ptr<Case>> cases;

  // The row as `run gemm` places it on the roofline, at this loop's speed.
  void place(const Case& c, benchmark::State& st, double seconds) {
    if (!roofs || !roofs->host) return;
    place_on_stored_roof(st, gemm_row(c.shape, c.d, *c.b), seconds, roofs, above_roof);
  }

  void run(Case& c, benchmark::State& st) {
    if (!c.skip.empty()) {
      st.SkipWithError(c.skip.c_str());
      return;
    }
    auto& sets = cache.get(c.d, c.b, meter->sysfs_root());
    const std::size_t n = sets.size();
    const double flop = c.d.flop();
    std::size_t i = 0;
    if (c.b->simulated()) {
      // The simulator's host time is the cost of simulating; its modelled
      // device time is the benchmark's time (UseManualTime).
      double secs = 0, joules = 0;
      std::string source = "npu-model";
      for (auto _ : st) {
        GemmOperands& s = sets[i++ % n];
        c.b->gemm(c.d, s.A(c.d.dtype_in), s.B(c.d.dtype_in), s.c.data());
        const auto bd = c.b->last_breakdown();
        const double t = bd ? breakdown_total(*bd) : 0;
        st.SetIterationTime(t);
        secs += t;
        if (auto e = c.b->last_modelled_energy_j()) {
          joules += e->second;
          source = e->first;
        }
      }
      EnergyWindow::set_modelled(st, flop, joules, secs, source);
      return;
    }
    EnergyWindow w(meter, eo);
    w.start();
    for (auto _ : st) {
      GemmOperands& s = sets[i++ % n];
      c.b->gemm(c.d, s.A(c.d.dtype_in), s.B(c.d.dtype_in), s.c.data());
      benchmark::ClobberMemory();
    }
    place(c, st, w.stop(st, flop));
  }
};

GemmBenchmarks::GemmBenchmarks(EnergyMeter* meter, EnergyOptions eo) : impl_(std::make_unique<Impl>()) {
  impl_->meter = meter;
  impl_->eo = eo;
}

GemmBenchmarks::~GemmBenchmarks() = default;

Registered GemmBenchmarks::register_all(const GemmBenchOptions& o) {
  Registered r;
  impl_->roofs = o.roofs;
  impl_->above_roof = o.above_roof;
  const auto shapes = parse_shapes(o.shapes, "--shapes");
  auto& bs = impl_->backends;
  bs = select_backends(o.backends.empty() ? "all" : o.backends, "--backends");
  if (o.backends.empty())  // the naive oracle is for verification (`flopwatt run gemm`), not for timing
    std::erase_if(bs, [](const auto& b) { return b->name() == "cpu:reference"; });
  std::vector<Backend*> avail;
  for (auto& b : bs) {
    const Availability a = b->availability();
    if (a.ok) avail.push_back(b.get());
    else r.skipped.push_back(b->name() + ": " + a.reason);
  }
  for (const auto& s : shapes) {
    for (Backend* b : avail) {
      auto c = std::make_unique<Impl::Case>();
      c->impl = impl_.get();
      c->b = b;
      c->shape = s;
      c->d = s.desc;
      c->d.dtype_in = o.dtype;
      if (!b->supports(c->d))
        c->skip = b->name() + " does not support " + std::string(to_string(o.dtype)) + " " + c->d.layout();
      Impl::Case* cp = c.get();
      const std::string name = "gemm/" + b->name() + "/" + s.op;
      auto* bm = benchmark::RegisterBenchmark(name.c_str(), [cp](benchmark::State& st) { cp->impl->run(*cp, st); });
      time_as_backend(bm, *b, benchmark::kMicrosecond, 3);
      impl_->cases.push_back(std::move(c));
      ++r.count;
    }
  }
  return r;
}

void time_as_backend(benchmark::internal::Benchmark* bm, const Backend& b, benchmark::TimeUnit unit,
                     int simulated_iterations) {
  bm->Unit(unit);
  if (b.simulated()) bm->UseManualTime()->Iterations(simulated_iterations);
  else bm->UseRealTime();
}

}  // namespace flopwatt::gbench

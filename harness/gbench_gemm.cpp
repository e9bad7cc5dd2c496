#include "harness/gbench_gemm.h"
#include "harness/gemm_runner.h"

#include <algorithm>
#include <fstream>
#include <random>
#include <set>

#include "harness/backend_registry.h"
#include "workloads/shapes.h"

namespace flopwatt::gbench {

namespace {

// Operand sets for one shape, rotated so that, as in `flopwatt run gemm`, the
// inputs of consecutive iterations do not sit warm in the last-level cache.
struct OperandSet {
  std::vector<float> a32, b32, c;
  std::vector<bf16_t> a16, b16;
  const void* A(DType d) const { return d == DType::F32 ? (const void*)a32.data() : (const void*)a16.data(); }
  const void* B(DType d) const { return d == DType::F32 ? (const void*)b32.data() : (const void*)b16.data(); }
};

// Only one shape's operands live at a time: benchmarks run in registration
// order (shape-major), and the GPT-2 lm_head operands alone take ~200 MB.
class OperandCache {
 public:
  std::vector<OperandSet>& get(const GemmDesc& d, Backend* b) {
    const std::string key = std::to_string(d.M) + "x" + std::to_string(d.N) + "x" + std::to_string(d.K) +
                            d.layout() + std::string(to_string(d.dtype_in));
    if (key != key_) {
      sets_.clear();
      prepared_.clear();
      key_ = key;
      build(d);
    }
    if (!prepared_.count(b)) {  // weight packing happens outside the timed loop, as in the harness
      for (auto& s : sets_) b->prepare(d, s.B(d.dtype_in));
      prepared_.insert(b);
    }
    return sets_;
  }

 private:
  void build(const GemmDesc& d) {
    std::mt19937_64 rng(20250403);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    const std::size_t na = std::size_t(d.M) * d.K, nb = std::size_t(d.K) * d.N, nc = std::size_t(d.M) * d.N;
    const std::size_t bytes = (na + nb) * dtype_size(d.dtype_in) + nc * 4;
    const std::size_t want = 2 * last_level_cache_bytes();
    const int n = int(std::clamp<std::size_t>((want + bytes - 1) / bytes, 1, 8));
    sets_.resize(n);
    for (auto& s : sets_) {
      s.a32.resize(na);
      s.b32.resize(nb);
      s.c.resize(nc);
      for (auto& x : s.a32) x = u(rng);
      for (auto& x : s.b32) x = u(rng);
      for (auto& x : s.c) x = u(rng);
      if (d.dtype_in == DType::BF16) {
        s.a16.resize(na);
        s.b16.resize(nb);
        for (std::size_t i = 0; i < na; ++i) s.a16[i] = f32_to_bf16(s.a32[i]);
        for (std::size_t i = 0; i < nb; ++i) s.b16[i] = f32_to_bf16(s.b32[i]);
      }
    }
  }
  std::string key_;
  std::vector<OperandSet> sets_;
  std::set<Backend*> prepared_;
};

double breakdown_total(const Breakdown& x) { return x.copy_in + x.compute + x.copy_out + x.submit + x.reconfigure; }

}  // namespace

struct GemmBenchmarks::Impl {
  EnergyMeter* meter;
  EnergyOptions eo;
  std::vector<std::unique_ptr<Backend>> backends;
  OperandCache cache;

  struct Case {
    Impl* impl;
    Backend* b;
    GemmDesc d;
    std::string skip;  // why not, when the backend does not support the shape
  };
  std::vector<std::unique_ptr<Case>> cases;

  void run(Case& c, benchmark::State& st) {
    if (!c.skip.empty()) {
      st.SkipWithError(c.skip.c_str());
      return;
    }
    auto& sets = cache.get(c.d, c.b);
    const std::size_t n = sets.size();
    const double flop = c.d.flop();
    std::size_t i = 0;
    if (c.b->simulated()) {
      // The simulator's host time is the cost of simulating; its modelled
      // device time is the benchmark's time (UseManualTime).
      double secs = 0, joules = 0;
      std::string source = "npu-model";
      for (auto _ : st) {
        OperandSet& s = sets[i++ % n];
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
      OperandSet& s = sets[i++ % n];
      c.b->gemm(c.d, s.A(c.d.dtype_in), s.B(c.d.dtype_in), s.c.data());
      benchmark::ClobberMemory();
    }
    w.stop(st, flop);
  }
};

GemmBenchmarks::GemmBenchmarks(EnergyMeter* meter, EnergyOptions eo) : impl_(std::make_unique<Impl>()) {
  impl_->meter = meter;
  impl_->eo = eo;
}

GemmBenchmarks::~GemmBenchmarks() = default;

Registered GemmBenchmarks::register_all(const GemmBenchOptions& o) {
  Registered r;
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
      c->d = s.desc;
      c->d.dtype_in = o.dtype;
      if (!b->supports(c->d))
        c->skip = b->name() + " does not support " + std::string(to_string(o.dtype)) + " " + c->d.layout();
      Impl::Case* cp = c.get();
      const std::string name = "gemm/" + b->name() + "/" + s.op;
      auto* bm = benchmark::RegisterBenchmark(name.c_str(), [cp](benchmark::State& st) { cp->impl->run(*cp, st); });
      bm->Unit(benchmark::kMicrosecond);
      if (b->simulated()) {
        // Modelled times are deterministic, and simulating is slow on the host.
        bm->UseManualTime()->Iterations(3);
      } else {
        bm->UseRealTime();  // OpenMP threads do the work; the calling thread's CPU time is not the GEMM's time
      }
      impl_->cases.push_back(std::move(c));
      ++r.count;
    }
  }
  return r;
}

}  // namespace flopwatt::gbench

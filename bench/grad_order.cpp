#include "bench/grad_order.h"

#include <random>

#include "harness/run/backend_registry.h"
#include "workloads/error.h"
#include "workloads/gpt2/grad_order.h"
#include "workloads/gpt2/linear.h"
#include "workloads/gpt2/profiler.h"

namespace flopwatt::gbench {

namespace {

double breakdown_total(const Breakdown& x) { return x.copy_in + x.compute + x.copy_out + x.submit + x.reconfigure; }

// One layer's operands at a time: benchmarks run in registration order
// (layer-major), and lm_head's at 4096 tokens take about 1.2 GB. They are not
// rotated: at these token counts dY alone outgrows the last-level cache, which
// is the regime the two orders differ in.
struct Operands {
  std::string layer;
  std::vector<float> dY, X, W, dX, dW;
  std::vector<bf16_t> W16;

  void ensure(const gpt2::LinearBackwardShape& s) {
    if (layer == s.layer) return;
    layer = s.layer;
    std::mt19937 rng(20251123);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    auto fill = [&](std::vector<float>& v, std::int64_t n) {
      v.assign(std::size_t(n), 0.0f);
      for (float& x : v) x = u(rng);
    };
    fill(dY, s.N * s.OC);
    fill(X, s.N * s.K);
    fill(W, s.OC * s.K);
    fill(dW, s.OC * s.K);
    dX.assign(std::size_t(s.N * s.K), 0.0f);
    W16.resize(W.size());
    gpt2::convert_to_bf16(W16.data(), W.data(), std::int64_t(W.size()));
  }
};

}  // namespace

struct GradOrderBenchmarks::Impl {
  EnergyMeter* meter;
  EnergyOptions eo;
  DType dtype = DType::F32;
  std::vector<std::unique_ptr<Backend>> backends;
  Operands ops;

  struct Case {
    Impl* impl;
    Backend* b;
    gpt2::LinearBackwardShape s;
    gpt2::GradOrder order;
    std::string error;
  };
  std::vector<std::unique_ptr<Case>> cases;

  void run(Case& c, benchmark::State& st) {
    std::unique_ptr<gpt2::GemmRunner> runner;
    try {
      runner = std::make_unique<gpt2::GemmRunner>(*c.b, dtype);
      ops.ensure(c.s);
    } catch (const std::exception& e) {
      c.error = e.what();
      st.SkipWithError(c.error.c_str());
      return;
    }
    const std::int64_t cache = gpt2::default_block_cache_bytes(meter->sysfs_root());
    runner->set_grad_order(c.order, cache);
    gpt2::Profiler prof;
    if (c.b->simulated()) runner->set_profiler(&prof);
    const int N = int(c.s.N), K = int(c.s.K), OC = int(c.s.OC);
    // dW accumulates (beta = 1), as every backward after the first micro-step does.
    auto call = [&] {
      runner->backward(ops.dX.data(), ops.dW.data(), nullptr, ops.dY.data(), ops.X.data(), ops.W.data(),
                       ops.W16.data(), N, K, OC, true);
    };
    call();  // first touch and weight conversion stay out of the timed loop
    const double flop = c.s.flop();
    if (c.b->simulated()) {
      // Each GEMM call is modelled on its own (the simulator keeps nothing on
      // chip between calls): the interleaved order's gain on an NPU is the
      // fused model's (`flopwatt npu fused-backward`), not these rows'.
      double secs = 0, joules = 0;
      for (auto _ : st) {
        const double t0 = breakdown_total(prof.breakdown_total), j0 = prof.modelled_j_total;
        call();
        const double t = breakdown_total(prof.breakdown_total) - t0;
        st.SetIterationTime(t);
        secs += t;
        joules += prof.modelled_j_total - j0;
      }
      EnergyWindow::set_modelled(st, flop, joules, secs, prof.modelled_source.empty() ? "npu-model" : prof.modelled_source);
    } else {
      EnergyWindow w(meter, eo);
      w.start();
      for (auto _ : st) {
        call();
        benchmark::ClobberMemory();
      }
      w.stop(st, flop);
      const auto t = gpt2::cpu_backward_traffic(N, K, OC, std::int64_t(dtype_size(dtype)), true, cache);
      st.counters[kModelBytes] =
          benchmark::Counter(c.order == gpt2::GradOrder::Standard ? t.standard_bytes : t.interleaved_bytes);
    }
    const auto& plan = runner->last_backward_plan();
    st.counters[kBlockRows] = benchmark::Counter(double(plan.block_rows));
    const auto picked = gpt2::plan_linear_backward(gpt2::GradOrder::Auto, N, K, OC, std::int64_t(dtype_size(dtype)),
                                                   true, cache);
    st.counters[kAutoPicks] = benchmark::Counter(picked.interleaved == plan.interleaved ? 1 : 0);
  }
};

GradOrderBenchmarks::GradOrderBenchmarks(EnergyMeter* meter, EnergyOptions eo) : impl_(std::make_unique<Impl>()) {
  impl_->meter = meter;
  impl_->eo = eo;
}

GradOrderBenchmarks::~GradOrderBenchmarks() = default;

Registered GradOrderBenchmarks::register_all(const GradOrderBenchOptions& o) {
  Registered r;
  impl_->dtype = o.dtype;
  const gpt2::Config cfg = gpt2::preset(o.model, "--grad-order-model");
  if (o.tokens < 1 || o.tokens > (std::int64_t(1) << 20))
    throw InputError("--grad-order-tokens " + std::to_string(o.tokens), "outside 1..1048576",
                     "pass B*T, for example --grad-order-tokens=4096");
  auto& bs = impl_->backends;
  bs = select_backends(o.backends.empty() ? "all" : o.backends, "--backends");
  if (o.backends.empty()) std::erase_if(bs, [](const auto& b) { return b->name() == "cpu:reference"; });
  std::vector<Backend*> avail;
  for (auto& b : bs) {
    const Availability a = b->availability();
    if (a.ok) avail.push_back(b.get());
    else r.skipped.push_back(b->name() + ": " + a.reason);
  }
  for (const auto& s : gpt2::linear_backward_shapes(cfg, o.tokens))
    for (Backend* b : avail)
      for (const gpt2::GradOrder order : {gpt2::GradOrder::Standard, gpt2::GradOrder::Interleaved}) {
        auto c = std::make_unique<Impl::Case>(Impl::Case{impl_.get(), b, s, order, {}});
        Impl::Case* cp = c.get();
        const std::string name = "gradorder/" + b->name() + "/" + s.layer + "/" + gpt2::to_string(order);
        auto* bm = benchmark::RegisterBenchmark(name.c_str(), [cp](benchmark::State& st) { cp->impl->run(*cp, st); });
        time_as_backend(bm, *b, benchmark::kMillisecond, 2);
        impl_->cases.push_back(std::move(c));
        ++r.count;
      }
  return r;
}

}  // namespace flopwatt::gbench

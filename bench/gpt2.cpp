#include "bench/gpt2.h"

#include <algorithm>

#include "bench/gpt2_ops.h"
#include "bench/roof.h"
#include "harness/output/text.h"
#include "harness/run/backend_registry.h"
#include "harness/runners/gpt2_runner.h"
#include "workloads/error.h"
#include "workloads/gpt2/model.h"
#include "workloads/gpt2/op_table.h"
#include "workloads/gpt2/token_data.h"

namespace flopwatt::gbench {

struct Gpt2Benchmarks::Impl {
  EnergyMeter* meter;
  EnergyOptions eo;
  std::vector<std::unique_ptr<Backend>> backends;

  struct Case {
    Impl* impl;
    std::string preset;
    gpt2::Config cfg;
    Backend* b;
    std::string error;  // why the model could not be built on this backend
  };
  std::vector<std::unique_ptr<Case>> cases;

  struct OpCase {
    Impl* impl;
    gpt2::Config cfg;
    gpt2::Op op;
    std::string error;
  };
  std::vector<std::unique_ptr<OpCase>> op_cases;

  // One model or one op's buffers at a time (a d12 model with gradients and
  // AdamW state is ~2 GB, and so is AdamW's op alone); benchmarks run in
  // registration order, so each is built once per case.
  const Case* current = nullptr;
  std::unique_ptr<gpt2::Model> model;
  gpt2::Profiler prof;
  std::vector<int> in, tg;
  int t = 0;
  int B = 4, T = 64;
  DType dtype = DType::F32;
  const RooflineSet* roofs = nullptr;
  std::vector<std::string>* above_roof = nullptr;
  const OpCase* op_current = nullptr;
  std::unique_ptr<Gpt2OpKernel> kernel;

  void step() {
    model->forward(in.data(), tg.data(), B, T);
    model->zero_grad();
    model->backward();
    model->update(gpt2::AdamWConfig{}, ++t);
  }

  void ensure(const Case& c) {
    if (current == &c) return;
    model.reset();
    model = std::make_unique<gpt2::Model>(c.cfg, *c.b, dtype);
    model->init_random(1337);
    model->set_profiler(c.b->simulated() ? &prof : nullptr);
    gpt2::random_batch(1337, 0, B, T, c.cfg.V, in, tg);
    t = 0;
    step();  // first-touch of activations and gradients stays out of the timed loop
    current = &c;
  }

  void run(Case& c, benchmark::State& st) {
    op_current = nullptr;
    kernel.reset();
    try {
      ensure(c);
    } catch (const std::exception& e) {
      current = nullptr;
      model.reset();
      c.error = e.what();
      st.SkipWithError(c.error.c_str());
      return;
    }
    const double flop = gpt2::step_flop(c.cfg, B, T, dtype);
    if (c.b->simulated()) {
      // Host time of the non-GEMM ops plus the modelled device time of the GEMMs.
      double secs = 0;
      for (auto _ : st) {
        const std::int64_t adj0 = prof.sim_adjust_ns;
        const std::int64_t t0 = gpt2::Profiler::now_ns();
        step();
        const double s = double(gpt2::Profiler::now_ns() - t0 + prof.sim_adjust_ns - adj0) * 1e-9;
        st.SetIterationTime(s);
        secs += s;
        prof.clear();
      }
      st.counters[kFlops] = benchmark::Counter(flop * double(st.iterations()), benchmark::Counter::kIsRate);
      // The model's energy covers the GEMMs alone, so it is not a step's J/iter.
      st.SetLabel("simulated GEMMs: time modelled; energy not reported for a mixed host/model step");
      return;
    }
    EnergyWindow w(meter, eo);
    w.start();
    for (auto _ : st) step();
    const double seconds = w.stop(st, flop);
    // The step's fraction of its roofline limit, as run.json's step row has it.
    if (roofs && st.iterations() > 0 && seconds > 0)
      if (const auto limit = gpt2_step_roof_limit(c.cfg, B, T, dtype, *c.b, *roofs))
        st.counters["roof_fraction"] = *limit / (seconds / double(st.iterations()));
  }

  void run_op(OpCase& c, benchmark::State& st) {
    current = nullptr;
    model.reset();
    if (op_current != &c) {
      op_current = nullptr;
      kernel.reset();
      try {
        kernel = std::make_unique<Gpt2OpKernel>(c.op, c.cfg, B, T, dtype);
      } catch (const std::exception& e) {
        c.error = e.what();
        st.SkipWithError(c.error.c_str());
        return;
      }
      op_current = &c;
    }
    EnergyWindow w(meter, eo);
    w.start();
    for (auto _ : st) {
      kernel->run();
      benchmark::ClobberMemory();
    }
    const double seconds = w.stop(st, gpt2::op_cost(c.op, c.cfg, B, T, dtype).flop);
    if (!kernel->finite()) {
      st.SkipWithError("the op's in-place outputs are no longer finite: its timing is not the kernel's");
      return;
    }
    if (!roofs || !roofs->host) return;
    // The row of one layer holds per_layer occurrences (the residual's two); an iteration runs one.
    Measurement m = gpt2_op_roof_row(c.op, c.cfg, B, T, dtype, nullptr, 0);
    const int n = m.count_per_step.value_or(1);
    m.flop /= n;
    m.bytes = *m.bytes / n;
    m.count_per_step = 1;
    place_on_stored_roof(st, std::move(m), seconds, roofs, above_roof);
  }
};

namespace {

// "all", "none" or op names from the op table, as --gpt2-ops takes them.
std::vector<gpt2::Op> selected_ops(const std::string& list) {
  std::vector<gpt2::Op> all;
  std::vector<std::string> names;
  for (int i = 0; i < gpt2::kNumOps; ++i)
    if (gpt2_op_benchmarked(gpt2::Op(i))) {
      all.push_back(gpt2::Op(i));
      if (std::find(names.begin(), names.end(), gpt2::op_info(gpt2::Op(i)).name) == names.end())
        names.push_back(gpt2::op_info(gpt2::Op(i)).name);
    }
  if (list == "all") return all;
  if (list == "none") return {};
  const auto wanted = split_list(list);
  for (const auto& w : wanted)
    if (std::find(names.begin(), names.end(), w) == names.end())
      throw InputError("--gpt2-ops " + w, "not an op outside the GEMMs", "use all, none or some of " + join(names, ","));
  std::erase_if(all, [&](gpt2::Op op) {
    return std::find(wanted.begin(), wanted.end(), gpt2::op_info(op).name) == wanted.end();
  });
  return all;
}

}  // namespace

Gpt2Benchmarks::Gpt2Benchmarks(EnergyMeter* meter, EnergyOptions eo) : impl_(std::make_unique<Impl>()) {
  impl_->meter = meter;
  impl_->eo = eo;
}

Gpt2Benchmarks::~Gpt2Benchmarks() = default;

Registered Gpt2Benchmarks::register_all(const Gpt2BenchOptions& o) {
  Registered r;
  impl_->B = o.B;
  impl_->T = o.T;
  impl_->dtype = o.dtype;
  impl_->roofs = o.roofs;
  impl_->above_roof = o.above_roof;
  const std::vector<gpt2::Op> ops = selected_ops(o.ops);
  auto& bs = impl_->backends;
  bs = select_backends(o.backends.empty() ? "all" : o.backends, "--gpt2-backends");
  if (o.backends.empty()) {
    // The oracle is hopeless at d12; with a real NPU its simulators are redundant.
    bool have_xdna = false;
    for (const auto& b : bs) have_xdna = have_xdna || (b->name() == "npu:xdna" && b->availability().ok);
    bool sim_kept = false;
    std::erase_if(bs, [&](const auto& b) {
      if (b->name() == "cpu:reference") return true;
      if (b->simulated()) {
        if (have_xdna || sim_kept || !b->availability().ok) return true;
        sim_kept = true;  // one simulator stands in for the NPU, as in the campaign's paper suite
      }
      return false;
    });
  }
  std::vector<Backend*> avail;
  for (auto& b : bs) {
    const Availability a = b->availability();
    if (a.ok) avail.push_back(b.get());
    else r.skipped.push_back(b->name() + ": " + a.reason);
  }
  for (const auto& p : o.presets) {
    const gpt2::Config cfg = gpt2::preset(p, "--gpt2-presets");
    if (o.T > cfg.maxT)
      throw InputError("--gpt2-seq", "longer than the " + p + " preset's maxT", "pass a shorter sequence");
    for (Backend* b : avail) {
      auto c = std::make_unique<Impl::Case>(Impl::Case{impl_.get(), p, cfg, b, {}});
      Impl::Case* cp = c.get();
      const std::string name = "gpt2/" + p + "/" + b->name() + "/step";
      auto* bm = benchmark::RegisterBenchmark(name.c_str(), [cp](benchmark::State& st) { cp->impl->run(*cp, st); });
      time_as_backend(bm, *b, benchmark::kMillisecond, 2);
      impl_->cases.push_back(std::move(c));
      ++r.count;
    }
    for (const gpt2::Op op : ops) {
      auto c = std::make_unique<Impl::OpCase>(Impl::OpCase{impl_.get(), cfg, op, {}});
      Impl::OpCase* cp = c.get();
      const gpt2::OpInfo& info = gpt2::op_info(op);
      const std::string name = "gpt2/" + p + "/op/" + info.name + "/" + info.pass;
      benchmark::RegisterBenchmark(name.c_str(), [cp](benchmark::State& st) { cp->impl->run_op(*cp, st); })
          ->Unit(benchmark::kMicrosecond)
          ->UseRealTime();
      impl_->op_cases.push_back(std::move(c));
      ++r.count;
    }
  }
  return r;
}

}  // namespace flopwatt::gbench

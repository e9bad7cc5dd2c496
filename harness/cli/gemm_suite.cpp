#include "harness/cli/gemm_suite.h"

#include <fmt/core.h>

#include <algorithm>

#include "harness/output/writer.h"
#include "harness/run/backend_registry.h"
#include "harness/run/ceilings_store.h"
#include "harness/run/progress.h"
#include "workloads/error.h"
#include "workloads/limits.h"

namespace flopwatt {

namespace {

std::vector<Backend*> raw(const std::vector<std::unique_ptr<Backend>>& v) {
  std::vector<Backend*> r;
  for (const auto& b : v) r.push_back(b.get());
  return r;
}

}  // namespace

GemmPlan plan_gemm(const GemmArgs& a, bool skip_reference) {
  const auto dt = parse_dtype(a.dtype);
  if (!dt) throw InputError("--dtype " + a.dtype, "unknown dtype", "use fp32 or bf16");
  GemmPlan p;
  p.go.shapes = parse_shapes(a.shapes, "--shapes");
  check_shapes_fit_memory(p.go.shapes, "--shapes");
  p.go.dtype = *dt;
  p.backends = select_backends(a.backends, "--backend");
  if (skip_reference)
    std::erase_if(p.backends, [](const auto& b) { return b->name() == "cpu:reference"; });
  p.go.timing.min_time_s = a.common.min_time_s;
  p.go.timing.min_reps = a.common.min_reps;
  p.go.lengthen_for_gauges = !a.common.min_time_set;
  p.context = {{"dtype", a.dtype}, {"shapes", a.shapes}};
  p.counters = std::make_shared<RunCounters>(a.counters, a.common.power.sysfs_root);
  p.context["counters"] = p.counters->status_json();
  p.go.counters = p.counters.get();
  return p;
}

void settle_gemm_ceilings(GemmPlan& p, const GemmArgs& a, OpenRun& r) {
  nlohmann::json roofline;
  nlohmann::json& c = r.session->run().context;
  p.roofs = settle_roofline(const_raw(p.backends), p.go.dtype, a.common.power.sysfs_root, !a.no_peak, "run gemm",
                            start_trip(c), &roofline);
  c["roofline"] = roofline;
  if (!a.no_peak) {
    // The dtype's own peak only: a bf16 GEMM on a CPU without bf16 units has no peak to be a fraction of.
    if (p.roofs.host && p.roofs.host->peak_flop_per_s.count(a.dtype))
      p.go.peak_flop_per_s = p.roofs.host->peak_flop_per_s.at(a.dtype);
    c["peak_flop_per_s"] = p.go.peak_flop_per_s ? nlohmann::json(*p.go.peak_flop_per_s) : nlohmann::json(nullptr);
  }
  r.session->save();
}

std::vector<const Backend*> const_raw(const std::vector<std::unique_ptr<Backend>>& v) {
  std::vector<const Backend*> r;
  for (const auto& b : v) r.push_back(b.get());
  return r;
}

bool run_suite(const GemmPlan& p, OpenRun& r, std::FILE* out) {
  r.session->set_roofline(p.roofs);
  if (const std::string line = p.counters ? p.counters->summary() : ""; !line.empty()) fmt::print(out, "{}\n", line);
  WriterTarget target;
  target.stream = out;
  const auto console = make_writer("console", target);
  console->context(r.session->run());
  // run_gemm_suite goes shape by shape, every backend per shape: item i is
  // (shapes[i / nb], backends[i % nb]), so the line can name the one running now.
  Progress progress;
  const std::size_t nb = p.backends.size(), total = p.go.shapes.size() * nb;
  auto item = [&](std::size_t i) {
    const GemmShape& s = p.go.shapes[i / nb];
    const GemmDesc& d = s.desc;
    const std::string dims = fmt::format("{}x{}x{}", d.M, d.N, d.K);
    // A custom shape's op is its dimensions already.
    return p.backends[i % nb]->name() + " " + (s.op.rfind(dims, 0) == 0 ? s.op : s.op + " " + dims);
  };
  if (total) progress.update(item(0), 0, total);
  const bool ok = run_gemm_suite(raw(p.backends), p.go, *r.session, *r.meter,
                                 [&](const Measurement& m, std::size_t done, std::size_t n) {
                                   progress.clear();
                                   console->measurement(r.session->run(), m);
                                   if (done < n) progress.update(item(done), done, n);
                                 });
  progress.clear();
  return ok;
}

int verification_status(const Run& run) {
  for (const auto& m : run.measurements)
    if (m.verified && !*m.verified) {
      fmt::print(stderr, "verification failed for {} {} (rel err {:.3g}); see run.json\n", m.backend, m.op,
                 m.verify_rel_err.value_or(-1));
      return 1;
    }
  return 0;
}

}  // namespace flopwatt

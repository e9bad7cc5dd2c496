#include "npu/sim/single_design.h"

#include <algorithm>
#include <limits>
#include <set>

#include "workloads/error.h"

namespace flopwatt::npu {

Plan plan_single(const DeviceDesc& dev, const GemmProblem& p, const SingleDesign& s) {
  return make_plan(dev, p, s.tile, s.cols, s.k_chunk);
}

SingleDesign choose_single_design(const DeviceDesc& dev, const std::vector<GemmShape>& shapes, DType out,
                                  const HostSide& host) {
  if (shapes.empty()) throw InputError("npu single design", "no shapes to design for");
  std::int64_t kmax = 1;
  for (const auto& s : shapes) kmax = std::max(kmax, s.desc.K);
  SingleDesign best;
  double best_t = std::numeric_limits<double>::infinity();
  for (const auto& c : candidate_designs(dev, out)) {
    // K per command: every shape's own K and powers of two, as multiples of k.
    std::set<std::int64_t> chunks;
    auto add = [&](std::int64_t x) { chunks.insert((std::max<std::int64_t>(x, 1) + c.tile.k - 1) / c.tile.k * c.tile.k); };
    for (const auto& s : shapes) add(s.desc.K);
    for (std::int64_t x = 256; x < kmax; x *= 2) add(x);
    for (std::int64_t kc : chunks) {
      double t = 0;
      for (const auto& s : shapes) {
        const GemmProblem p{s.desc.M, s.desc.N, s.desc.K, out};
        const Plan pl = make_plan(dev, p, c.tile, c.cols, kc);
        HostSide h = host;
        h.beta_nonzero = s.desc.beta != 0.0f;
        t += std::max(1, s.count_per_step) * model_time(dev, pl, h, 0.0).total();
        if (t >= best_t) break;
      }
      if (t < best_t) best_t = t, best = {c.tile, c.cols, kc};
    }
  }
  return best;
}

}  // namespace flopwatt::npu

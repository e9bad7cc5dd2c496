// Per-op timing of a training step: each op's [t0, t1] on CLOCK_MONOTONIC (the
// clock the power sampler stamps samples with, so intervals join energy
// windows), appended to a flat vector; two clock reads and a push_back per op.
#pragma once
#include <cstdint>
#include <ctime>
#include <functional>
#include <string>
#include <vector>

#include "workloads/backend.h"
#include "workloads/gpt2/op_table.h"

namespace flopwatt::gpt2 {

struct OpRecord {
  Op op;
  std::int16_t layer;          // -1 for ops outside the layer stack
  std::int64_t t0_ns, t1_ns;   // wall clock
  // Simulated backends: (simulated device time - wall time) of the op's GEMM
  // calls; the op's time is (t1 - t0 + sim_adjust_ns). 0 for real backends.
  std::int64_t sim_adjust_ns;
  Breakdown breakdown;         // summed backend breakdowns of the op's GEMM calls
  bool has_breakdown;
  double modelled_j;           // summed modelled energy of the op's GEMM calls (simulated backends)
  double seconds() const { return double(t1_ns - t0_ns + sim_adjust_ns) * 1e-9; }
};

class Profiler {
 public:
  static std::int64_t now_ns() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return std::int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
  }
  std::vector<OpRecord>& records() { return records_; }
  const std::vector<OpRecord>& records() const { return records_; }
  void clear() { records_.clear(); }

  // Running totals the GEMM runner adds to; OpScope records the difference.
  std::int64_t sim_adjust_ns = 0;
  Breakdown breakdown_total;
  int breakdown_calls = 0;
  double modelled_j_total = 0;
  std::string modelled_source;  // the source id a simulated backend reports its energy under
  // Called around each op, outside its timed interval (so their cost is not
  // the op's): the harness reads hardware counters here. Only the outermost
  // op of nested scopes calls them. Empty: nothing is called.
  std::function<void()> on_op_begin;
  std::function<void(Op op, int layer)> on_op_end;
  int depth = 0;

 private:
  std::vector<OpRecord> records_;
};

// Times one op; a null profiler makes it free.
class OpScope {
 public:
  OpScope(Profiler* p, Op op, int layer) : p_(p), op_(op), layer_(static_cast<std::int16_t>(layer)) {
    if (p_) {
      if (p_->depth++ == 0 && p_->on_op_begin) p_->on_op_begin();
      adj0_ = p_->sim_adjust_ns;
      bd0_ = p_->breakdown_total;
      calls0_ = p_->breakdown_calls;
      j0_ = p_->modelled_j_total;
      t0_ = Profiler::now_ns();
    }
  }
  ~OpScope() {
    if (!p_) return;
    const std::int64_t t1 = Profiler::now_ns();
    const Breakdown& b = p_->breakdown_total;
    Breakdown d{b.copy_in - bd0_.copy_in, b.compute - bd0_.compute, b.copy_out - bd0_.copy_out,
                b.submit - bd0_.submit, b.reconfigure - bd0_.reconfigure};
    p_->records().push_back({op_, layer_, t0_, t1, p_->sim_adjust_ns - adj0_, d, p_->breakdown_calls > calls0_,
                              p_->modelled_j_total - j0_});
    if (--p_->depth == 0 && p_->on_op_end) p_->on_op_end(op_, layer_);
  }
  OpScope(const OpScope&) = delete;
  OpScope& operator=(const OpScope&) = delete;

 private:
  Profiler* p_;
  Op op_;
  std::int16_t layer_;
  std::int64_t t0_ = 0, adj0_ = 0;
  Breakdown bd0_;
  int calls0_ = 0;
  double j0_ = 0;
};

}  // namespace flopwatt::gpt2

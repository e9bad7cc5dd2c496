#include "cpu/onednn_gemm.h"

#include "cpu/gemm_checks.h"
#include "workloads/error.h"

#include <omp.h>
#include <sys/mman.h>
#include <oneapi/dnnl/dnnl.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <tuple>

namespace flopwatt::cpu {
namespace {

using dnnl::memory;

const char* isa_name(dnnl_cpu_isa_t isa) {
  switch (isa) {
    case dnnl_cpu_isa_sse41: return "sse41";
    case dnnl_cpu_isa_avx: return "avx";
    case dnnl_cpu_isa_avx2: return "avx2";
    case dnnl_cpu_isa_avx2_vnni: return "avx2_vnni";
    case dnnl_cpu_isa_avx512_mic: return "avx512_mic";
    case dnnl_cpu_isa_avx512_mic_4ops: return "avx512_mic_4ops";
    case dnnl_cpu_isa_avx512_core: return "avx512_core";
    case dnnl_cpu_isa_avx512_core_vnni: return "avx512_core_vnni";
    case dnnl_cpu_isa_avx512_core_bf16: return "avx512_core_bf16";
    case dnnl_cpu_isa_avx512_core_amx: return "avx512_core_amx";
    default: return "unknown";
  }
}

// Everything that changes the primitive. alpha and beta are baked into its
// attributes (output scale, sum post-op), so they are part of the key.
using Key = std::tuple<std::int64_t, std::int64_t, std::int64_t, bool, bool, int, float, float, std::int64_t,
                       std::int64_t, std::int64_t, bool /*packed weights*/>;

Key make_key(const GemmDesc& d, bool packed) {
  return {d.M, d.N, d.K, d.trans_a, d.trans_b, int(d.dtype_in), d.alpha, d.beta,
          d.eff_lda(), d.eff_ldb(), d.eff_ldc(), packed};
}

memory::data_type in_type(const GemmDesc& d) {
  return d.dtype_in == DType::BF16 ? memory::data_type::bf16 : memory::data_type::f32;
}

// A strided 2-D view of a row-major operand, transposed through its strides.
memory::desc plain_desc(std::int64_t rows, std::int64_t cols, bool trans, std::int64_t ld, memory::data_type t) {
  return memory::desc({rows, cols}, t, trans ? memory::dims{1, ld} : memory::dims{ld, 1});
}

// One cached primitive with its memory objects; the objects' data handles are
// repointed on every call, so a call allocates nothing.
struct Plan {
  bool ok = false;
  std::string error;
  dnnl::matmul prim;
  dnnl::matmul::primitive_desc pd;
  memory src, wei, dst, scratch;
  std::unordered_map<int, memory> args;
  std::size_t scratch_bytes = 0;
  // Blocked-weights plans only: the reorder from the plain layout, built on first use.
  bool reorder_ok = false;
  dnnl::reorder reorder;
  memory packed_wei;
};

// Up to 64 elements spread over B's stored rows: cheap next to the GEMM, and a
// weight update (which touches every element) changes it.
std::uint64_t fingerprint(const GemmDesc& d, const void* B) {
  const std::int64_t rows = d.trans_b ? d.N : d.K, cols = d.trans_b ? d.K : d.N, ld = d.eff_ldb();
  const std::size_t es = dtype_size(d.dtype_in);
  const auto* base = static_cast<const unsigned char*>(B);
  std::uint64_t h = 1469598103934665603ull;
  const std::int64_t total = rows * cols;
  const std::int64_t samples = std::min<std::int64_t>(64, total);
  for (std::int64_t s = 0; s < samples; ++s) {
    const std::int64_t idx = samples > 1 ? s * (total - 1) / (samples - 1) : 0;
    const std::int64_t r = idx / cols, c = idx % cols;
    std::uint32_t v = 0;
    std::memcpy(&v, base + (r * ld + c) * es, es);
    h = (h ^ v) * 1099511628211ull;
  }
  return h;
}

struct Packed {
  memory weights;  // owned by oneDNN, in the primitive's preferred layout
  std::uint64_t print = 0;
  std::size_t bytes = 0;
};

// How gemm() runs a B that prepare() has not packed. Measured on GPT-2 124M
// shapes with cold operands, neither way wins everywhere: reordering B into the
// blocked layout on the fly is 2.1x faster for NN 256x3072x768 (B's 12 KiB row
// stride) and 1.2-1.6x for the TN weight-gradient shapes, but 5-20% slower for
// the NT forward shapes. So by default each shape times both on its first calls
// and keeps the faster.
struct Tuning {
  int runs[2] = {0, 0};
  double best[2] = {1e300, 1e300};
  int choice = -1;  // -1 undecided, 0 plain, 1 reorder-then-packed
};
constexpr int kTrialsPerVariant = 2;

OnednnPacking packing_from_env() {
  const char* v = std::getenv("FLOPWATT_ONEDNN_PACK");
  if (!v || !*v || std::strcmp(v, "auto") == 0) return OnednnPacking::Auto;
  if (std::strcmp(v, "always") == 0) return OnednnPacking::Always;
  if (std::strcmp(v, "never") == 0) return OnednnPacking::Never;
  throw InputError("FLOPWATT_ONEDNN_PACK=" + std::string(v), "is not a packing mode",
                   "set it to auto, always or never (or unset it)");
}

std::string fmt_ms(double s) {
  char b[32];
  std::snprintf(b, sizeof b, "%g ms", s * 1e3);
  return b;
}

const char* packing_name(OnednnPacking m) {
  switch (m) {
    case OnednnPacking::Always: return "always";
    case OnednnPacking::Never: return "never";
    default: return "auto";
  }
}

// Packed copies are bounded so a model that prepares every layer's weights
// cannot grow memory without limit; past the cap the oldest copies go.
constexpr std::size_t kPackedCapBytes = std::size_t(2) << 30;

class OnednnBackend final : public Backend {
 public:
  OnednnBackend(OnednnPacking packing, double long_call_s) : packing_(packing), long_call_s_(long_call_s) {
    try {
      engine_ = dnnl::engine(dnnl::engine::kind::cpu, 0);
      stream_ = dnnl::stream(engine_);
      ok_ = true;
    } catch (const dnnl::error& e) {
      reason_ = std::string("oneDNN could not create a CPU engine: ") + e.what();
    }
  }

  std::string name() const override { return "cpu:onednn"; }
  Availability availability() const override { return {ok_, reason_}; }

  bool supports(const GemmDesc& d) const override {
    if (!ok_ || !shape_valid(d) || d.M < 1 || d.N < 1 || d.K < 1) return false;
    if (d.dtype_out != DType::F32 || d.dtype_acc != DType::F32) return false;
    std::lock_guard<std::mutex> lock(mu_);
    return plan(d, false).ok;
  }

  void prepare(const GemmDesc& d, const void* B) override {
    if (!supports(d)) return;
    std::lock_guard<std::mutex> lock(mu_);
    Plan& p = plan(d, true);
    if (!p.ok) return;  // no packed variant: gemm() keeps using the plain primitive
    const Plan& plain = plan(d, false);
    const auto key = std::make_pair(make_key(d, true), B);
    Packed entry;
    entry.weights = memory(p.pd.weights_desc(), engine_);
    entry.bytes = p.pd.weights_desc().get_size();
    memory src(plain.pd.weights_desc(), engine_, const_cast<void*>(B));
    dnnl::reorder(src, entry.weights).execute(stream_, src, entry.weights);
    stream_.wait();
    entry.print = fingerprint(d, B);
    auto old = packed_.find(key);
    if (old != packed_.end()) {
      packed_bytes_ -= old->second.bytes;
      std::erase(packed_order_, key);
      packed_.erase(old);
    }
    while (!packed_order_.empty() && packed_bytes_ + entry.bytes > kPackedCapBytes) {
      auto it = packed_.find(packed_order_.front());
      packed_bytes_ -= it->second.bytes;
      packed_.erase(it);
      packed_order_.erase(packed_order_.begin());
    }
    packed_bytes_ += entry.bytes;
    packed_order_.push_back(key);
    packed_.emplace(key, std::move(entry));
  }

  void gemm(const GemmDesc& d, const void* A, const void* B, void* C) override {
    require_supported(*this, d, "oneDNN rejected this matmul; use cpu:openblas or cpu:reference");
    std::lock_guard<std::mutex> lock(mu_);
    last_bd_ = Breakdown{};
    auto it = packed_.find(std::make_pair(make_key(d, true), B));
    if (it != packed_.end() && it->second.print == fingerprint(d, B)) {
      execute(plan(d, true), A, it->second.weights, C);
      return;
    }
    Plan& plain = plan(d, false);
    if (packing_ == OnednnPacking::Never) return run_plain(plain, A, B, C);
    Plan& packed = plan(d, true);
    const bool can_pack = packed.ok && packed.pd.weights_desc() != plain.pd.weights_desc();
    if (!can_pack) return run_plain(plain, A, B, C);
    if (packing_ == OnednnPacking::Always) return run_packed(plain, packed, A, B, C);
    Tuning& t = tuning_[make_key(d, false)];
    if (t.choice == 0) return run_plain(plain, A, B, C);
    if (t.choice == 1) return run_packed(plain, packed, A, B, C);
    // Alternate the two ways; the first call of each is timed too, since
    // primitive creation happened above, outside the clock.
    auto trial = [&](int v) {
      if (v == 1) reserve_pack_buffer(packed.pd.weights_desc().get_size());
      const auto t0 = std::chrono::steady_clock::now();
      if (v == 0) run_plain(plain, A, B, C);
      else run_packed(plain, packed, A, B, C);
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      t.best[v] = std::min(t.best[v], s);
      ++t.runs[v];
      return s;
    };
    const int v = t.runs[0] <= t.runs[1] ? 0 : 1;
    // A long call whose C is only written (beta 0) times the other way at
    // once, so a shape run once per training step is decided in the first
    // (warm-up) step instead of costing a measured one.
    if (trial(v) > long_call_s_ && d.beta == 0.0f && t.runs[1 - v] == 0) trial(1 - v);
    // A call that takes tens of milliseconds is timed well enough once, and a
    // second trial each would spill into the steps a training run measures
    // (GPT-2's lm_head shapes run once per step).
    const int need = std::min(t.best[0], t.best[1]) > long_call_s_ ? 1 : kTrialsPerVariant;
    if (t.runs[0] >= need && t.runs[1] >= need) {
      t.choice = t.best[1] < t.best[0] ? 1 : 0;
      if (t.choice == 0 && pack_bytes_ == packed.pd.weights_desc().get_size()) {
        pack_buf_.reset();  // the largest on-the-fly copy is no longer needed
        pack_bytes_ = 0;
      }
    }
  }

  // copy_in: the reorder of an unprepared B into the blocked layout, when this
  // call did one (the cost a training step pays per call, reported rather than
  // hidden in the GEMM's rate); compute: the matmul primitive. The copy of B's
  // panels that the brgemm kernel makes for itself from a plain B is inside
  // compute: oneDNN does not time it apart.
  std::optional<Breakdown> last_breakdown() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return last_bd_;
  }

  std::vector<std::pair<std::string, std::string>> notes() const override {
    const dnnl_version_t* v = dnnl_version();
    std::vector<std::pair<std::string, std::string>> n = {
        {"onednn_version", std::to_string(v->major) + "." + std::to_string(v->minor) + "." +
                               std::to_string(v->patch) + " (" + v->hash + ")"},
        {"onednn_cpu_isa", isa_name(dnnl_get_effective_cpu_isa())},
        {"onednn_threading", v->cpu_runtime == DNNL_RUNTIME_OMP ? "openmp" : std::to_string(v->cpu_runtime)},
        {"threads", std::to_string(omp_get_max_threads())},
        {"weights_packing",
         "prepare(desc, B) reorders B once into the matmul's preferred blocked layout, cached by (desc, B "
         "pointer) outside the timed loop; gemm() uses the packed copy while a sampled fingerprint of B "
         "matches, else the plain-layout primitive"},
        {"unpacked_weights",
         std::string("FLOPWATT_ONEDNN_PACK=") + packing_name(packing_) +
             ": a B that prepare() has not packed is either used in place (never) or reordered into the "
             "blocked layout inside the call, its time counted (always); auto times both on the first " +
             std::to_string(kTrialsPerVariant) + " calls each per shape (one each, in the same call when C is "
             "only written, when a call takes over " + fmt_ms(long_call_s_) + ") and keeps the faster"},
        {"primitive_cache", "one matmul primitive per GemmDesc (alpha as output scale, beta as sum post-op); "
                            "user-mode scratchpad reused across calls"},
        {"breakdown", "copy_in is the in-call reorder of an unprepared B into the blocked layout, compute the "
                      "matmul (a plain B's panel copies inside the brgemm kernel included)"},
    };
    if (auto c = choices(); !c.empty()) n.emplace_back("unpacked_weights_choices", c);
    if (!ok_) n.emplace_back("error", reason_);
    return n;
  }

 private:
  // Caller holds mu_. Failures are cached too, so an unsupported desc costs one attempt.
  Plan& plan(const GemmDesc& d, bool packed) const {
    const Key key = make_key(d, packed);
    auto it = plans_.find(key);
    if (it != plans_.end()) return it->second;
    Plan& p = plans_[key];
    try {
      const auto t = in_type(d);
      const memory::desc a = plain_desc(d.M, d.K, d.trans_a, d.eff_lda(), t);
      const memory::desc b = packed ? memory::desc({d.K, d.N}, t, memory::format_tag::any)
                                    : plain_desc(d.K, d.N, d.trans_b, d.eff_ldb(), t);
      const memory::desc c = plain_desc(d.M, d.N, false, d.eff_ldc(), memory::data_type::f32);
      dnnl::primitive_attr attr;
      attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
      if (d.alpha != 1.0f) attr.set_output_scales(0, {d.alpha});
      if (d.beta != 0.0f) {
        dnnl::post_ops po;
        po.append_sum(d.beta);
        attr.set_post_ops(po);
      }
      p.pd = dnnl::matmul::primitive_desc(dnnl::matmul::desc(a, b, c), attr, engine_);
      p.prim = dnnl::matmul(p.pd);
      p.src = memory(p.pd.src_desc(), engine_, nullptr);
      p.wei = memory(p.pd.weights_desc(), engine_, nullptr);
      p.dst = memory(p.pd.dst_desc(), engine_, nullptr);
      p.scratch_bytes = p.pd.scratchpad_desc().get_size();
      p.args = {{DNNL_ARG_SRC, p.src}, {DNNL_ARG_WEIGHTS, p.wei}, {DNNL_ARG_DST, p.dst}};
      if (p.scratch_bytes) {
        p.scratch = memory(p.pd.scratchpad_desc(), engine_, nullptr);
        p.args[DNNL_ARG_SCRATCHPAD] = p.scratch;
      }
      p.ok = true;
    } catch (const dnnl::error& e) {
      p.ok = false;
      p.error = e.what();
    }
    return p;
  }

  // What auto mode decided so far, one entry per shape, with the times it compared.
  std::string choices() const {
    std::lock_guard<std::mutex> lock(mu_);
    std::string out;
    for (const auto& [k, t] : tuning_) {
      if (t.choice < 0) continue;
      const auto& [M, N, K, ta, tb, dt, alpha, beta, lda, ldb, ldc, packed] = k;
      (void)lda, (void)ldb, (void)ldc, (void)packed;
      char line[200];
      std::snprintf(line, sizeof line, "%s%c%c %lldx%lldx%lld %s%s: %s (%.3g ms vs %.3g ms)", out.empty() ? "" : "; ",
                    ta ? 'T' : 'N', tb ? 'T' : 'N', (long long)M, (long long)N, (long long)K,
                    dt == int(DType::BF16) ? "bf16" : "fp32", alpha != 1.0f || beta != 0.0f ? " (scaled)" : "",
                    t.choice == 1 ? "reordered" : "in place", 1e3 * t.best[t.choice], 1e3 * t.best[1 - t.choice]);
      out += line;
    }
    return out;
  }

  void execute(Plan& p, const void* A, const memory& weights, void* C) {
    p.src.set_data_handle(const_cast<void*>(A));
    p.dst.set_data_handle(C);
    p.args[DNNL_ARG_WEIGHTS] = weights;
    if (p.scratch_bytes) {
      if (scratch_.size() < p.scratch_bytes + 64) scratch_.resize(p.scratch_bytes + 64);
      // oneDNN wants the scratchpad 64-byte aligned; the vector's storage is only 16.
      auto addr = reinterpret_cast<std::uintptr_t>(scratch_.data());
      p.scratch.set_data_handle(reinterpret_cast<void*>((addr + 63) & ~std::uintptr_t(63)));
    }
    const auto t0 = std::chrono::steady_clock::now();
    p.prim.execute(stream_, p.args);
    stream_.wait();
    last_bd_.compute += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }

  void run_plain(Plan& p, const void* A, const void* B, void* C) {
    p.wei.set_data_handle(const_cast<void*>(B));
    execute(p, A, p.wei, C);
  }

  // Grown, never shrunk here; touched at once so that page faults (and huge
  // pages, 155 MB for GPT-2's lm_head) are not charged to the first timed trial.
  void reserve_pack_buffer(std::size_t bytes) {
    if (bytes <= pack_bytes_) return;
    constexpr std::size_t kHuge = std::size_t(2) << 20;
    const std::size_t rounded = (bytes + kHuge - 1) / kHuge * kHuge;
    pack_buf_.reset(static_cast<unsigned char*>(std::aligned_alloc(kHuge, rounded)));
    if (!pack_buf_) throw std::bad_alloc();
    madvise(pack_buf_.get(), rounded, MADV_HUGEPAGE);
    std::memset(pack_buf_.get(), 0, rounded);
    pack_bytes_ = bytes;
  }

  // Reorders B into one shared buffer (calls are serialised by mu_), then runs
  // the blocked-weights primitive.
  void run_packed(Plan& plain, Plan& packed, const void* A, const void* B, void* C) {
    reserve_pack_buffer(packed.pd.weights_desc().get_size());
    if (!packed.reorder_ok) {
      packed.packed_wei = memory(packed.pd.weights_desc(), engine_, nullptr);
      packed.reorder = dnnl::reorder(plain.wei, packed.packed_wei);
      packed.reorder_ok = true;
    }
    plain.wei.set_data_handle(const_cast<void*>(B));
    packed.packed_wei.set_data_handle(pack_buf_.get());
    const auto t0 = std::chrono::steady_clock::now();
    packed.reorder.execute(stream_, plain.wei, packed.packed_wei);
    stream_.wait();
    last_bd_.copy_in += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    execute(packed, A, packed.packed_wei, C);
  }

  struct FreeDeleter {
    void operator()(unsigned char* p) const { std::free(p); }
  };

  OnednnPacking packing_;
  double long_call_s_;
  std::map<Key, Tuning> tuning_;
  std::unique_ptr<unsigned char, FreeDeleter> pack_buf_;
  std::size_t pack_bytes_ = 0;
  bool ok_ = false;
  std::string reason_;
  dnnl::engine engine_;
  mutable dnnl::stream stream_;
  mutable std::mutex mu_;
  mutable std::map<Key, Plan> plans_;
  std::map<std::pair<Key, const void*>, Packed> packed_;
  std::vector<std::pair<Key, const void*>> packed_order_;
  std::size_t packed_bytes_ = 0;
  std::vector<unsigned char> scratch_;
  Breakdown last_bd_;  // of the last gemm(); guarded by mu_
};

}  // namespace

std::unique_ptr<Backend> make_onednn_backend(OnednnPacking packing, double long_call_s) {
  return std::make_unique<OnednnBackend>(packing, long_call_s);
}

std::unique_ptr<Backend> make_onednn_backend() { return make_onednn_backend(packing_from_env()); }

}  // namespace flopwatt::cpu

#include "workloads/gpt2/linear.h"

#include <bit>
#include <algorithm>
#include <cstring>

#include "workloads/error.h"
#include "workloads/gpt2/kernels.h"

namespace flopwatt::gpt2 {

namespace {

std::string describe(const GemmDesc& d) {
  return d.layout() + " " + std::string(to_string(d.dtype_in)) + " M=" + std::to_string(d.M) +
         " N=" + std::to_string(d.N) + " K=" + std::to_string(d.K);
}

// rows x cols (leading dimension ld) -> cols x rows, packed.
template <typename E>
void transpose(E* out, const E* in, std::int64_t rows, std::int64_t cols, std::int64_t ld) {
  constexpr std::int64_t kTile = 32;
#pragma omp parallel for collapse(2) schedule(static) if (rows * cols >= (1 << 16))
  for (std::int64_t r0 = 0; r0 < rows; r0 += kTile)
    for (std::int64_t c0 = 0; c0 < cols; c0 += kTile)
      for (std::int64_t r = r0; r < std::min(rows, r0 + kTile); ++r)
        for (std::int64_t c = c0; c < std::min(cols, c0 + kTile); ++c) out[c * rows + r] = in[r * ld + c];
}

}  // namespace

void convert_to_bf16(bf16_t* out, const float* in, std::int64_t n) {
  // Same rounding as f32_to_bf16 in dtype.h, written without a branch so it vectorizes.
#pragma omp parallel for simd schedule(static) if (n >= (1 << 16))
  for (std::int64_t i = 0; i < n; ++i) {
    const std::uint32_t u = std::bit_cast<std::uint32_t>(in[i]);
    const bool nan = (u & 0x7fffffffu) > 0x7f800000u;
    const std::uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
    out[i] = static_cast<bf16_t>(nan ? ((u >> 16) | 0x40u) : rounded);
  }
}

GemmRunner::GemmRunner(Backend& backend, DType dtype) : backend_(backend), dtype_(dtype) {
  GemmDesc probe;
  probe.M = probe.N = probe.K = 64;
  probe.dtype_in = dtype;
  if (!backend_.supports(probe))
    throw InputError("--gemm-backend " + backend_.name(),
                     "does not run " + std::string(to_string(dtype)) + " GEMMs (" + describe(probe) + ")",
                     dtype == DType::F32 ? "pass --dtype bf16, or pick a backend listed by `flopwatt backends`"
                                         : "pass --dtype fp32, or pick a backend listed by `flopwatt backends`");
  GemmDesc nt = probe, tn = probe;
  nt.trans_b = true;
  tn.trans_a = true;
  copies_operands_ = dtype == DType::BF16 || !backend_.supports(nt) || !backend_.supports(tn);
}

void GemmRunner::convert(bf16_t* out, const float* in, std::int64_t n) {
  const std::int64_t t0 = Profiler::now_ns();
  convert_to_bf16(out, in, n);
  copy_ns_ += Profiler::now_ns() - t0;
}

const bf16_t* GemmRunner::to_bf16(const float* x, std::int64_t n, int slot) {
  auto& buf = conv_[slot];
  if (static_cast<std::int64_t>(buf.size()) < n) buf.resize(static_cast<std::size_t>(n));
  convert(buf.data(), x, n);
  return buf.data();
}

namespace {

// Up to 64 elements spread over x: a recomputed activation changes them.
std::uint64_t fingerprint(const float* x, std::int64_t n) {
  std::uint64_t h = 1469598103934665603ull ^ std::uint64_t(n);
  const std::int64_t samples = std::min<std::int64_t>(64, n);
  for (std::int64_t s = 0; s < samples; ++s) {
    const std::int64_t i = samples > 1 ? s * (n - 1) / (samples - 1) : 0;
    h = (h ^ std::bit_cast<std::uint32_t>(x[i])) * 1099511628211ull;
  }
  return h;
}

}  // namespace

const bf16_t* GemmRunner::keep_bf16_input(const float* x, std::int64_t n) {
  const std::int64_t bytes = n * std::int64_t(sizeof(bf16_t));
  if (bytes > kKeptInputCapBytes) return to_bf16(x, n, 0);
  auto it = std::find_if(kept_.begin(), kept_.end(), [&](const KeptInput& k) { return k.src == x; });
  KeptInput entry{x, n, 0, {}};
  if (it != kept_.end()) {
    kept_bytes_ -= std::int64_t(it->data.size() * sizeof(bf16_t));
    entry.data = std::move(it->data);
    kept_.erase(it);
  }
  while (!kept_.empty() && kept_bytes_ + bytes > kKeptInputCapBytes) {
    kept_bytes_ -= std::int64_t(kept_.front().data.size() * sizeof(bf16_t));
    kept_.erase(kept_.begin());
  }
  entry.data.resize(std::size_t(n));
  convert(entry.data.data(), x, n);
  entry.print = fingerprint(x, n);
  kept_bytes_ += bytes;
  kept_.push_back(std::move(entry));
  return kept_.back().data.data();
}

const bf16_t* GemmRunner::kept_bf16_input(const float* x, std::int64_t n) const {
  for (const KeptInput& k : kept_)
    if (k.src == x && k.n == n && k.print == fingerprint(x, n)) return k.data.data();
  return nullptr;
}

void GemmRunner::gemm(const GemmDesc& d0, const void* A, const void* B, void* C) {
  GemmDesc d = d0;
  if (!backend_.supports(d)) {
    // Fall back to NN with explicit transposes (counted in the op's time).
    GemmDesc nn = d;
    nn.trans_a = nn.trans_b = false;
    nn.lda = nn.ldb = 0;
    if (!(d.trans_a || d.trans_b) || !backend_.supports(nn))
      throw InputError("--gemm-backend " + backend_.name(),
                       "does not support the " + describe(d) + " GEMM that gpt2 needs",
                       "pick a backend listed by `flopwatt backends` that runs this layout and dtype");
    const std::size_t e = dtype_size(d.dtype_in);
    const std::int64_t t0 = Profiler::now_ns();
    if (d.trans_a) {
      auto& buf = trans_[0];
      buf.resize(std::size_t(d.M) * d.K * e);
      if (e == 4) transpose(reinterpret_cast<float*>(buf.data()), static_cast<const float*>(A), d.K, d.M, d.eff_lda());
      else transpose(reinterpret_cast<bf16_t*>(buf.data()), static_cast<const bf16_t*>(A), d.K, d.M, d.eff_lda());
      A = buf.data();
    }
    if (d.trans_b) {
      auto& buf = trans_[1];
      buf.resize(std::size_t(d.K) * d.N * e);
      if (e == 4) transpose(reinterpret_cast<float*>(buf.data()), static_cast<const float*>(B), d.N, d.K, d.eff_ldb());
      else transpose(reinterpret_cast<bf16_t*>(buf.data()), static_cast<const bf16_t*>(B), d.N, d.K, d.eff_ldb());
      B = buf.data();
    }
    nn.ldc = d.ldc;
    d = nn;
    copy_ns_ += Profiler::now_ns() - t0;
  }
  const std::int64_t t0 = Profiler::now_ns();
  backend_.gemm(d, A, B, C);
  const std::int64_t t1 = Profiler::now_ns();
  const std::int64_t copy_ns = copy_ns_;
  copy_ns_ = 0;
  if (!prof_) return;
  if (auto e = backend_.last_modelled_energy_j()) {
    prof_->modelled_j_total += e->second;
    prof_->modelled_source = e->first;
  }
  auto bd = backend_.last_breakdown();
  if (bd && backend_.simulated()) {
    // A simulated device's time is its model's figure, not the host's time to simulate it.
    const double sim_s = bd->copy_in + bd->compute + bd->copy_out + bd->submit + bd->reconfigure;
    prof_->sim_adjust_ns += static_cast<std::int64_t>(sim_s * 1e9) - (t1 - t0);
  }
  // A backend without a breakdown of its own spent the whole call computing.
  // Every call of a runner that copies operands reports one, so that an op's
  // GEMMs are all in its breakdown or none is.
  if (!bd && !copies_operands_) return;
  Breakdown b = bd ? *bd : Breakdown{0, double(t1 - t0) * 1e-9, 0, 0, 0};
  b.copy_in += double(copy_ns) * 1e-9;
  Breakdown& tot = prof_->breakdown_total;
  tot.copy_in += b.copy_in;
  tot.compute += b.compute;
  tot.copy_out += b.copy_out;
  tot.submit += b.submit;
  tot.reconfigure += b.reconfigure;
  ++prof_->breakdown_calls;
}

void GemmRunner::forward(float* out, const float* inp, const float* W, const bf16_t* W16, const float* bias, int N,
                         int K, int OC) {
  GemmDesc d;
  d.M = N;
  d.N = OC;
  d.K = K;
  d.trans_b = true;
  d.dtype_in = dtype_;
  if (dtype_ == DType::BF16) gemm(d, keep_bf16_input(inp, std::int64_t(N) * K), W16, out);
  else gemm(d, inp, W, out);
  if (bias) kernels::bias_forward(out, bias, N, OC);
}

void GemmRunner::set_grad_order(GradOrder o, std::int64_t cache_bytes, std::int64_t block_rows) {
  order_ = o;
  cache_bytes_ = cache_bytes;
  block_rows_ = block_rows;
}

void GemmRunner::backward(float* dinp, float* dW, float* dbias, const float* dout, const float* inp, const float* W,
                          const bf16_t* W16, int N, int K, int OC, bool accumulate_dW) {
  const bool bf16 = dtype_ == DType::BF16;
  const std::int64_t e = std::int64_t(dtype_size(dtype_));
  // Read once: backward runs per layer per step. A caller measuring under a
  // fixture root passes its own cache_bytes to set_grad_order.
  static const std::int64_t machine_cache_bytes = default_block_cache_bytes("/");
  last_plan_ = plan_linear_backward(order_, N, K, OC, e, accumulate_dW,
                                    cache_bytes_ > 0 ? cache_bytes_ : machine_cache_bytes, block_rows_);
  // bf16, interleaved: each block's rows of dY and X are converted right
  // before its two GEMMs, so the conversion does not stream all of dY through
  // memory ahead of the blocks.
  const bool convert_per_block = bf16 && last_plan_.interleaved;
  const bf16_t* kept_inp = bf16 ? kept_bf16_input(inp, std::int64_t(N) * K) : nullptr;
  auto bf16_of = [&](const float* x, std::int64_t n, int slot) -> const void* {
    if (!convert_per_block) return to_bf16(x, n, slot);
    if (std::int64_t(conv_[slot].size()) < n) conv_[slot].resize(std::size_t(n));
    return conv_[slot].data();
  };
  const void* dout_op = bf16 ? bf16_of(dout, std::int64_t(N) * OC, 0) : dout;
  const void* inp_op = !bf16 ? static_cast<const void*>(inp)
                             : kept_inp ? kept_inp : bf16_of(inp, std::int64_t(N) * K, 1);
  const void* W_op = bf16 ? static_cast<const void*>(W16) : W;
  const std::int64_t rows = last_plan_.interleaved ? last_plan_.block_rows : std::int64_t(N);
  // Standard order: one block of all N rows, dX over every row before dW.
  // Interleaved: each block of rows of dY feeds dX[blk] = dY[blk] W and then
  // dW += dY[blk]^T X[blk] while the block is still in cache. dW accumulates
  // across blocks (beta = 1 after the first), so every block reads and writes
  // all of dW: that is the order's price, paid back only when W and dW stay in
  // cache or dY is large (grad_order.h's traffic model). The first block alone
  // decides whether the old dW is kept.
  auto at = [e](const void* p, std::int64_t elems) { return static_cast<const unsigned char*>(p) + elems * e; };
  for (std::int64_t r0 = 0; r0 < N; r0 += rows) {
    const std::int64_t r = std::min<std::int64_t>(rows, N - r0);
    if (convert_per_block) {
      convert(conv_[0].data() + r0 * OC, dout + r0 * OC, r * OC);
      if (!kept_inp) convert(conv_[1].data() + r0 * K, inp + r0 * K, r * K);
    }
    const void* dY = at(dout_op, r0 * OC);
    GemmDesc dx;  // dinp(r,K) = dout(r,OC) W(OC,K)
    dx.M = r;
    dx.N = K;
    dx.K = OC;
    dx.dtype_in = dtype_;
    gemm(dx, dY, W_op, dinp + r0 * K);
    if (!last_plan_.interleaved) continue;
    GemmDesc dw;  // dW(OC,K) (+)= dout[blk]^T inp[blk]: A = dout rows stored (r,OC), read transposed
    dw.M = OC;
    dw.N = K;
    dw.K = r;
    dw.trans_a = true;
    dw.beta = (accumulate_dW || r0 > 0) ? 1.0f : 0.0f;
    dw.dtype_in = dtype_;
    gemm(dw, dY, at(inp_op, r0 * K), dW);
  }
  if (!last_plan_.interleaved) {
    GemmDesc dw;  // dW(OC,K) = dout^T inp: A = dout stored (N,OC), read transposed
    dw.M = OC;
    dw.N = K;
    dw.K = N;
    dw.trans_a = true;
    dw.beta = accumulate_dW ? 1.0f : 0.0f;
    dw.dtype_in = dtype_;
    gemm(dw, dout_op, inp_op, dW);
  }
  if (dbias) kernels::bias_backward(dbias, dout, N, OC);
}

}  // namespace flopwatt::gpt2

#include "workloads/gpt2/model.h"

#include <sys/mman.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <new>

#include "workloads/error.h"
#include "workloads/gpt2/checkpoint.h"
#include "workloads/gpt2/kernels.h"

namespace flopwatt::gpt2 {

// --- Arena ---------------------------------------------------------------

template <typename E>
Arena<E>::Arena(std::int64_t n) : n_(n) {
  const std::size_t bytes = std::size_t(std::max<std::int64_t>(n, 1)) * sizeof(E);
  // Large arenas are 2 MiB aligned and advised for huge pages: AdamW streams
  // the whole parameter set every step, and 4 KiB pages would cost TLB misses.
  const std::size_t huge = std::size_t(2) << 20;
  const std::size_t align = bytes >= huge ? huge : 64;
  const std::size_t rounded = (bytes + align - 1) / align * align;
  void* p = std::aligned_alloc(align, rounded);
  if (!p) throw std::bad_alloc();
  if (align == huge) madvise(p, rounded, MADV_HUGEPAGE);
  std::memset(p, 0, rounded);
  p_.reset(static_cast<E*>(p));
}

template <typename E>
void Arena<E>::Free::operator()(E* p) const {
  std::free(p);
}

template class Arena<float>;
template class Arena<bf16_t>;
template class Arena<int>;

// --- Model ---------------------------------------------------------------

Model::Model(const Config& c, Backend& backend, DType gemm_dtype) : cfg_(c), runner_(backend, gemm_dtype) {
  validate(c, "model config");
  playout_ = layout(kParamSpecs, Extents::of(c));
  params_ = Arena<float>(playout_.total);
  if (gemm_dtype == DType::BF16) params16_ = Arena<bf16_t>(playout_.total);
}

void Model::set_profiler(Profiler* p) {
  prof_ = p;
  runner_.set_profiler(p);
}

std::int64_t Model::param_offset(ParamId id, int layer) const {
  std::int64_t off = playout_.offset[id];
  if (kParamSpecs[id].per_layer()) off += std::int64_t(layer) * (playout_.size[id] / cfg_.L);
  return off;
}

const bf16_t* Model::param16(ParamId id, int layer) const {
  return params16_ ? params16_.data() + param_offset(id, layer) : nullptr;
}

float* Model::act(ActId id, int layer) const {
  std::int64_t off = alayout_.offset[id];
  if (kActSpecs[id].per_layer()) off += std::int64_t(layer) * (alayout_.size[id] / cfg_.L);
  return acts_.data() + off;
}

float* Model::gact(GradActId id) const { return gacts_.data() + glayout_.offset[id]; }

const float* Model::activation(ActId id, int layer) const { return acts_ ? act(id, layer) : nullptr; }

const float* Model::logits() const { return logits_valid_ ? act(kLogits) : nullptr; }

namespace {

// Counter-based normal deviates: value i of stream s depends only on (seed, s, i),
// so the init is the same for any thread count.
inline std::uint64_t mix(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

void fill_normal(float* out, std::int64_t n, float std, std::uint64_t seed, std::uint64_t stream) {
  const std::uint64_t base = mix(seed ^ mix(stream + 0x9E3779B97F4A7C15ull));
#pragma omp parallel for schedule(static) if (n >= (1 << 16))
  for (std::int64_t i = 0; i < n; ++i) {
    const std::uint64_t r = mix(base + 0x9E3779B97F4A7C15ull * std::uint64_t(i + 1));
    // Box-Muller on two 32-bit uniforms in (0, 1].
    const double u1 = (double(r >> 32) + 1.0) / 4294967296.0;
    const double u2 = double(r & 0xffffffffu) / 4294967296.0;
    out[i] = static_cast<float>(std * std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2));
  }
}

}  // namespace

void Model::init_random(std::uint64_t seed) {
  const float std = 0.02f;
  const float proj_std = 0.02f / std::sqrt(2.0f * cfg_.L);
  std::memset(params_.data(), 0, std::size_t(playout_.total) * sizeof(float));
  for (int id = 0; id < kNumParams; ++id) {
    float* p = params_.data() + playout_.offset[id];
    const std::int64_t n = playout_.size[id];
    switch (id) {
      case kWte:  // the Vp - V padding rows stay zero, as in llm.c's exported checkpoints
        fill_normal(p, std::int64_t(cfg_.V) * cfg_.C, std, seed, id);
        break;
      case kWpe:
      case kQkvw:
      case kFcw:
        fill_normal(p, n, std, seed, id);
        break;
      case kAttprojw:
      case kFcprojw:
        fill_normal(p, n, proj_std, seed, id);
        break;
      case kLn1w:
      case kLn2w:
      case kLnfw:
        for (std::int64_t i = 0; i < n; ++i) p[i] = 1.0f;
        break;
      default:  // biases
        break;
    }
  }
  params_changed();
}

void Model::load(const std::string& path) {
  read_checkpoint_into(path, cfg_, params());
  params_changed();
}

void Model::save(const std::string& path, const std::string& flag) const {
  write_checkpoint(path, cfg_, {params_.data(), std::size_t(playout_.total)}, flag);
}

void Model::params_changed() {
  if (params16_) convert_to_bf16(params16_.data(), params_.data(), playout_.total);
}

void Model::ensure_activations(int B, int T) {
  if (B <= 0 || T <= 0)
    throw InputError("--batch/--seq", "batch " + std::to_string(B) + " and sequence " + std::to_string(T) +
                                          " must be positive", "pass positive --batch and --seq");
  if (T > cfg_.maxT)
    throw InputError("--seq " + std::to_string(T), "longer than the model's maxT=" + std::to_string(cfg_.maxT),
                     "pass --seq <= " + std::to_string(cfg_.maxT));
  if (acts_ && B == B_ && T == T_) return;
  const Extents e = Extents::of(cfg_, B, T);
  alayout_ = layout(kActSpecs, e, 16);
  glayout_ = layout(kGradActSpecs, e, 16);
  acts_ = Arena<float>(alayout_.total);
  gacts_ = Arena<float>(glayout_.total);
  tokens_ = Arena<int>(2 * std::int64_t(B) * T);
  B_ = B;
  T_ = T;
}

void Model::ensure_grads() {
  if (grads_) return;
  grads_ = Arena<float>(playout_.total);  // zero-filled
  grads_fresh_ = false;                   // zeros are a valid accumulation start
}

const int* Model::stage_tokens(const int* inputs, const int* targets, int N) {
  const int V = cfg_.V;
  int* in = tokens_.data();
  int* tg = in + N;
  for (int i = 0; i < N; ++i) {
    if (inputs[i] < 0 || inputs[i] >= V || (targets && (targets[i] < 0 || targets[i] >= V)))
      throw InputError("tokens", "token id out of the vocabulary [0, " + std::to_string(V) + ")",
                       "use token data made with the model's tokenizer");
    in[i] = inputs[i];
    tg[i] = targets ? targets[i] : 0;
  }
  have_targets_ = targets != nullptr;
  return tg;
}

float* Model::block_forward(int l, const float* residual, int B, int T) {
  const int C = cfg_.C, NH = cfg_.NH;
  const int N = B * T;
  float* proj = act(kProj);
  float* ln1 = act(kLn1, l);
  float* qkv = act(kQkv, l);
  float* atty = act(kAtty, l);
  float* r2 = act(kResidual2, l);
  float* ln2 = act(kLn2, l);
  float* fch = act(kFch, l);
  float* fchg = act(kFchGelu, l);
  float* r3 = act(kResidual3, l);
  {
    OpScope s(prof_, Op::Ln1Fwd, l);
    kernels::layernorm_forward(ln1, act(kLn1Mean, l), act(kLn1Rstd, l), residual, param(kLn1w, l),
                               param(kLn1b, l), N, C);
  }
  {
    OpScope s(prof_, Op::QkvFwd, l);
    runner_.forward(qkv, ln1, param(kQkvw, l), param16(kQkvw, l), param(kQkvb, l), N, C, 3 * C);
  }
  {
    OpScope s(prof_, Op::AttnFwd, l);
    kernels::attention_forward(atty, act(kAtt, l), qkv, B, T, C, NH);
  }
  {
    OpScope s(prof_, Op::AttprojFwd, l);
    runner_.forward(proj, atty, param(kAttprojw, l), param16(kAttprojw, l), param(kAttprojb, l), N, C, C);
  }
  {
    OpScope s(prof_, Op::ResidualFwd, l);
    kernels::residual_forward(r2, residual, proj, std::int64_t(N) * C);
  }
  {
    OpScope s(prof_, Op::Ln2Fwd, l);
    kernels::layernorm_forward(ln2, act(kLn2Mean, l), act(kLn2Rstd, l), r2, param(kLn2w, l), param(kLn2b, l), N,
                               C);
  }
  {
    OpScope s(prof_, Op::FcFwd, l);
    runner_.forward(fch, ln2, param(kFcw, l), param16(kFcw, l), param(kFcb, l), N, C, 4 * C);
  }
  {
    OpScope s(prof_, Op::GeluFwd, l);
    kernels::gelu_forward(fchg, fch, std::int64_t(N) * 4 * C);
  }
  {
    OpScope s(prof_, Op::FcprojFwd, l);
    runner_.forward(proj, fchg, param(kFcprojw, l), param16(kFcprojw, l), param(kFcprojb, l), N, 4 * C, C);
  }
  {
    OpScope s(prof_, Op::ResidualFwd, l);
    kernels::residual_forward(r3, r2, proj, std::int64_t(N) * C);
  }
  return r3;
}

void Model::head_forward(const float* residual, const int* tg, bool with_targets, int B, int T) {
  const int C = cfg_.C, V = cfg_.V, Vp = cfg_.Vp;
  const int N = B * T;
  float* lnf = act(kLnf);
  float* logits = act(kLogits);
  {
    OpScope s(prof_, Op::LnfFwd, -1);
    kernels::layernorm_forward(lnf, act(kLnfMean), act(kLnfRstd), residual, param(kLnfw), param(kLnfb), N, C);
  }
  {
    OpScope s(prof_, Op::LmHeadFwd, -1);
    runner_.forward(logits, lnf, param(kWte), param16(kWte), nullptr, N, C, Vp);
  }
  logits_valid_ = true;
  loss_ = NAN;
  if (with_targets) {
    OpScope s(prof_, Op::SoftmaxXentFwd, -1);
    float* losses = act(kLosses);
    kernels::softmax_xent_forward(losses, act(kLse), logits, tg, N, V, Vp);
    double sum = 0;
    for (int i = 0; i < N; ++i) sum += losses[i];
    loss_ = static_cast<float>(sum / N);
  }
}

void Model::forward(const int* inputs, const int* targets, int B, int T) {
  ensure_activations(B, T);
  const int* tg = stage_tokens(inputs, targets, B * T);
  float* residual = act(kEncoded);
  {
    OpScope s(prof_, Op::EmbedFwd, -1);
    kernels::encoder_forward(residual, tokens_.data(), param(kWte), param(kWpe), B, T, cfg_.C);
  }
  for (int l = 0; l < cfg_.L; ++l) residual = block_forward(l, residual, B, T);
  head_forward(residual, tg, targets != nullptr, B, T);
}

void Model::zero_grad() {
  ensure_grads();
  OpScope s(prof_, Op::ZeroGrad, -1);
  // GEMM weight gradients are skipped: the first dW GEMM of the next backward
  // writes them with beta = 0, which saves a pass over ~all of the gradients.
  kernels::FloatSpan spans[kNumParams];
  int n = 0;
  for (int id = 0; id < kNumParams; ++id) {
    if (id == kWte || id == kQkvw || id == kAttprojw || id == kFcw || id == kFcprojw) continue;
    spans[n++] = {grads_.data() + playout_.offset[id], playout_.size[id]};
  }
  kernels::zero_spans(spans, n);
  grads_fresh_ = true;
}

void Model::backward() {
  if (!logits_valid_ || !have_targets_)
    throw std::logic_error("gpt2::Model::backward needs a forward pass with targets first");
  ensure_grads();
  const int B = B_, T = T_, C = cfg_.C, L = cfg_.L, NH = cfg_.NH, V = cfg_.V, Vp = cfg_.Vp;
  const int N = B * T;
  const bool acc = !grads_fresh_;
  const int* in = tokens_.data();
  const int* tg = in + N;
  float* dres = gact(kDResidual);
  float* dln = gact(kDLn);
  float* datty = gact(kDAtty);
  float* dqkv = gact(kDQkv);
  float* dfch = gact(kDFch);
  float* dlogits = act(kLogits);  // in place: logits are dead once the loss is known
  {
    OpScope s(prof_, Op::SoftmaxXentBwd, -1);
    kernels::softmax_xent_backward_inplace(dlogits, act(kLse), tg, 1.0f / N, N, V, Vp);
  }
  logits_valid_ = false;
  {
    OpScope s(prof_, Op::LmHeadBwd, -1);
    runner_.backward(dln, grad(kWte), nullptr, dlogits, act(kLnf), param(kWte), param16(kWte), N, C, Vp, acc);
  }
  {
    OpScope s(prof_, Op::LnfBwd, -1);
    // Overwrites dres: this starts the residual stream's gradient.
    kernels::layernorm_backward(dres, grad(kLnfw), grad(kLnfb), dln, act(kResidual3, L - 1), param(kLnfw),
                                act(kLnfMean), act(kLnfRstd), N, C, false);
  }
  for (int l = L - 1; l >= 0; --l) {
    const float* residual = l == 0 ? act(kEncoded) : act(kResidual3, l - 1);
    // dres is d(residual3[l]) here; residual3 = residual2 + fcproj passes it to both unchanged.
    {
      OpScope s(prof_, Op::FcprojBwd, l);
      runner_.backward(dfch, grad(kFcprojw, l), grad(kFcprojb, l), dres, act(kFchGelu, l), param(kFcprojw, l),
                       param16(kFcprojw, l), N, 4 * C, C, acc);
    }
    {
      OpScope s(prof_, Op::GeluBwd, l);
      kernels::gelu_backward_inplace(dfch, act(kFch, l), std::int64_t(N) * 4 * C);
    }
    {
      OpScope s(prof_, Op::FcBwd, l);
      runner_.backward(dln, grad(kFcw, l), grad(kFcb, l), dfch, act(kLn2, l), param(kFcw, l), param16(kFcw, l), N,
                       C, 4 * C, acc);
    }
    {
      OpScope s(prof_, Op::Ln2Bwd, l);
      kernels::layernorm_backward(dres, grad(kLn2w, l), grad(kLn2b, l), dln, act(kResidual2, l), param(kLn2w, l),
                                  act(kLn2Mean, l), act(kLn2Rstd, l), N, C, true);
    }
    // dres is now d(residual2[l]), which residual2 = residual + attproj passes to both.
    {
      OpScope s(prof_, Op::AttprojBwd, l);
      runner_.backward(datty, grad(kAttprojw, l), grad(kAttprojb, l), dres, act(kAtty, l), param(kAttprojw, l),
                       param16(kAttprojw, l), N, C, C, acc);
    }
    {
      OpScope s(prof_, Op::AttnBwd, l);
      kernels::attention_backward(dqkv, datty, act(kQkv, l), act(kAtt, l), B, T, C, NH);
    }
    {
      OpScope s(prof_, Op::QkvBwd, l);
      runner_.backward(dln, grad(kQkvw, l), grad(kQkvb, l), dqkv, act(kLn1, l), param(kQkvw, l),
                       param16(kQkvw, l), N, C, 3 * C, acc);
    }
    {
      OpScope s(prof_, Op::Ln1Bwd, l);
      kernels::layernorm_backward(dres, grad(kLn1w, l), grad(kLn1b, l), dln, residual, param(kLn1w, l),
                                  act(kLn1Mean, l), act(kLn1Rstd, l), N, C, true);
    }
  }
  {
    OpScope s(prof_, Op::EmbedBwd, -1);
    kernels::encoder_backward(grad(kWte), grad(kWpe), dres, in, B, T, C);
  }
  grads_fresh_ = false;
}

void Model::update(const AdamWConfig& c, int t) {
  ensure_grads();
  if (!m_) {
    m_ = Arena<float>(playout_.total);
    v_ = Arena<float>(playout_.total);
  }
  OpScope s(prof_, Op::AdamW, -1);
  if (grads_fresh_) {  // zero_grad without a backward since: the skipped GEMM weight gradients are zero too
    for (int id : {kWte, kQkvw, kAttprojw, kFcw, kFcprojw})
      std::memset(grads_.data() + playout_.offset[id], 0, std::size_t(playout_.size[id]) * sizeof(float));
    grads_fresh_ = false;
  }
  adamw_update(params_.data(), grads_.data(), m_.data(), v_.data(), params16_ ? params16_.data() : nullptr,
               playout_.total, c, t);
}

}  // namespace flopwatt::gpt2

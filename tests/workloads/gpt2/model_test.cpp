// The model against PyTorch (tests/fixtures/gpt2, written by
// scripts/make_gpt2_reference.py in float64): logits, loss, every gradient and
// a 10-step AdamW loss trajectory; plus finite differences, a memorization run,
// bf16 mode, the GEMM layout fallback, init and instrumentation.
//
// Tolerances (fp32 model vs float64 reference):
//   logits     |d| <= 1e-5 + 1e-4 |ref|
//   loss       |d| <= 1e-5 |ref|
//   gradients  per tensor: |d| <= 1e-4 max|ref of the tensor| + 1e-3 |ref|
//   trajectory |d| <= 1e-3 per step over 10 AdamW steps (lr 1e-2): Adam's
//              normalization amplifies fp32 rounding in near-zero gradients
#include "workloads/gpt2/model.h"

#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <numeric>

#include "cpu/backends.h"
#include "tests/workloads/gpt2/compare.h"
#include "tests/workloads/gpt2/naive_backend.h"
#include "workloads/error.h"
#include "workloads/gpt2/checkpoint.h"
#include "workloads/gpt2/token_data.h"

namespace flopwatt::gpt2 {
namespace {

using testing::all_close;
using testing::NaiveBackend;

const std::string kDir = std::string(FLOPWATT_TEST_FIXTURES) + "/gpt2/";

struct Reference {
  nlohmann::json meta;
  Config cfg;
  int B = 0, T = 0;
  std::vector<float> logits, grads;
  AdamWConfig adamw;
};

const Reference& reference() {
  static const Reference r = [] {
    Reference r;
    std::ifstream j(kDir + "tiny_reference.json");
    EXPECT_TRUE(j) << "missing fixture; run scripts/make_gpt2_reference.py";
    r.meta = nlohmann::json::parse(j);
    const auto& c = r.meta["config"];
    r.cfg = {c["maxT"], c["V"], c["Vp"], c["L"], c["NH"], c["C"]};
    r.B = r.meta["batch"]["B"];
    r.T = r.meta["batch"]["T"];
    const auto& a = r.meta["adamw"];
    r.adamw = {a["lr"], a["beta1"], a["beta2"], a["eps"], a["weight_decay"]};
    std::ifstream bin(kDir + "tiny_reference.bin", std::ios::binary);
    r.logits.resize(std::size_t(r.B) * r.T * r.cfg.V);
    r.grads.resize(r.meta["reference_bin"]["grads"]["count"].get<std::size_t>());
    bin.read(reinterpret_cast<char*>(r.logits.data()), std::streamsize(r.logits.size() * 4));
    bin.read(reinterpret_cast<char*>(r.grads.data()), std::streamsize(r.grads.size() * 4));
    EXPECT_TRUE(bin) << "tiny_reference.bin is shorter than tiny_reference.json says";
    return r;
  }();
  return r;
}

std::unique_ptr<Model> load_fixture_model(Backend& be, DType dt = DType::F32) {
  const Config c = read_checkpoint_config(kDir + "tiny_model.bin");
  auto m = std::make_unique<Model>(c, be, dt);
  m->load(kDir + "tiny_model.bin");
  return m;
}

BatchLoader fixture_loader(const Config& c, int B, int T) {
  return BatchLoader(read_token_file(kDir + "tiny_tokens.bin", c.V), B, T);
}

void run_fixture_comparison(Backend& be) {
  const Reference& ref = reference();
  auto m = load_fixture_model(be);
  ASSERT_EQ(m->config(), ref.cfg) << "fixture checkpoint and json disagree";
  ASSERT_EQ(m->num_params(), std::int64_t(ref.grads.size()));
  auto loader = fixture_loader(ref.cfg, ref.B, ref.T);
  std::vector<int> in, tg;
  loader.next(in, tg);
  m->forward(in.data(), tg.data(), ref.B, ref.T);

  const int N = ref.B * ref.T, V = ref.cfg.V, Vp = ref.cfg.Vp;
  std::vector<float> logits(std::size_t(N) * V);
  for (int n = 0; n < N; ++n)
    std::copy_n(m->logits() + std::size_t(n) * Vp, V, logits.begin() + std::size_t(n) * V);
  EXPECT_TRUE(all_close("logits", logits, ref.logits, 1e-4, 1e-5));
  const double want_loss = ref.meta["loss"];
  EXPECT_NEAR(m->loss(), want_loss, 1e-5 * want_loss);

  m->zero_grad();
  m->backward();
  const auto g = m->grads();
  for (int id = 0; id < kNumParams; ++id) {
    const std::int64_t off = m->param_offset(ParamId(id)), n = m->param_size(ParamId(id));
    float maxref = 0;
    for (std::int64_t i = 0; i < n; ++i) maxref = std::max(maxref, std::abs(ref.grads[off + i]));
    ASSERT_GT(maxref, 0.0f) << kParamSpecs[id].name << ": reference gradient is all zero";
    EXPECT_TRUE(all_close(std::string("grad ") + kParamSpecs[id].name, g.data() + off, ref.grads.data() + off, n,
                          1e-3, 1e-4 * maxref));
  }
}

TEST(Gpt2Model, MatchesPyTorchLogitsLossAndEveryGradient) {
  NaiveBackend be;
  run_fixture_comparison(be);
}

TEST(Gpt2Model, TransposeFallbackGivesTheSameGradients) {
  // A backend that only runs NN GEMMs: GemmRunner materializes the transposes.
  NaiveBackend nn(/*nn_only=*/true);
  run_fixture_comparison(nn);
}

TEST(Gpt2Model, MatchesPyTorchOnEveryAvailableCpuBackend) {
  // The real GEMM libraries, in fp32, must meet the same tolerances.
  int ran = 0;
  for (auto& be : cpu::make_backends()) {
    if (!be->availability().ok) continue;
    SCOPED_TRACE(be->name());
    run_fixture_comparison(*be);
    ++ran;
  }
  EXPECT_GE(ran, 1) << "cpu:reference at least is always available";
}

TEST(Gpt2Model, TenAdamWStepsFollowPyTorch) {
  const Reference& ref = reference();
  NaiveBackend be;
  auto m = load_fixture_model(be);
  auto loader = fixture_loader(ref.cfg, ref.B, ref.T);
  const auto& want = ref.meta["step_losses"];
  ASSERT_EQ(want.size(), 10u);
  std::vector<int> in, tg;
  for (int step = 0; step < 10; ++step) {
    loader.next(in, tg);  // 3 batches per epoch in the fixture: the wrap is exercised
    m->forward(in.data(), tg.data(), ref.B, ref.T);
    EXPECT_NEAR(m->loss(), want[step].get<double>(), 1e-3) << "step " << step;
    m->zero_grad();
    m->backward();
    m->update(ref.adamw, step + 1);
  }
}

double loss_at(Model& m, const std::vector<int>& in, const std::vector<int>& tg, int B, int T) {
  m.forward(in.data(), tg.data(), B, T);
  return m.loss();
}

TEST(Gpt2Model, GradientsMatchFiniteDifferences) {
  const Reference& ref = reference();
  NaiveBackend be;
  auto m = load_fixture_model(be);
  auto loader = fixture_loader(ref.cfg, ref.B, ref.T);
  std::vector<int> in, tg;
  loader.next(in, tg);
  m->forward(in.data(), tg.data(), ref.B, ref.T);
  m->zero_grad();
  m->backward();
  std::vector<float> g(m->grads().begin(), m->grads().end());
  auto p = m->params();
  const double h = 1e-3;
  int checked = 0;
  for (int id : {kWte, kWpe, kLn1w, kQkvw, kQkvb, kAttprojw, kLn2b, kFcw, kFcprojw, kLnfw, kLnfb}) {
    // The largest-magnitude gradient of the tensor: FD error stays small relative to it.
    const std::int64_t off = m->param_offset(ParamId(id)), n = m->param_size(ParamId(id));
    std::int64_t best = off;
    for (std::int64_t i = off; i < off + n; ++i)
      if (std::abs(g[i]) > std::abs(g[best])) best = i;
    const float saved = p[best];
    p[best] = static_cast<float>(saved + h);
    const double up = loss_at(*m, in, tg, ref.B, ref.T);
    p[best] = static_cast<float>(saved - h);
    const double down = loss_at(*m, in, tg, ref.B, ref.T);
    p[best] = saved;
    const double fd = (up - down) / (2 * h);
    EXPECT_NEAR(fd, g[best], 1e-3 + 2e-2 * std::abs(g[best])) << kParamSpecs[id].name << " element " << best - off;
    ++checked;
  }
  EXPECT_EQ(checked, 11);
}

TEST(Gpt2Model, MemorizesARepeatedSequence) {
  NaiveBackend be;
  const Config c = preset("tiny");
  Model m(c, be, DType::F32);
  m.init_random(7);
  const int B = 2, T = 16;
  std::vector<int> in, tg;
  random_batch(11, 0, B, T, c.V, in, tg);
  AdamWConfig a;
  a.lr = 1e-2f;
  float first = 0, last = 0;
  for (int step = 1; step <= 40; ++step) {
    m.forward(in.data(), tg.data(), B, T);
    if (step == 1) first = m.loss();
    last = m.loss();
    m.zero_grad();
    m.backward();
    m.update(a, step);
  }
  EXPECT_NEAR(first, std::log(float(c.V)), 0.3) << "a fresh GPT-2 init predicts ~uniformly";
  EXPECT_LT(last, 0.25f * first) << "40 steps on one batch should memorize it";
}

TEST(Gpt2Model, Bf16GemmsStayCloseToFp32) {
  const Reference& ref = reference();
  NaiveBackend be;
  auto m32 = load_fixture_model(be, DType::F32);
  auto m16 = load_fixture_model(be, DType::BF16);
  auto loader = fixture_loader(ref.cfg, ref.B, ref.T);
  std::vector<int> in, tg;
  loader.next(in, tg);
  for (Model* m : {m32.get(), m16.get()}) {
    m->forward(in.data(), tg.data(), ref.B, ref.T);
    m->zero_grad();
    m->backward();
  }
  // bf16 keeps 8 bits of mantissa: ~0.4% per operand, averaged over long sums.
  EXPECT_NEAR(m16->loss(), m32->loss(), 2e-2 * m32->loss());
  EXPECT_NE(m16->loss(), m32->loss()) << "bf16 mode should actually round the GEMM operands";
  const auto a = m32->grads(), b = m16->grads();
  double dot = 0, na = 0, nb = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    ASSERT_TRUE(std::isfinite(b[i]));
    dot += double(a[i]) * b[i];
    na += double(a[i]) * a[i];
    nb += double(b[i]) * b[i];
  }
  EXPECT_GT(dot / std::sqrt(na * nb), 0.995) << "cosine similarity of the fp32 and bf16 gradients";
}

TEST(Gpt2Model, RandomInitIsGpt2LikeAndDeterministic) {
  NaiveBackend be;
  const Config c = preset("tiny");
  Model a(c, be, DType::F32), b(c, be, DType::F32);
  const int saved = omp_get_max_threads();
  omp_set_num_threads(1);
  a.init_random(42);
  omp_set_num_threads(2);
  b.init_random(42);
  omp_set_num_threads(saved);
  ASSERT_TRUE(std::equal(a.params().begin(), a.params().end(), b.params().begin()))
      << "init must not depend on the thread count";
  const float* wte = a.param(kWte);
  for (std::int64_t i = std::int64_t(c.V) * c.C; i < std::int64_t(c.Vp) * c.C; ++i)
    ASSERT_EQ(wte[i], 0.0f) << "padding rows";
  auto stddev = [](const float* p, std::int64_t n) {
    double s = 0, s2 = 0;
    for (std::int64_t i = 0; i < n; ++i) s += p[i], s2 += double(p[i]) * p[i];
    return std::sqrt(s2 / n - (s / n) * (s / n));
  };
  EXPECT_NEAR(stddev(a.param(kQkvw), a.param_size(kQkvw)), 0.02, 0.002);
  EXPECT_NEAR(stddev(a.param(kFcprojw), a.param_size(kFcprojw)), 0.02 / std::sqrt(2.0 * c.L), 0.001);
  EXPECT_EQ(a.param(kLn1w)[5], 1.0f);
  EXPECT_EQ(a.param(kQkvb)[5], 0.0f);
  Model d(c, be, DType::F32);
  d.init_random(43);
  EXPECT_FALSE(std::equal(a.params().begin(), a.params().end(), d.params().begin()));
}

TEST(Gpt2Model, CheckpointRoundTripReproducesTheLoss) {
  NaiveBackend be;
  const Config c = preset("tiny");
  Model a(c, be, DType::F32);
  a.init_random(5);
  const auto path = std::filesystem::temp_directory_path() / "flopwatt_gpt2_roundtrip.bin";
  a.save(path.string());
  Config rc;
  const auto p = read_checkpoint(path.string(), rc);
  EXPECT_EQ(rc, c);
  ASSERT_TRUE(std::equal(p.begin(), p.end(), a.params().begin()));
  Model b(c, be, DType::F32);
  b.load(path.string());
  std::vector<int> in, tg;
  random_batch(1, 0, 2, 8, c.V, in, tg);
  a.forward(in.data(), tg.data(), 2, 8);
  b.forward(in.data(), tg.data(), 2, 8);
  EXPECT_EQ(a.loss(), b.loss());
  std::filesystem::remove(path);
}

TEST(Gpt2Model, ProfilerRecordsEveryOpOfAStep) {
  NaiveBackend be;
  const Config c = preset("tiny");
  Model m(c, be, DType::F32);
  m.init_random(1);
  Profiler prof;
  m.set_profiler(&prof);
  std::vector<int> in, tg;
  random_batch(1, 0, 2, 8, c.V, in, tg);
  m.forward(in.data(), tg.data(), 2, 8);
  m.zero_grad();
  m.backward();
  m.update(AdamWConfig{}, 1);
  std::map<Op, int> seen;
  for (const auto& r : prof.records()) {
    ++seen[r.op];
    EXPECT_LE(r.t0_ns, r.t1_ns);
    EXPECT_EQ(r.layer >= 0, op_info(r.op).per_layer > 0) << op_info(r.op).name;
    EXPECT_EQ(r.has_breakdown, false);  // NaiveBackend reports none
  }
  for (int i = 0; i < kNumOps; ++i) {
    const Op op = Op(i);
    if (op == Op::Data) continue;  // recorded by the trainer, not the model
    EXPECT_EQ(seen[op], op_occurrences(op, c)) << op_info(op).name << " " << op_info(op).pass;
  }
  // Records are in execution order and do not overlap.
  for (std::size_t i = 1; i < prof.records().size(); ++i)
    EXPECT_LE(prof.records()[i - 1].t1_ns, prof.records()[i].t0_ns);
}

TEST(Gpt2Model, RejectsSequencesLongerThanMaxT) {
  NaiveBackend be;
  Config c = preset("tiny");
  Model m(c, be, DType::F32);
  std::vector<int> in(c.maxT + 1, 0);
  EXPECT_THROW(m.forward(in.data(), in.data(), 1, c.maxT + 1), InputError);
}

}  // namespace
}  // namespace flopwatt::gpt2

#include "cpu/openblas_gemm.h"

#include "cpu/gemm_checks.h"

#include <cblas.h>
#include <dlfcn.h>

#include <cstdlib>
#include <limits>
#include <mutex>

namespace flopwatt::cpu {
namespace {

// cblas.h declares cblas_sbgemm whether or not the library was built with it
// (Debian's 0.3.21 does not export it), so it is resolved at run time: a newer
// OpenBLAS dropped in later gains bf16 without a rebuild.
using SbgemmFn = void (*)(CBLAS_ORDER, CBLAS_TRANSPOSE, CBLAS_TRANSPOSE, blasint, blasint, blasint, float,
                          const bfloat16*, blasint, const bfloat16*, blasint, float, float*, blasint);

const char* parallel_name(int p) {
  switch (p) {
    case 0: return "sequential";
    case 1: return "pthreads";
    case 2: return "openmp";
    default: return "unknown";
  }
}

// A DYNAMIC_ARCH OpenBLAS picks its kernels by CPU model at load time, and a
// release older than the CPU (Debian 12's 0.3.21 on Emerald Rapids, for one)
// falls back to its Prescott (SSE3) kernels, several times slower. When the
// user has not chosen (OPENBLAS_CORETYPE unset), the library chose Prescott and
// the CPU can do better, OpenBLAS's own selection is re-run once with
// OPENBLAS_CORETYPE naming the best kernel set this CPU supports. This is
// process-wide, happens before any GEMM, and is reported in notes().
std::string reselect_core_once() {
  static std::once_flag once;
  static std::string what;
  std::call_once(once, [] {
    if (std::getenv("OPENBLAS_CORETYPE")) return;  // the user's choice stands
    if (std::string(openblas_get_corename()) != "Prescott") return;
    using Hook = void (*)();
    auto init = reinterpret_cast<Hook>(dlsym(RTLD_DEFAULT, "gotoblas_dynamic_init"));
    auto quit = reinterpret_cast<Hook>(dlsym(RTLD_DEFAULT, "gotoblas_dynamic_quit"));
    if (!init || !quit) return;  // not a DYNAMIC_ARCH build: the kernels are fixed at build time
    const char* core = nullptr;
    if (__builtin_cpu_supports("avx512bf16") && __builtin_cpu_supports("avx512f"))
      core = "Cooperlake";
    else if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl"))
      core = "SkylakeX";
    else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
      core = "Haswell";
    if (!core) return;
    setenv("OPENBLAS_CORETYPE", core, 1);
    quit();
    init();
    unsetenv("OPENBLAS_CORETYPE");
    what = std::string("OpenBLAS did not recognise this CPU model and chose Prescott (SSE3) kernels; flopwatt "
                       "re-ran its core selection as OPENBLAS_CORETYPE=") +
           core + " (now " + openblas_get_corename() + "); set OPENBLAS_CORETYPE to choose yourself";
  });
  return what;
}

class OpenblasBackend final : public Backend {
 public:
  OpenblasBackend()
      : sbgemm_(reinterpret_cast<SbgemmFn>(dlsym(RTLD_DEFAULT, "cblas_sbgemm"))), core_note_(reselect_core_once()) {}

  std::string name() const override { return "cpu:openblas"; }
  Availability availability() const override { return {true, {}}; }

  bool supports(const GemmDesc& d) const override {
    if (!shape_valid(d) || d.dtype_out != DType::F32 || d.dtype_acc != DType::F32) return false;
    if (d.dtype_in == DType::BF16 && !sbgemm_) return false;
    constexpr std::int64_t lim = std::numeric_limits<blasint>::max();
    for (std::int64_t v : {d.M, d.N, d.K, d.eff_lda(), d.eff_ldb(), d.eff_ldc()})
      if (v > lim) return false;
    return true;
  }

  void gemm(const GemmDesc& d, const void* A, const void* B, void* C) override {
    require_supported(*this, d,
                      d.dtype_in == DType::BF16
                          ? "this OpenBLAS does not export cblas_sbgemm; use cpu:onednn for bf16"
                          : "sizes must fit OpenBLAS's 32-bit blasint and C must be fp32");
    const auto ta = d.trans_a ? CblasTrans : CblasNoTrans;
    const auto tb = d.trans_b ? CblasTrans : CblasNoTrans;
    const auto M = blasint(d.M), N = blasint(d.N), K = blasint(d.K);
    const auto lda = blasint(d.eff_lda()), ldb = blasint(d.eff_ldb()), ldc = blasint(d.eff_ldc());
    if (d.dtype_in == DType::BF16)
      sbgemm_(CblasRowMajor, ta, tb, M, N, K, d.alpha, static_cast<const bfloat16*>(A), lda,
              static_cast<const bfloat16*>(B), ldb, d.beta, static_cast<float*>(C), ldc);
    else
      cblas_sgemm(CblasRowMajor, ta, tb, M, N, K, d.alpha, static_cast<const float*>(A), lda,
                  static_cast<const float*>(B), ldb, d.beta, static_cast<float*>(C), ldc);
  }

  std::vector<std::pair<std::string, std::string>> notes() const override {
    const int par = openblas_get_parallel();
    std::vector<std::pair<std::string, std::string>> n = {
        {"openblas_config", openblas_get_config()},
        {"openblas_corename", openblas_get_corename()},
        {"openblas_parallel", std::string(parallel_name(par)) + " (" + std::to_string(par) + ")"},
        {"openblas_threads", std::to_string(openblas_get_num_threads())},
        {"bf16", sbgemm_ ? "cblas_sbgemm" : "unsupported: this OpenBLAS does not export cblas_sbgemm"},
    };
    if (!core_note_.empty()) n.emplace_back("openblas_core_override", core_note_);
    if (par == 1)
      n.emplace_back("warning",
                     "pthread OpenBLAS: its thread pool spins after each call and competes with OpenMP "
                     "kernels; install libopenblas-openmp-dev");
    return n;
  }

 private:
  SbgemmFn sbgemm_;
  std::string core_note_;
};

}  // namespace

std::unique_ptr<Backend> make_openblas_backend() { return std::make_unique<OpenblasBackend>(); }

}  // namespace flopwatt::cpu

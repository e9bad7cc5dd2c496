#include "npu/xdna/selftest.h"

#include <chrono>
#include <cstring>
#include <random>

#include <fmt/format.h>

#include "npu/xdna/buffer.h"
#include "npu/xdna/command.h"
#include "npu/xdna/device_info.h"
#include "npu/xdna/hw_context.h"
#include "npu/xdna/insts.h"
#include "npu/xdna/xclbin.h"
#include "workloads/error.h"
#include "workloads/verify.h"

namespace flopwatt::npu::xdna {

namespace {

class StageClock {
 public:
  double lap() {
    const auto now = std::chrono::steady_clock::now();
    const double s = std::chrono::duration<double>(now - t_).count();
    t_ = now;
    return s;
  }

 private:
  std::chrono::steady_clock::time_point t_ = std::chrono::steady_clock::now();
};

// The report as the stages fill it, each stage timed from the end of the one before.
struct Stages {
  SelftestReport r;
  StageClock clk;

  void stage(std::string name, bool ok, std::string detail) {
    r.stages.push_back({std::move(name), clk.lap(), ok, std::move(detail)});
  }
  // A prerequisite is missing: the test stops here and the caller exits 2.
  SelftestReport missing(std::string name, std::string what, std::string fix) {
    stage(std::move(name), false, what);
    r.missing = std::move(what), r.fix = std::move(fix);
    return r;
  }
};

std::string device_facts(const DeviceInfo& info) {
  std::string facts;
  for (const auto& [k, v] : device_notes(info)) facts += (facts.empty() ? "" : "; ") + k + " " + v;
  return facts;
}

// The smallest design for the device: the quickest to run and the likeliest to fit.
const ArtifactDesign* smallest_design(const ArtifactSet& set, const std::string& gen) {
  const ArtifactDesign* d = nullptr;
  for (const auto& x : set.designs)
    if (x.device == gen && (!d || double(x.M) * x.N * x.K < double(d->M) * d->N * d->K)) d = &x;
  return d;
}

// Random bf16 A and B, the instructions, and a C of NaN until the device writes it, all flushed.
void upload(Stages& st, const InstStream& insts, std::vector<bf16_t>& A, std::vector<bf16_t>& B, Bo& instr, Bo& a,
            Bo& b, Bo& c) {
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(-1, 1);
  for (auto& v : A) v = f32_to_bf16(u(rng));
  for (auto& v : B) v = f32_to_bf16(u(rng));
  std::memcpy(a.data(), A.data(), a.size());
  std::memcpy(b.data(), B.data(), b.size());
  std::memcpy(instr.data(), insts.words.data(), insts.words.size() * 4);
  std::memset(c.data(), 0xff, c.size());
  for (Bo* x2 : {&instr, &a, &b, &c}) x2->sync(kSyncToDevice);
  st.stage("sync", true, "CPU caches flushed over instructions, A, B and C");
}

// False when the command failed or timed out (a failed stage, not a missing piece).
bool submit(Stages& st, DriverApi& api, const HwContext& ctx, const Xclbin& x, std::uint32_t cu_index,
            const InstStream& insts, Bo& cmd, const Bo& instr, const Bo& a, const Bo& b, const Bo& c,
            std::int64_t timeout_ns) {
  const std::uint64_t addrs[] = {a.device_address(), b.device_address(), c.device_address()};
  const auto packet = start_cu_packet(cu_index, register_map(x, cu_index), instr.device_address(),
                                      std::uint32_t(insts.words.size()), addrs);
  Submission s;
  try {
    s = run_command(api, ctx, cmd, packet, {instr.handle(), a.handle(), b.handle(), c.handle()}, timeout_ns);
  } catch (const std::exception& e) {
    st.stage("submit+wait", false, e.what());
    return false;
  }
  st.clk.lap();
  st.r.stages.push_back({"submit", s.submit_s, true, fmt::format("command {}", s.seq)});
  st.r.stages.push_back({"wait", s.wait_s, true, "COMPLETED"});
  return true;
}

void check_result(Stages& st, const ArtifactDesign& d, Bo& c, const std::vector<bf16_t>& A,
                  const std::vector<bf16_t>& B, const ReferenceGemm& reference) {
  c.sync(kSyncFromDevice);
  std::vector<float> got(std::size_t(d.M * d.N)), want(got.size());
  for (std::size_t i = 0; i < got.size(); ++i)
    got[i] = d.dtype_out == DType::F32 ? static_cast<const float*>(c.data())[i]
                                       : bf16_to_f32(static_cast<const bf16_t*>(c.data())[i]);
  GemmDesc g;
  g.M = d.M, g.N = d.N, g.K = d.K, g.dtype_in = DType::BF16, g.dtype_out = DType::F32;
  reference(g, A.data(), B.data(), want.data());
  SelftestReport& r = st.r;
  r.rel_error = rel_frobenius_error(got.data(), want.data(), got.size());
  r.tolerance = gemm_tolerance(DType::BF16);
  r.passed = passes(r.rel_error, r.tolerance);
  st.stage("check", r.passed, fmt::format("relative Frobenius error {:.3g} against the reference (tolerance {:.3g})",
                                          r.rel_error, r.tolerance));
}

// Open to check: the device objects live here, so they are released in the
// reverse order of creation whichever stage stops the test.
void run_on_device(Stages& st, DriverApi& api, std::string gen, const ArtifactSet& set, const XdnaBackendConfig& cfg,
                   const ReferenceGemm& reference) {
  const DeviceInfo info = query_device(api);
  if (gen.empty() && info.aie.value) gen = generation_from(*info.aie.value);
  const std::string facts = device_facts(info);
  DevHeap heap(api);
  st.stage("open", true, gen + "; " + facts);

  const ArtifactDesign* d = smallest_design(set, gen);
  if (!d) {
    st.missing("load", fmt::format("{}/manifest.json has no design for {}", set.dir, gen),
               fmt::format("build one: scripts/build-npu-designs --device {}", gen));
    return;
  }
  const Xclbin x = load_xclbin(d->xclbin);
  require_npu_design(x);
  const InstStream insts = load_insts(d->insts);
  check_insts_device(*d, insts);
  const auto cu_index = std::uint32_t(judge_xclbin(x).command_cu);
  st.stage("load", true, fmt::format("design {} ({}x{}x{} M,N,K, {} output, {} instruction words)", d->name, d->M,
                                     d->N, d->K, to_string(d->dtype_out), insts.words.size()));

  const std::uint32_t rows = info.aie.value ? info.aie.value->core.row_count : 4;
  const std::uint32_t width = x.partition.column_width ? x.partition.column_width : std::uint32_t(d->cols);
  HwContext ctx(api, x.partition.ops_per_cycle, width * rows, driver_build(info.version));
  const CuPdis pdis = load_cu_pdis(api, heap, x);
  ctx.configure_cus(pdis.cus);
  st.stage("context", true, fmt::format("hardware context {} ({} ops/cycle, {} tiles)", ctx.handle(),
                                        x.partition.ops_per_cycle, width * rows));

  const std::size_t ob = dtype_size(d->dtype_out);
  Bo instr(api, kBoDev, insts.words.size() * 4, &heap);
  Bo a(api, kBoShmem, std::size_t(d->M * d->K) * 2), b(api, kBoShmem, std::size_t(d->K * d->N) * 2);
  Bo c(api, kBoShmem, std::size_t(d->M * d->N) * ob), cmd(api, kBoCmd, 4096);
  st.stage("buffers", true, fmt::format("A {} B, B {} B, C {} B at device addresses {:#x}, {:#x}, {:#x}", a.size(),
                                        b.size(), c.size(), a.device_address(), b.device_address(), c.device_address()));

  std::vector<bf16_t> A(std::size_t(d->M * d->K)), B(std::size_t(d->K * d->N));
  upload(st, insts, A, B, instr, a, b, c);
  if (!submit(st, api, ctx, x, cu_index, insts, cmd, instr, a, b, c, cfg.timeout_ns)) return;
  check_result(st, *d, c, A, B, reference);
}

}  // namespace

SelftestReport run_selftest(const XdnaBackendConfig& cfg, const ReferenceGemm& reference) {
  Stages st;
  const XdnaDiscovery disc = discover_xdna(cfg.root, cfg.opener);
  if (!disc.ok()) return st.missing("discover", disc.reason, disc.fix);
  std::string gen = disc.pci.empty() || disc.pci.front().generation == "unknown" ? "" : disc.pci.front().generation;
  st.stage("discover", true, disc.node + (gen.empty() ? "" : " (" + gen + ")"));

  if (cfg.artifacts_dir.empty())
    return st.missing("artifacts", "no design directory",
                      "set FLOPWATT_NPU_ARTIFACTS to the output of scripts/build-npu-designs");
  ArtifactSet set;
  try {
    set = load_artifacts(cfg.artifacts_dir);
  } catch (const InputError& e) {
    return st.missing("artifacts", e.problem() + " (" + e.where() + ")",
                      e.fix().empty() ? "build designs with scripts/build-npu-designs" : e.fix());
  }
  st.stage("artifacts", true, fmt::format("{} designs in {}", set.designs.size(), set.dir));

  int err = 0;
  std::unique_ptr<DriverApi> api = cfg.opener(disc.node, &err);
  if (!api) return st.missing("open", fmt::format("cannot open {}: {}", disc.node, std::strerror(err)), disc.fix);
  try {
    run_on_device(st, *api, gen, set, cfg, reference);
  } catch (const InputError& e) {
    return st.missing(st.r.stages.empty() ? "open" : "load", e.problem() + " (" + e.where() + ")", e.fix());
  } catch (const std::exception& e) {
    st.stage("error", false, e.what());
  }
  return st.r;
}

}  // namespace flopwatt::npu::xdna

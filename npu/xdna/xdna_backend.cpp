#include "npu/xdna/xdna_backend.h"

#include <chrono>
#include <cstring>
#include <stdexcept>

#include <fmt/format.h>

#include "npu/xdna/buffer.h"
#include "npu/xdna/command.h"
#include "npu/xdna/device_info.h"
#include "npu/xdna/hw_context.h"
#include "npu/xdna/insts.h"
#include "npu/xdna/xclbin.h"
#include "workloads/error.h"

namespace flopwatt::npu::xdna {

namespace {

double since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

float load_elem(const void* p, DType t, std::int64_t i) {
  return t == DType::F32 ? static_cast<const float*>(p)[i] : bf16_to_f32(static_cast<const bf16_t*>(p)[i]);
}

}  // namespace

struct XdnaBackend::Device {
  std::unique_ptr<DriverApi> api;
  DeviceInfo info;
  std::unique_ptr<DevHeap> heap;
};

struct XdnaBackend::Loaded {
  ArtifactDesign design;
  Xclbin xclbin;
  InstStream insts;
  std::uint32_t cu_index = 0;
  std::unique_ptr<HwContext> ctx;
  std::unique_ptr<Bo> pdi, instr, a, b, c, cmd;
  ~Loaded() {  // buffers before the context that uses them
    cmd.reset(), c.reset(), b.reset(), a.reset(), instr.reset(), pdi.reset();
    ctx.reset();
  }
};

XdnaBackend::XdnaBackend(XdnaBackendConfig cfg) : cfg_(std::move(cfg)) {
  disc_ = discover_xdna(cfg_.root, cfg_.opener);
  if (!disc_.pci.empty()) generation_ = disc_.pci.front().generation;
  if (cfg_.artifacts_dir.empty()) {
    artifacts_problem_ = "no artifact directory; set FLOPWATT_NPU_ARTIFACTS (scripts/build-npu-artifacts.md)";
  } else {
    try {
      artifacts_ = load_artifacts(cfg_.artifacts_dir);
    } catch (const InputError& e) {
      artifacts_problem_ = std::string(e.what());
    }
  }
}

XdnaBackend::~XdnaBackend() {
  loaded_.clear();
  dev_.reset();
}

Availability XdnaBackend::availability() const {
  if (!disc_.ok()) return {false, disc_.reason + "; fix: " + disc_.fix};
  if (!artifacts_) return {false, "amdxdna device " + disc_.node + " found, but no GEMM designs: " + artifacts_problem_};
  if (artifacts_->designs.empty()) return {false, "the artifact manifest in " + artifacts_->dir + " lists no designs"};
  return {true, ""};
}

bool XdnaBackend::supports(const GemmDesc& d) const {
  if (!availability().ok || d.dtype_acc != DType::F32 || d.M <= 0 || d.N <= 0 || d.K <= 0) return false;
  return pick_design(*artifacts_, d, generation_) != nullptr;
}

XdnaBackend::Loaded& XdnaBackend::load(const ArtifactDesign& d, double* seconds) {
  auto it = loaded_.find(d.name);
  if (it != loaded_.end()) return *it->second;
  const auto t0 = std::chrono::steady_clock::now();
  auto l = std::make_unique<Loaded>();
  l->design = d;
  l->xclbin = load_xclbin(d.xclbin);
  require_npu_design(l->xclbin);
  l->insts = load_insts(d.insts);
  DriverApi& api = *dev_->api;
  // One compute unit: the first whose kernel has a PDI (mlir-aie designs have one).
  const ComputeUnit* cu = nullptr;
  for (std::uint32_t i = 0; i < l->xclbin.cus.size() && !cu; ++i)
    if (l->xclbin.pdi_for(l->xclbin.cus[i].kernel_id)) cu = &l->xclbin.cus[i], l->cu_index = i;
  const AiePdi& pdi = *l->xclbin.pdi_for(cu->kernel_id);
  const std::uint32_t core_rows = dev_->info.aie.value ? dev_->info.aie.value->core.row_count : 4;
  const std::uint32_t width = l->xclbin.partition.column_width ? l->xclbin.partition.column_width : std::uint32_t(d.cols);
  l->ctx = std::make_unique<HwContext>(api, l->xclbin.partition.ops_per_cycle, width * core_rows);
  l->pdi = std::make_unique<Bo>(api, kBoDev, pdi.image.size());
  std::memcpy(l->pdi->data(), pdi.image.data(), pdi.image.size());
  l->pdi->sync(kSyncToDevice);
  std::vector<CuConfig> cus(l->xclbin.cus.size());
  for (std::size_t i = 0; i < cus.size(); ++i) {
    cus[i] = CuConfig{};
    cus[i].cu_bo = l->pdi->handle();
    cus[i].cu_func = l->xclbin.cus[i].functional;
  }
  l->ctx->configure_cus(cus);
  l->instr = std::make_unique<Bo>(api, kBoDev, l->insts.words.size() * 4);
  std::memcpy(l->instr->data(), l->insts.words.data(), l->insts.words.size() * 4);
  l->instr->sync(kSyncToDevice);
  const std::size_t ob = dtype_size(d.dtype_out);
  l->a = std::make_unique<Bo>(api, kBoShmem, std::size_t(d.M * d.K) * 2);
  l->b = std::make_unique<Bo>(api, kBoShmem, std::size_t(d.K * d.N) * 2);
  l->c = std::make_unique<Bo>(api, kBoShmem, std::size_t(d.M * d.N) * ob);
  l->cmd = std::make_unique<Bo>(api, kBoCmd, 4096);
  *seconds = since(t0);
  return *loaded_.emplace(d.name, std::move(l)).first->second;
}

void XdnaBackend::gemm(const GemmDesc& g, const void* A, const void* B, void* C) {
  const Availability av = availability();
  if (!av.ok) throw InputError(name(), av.reason);
  if (!dev_) {
    auto dev = std::make_unique<Device>();
    int err = 0;
    dev->api = cfg_.opener(disc_.node, &err);
    if (!dev->api) throw std::runtime_error(fmt::format("cannot open {}: {}", disc_.node, std::strerror(err)));
    dev->info = query_device(*dev->api);
    if (generation_.empty() && dev->info.aie.value) generation_ = generation_from(*dev->info.aie.value);
    dev->heap = std::make_unique<DevHeap>(*dev->api);
    dev_ = std::move(dev);
  }
  const ArtifactDesign* d = pick_design(*artifacts_, g, generation_);
  if (!d)
    throw InputError(name(), fmt::format("no design in {} covers {}x{}x{} with {} output on {}", artifacts_->dir, g.M, g.N,
                                         g.K, to_string(g.dtype_out), generation_),
                     "build one (scripts/build-npu-artifacts.md) and list it in manifest.json");
  Breakdown bd;
  Loaded& l = load(*d, &bd.reconfigure);

  // copy_in: A (M x K) and B (K x N) as bf16 into the design's padded row-major buffers.
  auto t0 = std::chrono::steady_clock::now();
  const std::int64_t lda = g.eff_lda(), ldb = g.eff_ldb(), ldc = g.eff_ldc();
  auto* a = static_cast<bf16_t*>(l.a->data());
  auto* b = static_cast<bf16_t*>(l.b->data());
  std::memset(a, 0, l.a->size());
  std::memset(b, 0, l.b->size());
  for (std::int64_t i = 0; i < g.M; ++i)
    for (std::int64_t k = 0; k < g.K; ++k)
      a[i * d->K + k] = f32_to_bf16(load_elem(A, g.dtype_in, g.trans_a ? k * lda + i : i * lda + k));
  for (std::int64_t k = 0; k < g.K; ++k)
    for (std::int64_t j = 0; j < g.N; ++j)
      b[k * d->N + j] = f32_to_bf16(load_elem(B, g.dtype_in, g.trans_b ? j * ldb + k : k * ldb + j));
  l.a->sync(kSyncToDevice);
  l.b->sync(kSyncToDevice);
  bd.copy_in = since(t0);

  const std::uint64_t addrs[] = {l.a->device_address(), l.b->device_address(), l.c->device_address()};
  const auto packet = start_cu_packet(l.cu_index, l.instr->device_address(), std::uint32_t(l.insts.words.size()), addrs);
  const Submission s = run_command(*dev_->api, *l.ctx, *l.cmd, packet,
                                   {l.instr->handle(), l.a->handle(), l.b->handle(), l.c->handle()}, cfg_.timeout_ns);
  bd.submit = s.submit_s;
  bd.compute = s.wait_s;

  t0 = std::chrono::steady_clock::now();
  l.c->sync(kSyncFromDevice);
  const bool plain = g.alpha == 1.0f && g.beta == 0.0f;
  for (std::int64_t i = 0; i < g.M; ++i)
    for (std::int64_t j = 0; j < g.N; ++j) {
      const std::int64_t src = i * d->N + j, dst = i * ldc + j;
      float v = d->dtype_out == DType::F32 ? static_cast<const float*>(l.c->data())[src]
                                           : bf16_to_f32(static_cast<const bf16_t*>(l.c->data())[src]);
      if (!plain) v = g.alpha * v + (g.beta == 0.0f ? 0.0f : g.beta * load_elem(C, g.dtype_out, dst));
      if (g.dtype_out == DType::F32) static_cast<float*>(C)[dst] = v;
      else static_cast<bf16_t*>(C)[dst] = f32_to_bf16(v);
    }
  bd.copy_out = since(t0);
  last_ = bd;
}

std::vector<std::pair<std::string, std::string>> XdnaBackend::notes() const {
  std::vector<std::pair<std::string, std::string>> v;
  v.emplace_back("device", disc_.ok() ? disc_.node : "none: " + disc_.reason);
  if (!generation_.empty()) v.emplace_back("generation", generation_);
  if (artifacts_) v.emplace_back("artifacts", fmt::format("{} ({} designs)", artifacts_->dir, artifacts_->designs.size()));
  else v.emplace_back("artifacts", artifacts_problem_);
  v.emplace_back("numerics", "bf16 inputs converted on the host, fp32 accumulation on the array");
  return v;
}

}  // namespace flopwatt::npu::xdna

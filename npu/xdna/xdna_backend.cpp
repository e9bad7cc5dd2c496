#include "npu/xdna/xdna_backend.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <set>
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

struct XdnaBackend::Parsed {
  Xclbin xclbin;
  InstStream insts;
};

struct XdnaBackend::Device {
  std::unique_ptr<DriverApi> api;
  DeviceInfo info;
  std::unique_ptr<DevHeap> heap;
};

struct XdnaBackend::Loaded {
  ArtifactDesign design;
  std::shared_ptr<const Parsed> files;
  std::uint32_t cu_index = 0;
  RegisterMap regs;  // the CU's, from the xclbin's metadata
  std::unique_ptr<HwContext> ctx;
  std::vector<std::unique_ptr<Bo>> pdis;  // one per distinct PDI the CUs use
  std::unique_ptr<Bo> instr, a, b, c, cmd;
  ~Loaded() {  // buffers before the context that uses them
    cmd.reset(), c.reset(), b.reset(), a.reset(), instr.reset(), pdis.clear();
    ctx.reset();
  }
};

std::optional<DesignMode> design_mode_from_env() {
  const char* v = std::getenv("FLOPWATT_NPU_DESIGN");
  if (!v || !*v || std::string(v) == "per-shape") return DesignMode::PerShape;
  if (std::string(v) == "single") return DesignMode::Single;
  return std::nullopt;
}

XdnaBackend::XdnaBackend(XdnaBackendConfig cfg) : cfg_(std::move(cfg)), fork_releaser_([this] { loaded_.clear(); }) {
  disc_ = discover_xdna(cfg_.root, cfg_.opener);
  if (!disc_.pci.empty() && disc_.pci.front().generation != "unknown") generation_ = disc_.pci.front().generation;
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

void XdnaBackend::open_device() const {
  if (dev_) return;
  if (!open_problem_.empty()) throw std::runtime_error(open_problem_);
  try {
    auto dev = std::make_unique<Device>();
    int err = 0;
    dev->api = cfg_.opener(disc_.node, &err);
    if (!dev->api) throw std::runtime_error(fmt::format("cannot open {}: {}", disc_.node, std::strerror(err)));
    dev->info = query_device(*dev->api);
    if (generation_.empty() && dev->info.aie.value) generation_ = generation_from(*dev->info.aie.value);
    dev->heap = std::make_unique<DevHeap>(*dev->api);
    dev_ = std::move(dev);
  } catch (const std::exception& e) {
    open_problem_ = e.what();
    throw;
  }
}

Availability XdnaBackend::availability() const {
  if (!disc_.ok()) return {false, disc_.reason + "; fix: " + disc_.fix};
  if (!artifacts_) return {false, "amdxdna device " + disc_.node + " found, but no GEMM designs: " + artifacts_problem_};
  if (artifacts_->designs.empty()) return {false, "the artifact manifest in " + artifacts_->dir + " lists no designs"};
  if (!cfg_.design_mode)
    return {false, fmt::format("FLOPWATT_NPU_DESIGN={}: expected per-shape or single", std::getenv("FLOPWATT_NPU_DESIGN")
                                                                                          ? std::getenv("FLOPWATT_NPU_DESIGN")
                                                                                          : "")};
  try {
    open_device();
  } catch (const std::exception& e) {
    return {false, fmt::format("amdxdna device {} cannot be used: {}", disc_.node, e.what())};
  }
  // Joined by hand: fmt::join's formatter trips GCC 12's -Wstringop-overflow (a false positive in fmt 9's fill_t).
  std::set<std::string> devices;
  for (const auto& d : artifacts_->designs) {
    if (d.device == generation_) return {true, ""};
    devices.insert(d.device);
  }
  std::string listed;
  for (const auto& d : devices) listed.append(listed.empty() ? "" : ", ").append(d);
  return {false, fmt::format("{}/manifest.json lists designs for {} only, this NPU is {}; build designs for it "
                             "(scripts/build-npu-designs --device {}) or point FLOPWATT_NPU_ARTIFACTS at them",
                             artifacts_->dir, listed, generation_, generation_)};
}

const ArtifactDesign* XdnaBackend::design_for(const GemmDesc& g) const {
  if (!artifacts_ || !cfg_.design_mode) return nullptr;
  if (*cfg_.design_mode == DesignMode::PerShape) return pick_design(*artifacts_, g, generation_);
  const ArtifactDesign* big = nullptr;
  for (const auto& d : artifacts_->designs)
    if (d.device == generation_ && d.dtype_out == g.dtype_out &&
        (!big || double(d.M) * d.N * d.K > double(big->M) * big->N * big->K))
      big = &d;
  return big && big->M >= g.M && big->N >= g.N && big->K >= g.K ? big : nullptr;
}

bool XdnaBackend::supports(const GemmDesc& d) const {
  if (!availability().ok || d.dtype_acc != DType::F32 || d.M <= 0 || d.N <= 0 || d.K <= 0) return false;
  return design_for(d) != nullptr;
}

std::uint32_t XdnaBackend::context_capacity() const { return dev_ ? context_limit(dev_->info, generation_) : 0; }

void XdnaBackend::evict_lru() {
  if (!loaded_.empty()) loaded_.pop_back();
}

void XdnaBackend::drop(const std::string& name) {
  loaded_.remove_if([&](const std::unique_ptr<Loaded>& l) { return l->design.name == name; });
}

XdnaBackend::Loaded& XdnaBackend::load(const ArtifactDesign& d, double* seconds) {
  for (auto it = loaded_.begin(); it != loaded_.end(); ++it)
    if ((*it)->design.name == d.name) {
      loaded_.splice(loaded_.begin(), loaded_, it);
      *seconds = 0;
      return *loaded_.front();
    }
  const auto t0 = std::chrono::steady_clock::now();
  auto& files = parsed_[d.name];
  if (!files) {
    auto p = std::make_shared<Parsed>();
    p->xclbin = load_xclbin(d.xclbin);
    require_npu_design(p->xclbin);
    p->insts = load_insts(d.insts);
    check_insts_device(d, p->insts);
    files = std::move(p);
  }
  auto l = std::make_unique<Loaded>();
  l->design = d;
  l->files = files;
  const Xclbin& x = files->xclbin;
  DriverApi& api = *dev_->api;
  // Every CU XRT lists is configured with its PDI; commands go to the one
  // judge_xclbin picked (the first with mlir-aie's register map).
  l->cu_index = std::uint32_t(judge_xclbin(x).command_cu);
  l->regs = register_map(x, l->cu_index);
  const std::uint32_t core_rows = dev_->info.aie.value ? dev_->info.aie.value->core.row_count : 4;
  const std::uint32_t width = x.partition.column_width ? x.partition.column_width : std::uint32_t(d.cols);
  // The firmware holds a fixed number of contexts per device (Phoenix 6), shared
  // with other processes: keep at most that many, and when creation still fails
  // give back the least recently used one and try again.
  const std::uint32_t cap = std::max<std::uint32_t>(1, context_capacity());
  while (loaded_.size() >= cap) evict_lru();
  for (;;) {
    try {
      l->ctx = std::make_unique<HwContext>(api, x.partition.ops_per_cycle, width * core_rows,
                                           driver_build(dev_->info.version));
      break;
    } catch (const std::runtime_error& e) {
      if (loaded_.empty())
        throw std::runtime_error(fmt::format("{}; the device holds {} hardware contexts and this process has none open: "
                                             "another process holds them (close it, see `flopwatt npu info`)",
                                             e.what(), cap));
      evict_lru();
    }
  }
  CuPdis pdis = load_cu_pdis(api, *dev_->heap, x);
  l->pdis = std::move(pdis.bos);
  l->ctx->configure_cus(pdis.cus);
  const auto& words = files->insts.words;
  l->instr = std::make_unique<Bo>(api, kBoDev, words.size() * 4, dev_->heap.get());
  std::memcpy(l->instr->data(), words.data(), words.size() * 4);
  l->instr->sync(kSyncToDevice);
  const std::size_t ob = dtype_size(d.dtype_out);
  l->a = std::make_unique<Bo>(api, kBoShmem, std::size_t(d.M * d.K) * 2);
  l->b = std::make_unique<Bo>(api, kBoShmem, std::size_t(d.K * d.N) * 2);
  l->c = std::make_unique<Bo>(api, kBoShmem, std::size_t(d.M * d.N) * ob);
  l->cmd = std::make_unique<Bo>(api, kBoCmd, 4096);
  loaded_.push_front(std::move(l));
  *seconds = since(t0);
  return *loaded_.front();
}

void XdnaBackend::gemm(const GemmDesc& g, const void* A, const void* B, void* C) {
  const Availability av = availability();
  if (!av.ok) throw InputError(name(), av.reason);
  const ArtifactDesign* d = design_for(g);
  if (!d)
    throw InputError(name(), fmt::format("no design in {} covers {}x{}x{} with {} output on {}{}", artifacts_->dir, g.M, g.N,
                                         g.K, to_string(g.dtype_out), generation_,
                                         *cfg_.design_mode == DesignMode::Single ? " (FLOPWATT_NPU_DESIGN=single)" : ""),
                     "build one (scripts/build-npu-designs) and list it in manifest.json");
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
  l.c->sync(kSyncToDevice);  // no dirty line of C may be written back over the device's result
  bd.copy_in = since(t0);

  const std::uint64_t addrs[] = {l.a->device_address(), l.b->device_address(), l.c->device_address()};
  const auto packet =
      start_cu_packet(l.cu_index, l.regs, l.instr->device_address(), std::uint32_t(l.files->insts.words.size()), addrs);
  Submission s;
  try {
    s = run_command(*dev_->api, *l.ctx, *l.cmd, packet, {l.instr->handle(), l.a->handle(), l.b->handle(), l.c->handle()},
                    cfg_.timeout_ns);
  } catch (const std::runtime_error&) {
    // A context whose command failed or never finished is not trusted again.
    drop(d->name);
    throw;
  }
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
  if (artifacts_) v.emplace_back("artifacts", fmt::format("{} ({} designs)", artifacts_->dir, artifacts_->designs.size()));
  else v.emplace_back("artifacts", artifacts_problem_);
  v.emplace_back("design_mode", !cfg_.design_mode                          ? "invalid FLOPWATT_NPU_DESIGN"
                                : *cfg_.design_mode == DesignMode::Single ? "single"
                                                                          : "per-shape");
  v.emplace_back("reconfiguration", "one hardware context per resident design, least recently used released at the "
                                     "device's context limit; in-sequence PDI loading (FLOPWATT_NPU_RECONFIG) is "
                                     "modelled by npu:sim-* only");
  if (disc_.ok()) {
    try {
      open_device();
      for (auto& n : device_notes(dev_->info)) v.push_back(std::move(n));
    } catch (const std::exception& e) {
      v.emplace_back("driver", e.what());
    }
  }
  if (!generation_.empty()) v.emplace_back("generation", generation_);
  v.emplace_back("numerics", "bf16 inputs converted on the host, fp32 accumulation on the array");
  return v;
}

}  // namespace flopwatt::npu::xdna

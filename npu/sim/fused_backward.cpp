#include "npu/sim/fused_backward.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>

#include <fmt/core.h>

#include "workloads/error.h"

namespace flopwatt::npu {

namespace fs = std::filesystem;
using nlohmann::json;

const char* to_string(BwdOrder o) {
  switch (o) {
    case BwdOrder::Standard: return "standard";
    case BwdOrder::OnlyInterleaving: return "only-interleaving";
    case BwdOrder::DxMajor: return "dx-major";
    case BwdOrder::DwMajor: return "dw-major";
  }
  return "?";
}

const char* to_string(BwdPartition p) {
  switch (p) {
    case BwdPartition::M: return "m";
    case BwdPartition::N: return "n";
    case BwdPartition::K: return "k";
  }
  return "?";
}

BwdTraffic& BwdTraffic::operator+=(const BwdTraffic& o) {
  dY += o.dY;
  X += o.X;
  W += o.W;
  dX += o.dX;
  dW += o.dW;
  feasible = feasible && o.feasible;
  psum_write += o.psum_write;
  psum_read += o.psum_read;
  return *this;
}

// --- devices --------------------------------------------------------------

ScratchpadNpu scratchpad_npu_from_xdna(const DeviceDesc& d) {
  ScratchpadNpu n;
  n.name = "xdna:" + d.name;
  n.taken_from = "flopwatt's XDNA device file " + fs::path(d.file).filename().string();
  n.file = d.file;
  // A column is the unit that owns a memory tile and a shim DMA: IRON's GEMM
  // splits work across columns, so a column is a "core" here.
  n.cores = d.usable_columns;
  n.scratchpad_bytes = d.l2_bytes + std::int64_t(d.core_rows) * (d.l1_bytes - d.l1_reserved_bytes);
  n.granule = 64;  // the kernel tile the plan's efficiency is calibrated at
  n.macs_per_s = double(d.bf16_macs_per_cycle) * d.core_rows * d.clock_hz * d.kernel_efficiency_64;
  n.dram_bytes_per_s = d.ddr_bytes_per_s;
  n.static_w = d.static_w;
  n.pj_per_mac = d.pj_per_mac;
  n.pj_per_byte_dram = d.pj_per_byte_ddr;
  n.pj_per_byte_sram = d.pj_per_byte_l2;
  return n;
}

namespace {

const char* kSystolicSchema = "flopwatt-npu-systolic/1";

double param(const json& params, const std::string& file, const std::string& key, double lo, double hi) {
  const auto it = params.find(key);
  if (it == params.end() || !it->is_object() || !it->contains("value"))
    throw InputError(file + ": params." + key, "missing parameter", "add {\"value\": ..., \"source\": ...}");
  if (!it->contains("source") || !(*it)["source"].is_string() || (*it)["source"].get<std::string>().empty())
    throw InputError(file + ": params." + key, "no \"source\"", "name where the value comes from, or mark it an assumption");
  const json& v = (*it)["value"];
  if (!v.is_number()) throw InputError(file + ": params." + key + ".value", "not a number");
  const double x = v.get<double>();
  if (!(x >= lo && x <= hi))
    throw InputError(file + ": params." + key + ".value",
                     "value " + std::to_string(x) + " outside [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
  return x;
}

std::vector<std::string> systolic_dirs() {
  std::vector<std::string> v;
  for (const auto& d : device_search_dirs()) v.push_back((fs::path(d) / "systolic").string());
  return v;
}

}  // namespace

ScratchpadNpu load_systolic_npu_file(const std::string& path) {
  json j = read_device_json(path, kSystolicSchema);
  auto str = [&](const char* k) {
    if (!j.contains(k) || !j[k].is_string() || j[k].get<std::string>().empty())
      throw InputError(path + ": " + k, "missing or not a string");
    return j[k].get<std::string>();
  };
  ScratchpadNpu n;
  n.file = path;
  n.name = str("name");
  n.taken_from = str("taken_from");
  if (!j.contains("params") || !j["params"].is_object()) throw InputError(path + ": params", "missing object");
  const json& p = j["params"];
  n.cores = int(param(p, path, "cores", 1, 1024));
  n.batch = int(param(p, path, "batch", 1, 1 << 20));
  const double rows = param(p, path, "pe_rows", 1, 4096), cols = param(p, path, "pe_cols", 1, 4096);
  n.granule = std::int64_t(std::min(rows, cols));
  n.macs_per_s = rows * cols * param(p, path, "clock_mhz", 1, 10000) * 1e6 * param(p, path, "pe_utilization", 0.01, 1);
  n.scratchpad_bytes = std::int64_t(param(p, path, "scratchpad_kib_per_core", 1, 1 << 30) * 1024);
  n.dram_bytes_per_s = param(p, path, "dram_gbs", 0.001, 1e6) * 1e9;
  n.operand_bytes = int(param(p, path, "operand_bytes", 1, 8));
  n.psum_bytes = int(param(p, path, "psum_bytes", 1, 8));
  n.static_w = param(p, path, "static_w", 0, 1e4);
  n.pj_per_mac = param(p, path, "pj_per_mac", 0, 1e4);
  n.pj_per_byte_dram = param(p, path, "pj_per_byte_dram", 0, 1e4);
  n.pj_per_byte_sram = param(p, path, "pj_per_byte_sram", 0, 1e4);
  if (j.contains("published")) {
    const json& list = j["published"];
    if (!list.is_array()) throw InputError(path + ": published", "not an array", "give a list of {metric, value, source}");
    for (std::size_t i = 0; i < list.size(); ++i) {
      const json& e = list[i];
      const std::string at = path + ": published[" + std::to_string(i) + "]";
      if (!e.is_object() || !e.contains("metric") || e["metric"] != "peak_tflops")
        throw InputError(at + ".metric", "missing or not peak_tflops", "systolic files state the chip's peak_tflops");
      if (!e.contains("value") || !e["value"].is_number() || !(e["value"].get<double>() > 0))
        throw InputError(at + ".value", "missing or not a positive number", "give the published peak in TFLOP/s");
      if (!e.contains("source") || !e["source"].is_string() || e["source"].get<std::string>().empty())
        throw InputError(at + ".source", "missing", "say where the figure is published");
      PublishedFigure f;
      f.metric = "peak_tflops";
      f.value = e["value"].get<double>();
      f.source = e["source"].get<std::string>();
      if (e.contains("deviation")) {
        const json& dv = e["deviation"];
        if (!dv.is_object() || !dv.contains("percent") || !dv["percent"].is_number() || !dv.contains("why") ||
            !dv["why"].is_string() || dv["why"].get<std::string>().empty())
          throw InputError(at + ".deviation", "needs a numeric \"percent\" and a \"why\"", "state the deviation and its reason");
        f.deviation_stated = true;
        f.deviation_pct = dv["percent"].get<double>();
        f.why = dv["why"].get<std::string>();
      }
      n.published.push_back(std::move(f));
    }
  }
  return n;
}

std::vector<CalibrationRow> calibrate_systolic(const ScratchpadNpu& dev) {
  std::vector<CalibrationRow> rows;
  for (const auto& f : dev.published) {
    CalibrationRow r;
    r.figure = f;
    r.model = 2.0 * dev.cores * dev.macs_per_s / 1e12;
    r.deviation_pct = (r.model / f.value - 1.0) * 100.0;
    r.detail = fmt::format("{} core(s) x {:.3f} TMAC/s x 2", dev.cores, dev.macs_per_s / 1e12);
    rows.push_back(std::move(r));
  }
  return rows;
}

std::vector<std::string> systolic_npu_names() {
  std::vector<std::string> names;
  for (const auto& dir : systolic_dirs()) {
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(dir, ec))
      if (e.path().extension() == ".json") {
        const std::string stem = e.path().stem().string();
        if (std::find(names.begin(), names.end(), stem) == names.end()) names.push_back(stem);
      }
  }
  std::sort(names.begin(), names.end());
  return names;
}

ScratchpadNpu load_scratchpad_npu(const std::string& name) {
  if (name.rfind("xdna:", 0) == 0) return scratchpad_npu_from_xdna(load_device(name.substr(5)));
  std::string tried;
  for (const auto& dir : systolic_dirs()) {
    const fs::path p = fs::path(dir) / (name + ".json");
    std::error_code ec;
    if (fs::is_regular_file(p, ec)) return load_systolic_npu_file(p.string());
    tried += (tried.empty() ? "" : ", ") + dir;
  }
  throw InputError("--device " + name, "no " + name + ".json in " + tried,
                   "use xdna:phoenix, xdna:strix or a name listed under npu/sim/devices/systolic");
}

// --- traffic --------------------------------------------------------------

namespace {

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

// Tile edges to try along a dimension of size D: multiples of g, and D itself.
std::vector<std::int64_t> edges(std::int64_t D, std::int64_t g) {
  std::vector<std::int64_t> v;
  for (std::int64_t x = g; x < D; x += g) v.push_back(x);
  v.push_back(D);
  return v;
}

struct GemmTraffic {
  double a = 0, b = 0, c = 0;
  std::int64_t bp = 0, bq = 0;
  bool fits = true;  // false: no block fits, the bytes are a granule tile's (an underestimate)
};

// Output-stationary C(P,Q) = A(P,R) B(R,Q): a bp x bq block of C stays in the
// scratchpad as partial sums while A's and B's g-deep slices stream through
// double buffers. A is read once per column block of C, B once per row block.
GemmTraffic gemm_traffic(std::int64_t P, std::int64_t Q, std::int64_t R, std::int64_t S, std::int64_t g, int e, int a) {
  GemmTraffic best;
  double best_bytes = std::numeric_limits<double>::infinity();
  const std::int64_t depth = std::min(g, R);
  for (std::int64_t bp : edges(P, g)) {
    const double free = double(S) - 2.0 * depth * bp * e;
    if (free <= 0) break;
    std::int64_t bq = std::int64_t(free / (double(bp) * a + 2.0 * depth * e));
    if (bq >= Q) bq = Q;
    else bq = bq / g * g;
    if (bq <= 0) continue;
    GemmTraffic t;
    t.bp = bp;
    t.bq = bq;
    t.a = double(P) * R * e * double(ceil_div(Q, bq));
    t.b = double(R) * Q * e * double(ceil_div(P, bp));
    t.c = double(P) * Q * a;
    if (t.a + t.b < best_bytes) {
      best_bytes = t.a + t.b;
      best = t;
    }
  }
  if (best.bp == 0) {  // nothing fits: one granule tile, every operand re-read per tile
    best.fits = false;
    best.bp = std::min(g, P);
    best.bq = std::min(g, Q);
    best.a = double(P) * R * e * double(ceil_div(Q, best.bq));
    best.b = double(R) * Q * e * double(ceil_div(P, best.bp));
    best.c = double(P) * Q * a;
  }
  return best;
}

// The fused order with `outer` blocks of dY outermost (dx-major: outer = M,
// the rows of X and dX; dw-major: outer = N, the rows of W and dW). Each dY
// tile (bo x bi) is loaded once and used for both GEMMs. The outer side's
// panels (input `in_o`, gradient `g_o`: X and dX for dx-major) either stay
// resident across the inner blocks or stream, paying partial sums of g_o;
// the inner side's operands (W and dW for dx-major) stream once per outer
// block, paying partial sums of g_i, unless all of them stay resident.
struct FusedTraffic {
  double dY = 0, in_o = 0, in_i = 0, g_o = 0, g_i = 0, ps_w = 0, ps_r = 0;
  std::int64_t bo = 0, bi = 0;
  bool fits = true;
  double total() const { return dY + in_o + in_i + g_o + g_i + ps_w + ps_r; }
};

FusedTraffic fused_major(std::int64_t O, std::int64_t I, std::int64_t K, std::int64_t S, std::int64_t g, int e, int a) {
  FusedTraffic best;
  double best_bytes = std::numeric_limits<double>::infinity();
  const double depth = double(std::min(g, K));
  const double Kd = double(K), Od = double(O), Id = double(I);
  for (std::int64_t bo : edges(O, g))
    for (std::int64_t bi : edges(I, g)) {
      const double tile = 2.0 * double(bo) * double(bi) * e;  // double-buffered dY tile
      if (tile >= double(S)) break;
      const std::int64_t to = ceil_div(O, bo), ti = ceil_div(I, bi);
      for (int keep_o = 0; keep_o < 2; ++keep_o)
        for (int keep_i = 0; keep_i < 2; ++keep_i) {
          const double outer_side = keep_o ? double(bo) * Kd * (e + a) : 2.0 * depth * double(bo) * (e + a);
          const double inner_side = keep_i ? Id * Kd * (e + a) : 2.0 * depth * double(bi) * (e + a);
          if (tile + outer_side + inner_side > double(S)) continue;
          FusedTraffic t;
          t.bo = bo;
          t.bi = bi;
          t.dY = Od * Id * e;
          const bool o_once = keep_o || ti == 1;
          const bool i_once = keep_i || to == 1;
          t.in_o = (o_once ? 1.0 : double(ti)) * Od * Kd * e;
          t.g_o = Od * Kd * a;
          t.in_i = (i_once ? 1.0 : double(to)) * Id * Kd * e;
          t.g_i = Id * Kd * a;
          if (!o_once) {
            t.ps_w += double(ti - 1) * Od * Kd * a;
            t.ps_r += double(ti - 1) * Od * Kd * a;
          }
          if (!i_once) {
            t.ps_w += double(to - 1) * Id * Kd * a;
            t.ps_r += double(to - 1) * Id * Kd * a;
          }
          if (t.total() < best_bytes) {
            best_bytes = t.total();
            best = t;
          }
        }
    }
  if (best.bo == 0) {  // not even a granule tile fits: the bytes of granule tiles, marked infeasible
    best.fits = false;
    best.bo = std::min(g, O);
    best.bi = std::min(g, I);
    const double to = double(ceil_div(O, best.bo)), ti = double(ceil_div(I, best.bi));
    best.dY = Od * Id * e;
    best.in_o = ti * Od * Kd * e;
    best.in_i = to * Id * Kd * e;
    best.g_o = Od * Kd * a;
    best.g_i = Id * Kd * a;
    best.ps_w = (ti - 1) * Od * Kd * a + (to - 1) * Id * Kd * a;
    best.ps_r = best.ps_w;
  }
  return best;
}

}  // namespace

BwdTraffic core_traffic(BwdOrder o, const BwdShape& s, std::int64_t S, std::int64_t g, int e, int a,
                        std::int64_t* tile_m, std::int64_t* tile_n) {
  BwdTraffic t;
  switch (o) {
    case BwdOrder::Standard: {
      const GemmTraffic dx = gemm_traffic(s.M, s.K, s.N, S, g, e, a);  // dX = dY W
      const GemmTraffic dw = gemm_traffic(s.N, s.K, s.M, S, g, e, a);  // dW = dY^T X
      t = {dx.a + dw.a, dw.b, dx.b, dx.c, dw.c, 0, 0};
      if (tile_m) *tile_m = dx.bp;
      if (tile_n) *tile_n = dw.bp;
      break;
    }
    case BwdOrder::OnlyInterleaving: {
      // Both output blocks are resident at once: the scratchpad is split
      // between the two GEMMs (the best of three splits).
      double best = std::numeric_limits<double>::infinity();
      {  // what is reported when no split fits (then marked infeasible)
        const GemmTraffic dx = gemm_traffic(s.M, s.K, s.N, S / 2, g, e, a);
        const GemmTraffic dw = gemm_traffic(s.N, s.K, s.M, S / 2, g, e, a);
        t = {dx.a + dw.a, dw.b, dx.b, dx.c, dw.c, 0, 0};
        t.feasible = false;
      }
      for (int quarters = 1; quarters <= 3; ++quarters) {
        const std::int64_t Sx = S / 4 * quarters;
        const GemmTraffic dx = gemm_traffic(s.M, s.K, s.N, Sx, g, e, a);
        const GemmTraffic dw = gemm_traffic(s.N, s.K, s.M, S - Sx, g, e, a);
        if (!dx.fits || !dw.fits) continue;
        // The two GEMMs' first sweeps over dY are aligned and share their loads.
        const BwdTraffic c{dx.a + dw.a - double(s.M) * s.N * e, dw.b, dx.b, dx.c, dw.c, 0, 0};
        if (c.total() < best) {
          best = c.total();
          t = c;
          if (tile_m) *tile_m = dx.bp;
          if (tile_n) *tile_n = dw.bp;
        }
      }
      break;
    }
    case BwdOrder::DxMajor: {
      const FusedTraffic f = fused_major(s.M, s.N, s.K, S, g, e, a);
      t = {f.dY, f.in_o, f.in_i, f.g_o, f.g_i, f.ps_w, f.ps_r, f.fits};
      if (tile_m) *tile_m = f.bo;
      if (tile_n) *tile_n = f.bi;
      break;
    }
    case BwdOrder::DwMajor: {
      const FusedTraffic f = fused_major(s.N, s.M, s.K, S, g, e, a);
      t = {f.dY, f.in_i, f.in_o, f.g_i, f.g_o, f.ps_w, f.ps_r, f.fits};
      if (tile_m) *tile_m = f.bi;
      if (tile_n) *tile_n = f.bo;
      break;
    }
  }
  return t;
}

namespace {

std::int64_t padded(std::int64_t x, std::int64_t g) { return ceil_div(x, g) * g; }

void finish(const ScratchpadNpu& dev, BwdResult& r, double busiest_core_padded_macs) {
  r.compute_s = busiest_core_padded_macs / dev.macs_per_s;
  r.memory_s = r.bytes.total() / dev.dram_bytes_per_s;
  r.time_s = std::max(r.compute_s, r.memory_s);
  const double bytes = r.bytes.total();
  r.energy_j = dev.static_w * r.time_s +
               1e-12 * (r.macs * dev.pj_per_mac + bytes * dev.pj_per_byte_dram + 2 * bytes * dev.pj_per_byte_sram);
}

}  // namespace

BwdResult model_backward(const ScratchpadNpu& dev, const BwdShape& s, BwdOrder o, BwdPartition p) {
  BwdResult r;
  r.order = o;
  r.partition = p;
  r.macs = 2.0 * double(s.M) * s.N * s.K;
  const std::int64_t D = p == BwdPartition::M ? s.M : p == BwdPartition::N ? s.N : s.K;
  const std::int64_t q = ceil_div(D, dev.cores);  // each core's share; the last may be short
  const std::int64_t active = ceil_div(D, q);
  const int e = dev.operand_bytes, a = dev.psum_bytes;
  double busiest = 0;
  for (std::int64_t c = 0; c < active; ++c) {
    const std::int64_t part = std::min(q, D - c * q);
    BwdShape sub = s;
    (p == BwdPartition::M ? sub.M : p == BwdPartition::N ? sub.N : sub.K) = part;
    std::int64_t tm = 0, tn = 0;
    r.bytes += core_traffic(o, sub, dev.scratchpad_bytes, dev.granule, e, a, &tm, &tn);
    if (c == 0) {
      r.tile_m = tm;
      r.tile_n = tn;
    }
    const std::int64_t g = dev.granule;
    busiest = std::max(busiest, 2.0 * double(padded(sub.M, g)) * double(padded(sub.N, g)) * double(padded(sub.K, g)));
  }
  // The cores' gradients of the shared operand are partial sums: all but one
  // are written back and read again to be added.
  if (active > 1 && p != BwdPartition::K) {
    const double extra = double(active - 1) * (p == BwdPartition::M ? double(s.N) * s.K : double(s.M) * s.K) * a;
    (p == BwdPartition::M ? r.bytes.dW : r.bytes.dX) -= extra;
    r.bytes.psum_write += extra;
    r.bytes.psum_read += extra;
  }
  finish(dev, r, busiest);
  return r;
}

namespace {

bool better(const BwdResult& a, const BwdResult& b) {
  if (a.bytes.feasible != b.bytes.feasible) return a.bytes.feasible;
  if (a.time_s != b.time_s) return a.time_s < b.time_s;
  return a.energy_j < b.energy_j;
}

}  // namespace

BwdResult best_standard(const ScratchpadNpu& dev, const BwdShape& s) {
  BwdResult best = model_backward(dev, s, BwdOrder::Standard, BwdPartition::M);
  for (BwdPartition p : kAllPartitions) {
    BwdResult r = model_backward(dev, s, BwdOrder::Standard, p);
    if (better(r, best)) best = r;
  }
  return best;
}

BwdResult choose_backward(const ScratchpadNpu& dev, const BwdShape& s) {
  BwdResult best = best_standard(dev, s);
  for (BwdOrder o : kAllOrders)
    for (BwdPartition p : kAllPartitions) {
      BwdResult r = model_backward(dev, s, o, p);
      if (better(r, best)) best = r;
    }
  return best;
}

BwdResult model_gemm(const ScratchpadNpu& dev, std::int64_t P, std::int64_t Q, std::int64_t R) {
  BwdResult r;
  r.macs = double(P) * Q * R;
  const std::int64_t q = ceil_div(P, dev.cores), active = ceil_div(P, q);
  double busiest = 0;
  for (std::int64_t c = 0; c < active; ++c) {
    const std::int64_t part = std::min(q, P - c * q);
    const GemmTraffic t = gemm_traffic(part, Q, R, dev.scratchpad_bytes, dev.granule, dev.operand_bytes, dev.psum_bytes);
    r.bytes.X += t.a;
    r.bytes.W += t.b;
    r.bytes.dX += t.c;
    busiest = std::max(busiest, double(padded(part, dev.granule)) * double(padded(Q, dev.granule)) *
                                    double(padded(R, dev.granule)));
  }
  finish(dev, r, busiest);
  return r;
}

double roofline_seconds(const ScratchpadNpu& dev, double flop, double bytes) {
  return std::max(flop / (2.0 * dev.macs_per_s * dev.cores), bytes / dev.dram_bytes_per_s);
}

Gpt2Step model_gpt2_step(const ScratchpadNpu& dev, const Gpt2Dims& g, const std::vector<OtherOp>& others) {
  Gpt2Step st;
  const std::int64_t C = g.C, M = g.tokens;
  struct L {
    const char* name;
    std::int64_t K, N;
    int count;
  };
  const L layers[] = {{"qkv", C, 3 * C, g.L}, {"attproj", C, C, g.L}, {"fc", C, 4 * C, g.L},
                      {"fcproj", 4 * C, C, g.L}, {"lm_head", C, g.Vp, 1}};
  double fwd_j = 0, other_j = 0;
  for (const L& l : layers) {
    Gpt2LayerRow row;
    row.layer = l.name;
    row.count = l.count;
    row.shape = {M, l.N, l.K};
    row.standard = best_standard(dev, row.shape);
    row.chosen = choose_backward(dev, row.shape);
    st.backward_linear_standard_s += l.count * row.standard.time_s;
    st.backward_linear_chosen_s += l.count * row.chosen.time_s;
    st.step_standard_j += l.count * row.standard.energy_j;
    st.step_chosen_j += l.count * row.chosen.energy_j;
    const BwdResult f = model_gemm(dev, M, l.N, l.K);  // out(M,N) = X(M,K) W^T
    st.forward_gemm_s += l.count * f.time_s;
    fwd_j += l.count * f.energy_j;
    st.layers.push_back(row);
  }
  for (const OtherOp& o : others) {
    const double t = roofline_seconds(dev, o.flop, o.bytes);
    st.other_s += t;
    if (o.backward) st.other_backward_s += t;
    other_j += dev.static_w * t + 1e-12 * (o.flop / 2 * dev.pj_per_mac + o.bytes * (dev.pj_per_byte_dram + 2 * dev.pj_per_byte_sram));
  }
  st.step_standard_s = st.forward_gemm_s + st.other_s + st.backward_linear_standard_s;
  st.step_chosen_s = st.forward_gemm_s + st.other_s + st.backward_linear_chosen_s;
  st.step_standard_j += fwd_j + other_j;
  st.step_chosen_j += fwd_j + other_j;
  return st;
}

namespace {

std::string order_name(const BwdResult& r) {
  return std::string(to_string(r.order)) + "/" + to_string(r.partition);
}

nlohmann::json result_json(const BwdResult& r) {
  return {{"order", to_string(r.order)},
          {"partition", to_string(r.partition)},
          {"bytes",
           {{"dY", r.bytes.dY}, {"X", r.bytes.X}, {"W", r.bytes.W}, {"dX", r.bytes.dX}, {"dW", r.bytes.dW},
            {"psum_write", r.bytes.psum_write}, {"psum_read", r.bytes.psum_read}, {"total", r.bytes.total()}}},
          {"flop", r.flop()},
          {"time_s", r.time_s},
          {"compute_s", r.compute_s},
          {"memory_s", r.memory_s},
          {"energy_j", r.energy_j},
          {"flop_per_s", r.flop() / r.time_s},
          {"flop_per_j", r.flop() / r.energy_j}};
}

}  // namespace

std::string format_gpt2_step(const ScratchpadNpu& dev, const Gpt2Dims& g, const Gpt2Step& st) {
  std::string s = fmt::format(
      "{} [simulated: fused backward model] {} core(s) x {:.0f} KiB scratchpad, {:.2f} TMAC/s per core, DRAM {:.1f} GB/s\n"
      "  taken from: {}\n",
      dev.name, dev.cores, dev.scratchpad_bytes / 1024.0, dev.macs_per_s / 1e12, dev.dram_bytes_per_s / 1e9,
      dev.taken_from);
  for (const auto& r : calibrate_systolic(dev)) {
    s += fmt::format("  calibration: peak {:.2f} vs published {:.2f} TFLOP/s ({:+.1f}%, {}); {}\n", r.model, r.figure.value,
                     r.deviation_pct,
                     r.within_tolerance() ? "within 15%"
                     : r.accounted_for()  ? fmt::format("NOT within 15%, stated: {}", r.figure.why)
                                          : std::string("NOT within 15% and no reason stated"),
                     r.figure.source);
  }
  s += fmt::format("GPT-2 C={} L={} Vp={}, {} tokens per step; per linear layer, one occurrence:\n", g.C, g.L, g.Vp, g.tokens);
  s += fmt::format("{:<8} {:>22} | {:>9} {:>9} {:>8} {:>8} | {:<22} {:>9} {:>9} {:>8} {:>8} | {:>7}\n", "layer",
                   "M x N x K", "std MB", "std ms", "TFLOP/s", "GFLOP/J", "chosen", "MB", "ms", "TFLOP/s", "GFLOP/J",
                   "speedup");
  for (const auto& l : st.layers) {
    const auto& a = l.standard;
    const auto& b = l.chosen;
    s += fmt::format("{:<8} {:>22} | {:>9.1f} {:>9.3f} {:>8.2f} {:>8.1f} | {:<22} {:>9.1f} {:>9.3f} {:>8.2f} {:>8.1f} | {:>6.3f}x\n",
                     l.layer, fmt::format("{}x{}x{}", l.shape.M, l.shape.N, l.shape.K), a.bytes.total() / 1e6,
                     a.time_s * 1e3, a.flop() / a.time_s / 1e12, a.flop() / a.energy_j / 1e9, order_name(b),
                     b.bytes.total() / 1e6, b.time_s * 1e3, b.flop() / b.time_s / 1e12, b.flop() / b.energy_j / 1e9,
                     a.time_s / b.time_s);
  }
  s += fmt::format("step (modelled): forward GEMMs {:.3f} ms, other ops {:.3f} ms (backward part {:.3f} ms)\n",
                   st.forward_gemm_s * 1e3, st.other_s * 1e3, st.other_backward_s * 1e3);
  s += fmt::format("  linear backwards  {:9.3f} -> {:9.3f} ms  speedup {:.3f}x\n", st.backward_linear_standard_s * 1e3,
                   st.backward_linear_chosen_s * 1e3, st.backward_linear_standard_s / st.backward_linear_chosen_s);
  s += fmt::format("  backward pass     {:9.3f} -> {:9.3f} ms  speedup {:.3f}x\n", st.backward_standard_s() * 1e3,
                   st.backward_chosen_s() * 1e3, st.backward_standard_s() / st.backward_chosen_s());
  s += fmt::format("  training step     {:9.3f} -> {:9.3f} ms  speedup {:.3f}x; energy {:.4g} -> {:.4g} J\n",
                   st.step_standard_s * 1e3, st.step_chosen_s * 1e3, st.step_standard_s / st.step_chosen_s,
                   st.step_standard_j, st.step_chosen_j);
  return s;
}

nlohmann::json gpt2_step_to_json(const ScratchpadNpu& dev, const Gpt2Dims& g, const Gpt2Step& st) {
  nlohmann::json layers = nlohmann::json::array();
  for (const auto& l : st.layers)
    layers.push_back({{"layer", l.layer},
                      {"count", l.count},
                      {"shape", {{"M", l.shape.M}, {"N", l.shape.N}, {"K", l.shape.K}}},
                      {"standard", result_json(l.standard)},
                      {"chosen", result_json(l.chosen)}});
  return {{"simulated", true},
          {"device",
           {{"name", dev.name}, {"taken_from", dev.taken_from}, {"cores", dev.cores},
            {"scratchpad_bytes", dev.scratchpad_bytes}, {"macs_per_s_per_core", dev.macs_per_s},
            {"dram_bytes_per_s", dev.dram_bytes_per_s}}},
          {"gpt2", {{"C", g.C}, {"L", g.L}, {"Vp", g.Vp}, {"tokens", g.tokens}}},
          {"layers", layers},
          {"step",
           {{"forward_gemm_s", st.forward_gemm_s},
            {"other_s", st.other_s},
            {"other_backward_s", st.other_backward_s},
            {"backward_linear_s", {{"standard", st.backward_linear_standard_s}, {"chosen", st.backward_linear_chosen_s}}},
            {"backward_s", {{"standard", st.backward_standard_s()}, {"chosen", st.backward_chosen_s()}}},
            {"step_s", {{"standard", st.step_standard_s}, {"chosen", st.step_chosen_s}}},
            {"step_j", {{"standard", st.step_standard_j}, {"chosen", st.step_chosen_j}}}}}};
}

}  // namespace flopwatt::npu

#include "npu/plan/plan.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <mutex>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "workloads/error.h"

namespace flopwatt::npu {

namespace {

constexpr std::int64_t kBf16 = 2;

// Sizes multiply into DMA and step counts: every product and rounding is
// checked, so a huge GEMM is refused instead of wrapping to negative counts.
std::int64_t checked_mul(std::int64_t a, std::int64_t b) {
  std::int64_t r;
  if (__builtin_mul_overflow(a, b, &r))
    throw InputError("npu plan", "the GEMM's tile and transfer counts overflow 64-bit arithmetic", "pass smaller M, N, K");
  return r;
}

std::int64_t ceil_to(std::int64_t x, std::int64_t q) {
  std::int64_t r;
  if (__builtin_add_overflow(x, q - 1, &r))
    throw InputError("npu plan", "the GEMM's padded size overflows 64-bit arithmetic", "pass smaller M, N, K");
  return checked_mul(r / q, q);
}

std::int64_t out_size(DType d) { return std::int64_t(dtype_size(d)); }

// A-carrying memory tiles: IRON brings A in through at most `rows` columns.
int a_channels_for(int rows, int cols) { return std::min(rows, cols); }

}  // namespace

std::int64_t l1_buffer_bytes(const TileShape& t, DType out) {
  return 2 * (std::int64_t(t.m) * t.k + std::int64_t(t.k) * t.n) * kBf16 + 2 * std::int64_t(t.m) * t.n * out_size(out);
}

std::int64_t l2_buffer_bytes(const TileShape& t, int rows, int cols, DType out) {
  const int ach = a_channels_for(rows, cols);
  const std::int64_t a = 2 * std::int64_t(rows / ach) * t.m * t.k * kBf16;
  const std::int64_t b = 2 * std::int64_t(t.k) * t.n * kBf16;
  const std::int64_t c = 2 * std::int64_t(rows) * t.m * t.n * out_size(out);
  return a + b + c;  // the first a_channels memory tiles hold all three
}

std::string check_design(const DeviceDesc& dev, const TileShape& t, int cols, DType out) {
  if (t.m <= 0 || t.k <= 0 || t.n <= 0) return "tile sizes must be positive";
  if (t.m % dev.mmul_r || t.k % dev.mmul_s || t.n % dev.mmul_t)
    return fmt::format("tile {}x{}x{} is not a multiple of the {}x{}x{} micro-kernel", t.m, t.k, t.n, dev.mmul_r,
                       dev.mmul_s, dev.mmul_t);
  // mlir-aie's mm.cc (aie_kernels/aie2 and aie2p) unrolls the micro-kernel 2x2
  // over A's rows and B's columns and static_asserts m % 2r and n % 2t.
  if (t.m % (2 * dev.mmul_r) || t.n % (2 * dev.mmul_t))
    return fmt::format("tile m={} and n={} must be multiples of 2r={} and 2t={}: the kernel works on 2x2 micro-kernel blocks",
                       t.m, t.n, 2 * dev.mmul_r, 2 * dev.mmul_t);
  // Shim and tile DMAs move 4-byte words: a tile row must be whole words.
  if ((t.k * kBf16) % 4 || (t.n * kBf16) % 4 || (t.n * out_size(out)) % 4) return "tile rows are not whole 4-byte words";
  if (cols <= 0 || cols > dev.usable_columns)
    return fmt::format("{} columns requested, {} usable", cols, dev.usable_columns);
  if (dev.core_rows % a_channels_for(dev.core_rows, cols)) return "rows are not divisible among the A channels";
  const std::int64_t l1 = l1_buffer_bytes(t, out);
  if (l1 > dev.l1_bytes - dev.l1_reserved_bytes)
    return fmt::format("double-buffered tiles need {} bytes of L1, {} available", l1, dev.l1_bytes - dev.l1_reserved_bytes);
  const std::int64_t l2 = l2_buffer_bytes(t, dev.core_rows, cols, out);
  if (l2 > dev.l2_bytes) return fmt::format("memory tile needs {} bytes, {} available", l2, dev.l2_bytes);
  return {};
}

Plan make_plan(const DeviceDesc& dev, const GemmProblem& p, const TileShape& t, int cols, std::int64_t k_chunk) {
  if (p.M <= 0 || p.N <= 0 || p.K <= 0)
    throw InputError("npu plan", fmt::format("empty GEMM {}x{}x{}", p.M, p.N, p.K), "give M, N, K >= 1");
  if (std::string why = check_design(dev, t, cols, p.out); !why.empty())
    throw InputError("npu plan", fmt::format("design m={} k={} n={} on {} columns: {}", t.m, t.k, t.n, cols, why),
                     "choose smaller tiles or fewer columns");
  if (k_chunk < 0 || (k_chunk > 0 && k_chunk % t.k))
    throw InputError("npu plan", fmt::format("K chunk {} is not a multiple of k={}", k_chunk, t.k));
  Plan pl;
  pl.device = dev.name;
  pl.problem = p;
  pl.tile = t;
  pl.r = dev.mmul_r, pl.s = dev.mmul_s, pl.t = dev.mmul_t;
  pl.rows = dev.core_rows;
  pl.cols = cols;
  pl.a_channels = a_channels_for(pl.rows, cols);
  pl.Mp = ceil_to(p.M, std::int64_t(pl.rows) * t.m);
  pl.Np = ceil_to(p.N, std::int64_t(cols) * t.n);
  pl.k_chunk = k_chunk ? k_chunk : ceil_to(p.K, t.k);
  pl.Kp = ceil_to(p.K, pl.k_chunk);
  pl.commands = pl.Kp / pl.k_chunk;
  pl.tiles_m = pl.Mp / (std::int64_t(pl.rows) * t.m);
  pl.tiles_n = pl.Np / (std::int64_t(cols) * t.n);
  pl.k_steps = pl.k_chunk / t.k;
  pl.l1_bytes = l1_buffer_bytes(t, p.out);
  pl.l2_bytes = l2_buffer_bytes(t, pl.rows, cols, p.out);

  const std::int64_t supers = checked_mul(checked_mul(pl.tiles_m, pl.tiles_n), pl.commands);  // output super-tiles over all commands
  const std::int64_t steps = checked_mul(supers, pl.k_steps);
  checked_mul(checked_mul(supers, pl.rows), cols);  // the largest transfer count below
  checked_mul(steps, std::max(pl.rows, cols));
  const std::int64_t ob = out_size(p.out);
  const int rows_per_a = pl.rows / pl.a_channels;
  pl.transfers = {
      {"ddr->l2", 'A', fmt::format("{} shim channel(s), {} row tile(s) each", pl.a_channels, rows_per_a),
       std::int64_t(rows_per_a) * t.m * t.k * kBf16, steps * pl.a_channels, pl.a_channels, 1},
      {"ddr->l2", 'B', "one shim channel per column", std::int64_t(t.k) * t.n * kBf16, steps * cols, cols, 1},
      {"l2->l1", 'A', "split per row, broadcast along the row", std::int64_t(t.m) * t.k * kBf16, steps * pl.rows, pl.rows,
       cols},
      {"l2->l1", 'B', "forwarded down the column", std::int64_t(t.k) * t.n * kBf16, steps * cols, cols, pl.rows},
      {"l1->l2", 'C', "one core channel each", std::int64_t(t.m) * t.n * ob, supers * pl.rows * cols, pl.rows * cols, 1},
      {"l2->ddr", 'C', "joined rows->1 per column", std::int64_t(pl.rows) * t.m * t.n * ob, supers * cols, cols, 1},
  };
  return pl;
}

double Plan::level_bytes(const std::string& level) const {
  double b = 0;
  for (const auto& x : transfers)
    if (x.level == level) b += x.bytes();
  return b;
}

double Plan::ddr_bytes() const { return level_bytes("ddr->l2") + level_bytes("l2->ddr"); }

std::string Plan::design_key() const {
  return fmt::format("m{}k{}n{}_{}x{}_bf16-{}_kc{}", tile.m, tile.k, tile.n, rows, cols, to_string(problem.out), k_chunk);
}

std::string Plan::describe() const {
  std::string o;
  const double waste = macs_issued() / macs_useful() - 1.0;
  o += fmt::format("plan for {}x{}x{} (M x N x K), bf16 in, {} out, on {}\n", problem.M, problem.N, problem.K,
                   to_string(problem.out), device);
  o += fmt::format("  array      {} rows x {} cols = {} cores; A enters through {} memory tile(s); micro-kernel {}x{}x{}\n",
                   rows, cols, rows * cols, a_channels, r, s, t);
  o += fmt::format("  core tile  m={} k={} n={}; L1 {} bytes of buffers (2 x A, 2 x B, 2 x C)\n", tile.m, tile.k, tile.n,
                   l1_bytes);
  o += fmt::format("  mem tile   {} bytes in the fullest memory tile\n", l2_bytes);
  o += fmt::format("  padding    M {}->{}, N {}->{}, K {}->{}: {:.1f}% extra MACs\n", problem.M, Mp, problem.N, Np,
                   problem.K, Kp, 100.0 * waste);
  o += fmt::format("  schedule   {} x {} output super-tiles of {}x{}, {} k-steps each, {} command(s) of K={}\n", tiles_m,
                   tiles_n, rows * tile.m, cols * tile.n, k_steps, commands, k_chunk);
  o += fmt::format("  design     {}\n", design_key());
  o += "  transfers\n";
  o += fmt::format("    {:<8} {:<2} {:>11} {:>10} {:>4} {:>6} {:>12}  {}\n", "level", "op", "tile bytes", "count", "ch",
                   "fanout", "total MB", "pattern");
  for (const auto& x : transfers)
    o += fmt::format("    {:<8} {:<2} {:>11} {:>10} {:>4} {:>6} {:>12.3f}  {}\n", x.level, std::string(1, x.operand),
                     x.tile_bytes, x.count, x.channels, x.fanout, x.bytes() / 1e6, x.pattern);
  o += fmt::format("    DDR total {:.3f} MB\n", ddr_bytes() / 1e6);
  return o;
}

nlohmann::json Plan::to_json() const {
  nlohmann::json tr = nlohmann::json::array();
  for (const auto& x : transfers)
    tr.push_back({{"level", x.level}, {"operand", std::string(1, x.operand)}, {"pattern", x.pattern},
                  {"tile_bytes", x.tile_bytes}, {"count", x.count}, {"channels", x.channels}, {"fanout", x.fanout},
                  {"bytes", x.bytes()}});
  return {{"device", device},
          {"problem", {{"M", problem.M}, {"N", problem.N}, {"K", problem.K}, {"dtype_in", "bf16"},
                       {"dtype_out", std::string(to_string(problem.out))}}},
          {"padded", {{"M", Mp}, {"N", Np}, {"K", Kp}}},
          {"tile", {{"m", tile.m}, {"k", tile.k}, {"n", tile.n}}},
          {"micro_kernel", {{"r", r}, {"s", s}, {"t", t}}},
          {"array", {{"rows", rows}, {"cols", cols}, {"a_channels", a_channels}}},
          {"k_chunk", k_chunk},
          {"commands", commands},
          {"tiles_m", tiles_m},
          {"tiles_n", tiles_n},
          {"k_steps", k_steps},
          {"l1_bytes", l1_bytes},
          {"l2_bytes", l2_bytes},
          {"macs_useful", macs_useful()},
          {"macs_issued", macs_issued()},
          {"ddr_bytes", ddr_bytes()},
          {"design_key", design_key()},
          {"transfers", tr}};
}

std::vector<DesignChoice> candidate_designs(const DeviceDesc& dev, DType out) {
  // Tile edges IRON's GEMM kernels are built for; odd multiples of 16 up to
  // 256 keep the search small while covering every L1-filling shape.
  static const int edges[] = {16, 32, 48, 64, 80, 96, 112, 128, 160, 192, 224, 256};
  std::vector<DesignChoice> v;
  for (int cols = 1; cols <= dev.usable_columns; cols *= 2)
    for (int m : edges)
      for (int k : edges)
        for (int n : edges) {
          const TileShape t{m, k, n};
          if (check_design(dev, t, cols, out).empty()) v.push_back({t, cols});
        }
  // The whole array when it is not a power of two (e.g. a 6-column part).
  if ((dev.usable_columns & (dev.usable_columns - 1)) != 0)
    for (int m : edges)
      for (int k : edges)
        for (int n : edges) {
          const TileShape t{m, k, n};
          if (check_design(dev, t, dev.usable_columns, out).empty()) v.push_back({t, dev.usable_columns});
        }
  return v;
}

namespace {

// Sweeps plan thousands of shapes on one device: enumerate its designs once.
const std::vector<DesignChoice>& cached_candidates(const DeviceDesc& dev, DType out) {
  static std::mutex mu;
  static std::map<std::string, std::vector<DesignChoice>> cache;
  const std::string key = fmt::format("{}|{}|{}|{}|{}|{}|{}x{}x{}|{}", dev.name, dev.l1_bytes, dev.l1_reserved_bytes,
                                      dev.l2_bytes, dev.usable_columns, dev.core_rows, dev.mmul_r, dev.mmul_s,
                                      dev.mmul_t, to_string(out));
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(key);
  if (it == cache.end()) it = cache.emplace(key, candidate_designs(dev, out)).first;
  return it->second;
}

}  // namespace

Plan choose_plan(const DeviceDesc& dev, const GemmProblem& p, const PlanCost& cost) {
  const auto& cands = cached_candidates(dev, p.out);
  if (cands.empty()) throw InputError("npu plan", "no tile fits the device's L1 for " + std::string(to_string(p.out)) + " output");
  Plan best;
  double best_cost = std::numeric_limits<double>::infinity();
  for (const auto& c : cands) {
    Plan pl = make_plan(dev, p, c.tile, c.cols);
    const double x = cost(pl);
    bool better = x < best_cost * (1 - 1e-12);
    if (!better && std::abs(x - best_cost) <= best_cost * 1e-12) {
      const double vi = pl.macs_issued(), vb = best.macs_issued();
      better = vi < vb || (vi == vb && pl.tile.m * pl.tile.k * pl.tile.n > best.tile.m * best.tile.k * best.tile.n);
    }
    if (better) best = std::move(pl), best_cost = x;
  }
  return best;
}

double proxy_cost(const DeviceDesc& dev, const Plan& pl) {
  return 2.0 * pl.macs_issued() / dev.peak_bf16_flop_per_s() + pl.ddr_bytes() / dev.ddr_bytes_per_s;
}

}  // namespace flopwatt::npu

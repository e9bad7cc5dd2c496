#include "npu/xdna/artifacts.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "npu/xdna/ctrl_elf.h"
#include "npu/xdna/insts.h"
#include "npu/xdna/xclbin.h"
#include "workloads/error.h"

namespace flopwatt::npu::xdna {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// mlir-aie's whole_array builds name their outputs <prefix>_MxKxN[_mxkxn][_Nc]
// (its Makefile's target suffix); the shape in the name is the shape the
// design was compiled for, in mlir-aie's order.
void check_name_against_manifest(const ArtifactDesign& d, const std::string& file, const std::string& at,
                                 const std::string& fix) {
  static const std::regex kSuffix(R"((?:^|[_.-])(\d+)x(\d+)x(\d+)(?:_(\d+)x(\d+)x(\d+))?(?=$|[_.-]))");
  const std::string name = fs::path(file).stem().string();
  std::smatch m;
  if (!std::regex_search(name, m, kSuffix)) return;
  auto num = [&](int i) { return std::stoll(m[i].str()); };
  if (m[1].length() > 10 || m[2].length() > 10 || m[3].length() > 10) return;
  const std::int64_t M = num(1), K = num(2), N = num(3);
  if (M != d.M || K != d.K || N != d.N)
    throw InputError(at, fmt::format("{} was built for MxKxN {}x{}x{} (mlir-aie's order), i.e. M={} N={} K={}, but the "
                                     "manifest says M={} N={} K={}",
                                     fs::path(file).filename().string(), M, K, N, M, N, K, d.M, d.N, d.K),
                     "write the design's M, N, K in flopwatt's order (M,N,K) in the manifest, or rebuild it; " + fix);
  if (m[4].matched && m[4].length() <= 6 && m[5].length() <= 6 && m[6].length() <= 6 &&
      (num(4) != d.m || num(5) != d.k || num(6) != d.n))
    throw InputError(at, fmt::format("{} was built with tile mxkxn {}x{}x{}, the manifest says m={} k={} n={}",
                                     fs::path(file).filename().string(), num(4), num(5), num(6), d.m, d.k, d.n),
                     "copy the tile from the build into the manifest; " + fix);
}

}  // namespace

void check_insts_device(const ArtifactDesign& d, const InstStream& s) {
  // The transaction header's device generation (aie-rt: XAIE_DEV_GEN_AIE2IPU = 3
  // is npu1, XAIE_DEV_GEN_AIE2P = 4 the XDNA2 parts npu4/npu5/npu6).
  if (!s.transaction) return;
  const bool xdna2 = s.dev_gen == 4;
  if ((d.device == "npu1") == xdna2)
    throw InputError(d.insts, fmt::format("the instruction stream was compiled for {} (AIE generation {}), the manifest "
                                          "says design {} is for {}",
                                          xdna2 ? "an XDNA2 NPU (npu4/npu5/npu6)" : "npu1", s.dev_gen, d.name, d.device),
                     fmt::format("rebuild it for {} (scripts/build-npu-designs --device {}) or fix the manifest's device",
                                 d.device, d.device));
}

ArtifactSet load_artifacts(const std::string& dir) {
  const std::string path = (fs::path(dir) / "manifest.json").string();
  const std::string fix = "see scripts/build-npu-artifacts.md for the manifest format";
  std::ifstream in(path);
  if (!in) throw InputError(path, "cannot open the artifact manifest", "set FLOPWATT_NPU_ARTIFACTS to a directory with manifest.json");
  json j;
  try {
    j = json::parse(in);
  } catch (const json::exception& e) {
    throw InputError(path, std::string("malformed JSON: ") + e.what(), fix);
  }
  // json::value() throws a type_error for a non-string "schema": compare only a string.
  const auto sc = j.is_object() ? j.find("schema") : j.end();
  if (sc == j.end() || !sc->is_string() || sc->get<std::string>() != "flopwatt-npu-artifacts/1")
    throw InputError(path + ": schema", "expected \"flopwatt-npu-artifacts/1\"", fix);
  if (!j.contains("designs") || !j["designs"].is_array()) throw InputError(path + ": designs", "missing array", fix);
  ArtifactSet set;
  set.dir = dir;
  int i = 0;
  for (const auto& e : j["designs"]) {
    const std::string at = fmt::format("{}: designs[{}]", path, i++);
    if (!e.is_object()) throw InputError(at, "not an object", fix);
    auto str = [&](const char* k, bool required) -> std::string {
      if (!e.contains(k)) {
        if (required) throw InputError(at + "." + k, "missing", fix);
        return {};
      }
      if (!e[k].is_string() || e[k].get<std::string>().empty()) throw InputError(at + "." + k, "not a non-empty string", fix);
      return e[k].get<std::string>();
    };
    // Bounded, so the int narrowing below and the divisibility check's products stay exact
    // (a tile.m of 2^32 used to become 0 and divide by it).
    auto pos = [&](const json& o, const char* k, const std::string& w, std::int64_t max) -> std::int64_t {
      if (!o.is_object() || !o.contains(k) || !o[k].is_number_integer() ||
          (o[k].is_number_unsigned() && o[k].get<std::uint64_t>() > std::uint64_t(max)) ||
          o[k].get<std::int64_t>() <= 0 || o[k].get<std::int64_t>() > max)
        throw InputError(w + "." + k, "missing or not an integer from 1 to " + std::to_string(max), fix);
      return o[k].get<std::int64_t>();
    };
    auto file = [&](const char* k, bool required) -> std::string {
      const std::string rel = str(k, required);
      if (rel.empty()) return {};
      const fs::path p = fs::path(rel).is_absolute() ? fs::path(rel) : fs::path(dir) / rel;
      std::error_code ec;
      if (!fs::is_regular_file(p, ec)) throw InputError(at + "." + k, "file " + p.string() + " does not exist", fix);
      return p.string();
    };
    ArtifactDesign d;
    d.name = str("name", true);
    d.device = str("device", true);
    d.kernel = str("kernel", false);
    if (d.kernel.empty()) d.kernel = "MLIR_AIE";
    d.xclbin = file("xclbin", true);
    d.insts = file("insts", true);
    d.ctrl_elf = file("ctrl_elf", false);
    constexpr std::int64_t kMaxDim = std::int64_t(1) << 31, kMaxTile = 4096, kMaxArray = 64;
    d.M = pos(e, "M", at, kMaxDim), d.N = pos(e, "N", at, kMaxDim), d.K = pos(e, "K", at, kMaxDim);
    if (!e.contains("tile")) throw InputError(at + ".tile", "missing", fix);
    d.m = int(pos(e["tile"], "m", at + ".tile", kMaxTile)), d.k = int(pos(e["tile"], "k", at + ".tile", kMaxTile)),
    d.n = int(pos(e["tile"], "n", at + ".tile", kMaxTile));
    if (!e.contains("array")) throw InputError(at + ".array", "missing", fix);
    d.rows = int(pos(e["array"], "rows", at + ".array", kMaxArray)), d.cols = int(pos(e["array"], "cols", at + ".array", kMaxArray));
    const auto in = parse_dtype(str("dtype_in", true)), out = parse_dtype(str("dtype_out", true));
    if (!in || *in != DType::BF16) throw InputError(at + ".dtype_in", "the NPU designs take bf16 inputs", fix);
    if (!out) throw InputError(at + ".dtype_out", "expected fp32 or bf16", fix);
    d.dtype_in = *in, d.dtype_out = *out;
    if (d.M % (std::int64_t(d.rows) * d.m) || d.N % (std::int64_t(d.cols) * d.n) || d.K % d.k)
      throw InputError(at, fmt::format("{}x{}x{} is not a multiple of the {}x{} array of {}x{}x{} tiles", d.M, d.N, d.K,
                                       d.rows, d.cols, d.m, d.k, d.n),
                       fix);
    check_name_against_manifest(d, d.xclbin, at + ".xclbin", fix);
    check_name_against_manifest(d, d.insts, at + ".insts", fix);
    set.designs.push_back(std::move(d));
  }
  return set;
}

void validate_design(const ArtifactDesign& d) {
  const Xclbin x = load_xclbin(d.xclbin);
  require_npu_design(x);
  if (x.partition.column_width && x.partition.column_width < d.cols)
    throw InputError(d.xclbin, fmt::format("partition is {} columns wide, the manifest says the design uses {}",
                                           x.partition.column_width, d.cols),
                     "fix the manifest's array.cols or rebuild");
  check_insts_device(d, load_insts(d.insts));
  if (!d.ctrl_elf.empty()) load_ctrl_elf(d.ctrl_elf);
}

const ArtifactDesign* pick_design(const ArtifactSet& set, const GemmDesc& g, const std::string& device) {
  const ArtifactDesign* best = nullptr;
  for (const auto& d : set.designs) {
    if ((!device.empty() && d.device != device) || d.dtype_out != g.dtype_out) continue;
    if (d.M < g.M || d.N < g.N || d.K < g.K) continue;
    if (!best || double(d.M) * d.N * d.K < double(best->M) * best->N * best->K) best = &d;
  }
  return best;
}

std::string default_artifacts_dir() {
  if (const char* e = std::getenv("FLOPWATT_NPU_ARTIFACTS"); e && *e) return e;
  char buf[4096];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return {};
  buf[n] = 0;
  return (fs::path(buf).parent_path() / ".." / "share" / "flopwatt" / "npu" / "artifacts").lexically_normal().string();
}

}  // namespace flopwatt::npu::xdna

#include "npu/plan/device.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "workloads/error.h"

#ifndef FLOPWATT_NPU_DEVICE_DIR
#define FLOPWATT_NPU_DEVICE_DIR ""
#endif

namespace flopwatt::npu {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

const char* kSchema = "flopwatt-npu-device/1";

class Reader {
 public:
  Reader(const json& params, std::string file, DeviceDesc& d) : p_(params), file_(std::move(file)), d_(d) {}

  const json& entry(const std::string& key) {
    if (!p_.contains(key) || !p_[key].is_object())
      throw InputError(file_ + ": params." + key, "missing parameter", "add {\"value\": ..., \"source\": ...}");
    const json& e = p_[key];
    if (!e.contains("value")) throw InputError(file_ + ": params." + key, "no \"value\"");
    if (!e.contains("source") || !e["source"].is_string() || e["source"].get<std::string>().empty())
      throw InputError(file_ + ": params." + key, "no \"source\"",
                       "every parameter names where its value comes from, or says \"assumption\": true and why");
    ParamSource s;
    s.source = e["source"].get<std::string>();
    if (e.contains("unit") && e["unit"].is_string()) s.unit = e["unit"].get<std::string>();
    if (e.contains("note") && e["note"].is_string()) s.note = e["note"].get<std::string>();
    if (e.contains("assumption")) {
      if (!e["assumption"].is_boolean()) throw InputError(file_ + ": params." + key + ".assumption", "not a boolean");
      s.assumption = e["assumption"].get<bool>();
    }
    d_.sources[key] = s;
    return e["value"];
  }

  double num(const std::string& key, double lo, double hi) {
    const json& v = entry(key);
    if (!v.is_number()) throw InputError(file_ + ": params." + key + ".value", "not a number");
    const double x = v.get<double>();
    if (!(x >= lo && x <= hi))
      throw InputError(file_ + ": params." + key + ".value",
                       "value " + std::to_string(x) + " outside [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
    return x;
  }
  int integer(const std::string& key, int lo, int hi) {
    const json& v = entry(key);
    if (!v.is_number_integer()) throw InputError(file_ + ": params." + key + ".value", "not an integer");
    const auto x = v.get<std::int64_t>();
    if (x < lo || x > hi)
      throw InputError(file_ + ": params." + key + ".value",
                       "value " + std::to_string(x) + " outside [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
    return int(x);
  }

 private:
  const json& p_;
  std::string file_;
  DeviceDesc& d_;
};

std::string self_exe_dir() {
  char buf[4096];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return {};
  buf[n] = 0;
  return fs::path(buf).parent_path().string();
}

const char* const kMetrics[] = {"rated_int8_tops", "best_bf16_gemm_tflops"};

// "published": [{"variant": "7840u", "metric": ..., "value": ..., "source": ...,
// "deviation": {"percent": ..., "why": ...}}]; every entry is checked, those of
// the loaded variant ("" or no "variant" for the base) are kept.
void read_published(const json& j, const std::string& path, DeviceDesc& d) {
  if (!j.contains("published")) return;
  const json& list = j["published"];
  if (!list.is_array()) throw InputError(path + ": published", "not an array", "give a list of {metric, value, source}");
  for (std::size_t i = 0; i < list.size(); ++i) {
    const json& e = list[i];
    const std::string at = path + ": published[" + std::to_string(i) + "]";
    if (!e.is_object()) throw InputError(at, "not an object", "give {\"metric\", \"value\", \"source\"}");
    PublishedFigure f;
    std::string variant;
    if (e.contains("variant")) {
      if (!e["variant"].is_string()) throw InputError(at + ".variant", "not a string", "name a clock variant or omit it for the base");
      variant = e["variant"].get<std::string>();
      if (!variant.empty() && !(j.contains("clock_variants") && j["clock_variants"].is_object() && j["clock_variants"].contains(variant)))
        throw InputError(at + ".variant", "no clock variant \"" + variant + "\"", "use a name listed in clock_variants");
    }
    if (!e.contains("metric") || !e["metric"].is_string() ||
        std::find(std::begin(kMetrics), std::end(kMetrics), e["metric"].get<std::string>()) == std::end(kMetrics))
      throw InputError(at + ".metric", "missing or unknown", "use rated_int8_tops or best_bf16_gemm_tflops");
    f.metric = e["metric"].get<std::string>();
    if (!e.contains("value") || !e["value"].is_number() || !(e["value"].get<double>() > 0))
      throw InputError(at + ".value", "missing or not a positive number", "give the published figure in the metric's unit");
    f.value = e["value"].get<double>();
    if (!e.contains("source") || !e["source"].is_string() || e["source"].get<std::string>().empty())
      throw InputError(at + ".source", "missing", "say where the figure is published");
    f.source = e["source"].get<std::string>();
    if (f.metric == "rated_int8_tops" && d.int8_ops_per_cycle_per_column <= 0)
      throw InputError(at + ".metric", "rated_int8_tops needs params.int8_ops_per_cycle_per_column",
                       "add the driver's per-column int8 rate or drop this entry");
    if (e.contains("deviation")) {
      const json& dv = e["deviation"];
      if (!dv.is_object() || !dv.contains("percent") || !dv["percent"].is_number())
        throw InputError(at + ".deviation.percent", "missing or not a number", "state (model / published - 1) * 100");
      if (!dv.contains("why") || !dv["why"].is_string() || dv["why"].get<std::string>().empty())
        throw InputError(at + ".deviation.why", "missing", "say which modelling reason leaves the model this far off");
      f.deviation_stated = true;
      f.deviation_pct = dv["percent"].get<double>();
      f.why = dv["why"].get<std::string>();
    }
    if (variant == d.variant) d.published.push_back(std::move(f));
  }
}

}  // namespace

json read_device_json(const std::string& path, const std::string& schema) {
  std::ifstream in(path);
  if (!in) throw InputError(path, "cannot open device file", "check the path or set FLOPWATT_NPU_DEVICES");
  json j;
  try {
    j = json::parse(in);
  } catch (const json::exception& e) {
    throw InputError(path, std::string("malformed JSON: ") + e.what(), "fix the file's syntax");
  }
  if (!j.is_object()) throw InputError(path, "top level is not an object");
  // json::value() throws a type_error for a non-string "schema": compare only a string.
  if (const auto sc = j.find("schema"); sc == j.end() || !sc->is_string() || sc->get<std::string>() != schema)
    throw InputError(path + ": schema", "expected \"" + schema + "\"");
  return j;
}

namespace {

// The AIE micro-kernel shape [r, s, t], whose product is the core's bf16 MACs per cycle.
void read_mmul_shape(Reader& r, const std::string& path, DeviceDesc& d) {
  const json& v = r.entry("bf16_mmul_shape");
  if (!v.is_array() || v.size() != 3 || !v[0].is_number_integer() || !v[1].is_number_integer() ||
      !v[2].is_number_integer())
    throw InputError(path + ": params.bf16_mmul_shape.value", "expected [r, s, t] integers");
  // Each factor of bf16_macs_per_cycle (<= 4096) is at most 4096: checked as
  // 64-bit before narrowing, so [4294967297,128,1] is not read as [1,128,1].
  for (int i = 0; i < 3; ++i)
    if (v[i].get<std::int64_t>() <= 0 || v[i].get<std::int64_t>() > 4096 || (v[i].is_number_unsigned() && v[i].get<std::uint64_t>() > 4096))
      throw InputError(path + ": params.bf16_mmul_shape.value", "each of r, s, t must be from 1 to 4096",
                       "give the micro-kernel shape, e.g. [4, 8, 8]");
  d.mmul_r = v[0].get<int>(), d.mmul_s = v[1].get<int>(), d.mmul_t = v[2].get<int>();
  if (std::int64_t(d.mmul_r) * d.mmul_s * d.mmul_t != d.bf16_macs_per_cycle)
    throw InputError(path + ": params.bf16_mmul_shape.value",
                     "r*s*t must be positive and equal bf16_macs_per_cycle_per_core");
}

// The rates, latencies and energies the timing and energy models take.
void read_rates(Reader& r, const json& params, DeviceDesc& d) {
  d.kernel_efficiency_64 = r.num("kernel_efficiency_64", 1e-3, 1.0);
  d.kernel_call_overhead_cycles = r.num("kernel_call_overhead_cycles", 0, 1e6);
  if (params.contains("int8_ops_per_cycle_per_column"))
    d.int8_ops_per_cycle_per_column = r.num("int8_ops_per_cycle_per_column", 1, 1e6);
  d.l1_bytes = r.integer("l1_bytes", 1024, 1 << 24);
  d.l1_reserved_bytes = r.integer("l1_reserved_bytes", 0, 1 << 24);
  d.l2_bytes = r.integer("l2_bytes_per_memtile", 1024, 1 << 28);
  d.core_dma_bytes_per_cycle = r.num("core_dma_bytes_per_cycle", 0.01, 1024);
  d.memtile_dma_bytes_per_cycle = r.num("memtile_dma_bytes_per_cycle", 0.01, 1024);
  d.memtile_dma_channels = r.integer("memtile_dma_channels", 1, 64);
  d.shim_dma_bytes_per_cycle = r.num("shim_dma_bytes_per_cycle", 0.01, 1024);
  d.shim_mm2s_channels = r.integer("shim_mm2s_channels", 1, 16);
  d.shim_s2mm_channels = r.integer("shim_s2mm_channels", 1, 16);
  d.ddr_bytes_per_s = r.num("ddr_gbs", 0.01, 10000) * 1e9;
  d.submit_latency_s = r.num("submit_latency_us", 0, 1e7) * 1e-6;
  d.reconfig_load_pdi_s = r.num("reconfig_load_pdi_us", 0, 1e8) * 1e-6;
  d.reconfig_xclbin_s = r.num("reconfig_xclbin_ms", 0, 1e6) * 1e-3;
  d.hwctx_limit = r.integer("hwctx_limit", 1, 1024);
  d.host_copy_bytes_per_s = r.num("host_copy_gbs", 0.01, 10000) * 1e9;
  d.static_w = r.num("static_w", 0, 1000);
  d.pj_per_mac = r.num("pj_per_mac_bf16", 0, 1e6);
  d.pj_per_byte_ddr = r.num("pj_per_byte_ddr", 0, 1e6);
  d.pj_per_byte_l2 = r.num("pj_per_byte_l2", 0, 1e6);
  d.pj_per_byte_l1 = r.num("pj_per_byte_l1", 0, 1e6);
}

// Clock variants: the same array in parts that run it slower or faster
// ("clock_variants": {"7840u": {"value": MHz, "source": ...}}); each is
// checked on every load, the one asked for replaces clock_mhz.
void read_clock_variant(const json& j, const std::string& path, const std::string& variant, DeviceDesc& d) {
  if (j.contains("clock_variants")) {
    if (!j["clock_variants"].is_object()) throw InputError(path + ": clock_variants", "not an object");
    DeviceDesc scratch;
    Reader vr(j["clock_variants"], path, scratch);
    for (const auto& [k, v] : j["clock_variants"].items()) vr.num(k, 1, 10000);
    if (!variant.empty()) {
      if (!j["clock_variants"].contains(variant))
        throw InputError(path + ": clock_variants", "no variant \"" + variant + "\"", "use one the file lists");
      d.clock_hz = vr.num(variant, 1, 10000) * 1e6;
      d.sources["clock_mhz"] = scratch.sources[variant];
      d.name += "-" + variant;
      d.variant = variant;
    }
  } else if (!variant.empty()) {
    throw InputError(path, "no clock_variants, so no variant \"" + variant + "\"", "use the device's own name");
  }
}

}  // namespace

static DeviceDesc read_device_file(const std::string& path, const std::string& variant) {
  json j = read_device_json(path, kSchema);
  DeviceDesc d;
  d.file = path;
  auto str = [&](const char* k) {
    if (!j.contains(k) || !j[k].is_string() || j[k].get<std::string>().empty())
      throw InputError(path + ": " + k, "missing or not a string");
    return j[k].get<std::string>();
  };
  d.name = str("name");
  d.generation = str("generation");
  d.driver_id = str("driver_id");
  if (!j.contains("params") || !j["params"].is_object()) throw InputError(path + ": params", "missing object");
  Reader r(j["params"], path, d);

  d.columns_total = r.integer("columns_total", 1, 64);
  d.first_usable_column = r.integer("first_usable_column", 0, 63);
  d.usable_columns = r.integer("usable_columns", 1, 64);
  d.core_rows = r.integer("core_rows", 1, 16);
  d.mem_rows = r.integer("mem_rows", 0, 4);
  d.clock_hz = r.num("clock_mhz", 1, 10000) * 1e6;
  d.bf16_macs_per_cycle = r.integer("bf16_macs_per_cycle_per_core", 1, 4096);
  read_mmul_shape(r, path, d);
  read_rates(r, j["params"], d);
  read_clock_variant(j, path, variant, d);
  read_published(j, path, d);

  if (d.first_usable_column + d.usable_columns > d.columns_total)
    throw InputError(path + ": params.usable_columns", "first_usable_column + usable_columns exceeds columns_total");
  if (d.l1_reserved_bytes >= d.l1_bytes)
    throw InputError(path + ": params.l1_reserved_bytes", "reserves all of L1");
  return d;
}

DeviceDesc load_device_file(const std::string& path, const std::string& variant) {
  try {
    return read_device_file(path, variant);
  } catch (const InputError& e) {
    if (!e.fix().empty()) throw;
    // Every field's error names the fix: the file's format and its parameters' meaning.
    throw InputError(e.where(), e.problem(),
                     "correct the field; npu/sim/devices/phoenix.json in the flopwatt sources shows every field with its source");
  } catch (const json::exception& e) {
    throw InputError(path, std::string("unexpected JSON type: ") + e.what(), "correct the device file's field types");
  }
}

std::vector<std::string> device_search_dirs() {
  std::vector<std::string> dirs;
  if (const char* e = std::getenv("FLOPWATT_NPU_DEVICES"); e && *e) dirs.emplace_back(e);
  if (std::string(FLOPWATT_NPU_DEVICE_DIR).size()) dirs.emplace_back(FLOPWATT_NPU_DEVICE_DIR);
  if (const std::string exe = self_exe_dir(); !exe.empty()) {
    dirs.push_back((fs::path(exe) / ".." / "share" / "flopwatt" / "npu" / "devices").lexically_normal().string());
  }
  return dirs;
}

DeviceDesc load_device(const std::string& name) {
  const auto dirs = device_search_dirs();
  std::string tried;
  for (const auto& dir : dirs) {
    const fs::path p = fs::path(dir) / (name + ".json");
    std::error_code ec;
    if (fs::is_regular_file(p, ec)) return load_device_file(p.string());
    // "phoenix-7840u": the clock variant "7840u" of phoenix.json.
    if (const auto dash = name.rfind('-'); dash != std::string::npos && dash > 0) {
      const fs::path base = fs::path(dir) / (name.substr(0, dash) + ".json");
      if (fs::is_regular_file(base, ec)) return load_device_file(base.string(), name.substr(dash + 1));
    }
    tried += (tried.empty() ? "" : ", ") + dir;
  }
  throw InputError("npu device '" + name + "'", "no " + name + ".json in " + (tried.empty() ? "(no directory)" : tried),
                   "set FLOPWATT_NPU_DEVICES to the directory holding the device files (npu/sim/devices in the source tree)");
}

std::vector<std::string> available_device_names() {
  std::vector<std::string> names;
  for (const auto& dir : device_search_dirs()) {
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(dir, ec)) {
      if (e.path().extension() != ".json") continue;
      const std::string stem = e.path().stem().string();
      if (std::find(names.begin(), names.end(), stem) == names.end()) names.push_back(stem);
      std::ifstream in(e.path());
      const json j = json::parse(in, nullptr, false);
      if (j.is_object() && j.contains("clock_variants") && j["clock_variants"].is_object())
        for (const auto& [k, v] : j["clock_variants"].items())
          if (std::find(names.begin(), names.end(), stem + "-" + k) == names.end()) names.push_back(stem + "-" + k);
    }
  }
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace flopwatt::npu

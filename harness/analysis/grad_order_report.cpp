#include "harness/analysis/grad_order_report.h"

#include <fmt/core.h>

#include <optional>
#include <sstream>

namespace flopwatt {

namespace {

using nlohmann::json;

const char* const kLayers[] = {"qkv", "attproj", "fc", "fcproj", "lm_head"};

struct Row {
  std::size_t run = 0;
  std::string layer;  // a linear layer, or "step"
  std::string ran;    // the order this layer ran ("standard" | "interleaved"); "" for the step
  std::optional<double> block_rows;
  std::optional<double> model_bytes;  // CPU traffic model, all occurrences in a step
  const Measurement* m = nullptr;
  std::optional<double> fpj;
  std::string fpj_source;
  std::optional<double> time_vs_standard;  // this run's median / the standard-order run's
};

const json* gpt2_ctx(const Run& r) {
  const auto it = r.context.find("gpt2");
  if (it == r.context.end() || !it->is_object() || !it->contains("grad_order")) return nullptr;
  return &*it;
}

std::string str(const json& j, const char* k) { return j.contains(k) && j[k].is_string() ? j[k].get<std::string>() : ""; }

// The aggregated row of a layer's backward op (no step, no layer), or the step's.
const Measurement* find_row(const Run& r, const std::string& layer) {
  for (const auto& m : r.measurements) {
    if (m.workload != "gpt2" || m.skipped || m.step || m.layer) continue;
    if (layer == "step" ? m.op == "step" : (m.op == layer && m.pass && *m.pass == "bwd")) return &m;
  }
  return nullptr;
}

std::vector<Row> build(const std::vector<LoadedRun>& runs) {
  std::vector<Row> rows;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const json* g = gpt2_ctx(runs[i].run);
    if (!g) continue;
    const json layers = g->value("grad_order_layers", json::object());
    double step_bytes = 0;
    bool all_bytes = true;
    for (const char* l : kLayers) {
      Row row;
      row.run = i;
      row.layer = l;
      row.m = find_row(runs[i].run, l);
      if (layers.contains(l)) {
        const json& x = layers[l];
        row.ran = str(x, "order");
        if (x.contains("block_rows")) row.block_rows = x["block_rows"].get<double>();
        const char* key = row.ran == "interleaved" ? "modelled_bytes_interleaved" : "modelled_bytes_standard";
        if (x.contains(key) && row.m && row.m->count_per_step)
          row.model_bytes = x[key].get<double>() * *row.m->count_per_step;
      }
      if (row.model_bytes) step_bytes += *row.model_bytes;
      else all_bytes = false;
      rows.push_back(row);
    }
    Row step;
    step.run = i;
    step.layer = "step";
    step.m = find_row(runs[i].run, "step");
    if (all_bytes) step.model_bytes = step_bytes;  // the linear backwards' share of the step
    rows.push_back(step);
  }
  for (Row& row : rows) {
    const Run& run = runs[row.run].run;
    if (row.m) {
      if (const auto src = headline_of(run, *row.m).source) {
        const auto it = row.m->energy.find(*src);
        if (it != row.m->energy.end() && it->second.flop_per_j) {
          row.fpj = it->second.flop_per_j;
          row.fpj_source = *src;
        }
      }
    }
    // The standard-order run of the same backend and configuration is the baseline.
    const json& g = *gpt2_ctx(run);
    for (const Row& other : rows) {
      if (other.layer != row.layer || !other.m || !row.m) continue;
      const json& og = *gpt2_ctx(runs[other.run].run);
      if (str(og, "grad_order") != "standard" || str(og, "gemm_backend") != str(g, "gemm_backend") ||
          og.value("batch", 0) != g.value("batch", 0) || og.value("seq", 0) != g.value("seq", 0) ||
          str(og, "model") != str(g, "model") || other.m->time_s.median <= 0)
        continue;
      row.time_vs_standard = row.m->time_s.median / other.m->time_s.median;
      break;
    }
  }
  return rows;
}

std::string mb(const std::optional<double>& b) { return b ? fmt::format("{:.1f}", *b / 1e6) : "-"; }

// One simulator run's NPU model rows (context.gpt2.grad_order_npu_model).
void npu_model_markdown(std::ostream& os, const std::string& label, const json& nm) {
  os << fmt::format("\n### {}: NPU fused-backward model of {} [simulated]\n\n", label,
                    nm["device"].value("name", "?"))
     << "Per occurrence of each linear layer: the standard order (best partitioning) against the order and "
        "partitioning with the least modelled time; then the step.\n\n"
        "| layer | M x N x K | standard MB | ms | GFLOP/s | GFLOP/J | chosen | MB | ms | GFLOP/s | GFLOP/J | speedup |\n"
        "|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  for (const auto& l : nm["layers"]) {
    const json &a = l["standard"], &b = l["chosen"], &s = l["shape"];
    os << fmt::format("| {} | {}x{}x{} | {:.1f} | {:.3f} | {:.3g} | {:.3g} | {}/{} | {:.1f} | {:.3f} | {:.3g} | {:.3g} | "
                      "{:.3f}x |\n",
                      l["layer"].get<std::string>(), s["M"].get<std::int64_t>(), s["N"].get<std::int64_t>(),
                      s["K"].get<std::int64_t>(), a["bytes"]["total"].get<double>() / 1e6,
                      a["time_s"].get<double>() * 1e3, a["flop_per_s"].get<double>() * 1e-9,
                      a["flop_per_j"].get<double>() * 1e-9, b["order"].get<std::string>(),
                      b["partition"].get<std::string>(), b["bytes"]["total"].get<double>() / 1e6,
                      b["time_s"].get<double>() * 1e3, b["flop_per_s"].get<double>() * 1e-9,
                      b["flop_per_j"].get<double>() * 1e-9, a["time_s"].get<double>() / b["time_s"].get<double>());
  }
  const json& st = nm["step"];
  os << fmt::format("\nmodelled step: {:.3f} ms standard, {:.3f} ms chosen ({:.3f}x); backward pass {:.3f}x\n",
                    st["step_s"]["standard"].get<double>() * 1e3, st["step_s"]["chosen"].get<double>() * 1e3,
                    st["step_s"]["standard"].get<double>() / st["step_s"]["chosen"].get<double>(),
                    st["backward_s"]["standard"].get<double>() / st["backward_s"]["chosen"].get<double>());
}

}  // namespace

json grad_order_json(const std::vector<LoadedRun>& runs) {
  const std::vector<Row> rows = build(runs);
  if (rows.empty()) return nullptr;
  json out = {{"rows", json::array()}, {"npu_model", json::array()}};
  for (const Row& r : rows) {
    const json& g = *gpt2_ctx(runs[r.run].run);
    json j = {{"run", runs[r.run].label},
              {"backend", str(g, "gemm_backend")},
              {"grad_order", str(g, "grad_order")},
              {"layer", r.layer}};
    if (!r.ran.empty()) j["ran"] = r.ran;
    if (r.block_rows) j["block_rows"] = *r.block_rows;
    if (r.model_bytes) j["modelled_dram_bytes"] = *r.model_bytes;
    if (r.m) {
      j["simulated"] = r.m->simulated;
      j["time_median_s"] = r.m->time_s.median;
      j["flop_per_s"] = r.m->flop_per_s;
    }
    if (r.fpj) j["flop_per_j"] = {{"value", *r.fpj}, {"source", r.fpj_source}};
    if (r.time_vs_standard) j["time_vs_standard"] = *r.time_vs_standard;
    out["rows"].push_back(j);
  }
  for (const auto& lr : runs)
    if (const json* g = gpt2_ctx(lr.run); g && g->contains("grad_order_npu_model"))
      out["npu_model"].push_back({{"run", lr.label}, {"model", (*g)["grad_order_npu_model"]}});
  return out;
}

std::string grad_order_markdown(const std::vector<LoadedRun>& runs) {
  const std::vector<Row> rows = build(runs);
  if (rows.empty()) return "";
  std::ostringstream os;
  os << "\n## gradient order\n\n"
        "Each linear layer's backward (dX and dW from one dY; all its occurrences in a step) and the step, per "
        "run of `run gpt2 --grad-order`. ran: the order the layer ran (auto picks per layer). DRAM MB: the CPU "
        "traffic model's bytes for that order (for the step, the linear backwards' sum). time: median; "
        "simulated rows are the simulator's modelled GEMM time. vs standard: median time over the standard-order "
        "run's on the same backend and configuration.\n\n"
        "| run | backend | order | layer | ran | block rows | DRAM MB | ms | GFLOP/s | GFLOP/J | vs standard |\n"
        "|---|---|---|---|---|---|---|---|---|---|---|\n";
  for (const Row& r : rows) {
    const json& g = *gpt2_ctx(runs[r.run].run);
    os << fmt::format("| {} | {}{} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n", runs[r.run].label,
                      str(g, "gemm_backend"), r.m && r.m->simulated ? " (sim)" : "", str(g, "grad_order"), r.layer,
                      r.ran.empty() ? "-" : r.ran, r.block_rows ? fmt::format("{:.0f}", *r.block_rows) : "-",
                      mb(r.model_bytes), r.m ? fmt::format("{:.3f}", r.m->time_s.median * 1e3) : "-",
                      r.m ? fmt::format("{:.3g}", r.m->flop_per_s * 1e-9) : "-",
                      r.fpj ? fmt::format("{:.3g} ({})", *r.fpj * 1e-9, r.fpj_source) : "-",
                      r.time_vs_standard ? fmt::format("{:.3f}x", *r.time_vs_standard) : "-");
  }
  for (const auto& lr : runs) {
    const json* g = gpt2_ctx(lr.run);
    if (!g || !g->contains("grad_order_npu_model")) continue;
    const json& nm = (*g)["grad_order_npu_model"];
    try {
      npu_model_markdown(os, lr.label, nm);
    } catch (const json::exception& e) {
      os << "\n(" << lr.label << ": context.gpt2.grad_order_npu_model unreadable: " << e.what() << ")\n";
    }
  }
  return os.str();
}

}  // namespace flopwatt

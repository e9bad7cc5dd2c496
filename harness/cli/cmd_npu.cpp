// `flopwatt npu info | plan | sweep | fused-backward`: what the NPU driver
// reports (or exactly what is missing), the tiling plan of one GEMM with its
// modelled cost, the shape sweep report of the simulated devices, and GPT-2's
// linear backwards in the interleaved gradient orders (npu/sim/fused_backward.h).
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <random>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "harness/cli/commands.h"
#include "harness/output/safe_file.h"
#include "harness/runners/grad_order_model.h"
#include "npu/plan/device.h"
#include "npu/plan/plan.h"
#include "npu/sim/calibration.h"
#include "npu/sim/fused_backward.h"
#include "npu/sim/host_bandwidth.h"
#include "npu/sim/kim2023_workloads.h"
#include "npu/sim/sim_backend.h"
#include "npu/sim/sweep.h"
#include "npu/sim/timing_model.h"
#include "npu/xdna/artifacts.h"
#include "npu/xdna/device_info.h"
#include "npu/xdna/discovery.h"
#include "npu/xdna/xclbin_survey.h"
#include "workloads/error.h"
#include "workloads/shapes.h"

namespace flopwatt {

namespace {

std::string resolve_root(const std::string& flag_value) {
  if (!flag_value.empty()) return flag_value;
  return npu::xdna::default_root();
}

DType dtype_flag(const std::string& v, const char* flag) {
  const auto d = parse_dtype(v);
  if (!d) throw InputError(flag, "unknown type '" + v + "'", "use fp32 or bf16");
  return *d;
}

// "measure" (default), "device" (the device file's figure) or GB/s.
double host_rate(const std::string& v, const npu::DeviceDesc& dev) {
  if (v.empty() || v == "measure") {
    const double m = npu::measured_host_copy_bytes_per_s();
    return m > 0 ? m : dev.host_copy_bytes_per_s;
  }
  if (v == "device") return dev.host_copy_bytes_per_s;
  char* end = nullptr;
  const double g = std::strtod(v.c_str(), &end);
  if (!end || *end || !(g > 0)) throw InputError("--host-gbs", "'" + v + "' is not a rate", "use measure, device, or GB/s such as 20");
  return g * 1e9;
}

std::vector<std::string> device_list(const std::string& v) {
  if (v == "all") return {"phoenix", "strix"};
  return {v};
}

std::vector<GemmShape> sweep_shape_list(const std::string& spec) {
  if (spec.rfind("random:", 0) == 0) {
    const std::string rest = spec.substr(7);
    const auto colon = rest.find(':');
    // `end` must point into a string that outlives the check (a substr()
    // temporary did not: AddressSanitizer's stack-use-after-scope).
    const std::string count = rest.substr(0, colon);
    char* end = nullptr;
    const long n = std::strtol(count.c_str(), &end, 10);
    if (count.empty() || *end || n <= 0 || n > 10000000)
      throw InputError("--shapes " + spec, "random:N needs a count from 1 to 10000000", "for example random:1000");
    unsigned seed = 1;
    if (colon != std::string::npos) {
      const std::string s = rest.substr(colon + 1);
      const unsigned long v = std::strtoul(s.c_str(), &end, 10);
      if (s.empty() || *end || v > 0xffffffffUL)
        throw InputError("--shapes " + spec, "the seed of random:N:SEED is not a 32-bit number", "for example random:1000:7");
      seed = unsigned(v);
    }
    return npu::random_shapes(int(n), seed);
  }
  return parse_shapes(spec, "--shapes");
}

// Each xclbin with what it is and whether flopwatt runs it (npu/xdna/xclbin_survey.h).
void print_xclbins(const std::string& art, const std::vector<std::string>& extra, nlohmann::json& j) {
  const auto listed = npu::xdna::survey_xclbins(art, extra);
  if (listed.empty()) return;
  fmt::print("xclbins:\n");
  for (const auto& l : listed) {
    if (l.runnable)
      fmt::print("  {}: {}; runs as GEMM design {}\n", l.path, l.what, l.design);
    else
      fmt::print("  {}: {}; not runnable: {}\n", l.path, l.what, l.why);
    j["xclbins"].push_back({{"path", l.path}, {"what", l.what}, {"runnable", l.runnable}, {"design", l.design},
                            {"why", l.why}, {"compute_units", l.compute_units}});
  }
}

void print_info(const std::string& root, bool json_out, const std::vector<std::string>& xclbins) {
  const auto disc = npu::xdna::discover_xdna(root);
  nlohmann::json j;
  j["root"] = root;
  j["available"] = disc.ok();
  fmt::print("amdxdna device (root {})\n", root);
  for (const auto& n : disc.nodes) {
    fmt::print("  node {}: {}\n", n.path,
               n.problem.empty() ? fmt::format("amdxdna {}.{}.{}", n.version->major, n.version->minor, n.version->patch)
                                 : n.problem);
    j["nodes"].push_back({{"path", n.path}, {"opened", n.opened}, {"driver", n.version ? n.version->name : ""},
                          {"problem", n.problem}});
  }
  for (const auto& f : disc.pci) {
    fmt::print("  PCI {}: 1022:{:04x} rev {:02x} ({}), driver {}, firmware {} {}\n", f.address, f.device, f.revision,
               f.generation, f.driver.empty() ? "none" : f.driver, f.firmware_dir,
               f.firmware_present ? "present" : "missing");
    j["pci"].push_back({{"address", f.address}, {"device", f.device}, {"revision", f.revision},
                        {"generation", f.generation}, {"driver", f.driver}, {"firmware_present", f.firmware_present}});
  }
  if (!disc.ok()) {
    fmt::print("  {}\n  fix: {}\n", disc.reason, disc.fix);
    j["reason"] = disc.reason;
    j["fix"] = disc.fix;
  } else {
    int err = 0;
    auto api = npu::xdna::open_drm_node(disc.node, &err);
    if (api) {
      const auto info = npu::xdna::query_device(*api);
      for (const auto& line : npu::xdna::describe(info)) {
        fmt::print("  {}\n", line);
        j["info"].push_back(line);
      }
    }
  }
  const std::string art = npu::xdna::default_artifacts_dir();
  try {
    const auto set = npu::xdna::load_artifacts(art);
    fmt::print("GEMM designs: {} in {}\n", set.designs.size(), art);
    j["artifacts"] = {{"dir", art}, {"designs", set.designs.size()}};
  } catch (const InputError& e) {
    fmt::print("GEMM designs: none ({})\n", e.what());
    j["artifacts"] = {{"dir", art}, {"problem", e.what()}};
  }
  print_xclbins(art, xclbins, j);
  fmt::print("simulated devices (npu:sim-<name>):\n");
  for (const auto& name : npu::available_device_names()) {
    try {
      const auto d = npu::load_device(name);
      fmt::print("  {:<8} {} {}x{} cores at {:.0f} MHz, peak bf16 {:.2f} TFLOP/s, {}\n", d.name, d.generation,
                 d.usable_columns, d.core_rows, d.clock_hz / 1e6, d.peak_bf16_flop_per_s() / 1e12, d.file);
      j["simulated"].push_back({{"name", d.name}, {"file", d.file}, {"peak_bf16_flop_per_s", d.peak_bf16_flop_per_s()}});
    } catch (const InputError& e) {
      fmt::print("  {:<8} unusable: {}\n", name, e.what());
    }
  }
  if (json_out) fmt::print("{}\n", j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace));
}


struct PlanOpts {
  std::string shape, device = "phoenix", dtype = "fp32", out_dtype = "fp32", host = "measure", tile;
  int cols = 0;
  bool json = false;
};

// The plan --tile/--cols force, with the flag at fault and the fix for each reason.
npu::Plan forced_plan(const PlanOpts& o, const npu::DeviceDesc& dev, const npu::GemmProblem& p) {
  int m = 0, k = 0, n = 0;
  if (std::sscanf(o.tile.c_str(), "%d,%d,%d", &m, &k, &n) != 3)
    throw InputError("--tile", "'" + o.tile + "' is not m,k,n", "for example --tile 64,32,64");
  if (o.cols < 0) throw InputError("--cols " + std::to_string(o.cols), "must be >= 1 (0: all usable)",
                                   fmt::format("pass --cols 1..{}", dev.usable_columns));
  const int cols = o.cols > 0 ? o.cols : dev.usable_columns;
  try {
    return npu::make_plan(dev, p, {m, k, n}, cols);
  } catch (const InputError& e) {
    const std::string& why = e.problem();
    if (why.find("columns requested") != std::string::npos)
      throw InputError("--cols " + std::to_string(cols), why, fmt::format("pass --cols 1..{}", dev.usable_columns));
    std::string fix = e.fix();
    if (why.find("must be positive") != std::string::npos) fix = "pass three positive sizes, e.g. --tile 64,32,64";
    else if (why.find("micro-kernel") != std::string::npos)
      fix = fmt::format("pass m a multiple of {}, k of {}, n of {}", dev.mmul_r, dev.mmul_s, dev.mmul_t);
    throw InputError("--tile " + o.tile, why, fix);
  }
}

void run_plan(const PlanOpts& o) {
  const auto shapes = parse_shapes(o.shape, "npu plan");
  if (shapes.size() != 1) throw InputError("npu plan", "expects one shape M,N,K", "for example 256,2304,768");
  const GemmDesc& g = shapes.front().desc;
  const npu::DeviceDesc dev = npu::load_device(o.device);
  const DType in = dtype_flag(o.dtype, "--dtype"), out = dtype_flag(o.out_dtype, "--out-dtype");
  const npu::GemmProblem p{g.M, g.N, g.K, out};
  const npu::Plan plan = o.tile.empty() ? npu::best_plan(dev, p) : forced_plan(o, dev, p);
  const npu::HostSide host{in, false, host_rate(o.host, dev)};
  const auto t = npu::model_time(dev, plan, host, 0.0);
  const auto e = npu::model_energy(dev, plan, t);
  const double flop = g.flop();
  const auto calib = npu::calibrate(dev);
  if (o.json) {
    auto j = plan.to_json();
    for (const auto& r : calib)
      j["calibration"].push_back({{"metric", r.figure.metric}, {"published", r.figure.value},
                                  {"source", r.figure.source}, {"model", r.model},
                                  {"deviation_pct", r.deviation_pct}, {"within_15pct", r.within_tolerance()},
                                  {"accounted_for", r.accounted_for()}, {"why", r.figure.why},
                                  {"device_only", r.device_only}, {"end_to_end", r.end_to_end},
                                  {"detail", r.detail}});
    j["modelled"] = {{"simulated", true},
                     {"host_copy_bytes_per_s", host.copy_bytes_per_s},
                     {"time_s", {{"copy_in", t.copy_in}, {"device", t.device}, {"compute_only", t.compute_only},
                                 {"copy_out", t.copy_out}, {"submit", t.submit}, {"total", t.total()},
                                 {"peak_bound", t.peak_bound}}},
                     {"bound", t.bound},
                     {"step_cycles", t.step_cycles},
                     {"flop_per_s", flop / t.total()},
                     {"energy_j", {{"total", e.j}, {"static", e.static_j}, {"mac", e.mac_j}, {"ddr", e.ddr_j},
                                   {"l2", e.l2_j}, {"l1", e.l1_j}}},
                     {"avg_power_w", e.avg_power_w}};
    fmt::print("{}\n", j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace));
  } else {
    fmt::print("{}", plan.describe());
    fmt::print("modelled call [simulated; {} operands, host copies at {:.1f} GB/s]\n", to_string(in),
               host.copy_bytes_per_s / 1e9);
    fmt::print("  copy_in   {:10.4f} ms\n", t.copy_in * 1e3);
    fmt::print("  device    {:10.4f} ms  (kernels alone {:.4f} ms; a step takes {:.0f} cycles, bound by {})\n",
               t.device * 1e3, t.compute_only * 1e3, t.step_cycles, t.bound);
    fmt::print("  copy_out  {:10.4f} ms\n", t.copy_out * 1e3);
    fmt::print("  submit    {:10.4f} ms\n", t.submit * 1e3);
    fmt::print("  total     {:10.4f} ms = {:.3f} TFLOP/s (the device's peak alone would take {:.4f} ms)\n",
               t.total() * 1e3, flop / t.total() / 1e12, t.peak_bound * 1e3);
    fmt::print("  energy    {:10.4f} mJ = static {:.4f} + MAC {:.4f} + DDR {:.4f} + L2 {:.4f} + L1 {:.4f}; {:.2f} W, "
               "{:.1f} GFLOP/J (source npu-model:{})\n",
               e.j * 1e3, e.static_j * 1e3, e.mac_j * 1e3, e.ddr_j * 1e3, e.l2_j * 1e3, e.l1_j * 1e3,
               e.avg_power_w, flop / e.j / 1e9, dev.name);
    fmt::print("calibration of {} against published figures:\n", dev.name);
    for (const auto& line : npu::describe_calibration(dev, calib)) fmt::print("  {}\n", line);
  }
}

struct SweepOpts {
  std::string device = "all", shapes = "gpt2-124m", dtype = "fp32", out_dtype = "fp32", host = "measure", out;
  bool timing_only = false, numerics = false, no_compare = false;
};

// --numerics: the simulated numerics on random inputs, for their host time.
void run_sweep_numerics(const SweepOpts& o, const std::vector<GemmShape>& shapes) {
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(-1, 1);
  for (const auto& name : device_list(o.device)) {
    npu::SimOptions so;
    so.host_copy_bytes_per_s = host_rate(o.host, npu::load_device(name));
    npu::SimBackend b(name, so);
    for (const auto& s : shapes) {
      GemmDesc d = s.desc;
      d.dtype_out = dtype_flag(o.out_dtype, "--out-dtype");
      std::vector<float> A(std::size_t(d.M * d.K)), B(std::size_t(d.K * d.N)), C(std::size_t(d.M * d.N) * 2);
      for (auto& x : A) x = u(rng);
      for (auto& x : B) x = u(rng);
      const auto n0 = std::chrono::steady_clock::now();
      b.gemm(d, A.data(), B.data(), C.data());
      fmt::print("numerics {} {}x{}x{}: {:.3f} s of host time\n", name, d.M, d.N, d.K,
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - n0).count());
    }
  }
}

void run_sweep(const SweepOpts& o) {
  if (o.timing_only && o.numerics) throw InputError("--numerics", "conflicts with --timing-only", "pass one of them");
  const auto shapes = sweep_shape_list(o.shapes);
  std::vector<npu::SweepRow> rows;
  std::vector<npu::StepComparison> cmps;
  const auto t0 = std::chrono::steady_clock::now();
  for (const auto& name : device_list(o.device)) {
    const npu::DeviceDesc dev = npu::load_device(name);
    npu::SweepOptions so;
    so.out = dtype_flag(o.out_dtype, "--out-dtype");
    so.host_in = dtype_flag(o.dtype, "--dtype");
    so.host_copy_bytes_per_s = host_rate(o.host, dev);
    auto r = npu::sweep_shapes(dev, shapes, so);
    rows.insert(rows.end(), r.begin(), r.end());
    bool counted = false;
    for (const auto& s : shapes) counted = counted || s.count_per_step > 0;
    if (!o.no_compare && counted) cmps.push_back(npu::compare_step(dev, shapes, so));
  }
  const double model_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (shapes.size() <= 200) fmt::print("{}", npu::format_sweep(rows));
  else fmt::print("{} rows (table omitted above 200 rows; use --out FILE)\n", rows.size());
  for (const auto& cmp : cmps) fmt::print("\n{}", npu::format_comparison(cmp));
  fmt::print("\nmodelled {} shape(s) x device(s) in {:.2f} s [timing only, simulated]\n", rows.size(), model_s);
  if (o.numerics) run_sweep_numerics(o, shapes);
  if (!o.out.empty()) {
    const bool json = o.out.size() >= 5 && o.out.compare(o.out.size() - 5, 5, ".json") == 0;
    OutputDir::parent_of(o.out, "--out")
        .replace(std::filesystem::path(o.out).filename().string(),
                 json ? npu::sweep_to_json(rows, cmps).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n" : npu::sweep_to_csv(rows));
    fmt::print("wrote {}\n", o.out);
  }
}

struct FusedOpts {
  std::string device = "all", model = "d12", workloads;
  int batch = 0, seq = 1024, cores = 0;
  double dram_gbs = 0;
  bool json = false, seq_given = false;
};

void run_fused_backward(const FusedOpts& o) {
  std::vector<std::string> names = {o.device};
  if (o.device == "all") {
    names = {"xdna:phoenix", "xdna:strix"};
    for (const auto& n : npu::systolic_npu_names()) names.push_back(n);
  }
  if (o.batch < 0) throw InputError("--batch " + std::to_string(o.batch), "negative", "give a positive batch");
  if (o.seq <= 0) throw InputError("--seq " + std::to_string(o.seq), "not positive", "give a positive sequence length");
  if (o.cores < 0 || o.dram_gbs < 0) throw InputError("--cores/--dram-gbs", "negative", "give a positive value");
  nlohmann::json all = nlohmann::json::array();
  if (!o.workloads.empty() && o.workloads != "kim2023")
    throw InputError("--workloads " + o.workloads, "unknown workload set", "use --workloads kim2023");
  if (o.workloads == "kim2023") {
    if (o.device == "all") names = {"kim2023-large", "kim2023-small"};
    for (const auto& name : names) {
      npu::ScratchpadNpu dev = npu::load_scratchpad_npu(name);
      if (o.cores > 0) dev.cores = o.cores;
      if (o.dram_gbs > 0) dev.dram_bytes_per_s = o.dram_gbs * 1e9;
      const int B = o.batch > 0 ? o.batch : dev.batch > 0 ? dev.batch : 4;
      // --seq defaults to GPT-2's 1024; the NLP workloads here are taken at 128 unless it is given.
      const int T = o.seq_given ? o.seq : 128;
      const auto rows = npu::model_kim2023_workloads(dev, B, T);
      if (!o.json) {
        fmt::print("{}\n", npu::format_kim2023(dev, B, T, rows));
        continue;
      }
      nlohmann::json w = nlohmann::json::array();
      for (const auto& r : rows)
        w.push_back({{"workload", r.name}, {"M", r.M}, {"forward_s", r.forward_s},
                     {"backward_standard_s", r.backward_standard_s}, {"backward_chosen_s", r.backward_chosen_s},
                     {"backward_speedup", r.backward_speedup()}, {"training_speedup", r.training_speedup()}});
      all.push_back({{"simulated", true}, {"device", dev.name}, {"batch", B}, {"seq", T},
                     {"published_mean_speedup", npu::kim2023_published_speedup(dev.name)}, {"workloads", w}});
    }
    if (o.json) fmt::print("{}\n", all.dump(2));
    return;
  }
  const gpt2::Config cfg = gpt2::preset(o.model);
  for (const auto& name : names) {
    npu::ScratchpadNpu dev = npu::load_scratchpad_npu(name);
    if (o.cores > 0) dev.cores = o.cores;
    if (o.dram_gbs > 0) dev.dram_bytes_per_s = o.dram_gbs * 1e9;
    const int B = o.batch > 0 ? o.batch : dev.batch > 0 ? dev.batch : 4;
    const npu::Gpt2Step step = model_gpt2_grad_order(dev, cfg, B, o.seq);
    const npu::Gpt2Dims g = gpt2_npu_dims(cfg, B, o.seq);
    if (o.json) all.push_back(npu::gpt2_step_to_json(dev, g, step));
    else fmt::print("{}\n", npu::format_gpt2_step(dev, g, step));
  }
  if (o.json) fmt::print("{}\n", all.dump(2));
}

}  // namespace

void register_npu(CLI::App& app, CliState& st) {
  auto* npu_cmd = app.add_subcommand("npu", "NPU: driver facts, tiling plans, simulated shape sweeps");
  npu_cmd->require_subcommand(1);
  {
    struct Opts {
      std::string root;
      bool json = false;
      std::vector<std::string> xclbins;
    };
    auto o = std::make_shared<Opts>();
    auto* c = npu_cmd->add_subcommand("info", "What the amdxdna driver reports, or exactly what is missing");
    c->add_option("--xclbin", o->xclbins, "Also say what this xclbin is and whether flopwatt runs it (repeatable)");
    c->add_option("--sysfs-root", o->root, "Filesystem root for /dev and /sys (default / or $FLOPWATT_SYSFS_ROOT)")
      ->check(CLI::ExistingDirectory);
    c->add_flag("--json", o->json, "Also print the facts as JSON");
    c->callback([o, &st] {
      print_info(resolve_root(o->root), o->json, o->xclbins);
      st.exit_code = 0;
    });
  }
  {
    auto o = std::make_shared<PlanOpts>();
    auto* c = npu_cmd->add_subcommand("plan", "Tiling plan of one GEMM on a modelled device, with its modelled cost");
    c->add_option("shape", o->shape, "M,N,K")->required();
    c->add_option("--device", o->device, "phoenix | strix (a device file in npu/sim/devices)");
    c->add_option("--dtype", o->dtype, "Element type of the caller's A and B: fp32 (converted on the host) | bf16");
    c->add_option("--out-dtype", o->out_dtype, "Output type: fp32 | bf16");
    c->add_option("--tile", o->tile, "Force the core tile m,k,n (default: the best modelled one)");
    c->add_option("--cols", o->cols, "Force the number of array columns (with --tile)");
    c->add_option("--host-gbs", o->host, "Host copy rate: measure | device | GB/s");
    c->add_flag("--json", o->json, "Print the plan and its cost as JSON");
    c->callback([o, &st] {
      run_plan(*o);
      st.exit_code = 0;
    });
  }
  {
    auto o = std::make_shared<SweepOpts>();
    auto* c = npu_cmd->add_subcommand("sweep", "Simulated shape sweep: transfer vs compute share, reconfiguration vs padding");
    c->add_option("--device", o->device, "phoenix | strix | all");
    c->add_option("--shapes", o->shapes, "gpt2-124m | square | random:N[:seed] | M,N,K[;M,N,K..]");
    c->add_option("--dtype", o->dtype, "Element type of the caller's A and B: fp32 | bf16");
    c->add_option("--out-dtype", o->out_dtype, "Output type: fp32 | bf16");
    c->add_option("--host-gbs", o->host, "Host copy rate: measure | device | GB/s");
    c->add_option("--out", o->out, "Also write the rows to FILE (.csv or .json)");
    c->add_flag("--timing-only", o->timing_only, "Model times only (the default)");
    c->add_flag("--numerics", o->numerics, "Also run the simulated numerics on random inputs and report their host time");
    c->add_flag("--no-compare", o->no_compare, "Skip the one-design-per-shape vs one-design-for-all comparison");
    c->callback([o, &st] {
      run_sweep(*o);
      st.exit_code = 0;
    });
  }
  {
    auto o = std::make_shared<FusedOpts>();
    auto* c = npu_cmd->add_subcommand(
        "fused-backward", "GPT-2's linear backwards, standard vs interleaved gradient order, on modelled NPUs [simulated]");
    c->add_option("--device", o->device,
                  "xdna:phoenix | xdna:strix | kim2023-large | kim2023-small | all (default all)");
    c->add_option("--model", o->model, "GPT-2 preset (default d12, 124M)");
    c->add_option("--batch", o->batch, "Sequences per step (default: the device file's batch, else 4)");
    auto* seq = c->add_option("--seq", o->seq, "Sequence length (default 1024; 128 with --workloads kim2023)");
    c->add_option("--workloads", o->workloads,
                  "kim2023: the linear layers of Kim et al.'s BERT, T5, NCF and DLRM instead of GPT-2");
    c->add_option("--cores", o->cores, "Override the device's core count");
    c->add_option("--dram-gbs", o->dram_gbs, "Override the device's DRAM bandwidth (GB/s)");
    c->add_flag("--json", o->json, "Print the tables as JSON");
    c->callback([o, &st, seq] {
      o->seq_given = seq->count() > 0;
      run_fused_backward(*o);
      st.exit_code = 0;
    });
  }
  register_npu_selftest(*npu_cmd, st);
}

}  // namespace flopwatt

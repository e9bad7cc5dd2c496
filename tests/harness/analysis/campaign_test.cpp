// The mains-vs-battery campaign: its suites, cool-down rule and comparison
// arithmetic in memory, then end to end on a fixture laptop whose charger a
// background thread unplugs (tests/fixtures/campaign/README.md). Every
// campaign.json and comparison.json the end-to-end tests produce, finished or
// not, is held to its schema in results/schema/.
#include "harness/analysis/campaign.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <thread>

#include "harness/run/statistics.h"
#include "tests/harness/cli_support.h"
#include "tests/harness/schema_check.h"
#include "workloads/error.h"

namespace flopwatt {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::schema_violations;

// ---------------------------------------------------------------- helpers

using Result = flopwatt::testing::CommandResult;
using flopwatt::testing::slurp;
fs::path temp_dir(const std::string& tag) { return flopwatt::testing::temp_dir("campaign", tag); }
Result run_cli(const std::string& args) {
  return flopwatt::testing::run_command_line(std::string(FLOPWATT_BINARY) + " " + args);
}

int count_lines(const std::string& s) { return int(std::count(s.begin(), s.end(), '\n')); }

// Replaces a sysfs file the way the kernel's value changes: a reader sees the old or the new text, never half.
void put(const fs::path& p, const std::string& text) {
  const fs::path tmp = p.string() + ".new";
  {
    std::ofstream f(tmp, std::ios::trunc);
    f << text << "\n";
  }
  fs::rename(tmp, p);
}

fs::path fixture_root(const std::string& tag) {
  const fs::path root = temp_dir(tag) / "root";
  fs::copy(fs::path(FLOPWATT_TEST_FIXTURES) / "campaign" / "laptop-mains", root, fs::copy_options::recursive);
  return root;
}

// The machine behind the fixture tree: the package draws package_w (energy_uj
// advances), and once unplug_when() holds, the adapter goes offline and the
// battery discharges at battery_w.
class FakeLaptop {
 public:
  FakeLaptop(fs::path root, double package_w, double battery_w, std::function<bool()> unplug_when)
      : root_(std::move(root)), package_w_(package_w), battery_w_(battery_w), when_(std::move(unplug_when)) {
    thread_ = std::thread([this] { loop(); });
  }
  ~FakeLaptop() {
    stop_ = true;
    thread_.join();
  }
  bool unplugged() const { return unplugged_; }

 private:
  void loop() {
    using clk = std::chrono::steady_clock;
    const auto t0 = clk::now();
    auto flip_t = t0;
    auto last_check = t0;
    const fs::path ps = root_ / "sys/class/power_supply";
    while (!stop_) {
      const auto now = clk::now();
      const double t = std::chrono::duration<double>(now - t0).count();
      put(root_ / "sys/class/powercap/intel-rapl:0/energy_uj", std::to_string(std::llround(t * package_w_ * 1e6)));
      if (!unplugged_ && now - last_check > std::chrono::milliseconds(20)) {
        last_check = now;
        if (when_()) {
          put(ps / "BAT0/power_now", std::to_string(std::llround(battery_w_ * 1e6)));
          put(ps / "BAT0/status", "Discharging");
          put(ps / "AC/online", "0");
          flip_t = now;
          unplugged_ = true;
        }
      }
      if (unplugged_) {  // energy_now in uWh falls at the battery's power
        const double s = std::chrono::duration<double>(now - flip_t).count();
        put(ps / "BAT0/energy_now", std::to_string(std::llround(40e6 - s * battery_w_ / 3600 * 1e6)));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  }
  fs::path root_;
  double package_w_, battery_w_;
  std::function<bool()> when_;
  std::atomic<bool> stop_{false}, unplugged_{false};
  std::thread thread_;
};

json read_json(const fs::path& p) {
  std::ifstream f(p);
  return json::parse(f);
}

// The run.json measurement of (op, backend).
const json* find_measurement(const json& run, const std::string& op, const std::string& backend) {
  for (const auto& m : run["measurements"])
    if (m["op"] == op && m["backend"] == backend && m["skipped"].is_null()) return &m;
  return nullptr;
}

// Relative difference, for figures that went through text and back.
double rel(double a, double b) { return std::fabs(a - b) / std::max(std::fabs(a), std::fabs(b)); }

// ---------------------------------------------------------------- in memory

Measurement gemm_row(const std::string& op, const std::string& backend, double median_s) {
  Measurement m;
  m.workload = "gemm";
  m.op = op;
  m.backend = backend;
  m.shape = Shape{64, 64, 64};
  m.flop = 2.0 * 64 * 64 * 64;
  m.rep_times_s = {median_s * 0.9, median_s, median_s * 1.2, median_s, median_s * 1.05, median_s * 0.95, median_s};
  m.reps = int(m.rep_times_s.size());
  m.time_s = summarize(m.rep_times_s);
  m.flop_per_s = m.flop / m.time_s.median;
  return m;
}

EnergyFigures energy(double fpj, double w) {
  EnergyFigures f;
  f.j = 1;
  f.avg_power_w = w;
  f.flop_per_j = fpj;
  return f;
}

Run laptop_run(bool mains) {
  Run r;
  r.run_id = "x";
  r.context["ac_online"] = mains;
  r.power_sources = {{"battery:BAT0", "battery", "gauge", true, {}, {}, 1.0, false, {}},
                     {"rapl-powercap:package-0", "package", "counter", true, {}, {}, 0.001, false, {}}};
  return r;
}

TEST(Campaign, ComparisonRatiosSpeedupsAndSources) {
  LoadedRun mains{"mains", "m", laptop_run(true)}, battery{"battery", "b", laptop_run(false)};
  {
    auto a = gemm_row("qkv", "cpu:llmc", 4e-3), b = gemm_row("qkv", "cpu:onednn", 1e-3);
    a.energy = {{"battery:BAT0", energy(1e8, 4)}, {"rapl-powercap:package-0", energy(3e9, 10)}};
    b.energy = {{"battery:BAT0", energy(2e8, 4)}, {"rapl-powercap:package-0", energy(6e9, 20)}};
    mains.run.measurements = {a, b};
  }
  {
    auto a = gemm_row("qkv", "cpu:llmc", 5e-3), b = gemm_row("qkv", "cpu:onednn", 2e-3);
    a.energy = {{"battery:BAT0", energy(2e9, 12)}, {"rapl-powercap:package-0", energy(4e9, 8)}};
    b.energy = {{"battery:BAT0", energy(5e9, 15)}, {"rapl-powercap:package-0", energy(8e9, 10)}};
    auto skipped = gemm_row("qkv", "npu:xdna", 1e-3);
    skipped.skipped = "backend unavailable";
    battery.run.measurements = {a, b, skipped};
  }
  const json c = compare_mains_battery({mains}, {battery}, {});
  ASSERT_EQ(c["rows"].size(), 2u);  // the skipped row is not compared
  const json& llmc = c["rows"][0];
  const json& dnn = c["rows"][1];
  EXPECT_EQ(llmc["backend"], "cpu:llmc");
  // On mains a battery gauge reads the charging current: the package counter is used.
  EXPECT_EQ(llmc["mains"]["energy_source"], "rapl-powercap:package-0");
  EXPECT_DOUBLE_EQ(llmc["mains"]["flop_per_j"].get<double>(), 3e9);
  // On battery too the package counter is the wider adequate domain (psys and
  // package before the battery's 1-15 s gauge): the one rule, as `run` applies it.
  EXPECT_EQ(llmc["battery"]["energy_source"], "rapl-powercap:package-0");
  EXPECT_DOUBLE_EQ(llmc["battery"]["flop_per_j"].get<double>(), 4e9);
  // mains / battery: FLOP/s from the medians; FLOP/J only through a source of both states.
  EXPECT_NEAR(llmc["mains_over_battery"]["flop_per_s"].get<double>(), 5e-3 / 4e-3, 1e-12);
  EXPECT_NEAR(dnn["mains_over_battery"]["flop_per_s"].get<double>(), 2.0, 1e-12);
  EXPECT_EQ(llmc["mains_over_battery"]["flop_per_j_source"], "rapl-powercap:package-0");
  EXPECT_NEAR(llmc["mains_over_battery"]["flop_per_j"].get<double>(), 3e9 / 4e9, 1e-12);
  EXPECT_NEAR(dnn["mains_over_battery"]["flop_per_j"].get<double>(), 6e9 / 8e9, 1e-12);
  const auto ci = llmc["mains_over_battery"]["ci95"];
  EXPECT_LE(ci[0].get<double>(), 1.25);
  EXPECT_GE(ci[1].get<double>(), 1.25);
  // Speedups within each state, relative to llm.c's matmul (the study's baseline).
  EXPECT_EQ(dnn["mains"]["speedup"]["baseline"], "cpu:llmc");
  EXPECT_NEAR(dnn["mains"]["speedup"]["flop_per_s"].get<double>(), 4.0, 1e-12);
  EXPECT_NEAR(dnn["battery"]["speedup"]["flop_per_s"].get<double>(), 2.5, 1e-12);
  EXPECT_NEAR(dnn["mains"]["speedup"]["flop_per_j"].get<double>(), 2.0, 1e-12);
  EXPECT_NEAR(dnn["battery"]["speedup"]["flop_per_j"].get<double>(), 8e9 / 4e9, 1e-12);
  EXPECT_NEAR(llmc["battery"]["speedup"]["flop_per_s"].get<double>(), 1.0, 1e-12);

  // A forced baseline; and the CSV carries the same numbers.
  const json c2 = compare_mains_battery({mains}, {battery}, {"cpu:onednn"});
  EXPECT_NEAR(c2["rows"][0]["mains"]["speedup"]["flop_per_s"].get<double>(), 0.25, 1e-12);
  const std::string csv = comparison_csv(c);
  EXPECT_EQ(count_lines(csv), 3);
  EXPECT_NE(csv.find("mains_over_battery/flop_per_j"), std::string::npos);
  EXPECT_NE(csv.find(",0.75,rapl-powercap:package-0"), std::string::npos) << csv;
  EXPECT_NE(comparison_markdown(c).find("4x vs cpu:llmc"), std::string::npos) << comparison_markdown(c);
}

// The study's four figures from GPT-2 runs: two GEMMs and the step on
// llm.c's matmul and on a simulated NPU, on mains and on battery.
TEST(Campaign, PaperFiguresFromGpt2RunsOnBothSupplies) {
  auto gpt2 = [](Measurement m, const std::string& op, const char* pass) {
    m.workload = "gpt2";
    m.op = op;
    m.pass = pass ? std::optional<std::string>(pass) : std::nullopt;
    if (op == "step") m.shape.reset();
    return m;
  };
  auto rows = [&](double qkv_llmc, double qkv_npu, double fc_llmc, double fc_npu, double step_llmc, double step_npu) {
    std::vector<Measurement> v = {gpt2(gemm_row("", "cpu:llmc", qkv_llmc), "qkv", "fwd"),
                                  gpt2(gemm_row("", "npu:sim-phoenix", qkv_npu), "qkv", "fwd"),
                                  gpt2(gemm_row("", "cpu:llmc", fc_llmc), "fc", "bwd"),
                                  gpt2(gemm_row("", "npu:sim-phoenix", fc_npu), "fc", "bwd"),
                                  gpt2(gemm_row("", "cpu:llmc", step_llmc), "step", nullptr),
                                  gpt2(gemm_row("", "npu:sim-phoenix", step_npu), "step", nullptr),
                                  gpt2(gemm_row("", "cpu:llmc", 1e-3), "attn", "fwd")};  // no shape: not a GEMM
    for (auto& m : v) m.simulated = m.backend.rfind("npu:", 0) == 0;
    // The NPU run's own CPU ops come first in its table and are not simulated.
    Measurement cpu_op = gpt2(gemm_row("", "npu:sim-phoenix", 1e-3), "embed", "fwd");
    cpu_op.shape.reset();
    v.insert(v.begin(), cpu_op);
    v[2].energy = {{"battery:BAT0", energy(1e9, 4)}};
    return v;
  };
  LoadedRun mains{"mains", "m", laptop_run(true)}, battery{"battery", "b", laptop_run(false)};
  mains.run.measurements = rows(3e-3, 1e-3, 6e-3, 2.5e-3, 2.0, 1.25);
  battery.run.measurements = rows(4e-3, 1e-3, 8e-3, 2e-3, 3.0, 2.0);
  battery.run.measurements[5].energy = {{"battery:BAT0", energy(2e9, 10)}};
  battery.run.measurements[6].energy = {{"battery:BAT0", energy(3e9, 12)}};
  json c = compare_mains_battery({mains}, {battery}, {});
  const json f = paper_figures(c);
  // As campaign --suite paper writes it into comparison.json.
  c["suite"] = "paper";
  c["valid"] = {{"mains", true}, {"battery", true}};
  c["invalid_reasons"] = {{"mains", json::array()}, {"battery", json::array()}};
  c["paper"] = f;
  EXPECT_EQ(schema_violations(c, "comparison.schema.json"), "");
  EXPECT_EQ(f["npu"], "npu:sim-phoenix");
  EXPECT_TRUE(f["npu_simulated"].get<bool>());
  ASSERT_EQ(f["figures"].size(), 4u);
  const json& g = f["figures"][0];
  EXPECT_EQ(g["id"], "gemm_speedup_mains");
  EXPECT_EQ(g["paper"], json({2.8, 3.1}));
  EXPECT_EQ(g["here"]["rows"], 2);
  EXPECT_NEAR(g["here"]["min"].get<double>(), 2.4, 1e-9);
  EXPECT_NEAR(g["here"]["max"].get<double>(), 3.0, 1e-9);
  // Over all GEMMs: the time per FLOP summed, (3 + 6) / (1 + 2.5) ms for equal FLOP.
  EXPECT_NEAR(g["here"]["all_gemms"].get<double>(), 9.0 / 3.5, 1e-9);
  EXPECT_NEAR(f["figures"][1]["here"].get<double>(), 1.6, 1e-9);
  EXPECT_NEAR(f["figures"][2]["here"].get<double>(), 1.5, 1e-9);
  EXPECT_NEAR(f["figures"][3]["here"].get<double>(), 1.5, 1e-9);
  EXPECT_EQ(f["figures"][3]["paper"], 1.4);
  const std::string md = paper_markdown(f);
  EXPECT_NE(md.find("| 2.8-3.1x | 2.40-3.00x (2 GEMMs; 2.57x over all)"), std::string::npos) << md;
  EXPECT_NE(md.find("| 1.7x | 1.60x | NPU time modelled"), std::string::npos) << md;
  EXPECT_NE(md.find("npu:sim-phoenix (simulated)"), std::string::npos) << md;

  // Without a battery phase the battery figures say why they are missing.
  json mc = compare_mains_battery({mains}, {}, {});
  const json m = paper_figures(mc);
  mc["suite"] = "paper";
  mc["valid"] = {{"mains", true}, {"battery", false}};
  mc["invalid_reasons"] = {{"mains", json::array()}, {"battery", json::array({"no battery phase"})}};
  mc["paper"] = m;
  EXPECT_EQ(schema_violations(mc, "comparison.schema.json"), "");
  EXPECT_TRUE(m["figures"][2]["here"].is_null());
  EXPECT_NE(m["figures"][2]["why_missing"].get<std::string>().find("no battery phase"), std::string::npos);
  EXPECT_NEAR(m["figures"][1]["here"].get<double>(), 1.6, 1e-9);
  // And a comparison without an NPU run has no figures at all.
  LoadedRun cpu_only{"mains", "m", laptop_run(true)};
  cpu_only.run.measurements = {mains.run.measurements[1]};
  const json n = paper_figures(compare_mains_battery({cpu_only}, {}, {}));
  EXPECT_TRUE(n["npu"].is_null());
  EXPECT_NE(n["figures"][0]["why_missing"].get<std::string>().find("no GPT-2 run"), std::string::npos);
}

TEST(Campaign, RunSupplyStateIsTheContextsAtTheStart) {
  EXPECT_EQ(run_supply_state(laptop_run(true)), "mains");
  EXPECT_EQ(run_supply_state(laptop_run(false)), "battery");
  EXPECT_FALSE(run_supply_state(flopwatt::Run{}));
}

TEST(Campaign, DifferentEnergySourcesAreNeverDivided) {
  // A simulated NPU's modelled energy and a battery gauge measure different things.
  LoadedRun mains{"mains", "m", laptop_run(true)}, battery{"battery", "b", laptop_run(false)};
  auto cpu = gemm_row("step", "cpu:llmc", 2.0);
  cpu.energy = {{"battery:BAT0", energy(1e9, 20)}};
  auto npu = gemm_row("step", "npu:sim-phoenix", 1.0);
  npu.simulated = true;
  npu.energy = {{"npu-model:phoenix", energy(5e10, 2)}};
  battery.run.measurements = {cpu, npu};
  mains.run.measurements = {cpu, npu};
  const json c = compare_mains_battery({mains}, {battery}, {});
  const json& row = c["rows"][1];
  EXPECT_TRUE(row["simulated"].get<bool>());
  EXPECT_NEAR(row["battery"]["speedup"]["flop_per_s"].get<double>(), 2.0, 1e-12);
  EXPECT_TRUE(row["battery"]["speedup"]["flop_per_j"].is_null());
  EXPECT_TRUE(c["rows"][0]["mains"]["flop_per_j"].is_null());  // battery gauge only, and on mains
  EXPECT_TRUE(c["rows"][0]["mains_over_battery"]["flop_per_j"].is_null());
  EXPECT_TRUE(row["mains_over_battery"].contains("note"));
}

TEST(Campaign, SuitesNameTheRunsTheyMake) {
  SuiteSpec s;
  s.backend_list = {{"cpu:reference", true, false}, {"cpu:llmc", true, false}, {"cpu:onednn", true, false},
                    {"npu:xdna", false, false},     {"npu:sim-phoenix", true, true}};
  s.fastest_cpu = "cpu:onednn";
  s.suite = "gemm-smoke";
  auto p = suite_parts(s);
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0].args[1], "gemm");
  EXPECT_EQ(p[0].args[3], "cpu:llmc,cpu:onednn,npu:sim-phoenix");  // every available one but the oracle
  s.suite = "gemm-gpt2";
  s.shapes = "8,8,8";
  EXPECT_EQ(suite_parts(s)[0].args[5], "8,8,8");
  s.suite = "paper";
  p = suite_parts(s);
  ASSERT_EQ(p.size(), 3u);
  EXPECT_EQ(p[0].name, "cpu-llmc");
  EXPECT_EQ(p[1].name, "cpu-onednn");
  EXPECT_EQ(p[2].name, "npu");
  const std::string npu_args = [&] {
    std::string a;
    for (const auto& x : p[2].args) a += x + " ";
    return a;
  }();
  EXPECT_NE(npu_args.find("--model d12 --batch 4 --seq 64"), std::string::npos) << npu_args;
  EXPECT_NE(npu_args.find("--gemm-backend npu:sim-phoenix"), std::string::npos);
  EXPECT_NE(p[2].note.find("simulated"), std::string::npos);
  s.backend_list[3].available = true;  // a real NPU replaces the simulator
  EXPECT_NE(suite_parts(s)[2].args.back(), "npu:sim-phoenix");
  EXPECT_EQ(suite_parts(s)[2].args.back(), "npu:xdna");
  s.have_gpt2 = false;
  EXPECT_THROW(suite_parts(s), InputError);
  s.suite = "nope";
  EXPECT_THROW(suite_parts(s), InputError);
}

TEST(Campaign, CooldownWithinMarginOfEverySensor) {
  const std::vector<power::Temperature> start = {{"a", 50}, {"b", 40}};
  EXPECT_TRUE(check_cooldown(start, {{"a", 51.5}, {"b", 30}}, 2).reached);
  const auto c = check_cooldown(start, {{"a", 51}, {"b", 45}}, 2);
  EXPECT_FALSE(c.reached);
  EXPECT_EQ(c.worst_sensor, "b");
  EXPECT_DOUBLE_EQ(c.worst_excess_c, 3);
  EXPECT_TRUE(check_cooldown(start, {{"other", 90}}, 2).reached);  // nothing to compare
}

TEST(Campaign, SupplySnapshotFromFixture) {
  const fs::path root = fixture_root("snap");
  SupplySnapshot s = read_supply(root.string(), 1.5);
  EXPECT_EQ(supply_state(s), "mains");
  EXPECT_TRUE(s.has_battery);
  EXPECT_DOUBLE_EQ(*s.battery_percent, 80.0);  // energy_now / energy_full
  EXPECT_DOUBLE_EQ(*s.battery_energy_wh, 40.0);
  EXPECT_EQ(s.battery_status, "charging");
  put(root / "sys/class/power_supply/AC/online", "0");
  EXPECT_EQ(supply_state(read_supply(root.string(), 2)), "battery");
  EXPECT_EQ(supply_state(read_supply((root / "nowhere").string(), 2)), "unknown");
  fs::remove_all(root.parent_path());
}

// The committed fixture campaign (tests/fixtures/runs/generate.py) feeds the plot
// test and README figures; it must stay what the current schemas describe.
TEST(Campaign, FixtureCampaignMatchesTheSchemas) {
  const fs::path d = fs::path(FLOPWATT_TEST_FIXTURES) / "runs" / "campaign-gemm-smoke";
  EXPECT_EQ(schema_violations((d / "campaign.json").string(), "campaign.schema.json"), "");
  EXPECT_EQ(schema_violations((d / "comparison.json").string(), "comparison.schema.json"), "");
  for (const char* state : {"mains", "battery"})
    EXPECT_EQ(schema_violations((d / state / "run.json").string(), "run.schema.json"), "") << state;
}

// ---------------------------------------------------------------- end to end

std::string campaign_args(const fs::path& root, const fs::path& out, const std::string& extra,
                          const std::string& suite = "gemm-smoke") {
  return "campaign mains-vs-battery --suite " + suite + " --non-interactive --pause 0 --cooldown-timeout 5 --idle 0 "
         "--min-reps 3 --poll 0.05 --sample-period 0.005 --sysfs-root " + root.string() + " --out " + out.string() +
         " " + extra;
}

// Phase 1 is over once campaign.json records its end (its child has exited):
// the charger is pulled while the campaign waits, not while it measures.
bool phase_one_over(const fs::path& campaign_json) {
  if (!fs::exists(campaign_json)) return false;
  try {
    const json j = read_json(campaign_json);
    return !j["phases"].empty() && j["phases"][0].contains("valid");
  } catch (...) {
    return false;  // between the rename and the read: try again
  }
}

TEST(CampaignCli, UnplugDuringTheWaitGivesAComparisonWithTheRightRatios) {
  const fs::path root = fixture_root("e2e");
  const fs::path out = root.parent_path() / "campaign";
  constexpr double kPackageW = 15.0, kBatteryW = 12.5;
  Result r;
  {
    FakeLaptop laptop(root, kPackageW, kBatteryW, [&] { return phase_one_over(out / "campaign.json"); });
    // Windows of 0.25 s: the fake counter's writer thread can stall for tens of
    // milliseconds on a loaded machine, which a 50 ms window turned into a 57%
    // error in the mains package power (a fixture artifact, not the sampler's).
    r = run_cli(campaign_args(root, out, "--shapes '48,40,32;65,33,17,NT' --backend cpu:llmc,cpu:openblas "
                                         "--wait-timeout 30 --min-time 0.25 --tag e2e-campaign --store " +
                                         (root.parent_path() / "store.sqlite3").string()));
    EXPECT_TRUE(laptop.unplugged());
  }
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  // Both phases' runs reach the results store the campaign names, with its tag.
  const Result stored =
      run_cli("store ls --format csv --tag e2e-campaign --store " + (root.parent_path() / "store.sqlite3").string());
  ASSERT_EQ(stored.code, 0) << stored.err;
  EXPECT_EQ(std::count(stored.out.begin(), stored.out.end(), '\n'), 3) << stored.out;

  const json camp = read_json(out / "campaign.json");
  EXPECT_TRUE(camp["complete"].get<bool>());
  ASSERT_EQ(camp["phases"].size(), 2u);
  const json& p1 = camp["phases"][0];
  const json& p2 = camp["phases"][1];
  EXPECT_EQ(p1["state"], "mains");
  EXPECT_EQ(p2["state"], "battery");
  EXPECT_TRUE(p1["valid"].get<bool>()) << p1.dump();
  EXPECT_TRUE(p2["valid"].get<bool>()) << p2.dump();
  EXPECT_TRUE(camp["switch"]["changed"].get<bool>());
  EXPECT_EQ(camp["cooldown"]["method"], "temperature");  // the fixture has a thermal zone
  // Charge at the start and end of each phase; the battery phase drew from the battery.
  EXPECT_DOUBLE_EQ(p1["start"]["battery_percent"].get<double>(), 80.0);
  EXPECT_EQ(p2["start"]["battery_status"], "discharging");
  EXPECT_LT(p2["end"]["battery_energy_wh"].get<double>(), p2["start"]["battery_energy_wh"].get<double>());

  const json mains = read_json(out / "mains" / "run.json");
  const json battery = read_json(out / "battery" / "run.json");
  EXPECT_TRUE(mains["complete"].get<bool>());
  EXPECT_TRUE(battery["complete"].get<bool>());
  const json cmp = read_json(out / "comparison.json");
  ASSERT_EQ(cmp["rows"].size(), 4u);  // 2 shapes x 2 backends
  EXPECT_EQ(schema_violations((out / "campaign.json").string(), "campaign.schema.json"), "");
  EXPECT_EQ(schema_violations((out / "comparison.json").string(), "comparison.schema.json"), "");
  // The check can fail: the same files without a required field do not pass.
  json no_phases = camp;
  no_phases.erase("phases");
  EXPECT_NE(schema_violations(no_phases, "campaign.schema.json").find("'phases' is a required property"),
            std::string::npos);
  json no_ratio = cmp;
  no_ratio["rows"][1].erase("mains_over_battery");
  EXPECT_NE(schema_violations(no_ratio, "comparison.schema.json").find("rows/1: 'mains_over_battery' is a required"),
            std::string::npos);
  for (const auto& row : cmp["rows"]) {
    const std::string op = row["op"], backend = row["backend"];
    SCOPED_TRACE(op + " " + backend);
    const json* m = find_measurement(mains, op, backend);
    const json* b = find_measurement(battery, op, backend);
    ASSERT_TRUE(m && b);
    // The comparison's figures are the runs' figures, and its ratios their quotients.
    EXPECT_EQ(row["mains"]["flop_per_s"].get<double>(), (*m)["flop_per_s"].get<double>());
    EXPECT_EQ(row["battery"]["flop_per_s"].get<double>(), (*b)["flop_per_s"].get<double>());
    EXPECT_LT(rel(row["mains_over_battery"]["flop_per_s"].get<double>(),
                  (*m)["flop_per_s"].get<double>() / (*b)["flop_per_s"].get<double>()), 1e-12);
    // Battery phase: the package counter is the headline (power::choose_headline:
    // wall, psys, package, then battery, whose gauge updates only every few
    // seconds); the discharging battery's own figure, at its known power, stays in the run.
    EXPECT_EQ(row["battery"]["energy_source"], "rapl-powercap:package-0");
    EXPECT_LT(rel(row["battery"]["avg_power_w"].get<double>(), kPackageW), 0.25) << row["battery"].dump();
    EXPECT_EQ(row["battery"]["flop_per_j"].get<double>(),
              (*b)["energy"]["rapl-powercap:package-0"]["flop_per_j"].get<double>());
    EXPECT_LT(rel((*b)["energy"]["battery:BAT0"]["avg_power_w"].get<double>(), kBatteryW), 0.02);
    // Mains phase: the battery gauge is excluded; the package counter at its known power is used.
    EXPECT_EQ(row["mains"]["energy_source"], "rapl-powercap:package-0");
    EXPECT_LT(rel(row["mains"]["avg_power_w"].get<double>(), kPackageW), 0.25) << row["mains"].dump();
    // mains / battery FLOP/J through the source both states share.
    EXPECT_EQ(row["mains_over_battery"]["flop_per_j_source"], "rapl-powercap:package-0");
    const double fm = (*m)["energy"]["rapl-powercap:package-0"]["flop_per_j"].get<double>();
    const double fb = (*b)["energy"]["rapl-powercap:package-0"]["flop_per_j"].get<double>();
    EXPECT_LT(rel(row["mains_over_battery"]["flop_per_j"].get<double>(), fm / fb), 1e-12);
    // Speedup vs llm.c's matmul within each state.
    const json* lm = find_measurement(mains, op, "cpu:llmc");
    const json* lb = find_measurement(battery, op, "cpu:llmc");
    EXPECT_EQ(row["mains"]["speedup"]["baseline"], "cpu:llmc");
    EXPECT_LT(rel(row["mains"]["speedup"]["flop_per_s"].get<double>(),
                  (*m)["flop_per_s"].get<double>() / (*lm)["flop_per_s"].get<double>()), 1e-12);
    EXPECT_LT(rel(row["battery"]["speedup"]["flop_per_s"].get<double>(),
                  (*b)["flop_per_s"].get<double>() / (*lb)["flop_per_s"].get<double>()), 1e-12);
  }
  // comparison.csv: the same rows, the ratio column holding the same numbers.
  std::istringstream csv(slurp(out / "comparison.csv"));
  std::string header, line;
  std::getline(csv, header);
  std::vector<std::string> cols;
  for (std::stringstream hs(header); std::getline(hs, line, ',');) cols.push_back(line);
  const auto col = std::find(cols.begin(), cols.end(), "mains_over_battery/flop_per_s") - cols.begin();
  ASSERT_LT(std::size_t(col), cols.size());
  int n = 0;
  while (std::getline(csv, line)) {
    std::vector<std::string> cells;
    for (std::stringstream ls(line); std::getline(ls, header, ',');) cells.push_back(header);
    ASSERT_GT(cells.size(), std::size_t(col));
    EXPECT_LT(rel(std::stod(cells[col]), cmp["rows"][n]["mains_over_battery"]["flop_per_s"].get<double>()), 1e-8);
    ++n;
  }
  EXPECT_EQ(n, 4);
  // `flopwatt report` reads the campaign dir as its two runs.
  Result rep = run_cli("report " + out.string());
  EXPECT_EQ(rep.code, 0) << rep.err;
  EXPECT_NE(rep.out.find("campaign/mains (baseline)"), std::string::npos) << rep.out;
  EXPECT_NE(rep.out.find("campaign/battery"), std::string::npos);
  fs::remove_all(root.parent_path());
}

TEST(CampaignCli, UnplugInTheMiddleOfAPhaseMarksItInvalid) {
  const fs::path root = fixture_root("mid");
  const fs::path out = root.parent_path() / "campaign";
  Result r;
  {
    // Unplugged once the first of three measurements is written, while the phase still runs;
    // campaign.json is kept as it stood then, a phase in progress.
    FakeLaptop laptop(root, 10.0, 8.0, [&] {
      try {
        const bool measuring = fs::exists(out / "mains" / "run.json") &&
                               !read_json(out / "mains" / "run.json")["measurements"].empty();
        if (measuring)
          fs::copy_file(out / "campaign.json", root.parent_path() / "campaign-midphase.json",
                        fs::copy_options::overwrite_existing);
        return measuring;
      } catch (...) {
        return false;
      }
    });
    // Only the package counter: a battery gauge would make each window wait for its next reading.
    r = run_cli(campaign_args(root, out, "--shapes '32,32,32;33,33,33;34,34,34' --backend cpu:llmc "
                                         "--wait-timeout 10 --min-time 0.4 --power rapl-powercap"));
  }
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_NE(r.err.find("invalid"), std::string::npos) << r.err;
  const json camp = read_json(out / "campaign.json");
  ASSERT_EQ(camp["phases"].size(), 2u);
  EXPECT_FALSE(camp["phases"][0]["valid"].get<bool>());
  EXPECT_NE(camp["phases"][0]["invalid_reasons"].dump().find("changed to battery"), std::string::npos);
  EXPECT_GE(camp["phases"][0]["state_changes"].size(), 1u);
  EXPECT_TRUE(camp["phases"][1]["valid"].get<bool>());
  const json cmp = read_json(out / "comparison.json");
  EXPECT_FALSE(cmp["valid"]["mains"].get<bool>());
  EXPECT_TRUE(cmp["valid"]["battery"].get<bool>());
  const fs::path midphase = root.parent_path() / "campaign-midphase.json";
  ASSERT_TRUE(fs::exists(midphase));
  EXPECT_FALSE(read_json(midphase)["phases"][0].contains("valid"));  // still running when copied
  EXPECT_EQ(schema_violations(midphase.string(), "campaign.schema.json"), "");
  EXPECT_EQ(schema_violations((out / "campaign.json").string(), "campaign.schema.json"), "");
  EXPECT_EQ(schema_violations((out / "comparison.json").string(), "comparison.schema.json"), "");
  fs::remove_all(root.parent_path());
}

TEST(CampaignCli, RefusesABatteryPhaseBelowTheMinimumCharge) {
  const fs::path root = fixture_root("low");
  const fs::path ps = root / "sys/class/power_supply";
  put(ps / "AC/online", "0");
  put(ps / "BAT0/status", "Discharging");
  put(ps / "BAT0/energy_now", "10000000");  // 20% of 50 Wh
  const fs::path out = root.parent_path() / "campaign";
  Result r = run_cli(campaign_args(root, out, "--shapes 8,8,8 --backend cpu:llmc --min-time 0"));
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(count_lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("--min-battery"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("20%"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(out / "battery"));  // nothing ran
  EXPECT_TRUE(read_json(out / "campaign.json").contains("refused"));
  EXPECT_EQ(schema_violations((out / "campaign.json").string(), "campaign.schema.json"), "");
  // --min-battery lower than the charge lets it start (and the tiny suite run).
  Result ok = run_cli(campaign_args(root, root.parent_path() / "c2",
                                    "--shapes 8,8,8 --backend cpu:llmc --min-time 0 --min-battery 15 --wait-timeout 0 "
                                    "--power rapl-powercap"));
  EXPECT_EQ(ok.code, 1) << ok.err;  // then times out waiting for mains
  EXPECT_TRUE(fs::exists(root.parent_path() / "c2" / "battery" / "run.json"));
  EXPECT_EQ(schema_violations((root.parent_path() / "c2" / "campaign.json").string(), "campaign.schema.json"), "");
  fs::remove_all(root.parent_path());
}

TEST(CampaignCli, WaitTimeoutKeepsPhaseOne) {
  const fs::path root = fixture_root("timeout");
  const fs::path out = root.parent_path() / "campaign";
  Result r = run_cli(campaign_args(root, out, "--shapes 8,8,8 --backend cpu:llmc --min-time 0 --wait-timeout 0.3 "
                                              "--power rapl-powercap"));
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_NE(r.err.find("--wait-timeout"), std::string::npos) << r.err;
  const json camp = read_json(out / "campaign.json");
  EXPECT_FALSE(camp["switch"]["changed"].get<bool>());
  EXPECT_FALSE(camp["complete"].get<bool>());
  EXPECT_TRUE(fs::exists(out / "mains" / "run.json"));
  EXPECT_FALSE(fs::exists(out / "comparison.json"));
  EXPECT_EQ(schema_violations((out / "campaign.json").string(), "campaign.schema.json"), "");
  fs::remove_all(root.parent_path());
}

TEST(CampaignCli, BadInputIsOneLineAndExitTwo) {
  const fs::path empty = temp_dir("empty");
  Result r = run_cli(campaign_args(empty, empty / "c", "--shapes 8,8,8"));
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(count_lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("power_supply"), std::string::npos) << r.err;
  const fs::path root = fixture_root("bad");
  Result s = run_cli(campaign_args(root, root.parent_path() / "c", "", "nope"));
  EXPECT_EQ(s.code, 2);
  EXPECT_NE(s.err.find("--suite nope"), std::string::npos) << s.err;
  for (const char* extra : {"--min-battery 120", "--wait-timeout -1", "--poll 0", "--shapes 1,2"}) {
    Result b = run_cli(campaign_args(root, root.parent_path() / "c", extra));
    EXPECT_EQ(b.code, 2) << extra << ": " << b.err;
    EXPECT_EQ(count_lines(b.err), 1) << b.err;
  }
  fs::remove_all(empty);
  fs::remove_all(root.parent_path());
}

}  // namespace
}  // namespace flopwatt

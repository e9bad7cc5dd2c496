// One headline rule everywhere: on every scenario tree of tests/fixtures/power,
// `flopwatt run gemm`, `flopwatt report` on that run, `flopwatt_bench` and a
// mains-vs-battery campaign name the same headline source, and its W and
// FLOP/J match the power the fake machine draws. The fake advances each
// counter at a fixed power while the commands run (powercap energy_uj and
// hwmon energyN_input in uJ, as Documentation/power/powercap/powercap.rst and
// Documentation/hwmon/sysfs-interface.rst define them; RAPL MSRs as 32-bit
// counts in the unit the fixture's 0x606 register or the model's quirk gives,
// arch/x86/kernel/msr.c serving pread at offset = register) and, for the
// campaign, pulls or plugs the charger once the first phase is over (status
// strings of Documentation/ABI/testing/sysfs-class-power).
//
// FLOPWATT_PRINT_TABLE=1 prints one row per fixture: source, W, FLOP/J, expected W.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <thread>

#include <nlohmann/json.hpp>

#include "tests/harness/cli_support.h"

namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using flopwatt::testing::CommandResult;
using flopwatt::testing::slurp;

// A counter the fake machine advances.
struct Counter {
  std::string path;        // below the root
  double watts;
  double msr_unit_j = 0;   // > 0: an MSR register (path is the msr file) at msr_offset, 32 bits of this unit
  std::uint32_t msr_offset = 0;
  bool resets = false;     // restarts from 0 when the scenario's reset trigger fires
};

// A supply change: file (below the root) and its new text.
using Writes = std::vector<std::pair<std::string, std::string>>;

struct Scenario {
  const char* fixture;
  std::vector<Counter> counters;
  const char* headline;      // expected headline source id
  double expected_w;         // the power of that source in the fake
  Writes switch_supply;      // empty: the machine has no battery, the campaign keeps phase one
  double min_time_s = 0.5;   // long enough for the coarsest counter (1 J psys MSR) to resolve the power
};

const std::string kPs = "sys/class/power_supply/";
const std::string kRapl = "sys/class/powercap/";

std::vector<Counter> intel_laptop(double pkg, double core, double psys) {
  return {{kRapl + "intel-rapl:0/energy_uj", pkg}, {kRapl + "intel-rapl:0:0/energy_uj", core},
          {kRapl + "intel-rapl:1/energy_uj", psys}};
}

const Writes kUnplugBat0 = {{kPs + "BAT0/power_now", "20000000"}, {kPs + "BAT0/status", "Discharging"},
                            {kPs + "AC/online", "0"}};

std::vector<Scenario> scenarios() {
  const double spr_unit = 1.0 / 16384;  // 0x606 energy status unit 14 (the fixture's 0xA0E03)
  return {
      {"charging-on-mains", intel_laptop(15, 9, 22), "rapl-powercap:psys-0", 22, kUnplugBat0},
      {"full-on-mains", intel_laptop(15, 9, 22), "rapl-powercap:psys-0", 22, kUnplugBat0},
      // No adapter entry: unplugging only changes the battery's status.
      {"not-charging", intel_laptop(15, 9, 22), "rapl-powercap:psys-0", 22,
       {{kPs + "BAT0/power_now", "20000000"}, {kPs + "BAT0/status", "Discharging"}}},
      {"two-batteries", {{kRapl + "intel-rapl:0/energy_uj", 12}}, "rapl-powercap:package-0", 12,
       {{kPs + "AC/online", "1"}, {kPs + "BAT1/status", "Charging"}, {kPs + "BAT1/power_now", "15000000"}}},
      {"two-packages",
       {{kRapl + "intel-rapl:0/energy_uj", 40},
        {kRapl + "intel-rapl:0:0/energy_uj", 5},
        {kRapl + "intel-rapl:1/energy_uj", 50},
        {kRapl + "intel-rapl:1:0/energy_uj", 6}},
       "rapl-powercap:package",
       90,
       {}},
      {"amd-laptop",
       {{kRapl + "intel-rapl:0/energy_uj", 18},
        {kRapl + "intel-rapl:0:0/energy_uj", 1.5},
        {"sys/class/hwmon/hwmon3/energy1_input", 1.5},
        {"sys/class/hwmon/hwmon3/energy2_input", 1.2},
        {"sys/class/hwmon/hwmon3/energy3_input", 1.1},
        {"sys/class/hwmon/hwmon3/energy4_input", 1.0},
        {"sys/class/hwmon/hwmon3/energy5_input", 18}},
       "rapl-powercap:package-0",
       18,
       {{kPs + "ACAD/online", "1"}, {kPs + "BAT1/status", "Charging"}, {kPs + "BAT1/power_now", "25000000"}}},
      // PPT is a gauge (power1_input, 18.5 W in the fixture): nothing to advance.
      {"strix-apu", {}, "hwmon:amdgpu:PPT", 18.5, {}},
      {"counter-reset", {{kRapl + "intel-rapl:0/energy_uj", 15, 0, 0, true}}, "rapl-powercap:package-0", 15, {}, 2.5},
      {"sapphire-rapids-msr",
       {{"dev/cpu/0/msr", 60, spr_unit, 0x611},
        {"dev/cpu/1/msr", 70, spr_unit, 0x611},
        {"dev/cpu/0/msr", 200, 1.0, 0x64D}},  // psys: 1 J per count on this model
       "rapl-msr:psys-0",
       200,
       {},
       1.0},
  };
}

void put(const fs::path& p, const std::string& text) {
  const fs::path tmp = p.string() + ".new";
  {
    std::ofstream f(tmp, std::ios::trunc);
    f << text << "\n";
  }
  std::error_code ec;
  fs::rename(tmp, p, ec);  // a reader sees the old or the new value, never half
}

std::uint64_t read_number(const fs::path& p) {
  std::ifstream f(p);
  std::uint64_t v = 0;
  f >> v;
  return v;
}

// The machine behind a fixture tree while the commands run.
class FakeMachine {
 public:
  FakeMachine(fs::path root, std::vector<Counter> counters, Writes supply_switch, std::function<bool()> switch_when,
              std::function<bool()> reset_when)
      : root_(std::move(root)), counters_(std::move(counters)), switch_(std::move(supply_switch)),
        switch_when_(std::move(switch_when)), reset_when_(std::move(reset_when)) {
    for (auto& c : counters_) {
      State s;
      if (c.msr_unit_j > 0) {
        s.fd = ::open((root_ / c.path).c_str(), O_RDWR);
        std::uint64_t v = 0;
        if (s.fd >= 0 && ::pread(s.fd, &v, 8, c.msr_offset) == 8) s.start = v & 0xffffffffu;
        s.modulus = 1ull << 32;
      } else {
        s.start = read_number(root_ / c.path);
        const fs::path range = (root_ / c.path).parent_path() / "max_energy_range_uj";
        s.modulus = fs::exists(range) ? read_number(range) + 1 : 0;  // hwmon energy: 64-bit, never wraps here
      }
      state_.push_back(s);
    }
    thread_ = std::thread([this] { loop(); });
  }
  ~FakeMachine() {
    stop_ = true;
    thread_.join();
    for (auto& s : state_)
      if (s.fd >= 0) ::close(s.fd);
  }
  bool switched() const { return switched_; }
  bool was_reset() const { return reset_t_ >= 0; }

 private:
  struct State {
    std::uint64_t start = 0, modulus = 0;
    int fd = -1;
  };
  void loop() {
    using clk = std::chrono::steady_clock;
    const auto t0 = clk::now();
    auto last_check = t0;
    while (!stop_) {
      const auto now = clk::now();
      const double t = std::chrono::duration<double>(now - t0).count();
      if (now - last_check > std::chrono::milliseconds(20)) {
        last_check = now;
        if (!switched_ && !switch_.empty() && switch_when_ && switch_when_()) {
          for (const auto& [file, text] : switch_) put(root_ / file, text);
          switched_ = true;
        }
        if (reset_t_ < 0 && reset_when_ && reset_when_()) reset_t_ = t;
      }
      for (std::size_t i = 0; i < counters_.size(); ++i) {
        const Counter& c = counters_[i];
        const State& s = state_[i];
        const bool after_reset = c.resets && reset_t_ >= 0;
        const double joules = c.watts * (after_reset ? t - reset_t_ : t);
        if (c.msr_unit_j > 0) {
          std::uint64_t v = 0;
          if (::pread(s.fd, &v, 8, c.msr_offset) != 8) continue;
          const std::uint64_t count = (s.start + std::uint64_t(joules / c.msr_unit_j)) % s.modulus;
          v = (v & ~std::uint64_t(0xffffffffu)) | count;
          if (::pwrite(s.fd, &v, 8, c.msr_offset) != 8) continue;
        } else {
          std::uint64_t uj = (after_reset ? 0 : s.start) + std::uint64_t(joules * 1e6);
          if (s.modulus) uj %= s.modulus;
          put(root_ / c.path, std::to_string(uj));
        }
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  fs::path root_;
  std::vector<Counter> counters_;
  std::vector<State> state_;
  Writes switch_;
  std::function<bool()> switch_when_, reset_when_;
  std::atomic<bool> stop_{false}, switched_{false};
  std::atomic<double> reset_t_{-1};
  std::thread thread_;
};

CommandResult run_flopwatt(const std::string& args) {
  return flopwatt::testing::run_command_line(std::string(FLOPWATT_BINARY) + " " + args);
}

json read_json(const fs::path& p) {
  std::ifstream f(p);
  return json::parse(f);
}

double rel(double a, double b) { return std::fabs(a - b) / std::max(std::fabs(a), std::fabs(b)); }

// The gemm row of a run.json (one shape, one backend).
const json& gemm_row(const json& run) {
  for (const auto& m : run["measurements"])
    if (m["workload"] == "gemm" && m["skipped"].is_null()) return m;
  static const json none;
  return none;
}

bool phase_one_over(const fs::path& campaign_json) {
  try {
    const json j = read_json(campaign_json);
    return !j["phases"].empty() && j["phases"][0].contains("valid");
  } catch (...) {
    return false;  // not written yet, or between the rename and the read
  }
}

// Tolerance on a power the fake sets: its writer thread can fall a few ms
// behind on a loaded machine, so a window's counter delta is off by that much.
constexpr double kPowerTol = 0.15;
constexpr const char* kGemm = "--backend cpu:reference --shapes 64,64,64";

struct Row {
  std::string fixture, source;
  double w = 0, flop_per_j = 0, expected_w = 0;
};

TEST(HeadlineAgreement, RunReportBenchAndCampaignAgreeOnEveryFixture) {
  std::vector<Row> table;
  for (const Scenario& sc : scenarios()) {
    SCOPED_TRACE(sc.fixture);
    const fs::path base = flopwatt::testing::temp_dir("agreement", sc.fixture);
    const fs::path root = base / "root";
    fs::copy(fs::path(FLOPWATT_TEST_FIXTURES) / "power" / sc.fixture, root, fs::copy_options::recursive);
    const fs::path run_dir = base / "run", camp_dir = base / "campaign";
    // counter-reset: the counter restarts from 0 in the middle of run gemm's one window.
    std::atomic<std::int64_t> run_started_ms{-1};
    auto now_ms = [] {
      return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
          .count();
    };
    auto machine = std::make_unique<FakeMachine>(
        root, sc.counters, sc.switch_supply, [&] { return phase_one_over(camp_dir / "campaign.json"); },
        [&] {
          if (run_started_ms < 0 && fs::exists(run_dir / "run.json")) run_started_ms = now_ms();
          return run_started_ms >= 0 && now_ms() - run_started_ms > 1000;
        });
    const std::string power = " --idle 0 --sample-period 0.005 --sysfs-root " + root.string();
    const std::string min_time = " --min-time " + std::to_string(sc.min_time_s);

    // 1. run gemm
    CommandResult r = run_flopwatt(std::string("run gemm ") + kGemm + " --min-reps 3 --no-peak" + min_time + power +
                                   " --out " + run_dir.string());
    ASSERT_EQ(r.code, 0) << r.err;
    const json run = read_json(run_dir / "run.json");
    EXPECT_EQ(run["headline_source"], sc.headline);  // derived from the rows, which all judged it so
    const json& m = gemm_row(run);
    ASSERT_TRUE(m.is_object());
    ASSERT_TRUE(m["energy"].contains(sc.headline)) << m["energy"].dump();
    const json& e = m["energy"][sc.headline];
    const double w = e["avg_power_w"].get<double>();
    EXPECT_LT(rel(w, sc.expected_w), kPowerTol) << e.dump();
    // The right FLOP/J: the run's FLOPs over the energy the fake drew in that
    // window, on the window basis its flop_per_s_window shares.
    const double flop = m["flop"].get<double>() * m["reps"].get<double>();
    const double window_s = m["time"]["total_s"].get<double>();
    ASSERT_FALSE(e["flop_per_j"].is_null());
    const double fpj = e["flop_per_j"].get<double>();
    EXPECT_LT(rel(fpj, flop / (sc.expected_w * window_s)), kPowerTol);
    EXPECT_LT(rel(fpj * w, m["flop_per_s_window"].get<double>()), 1e-9);
    if (std::string(sc.fixture) == "counter-reset") {
      // A gap, not a wrap: read as a wrap the drop would add ~26 kJ (kW over the window).
      EXPECT_TRUE(machine->was_reset());
      EXPECT_EQ(e["confidence"], "low");
      EXPECT_NE(e.value("why_low", "").find("counter reset"), std::string::npos) << e.dump();
      EXPECT_LT(w, 2 * sc.expected_w);
    }
    table.push_back({sc.fixture, run["headline_source"].get<std::string>(), w, fpj, sc.expected_w});

    // 2. report on that run: the same source and figure.
    r = run_flopwatt("report " + run_dir.string() + " --format json");
    ASSERT_EQ(r.code, 0) << r.err;
    const json rep = json::parse(r.out);
    bool seen = false;
    for (const auto& row : rep["rows"])
      for (const auto& [label, x] : row["runs"].items()) {
        if (x.is_null()) continue;
        seen = true;
        EXPECT_EQ(x["energy_source"], sc.headline) << x.dump();
        EXPECT_EQ(x["flop_per_j"].get<double>(), fpj);
      }
    EXPECT_TRUE(seen) << r.out;

    // 3. flopwatt_bench: its W and FLOP/J counters from the same source.
    r = flopwatt::testing::run_command_line(std::string(FLOPWATT_BENCH_BINARY) + " --backends cpu:reference "
                                            "--shapes 64,64,64 --gpt2-presets none --sample-period 0.005 "
                                            "--sysfs-root " + root.string() +
                                            " --benchmark_min_time=" + std::to_string(sc.min_time_s) +
                                            " --benchmark_format=json");
    ASSERT_EQ(r.code, 0) << r.err;
    const json bench = json::parse(r.out);
    ASSERT_FALSE(bench["benchmarks"].empty());
    const json& b = bench["benchmarks"][0];
    // Each loop is judged on its own; its label names its source.
    EXPECT_EQ(b.value("label", std::string()).rfind(std::string("energy from ") + sc.headline, 0), 0u) << b.dump();
    ASSERT_TRUE(b.contains("W") && b.contains("FLOP/J")) << b.dump();
    if (std::string(sc.fixture) != "counter-reset") {  // the bench window may hold nothing unusual either way
      EXPECT_LT(rel(b["W"].get<double>(), sc.expected_w), kPowerTol) << b.dump();
    }
    EXPECT_LT(rel(b["FLOP/J"].get<double>(), b["FLOP/s"].get<double>() / b["W"].get<double>()), kPowerTol) << b.dump();

    // 4. mains-vs-battery campaign: each phase's rows from the same source. A
    // machine without a battery has no battery phase: the campaign refuses it
    // before measuring anything (exit 2 naming the root).
    r = run_flopwatt("campaign mains-vs-battery --suite gemm-smoke --non-interactive --pause 0 --cooldown-timeout 2 "
                     "--min-reps 3 --poll 0.05" + power + min_time + " " + kGemm + " --wait-timeout 30 --out " +
                     camp_dir.string());
    if (sc.switch_supply.empty()) {
      EXPECT_EQ(r.code, 2) << r.out << r.err;
      EXPECT_NE(r.err.find("no battery"), std::string::npos) << r.err;
    } else {
      ASSERT_EQ(r.code, 0) << r.out << r.err;
      EXPECT_TRUE(machine->switched());
      const json camp = read_json(camp_dir / "campaign.json");
      ASSERT_EQ(camp["phases"].size(), 2u) << camp.dump();
      for (const auto& ph : camp["phases"]) {
        const std::string state = ph["state"];
        SCOPED_TRACE(state);
        const json pr = read_json(camp_dir / state / "run.json");
        const json& pm = gemm_row(pr);
        ASSERT_TRUE(pm.is_object());
        EXPECT_EQ(pr["headline_source"], sc.headline) << pm["energy"].dump();
        EXPECT_LT(rel(pm["energy"][sc.headline]["avg_power_w"].get<double>(), sc.expected_w), kPowerTol);
      }
      const json cmp = read_json(camp_dir / "comparison.json");
      ASSERT_FALSE(cmp["rows"].empty());
      for (const auto& row : cmp["rows"])
        for (const char* state : {"mains", "battery"}) {
          SCOPED_TRACE(state);
          ASSERT_TRUE(row[state].is_object()) << row.dump();
          EXPECT_EQ(row[state]["energy_source"], sc.headline);
          EXPECT_LT(rel(row[state]["avg_power_w"].get<double>(), sc.expected_w), kPowerTol);
        }
    }
    machine.reset();
    fs::remove_all(base);
  }
  if (const char* p = std::getenv("FLOPWATT_PRINT_TABLE"); p && *p == '1') {
    std::printf("| fixture | headline source | W | GFLOP/J | expected W |\n|---|---|---|---|---|\n");
    for (const auto& row : table)
      std::printf("| %s | %s | %.2f | %.4g | %.2f |\n", row.fixture.c_str(), row.source.c_str(), row.w,
                  row.flop_per_j * 1e-9, row.expected_w);
  }
}

}  // namespace

// flopwatt_bench: benchmark names, the energy counters in Google Benchmark's
// JSON (against a fixture battery at a known power), the context naming the
// sources, simulated rows on modelled time, and Google Benchmark's own compare
// tool reading the output.
#include <gtest/gtest.h>

#include "flopwatt/meter.h"
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "harness/run/ceilings_store.h"
#include "harness/run/context.h"
#include "workloads/gpt2/config.h"
#include "workloads/gpt2/op_table.h"
#include "tests/harness/cli_support.h"

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const fs::path kLaptop = fs::path(FLOPWATT_TEST_FIXTURES) / "campaign" / "laptop-mains";
constexpr double kBatteryW = 4.0;  // BAT0/power_now of the fixture: 4000000 uW

using Result = flopwatt::testing::CommandResult;
using flopwatt::testing::slurp;
fs::path temp_dir(const std::string& tag) { return flopwatt::testing::temp_dir("bench", tag); }
Result bench(const std::string& args) {
  return flopwatt::testing::run_command_line(std::string(FLOPWATT_BENCH_BINARY) + " " + args);
}

// By family name: Google Benchmark appends "/real_time", "/iterations:3/manual_time".
const json* find(const json& j, const std::string& family) {
  for (const auto& b : j["benchmarks"]) {
    const std::string n = b["name"];
    if (n == family || n.rfind(family + "/", 0) == 0) return &b;
  }
  return nullptr;
}

double rel(double a, double b) { return std::fabs(a - b) / std::max(std::fabs(a), std::fabs(b)); }

const std::string kArgs = "--sysfs-root=" + kLaptop.string() +
                          " --shapes '16,16,16;33,17,65,NT' --backends=cpu:llmc,npu:sim-phoenix"
                          " --gpt2-presets=tiny --gpt2-ops=none --gpt2-backends=cpu:llmc --benchmark_min_time=0.05"
                          " --benchmark_format=json";

// The laptop fixture unplugged and without RAPL: its discharging battery (a
// constant 4 W gauge) is then the headline source.
fs::path laptop_on_battery_without_rapl() {
  const fs::path root = temp_dir("on-battery");
  fs::copy(kLaptop, root, fs::copy_options::recursive);
  fs::remove_all(root / "sys/class/powercap");
  std::ofstream(root / "sys/class/power_supply/AC/online") << "0\n";
  std::ofstream(root / "sys/class/power_supply/BAT0/status") << "Discharging\n";
  return root;
}

// On mains the fixture's battery is charging: what it reports is the power
// going into it, so it never gives the headline (power::choose_headline).
TEST(Bench, ChargingBatteryOnMainsIsNotTheHeadline) {
  Result r = bench("--sysfs-root=" + kLaptop.string() +
                   " --shapes 16,16,16 --backends=cpu:llmc --gpt2-presets=none --benchmark_min_time=0.02"
                   " --benchmark_format=json");
  ASSERT_EQ(r.code, 0) << r.err;
  // Each loop is judged on its own and its label names its source: never the charging battery.
  const json j = json::parse(r.out);
  ASSERT_FALSE(j["benchmarks"].empty());
  for (const auto& b : j["benchmarks"])
    EXPECT_NE(flopwatt::label_source(b.value("label", std::string())), "battery:BAT0") << b.dump();
}

// On battery (the battery gauge is the headline), a charger plugged in as soon
// as the first benchmark has printed its row (the adapter online, the battery
// charging: Documentation/ABI/testing/sysfs-class-power). The first loop keeps
// its FLOP/J; a loop during the plug-in or after it gets supply_changed = 1 and
// no energy counters (after it the gauge reads the power going in).
TEST(Bench, APlugInDuringTheRunTakesTheEnergyCountersOffTheLoopsItReaches) {
  const fs::path root = laptop_on_battery_without_rapl();
  const fs::path io = temp_dir("plug-in-io");
  struct RemoveAtExit {
    fs::path a, b;
    ~RemoveAtExit() {
      std::error_code ec;
      fs::remove_all(a, ec);
      fs::remove_all(b, ec);
    }
  } remove{root, io};
  const std::string out = (io / "out").string(), err = (io / "err").string(), js = (io / "bench.json").string();
  // Console rows are printed as each benchmark ends; the plug-in follows the first.
  const std::string plug = "(for i in $(seq 1200); do grep -q '^gemm/' " + out + " 2>/dev/null && break; sleep 0.05; done; " +
                           "echo 1 > " + (root / "sys/class/power_supply/AC/online").string() + "; echo Charging > " +
                           (root / "sys/class/power_supply/BAT0/status").string() + ") >/dev/null 2>&1 &";
  ASSERT_EQ(std::system(plug.c_str()), 0);
  const std::string cmd = std::string(FLOPWATT_BENCH_BINARY) + " --sysfs-root=" + root.string() +
                          " --shapes '64,64,64;65,33,17;48,48,48;40,40,40' --backends=cpu:llmc --gpt2-presets=none"
                          " --benchmark_min_time=0.3 --benchmark_out=" + js + " --benchmark_out_format=json >" + out +
                          " 2>" + err + " </dev/null";
  const int st = std::system(cmd.c_str());
  ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << slurp(err);
  EXPECT_NE(slurp(err).find("power supply changed during the run"), std::string::npos) << slurp(err);
  const json j = json::parse(slurp(js));
  EXPECT_NE(j["context"]["flopwatt_supply"].get<std::string>().find("battery at the start"), std::string::npos);
  const auto& bs = j["benchmarks"];
  ASSERT_EQ(bs.size(), 4u);
  EXPECT_FALSE(bs.front().contains("supply_changed")) << "the first loop ends before the plug-in";
  EXPECT_TRUE(bs.front().contains("FLOP/J")) << bs.front().dump();
  EXPECT_EQ(flopwatt::label_source(bs.front().value("label", std::string())), "battery:BAT0") << bs.front().dump();
  // After the plug-in the battery measures the power going in: no later loop takes its figure (each
  // is judged on its own: another source's, named in the label, or none); a loop the change
  // reaches is flagged and has no energy counters.
  EXPECT_NE(flopwatt::label_source(bs.back().value("label", std::string())), "battery:BAT0") << bs.back().dump();
  for (const auto& b : bs)
    if (b.contains("supply_changed")) {
      EXPECT_FALSE(b.contains("FLOP/J")) << "flagged, so no energy: " << b.dump();
    }
}

TEST(Bench, JsonCarriesTheEnergyCountersOfTheHeadlineSource) {
  const fs::path root = laptop_on_battery_without_rapl();
  struct RemoveAtExit {
    fs::path p;
    ~RemoveAtExit() { std::error_code ec; fs::remove_all(p, ec); }
  } remove_root{root};
  std::string args = kArgs;
  args.replace(args.find(kLaptop.string()), kLaptop.string().size(), root.string());
  Result r = bench(args);
  ASSERT_EQ(r.code, 0) << r.err;
  const json j = json::parse(r.out);
  EXPECT_EQ(j["context"]["flopwatt_power_headline"], "per loop: each row's label names its own judged source");
  EXPECT_NE(j["context"]["flopwatt_power_sources"].get<std::string>().find("battery:BAT0 (battery, gauge)"),
            std::string::npos);
  EXPECT_TRUE(j["context"].contains("flopwatt_counters"));

  for (const char* name : {"gemm/cpu:llmc/16x16x16", "gemm/cpu:llmc/33x17x65_NT"}) {
    SCOPED_TRACE(name);
    const json* b = find(j, name);
    ASSERT_NE(b, nullptr) << r.out;
    EXPECT_EQ((*b)["time_unit"], "us");
    const double flop = std::string(name).find("16x16") != std::string::npos ? 2.0 * 16 * 16 * 16 : 2.0 * 33 * 17 * 65;
    const double t = (*b)["real_time"].get<double>() * 1e-6;  // per iteration
    // FLOP/s is over the energy window's wall time, which wraps the timed loop: by microseconds on
    // a quiet machine, by milliseconds beside a ctest -j2 (1.6% of a 0.05 s loop once), so the
    // bound is on the time between them, not a ratio.
    const double iterations = (*b)["iterations"].get<double>();
    const double window_s = flop * iterations / (*b)["FLOP/s"].get<double>(), loop_s = t * iterations;
    EXPECT_GT(window_s, loop_s * (1 - 1e-3));
    EXPECT_LT(window_s - loop_s, 0.02) << "window " << window_s << " s, loop " << loop_s << " s";
    EXPECT_EQ(flopwatt::label_source((*b).value("label", std::string())), "battery:BAT0") << b->dump();
    // The battery gauge reads a constant 4 W: W is that, J/iter is W x time per iteration.
    EXPECT_LT(rel((*b)["W"].get<double>(), kBatteryW), 0.01);
    EXPECT_LT(rel((*b)["J/iter"].get<double>(), kBatteryW * t), 0.10);
    EXPECT_LT(rel((*b)["FLOP/J"].get<double>() * (*b)["J/iter"].get<double>(), flop), 1e-9);
  }
  // A simulated backend runs on its modelled time and reports its modelled energy.
  const json* sim = find(j, "gemm/npu:sim-phoenix/16x16x16");
  ASSERT_NE(sim, nullptr);
  EXPECT_NE((*sim)["label"].get<std::string>().find("simulated"), std::string::npos);
  EXPECT_EQ((*sim)["iterations"], 3);
  EXPECT_GT((*sim)["J/iter"].get<double>(), 0);
  EXPECT_LT(rel((*sim)["FLOP/s"].get<double>(), 2.0 * 16 * 16 * 16 / ((*sim)["real_time"].get<double>() * 1e-6)),
            1e-6);
  // The GPT-2 training step of the tiny preset.
  const json* step = find(j, "gpt2/tiny/cpu:llmc/step");
  ASSERT_NE(step, nullptr);
  EXPECT_EQ((*step)["time_unit"], "ms");
  EXPECT_GT((*step)["FLOP/s"].get<double>(), 0);
  EXPECT_TRUE(step->contains("J/iter"));

  // Google Benchmark's own compare tool reads two such files.
  const char* compare = "/usr/share/benchmark/compare.py";
  if (!fs::exists(compare) || std::system("/usr/bin/python3 -c 'import scipy' >/dev/null 2>&1") != 0) {
    std::cout << "[ SKIPPED  ] compare.py part: needs " << compare
              << " and scipy (apt-get install libbenchmark-tools python3-scipy)\n";
    return;
  }
  const fs::path d = temp_dir("cmp");
  std::ofstream(d / "a.json") << r.out;
  std::ofstream(d / "b.json") << r.out;
  const int st = std::system(("/usr/bin/python3 " + std::string(compare) + " benchmarks " + (d / "a.json").string() +
                              " " + (d / "b.json").string() + " >" + (d / "out").string() + " 2>&1")
                                 .c_str());
  EXPECT_EQ(WIFEXITED(st) ? WEXITSTATUS(st) : -1, 0) << slurp(d / "out");
  EXPECT_NE(slurp(d / "out").find("gemm/cpu:llmc/16x16x16"), std::string::npos) << slurp(d / "out");
  fs::remove_all(d);
}

TEST(Bench, AllSourcesAndNoSources) {
  Result all = bench("--sysfs-root=" + kLaptop.string() +
                     " --shapes 16,16,16 --backends=cpu:llmc --gpt2-presets=none --power-counters=all"
                     " --benchmark_min_time=0.02 --benchmark_format=json");
  ASSERT_EQ(all.code, 0) << all.err;
  const json ja = json::parse(all.out);
  const json* b = find(ja, "gemm/cpu:llmc/16x16x16");
  ASSERT_NE(b, nullptr);
  // The run's headline would be the package (the battery is charging), but in
  // this still fixture its counter never moves: a dead counter is no headline
  // (the physics check), so the loop gets no plain energy counters and the
  // label says why; every source is still listed by its id.
  EXPECT_FALSE(b->contains("W")) << b->dump();
  EXPECT_NE(b->value("label", "").find("does not advance: a VM or a disabled counter"), std::string::npos) << b->dump();
  EXPECT_TRUE(b->contains("battery:BAT0:W")) << b->dump();
  EXPECT_TRUE(b->contains("battery-energy:BAT0:W")) << b->dump();
  EXPECT_TRUE(b->contains("rapl-powercap:package-0:W")) << b->dump();
  EXPECT_FALSE(b->contains("rapl-powercap:package-0:FLOP/J")) << b->dump();
  Result none = bench("--power none --shapes 16,16,16 --backends=cpu:llmc --gpt2-presets=none"
                      " --benchmark_min_time=0.02 --benchmark_format=json");
  ASSERT_EQ(none.code, 0) << none.err;
  const json j = json::parse(none.out);
  EXPECT_EQ(j["context"]["flopwatt_power_headline"], "none");
  b = find(j, "gemm/cpu:llmc/16x16x16");
  ASSERT_NE(b, nullptr);
  EXPECT_TRUE(b->contains("FLOP/s"));
  EXPECT_FALSE(b->contains("J/iter"));
}

// The backward pairs of the tiny model at 300 tokens, standard next to
// interleaved per backend. Everything fits in any cache, so both orders move
// the compulsory bytes, by hand for qkv (K=32, OC=96, fp32, dW accumulated):
// dY 300*96*4 + X and dX 2*300*32*4 + W 96*32*4 + dW read and written
// 2*96*32*4 = 228864; one block of all 300 rows, and auto keeps the standard order.
TEST(Bench, GradOrderPairsSideBySide) {
  Result r = bench("--power none --shapes none --gpt2-presets=none --grad-order-model=tiny --grad-order-tokens=300"
                   " --backends=cpu:llmc,npu:sim-phoenix --benchmark_min_time=0.02 --benchmark_format=json");
  ASSERT_EQ(r.code, 0) << r.err;
  const json j = json::parse(r.out);
  for (const char* layer : {"qkv", "attproj", "fc", "fcproj", "lm_head"})
    for (const char* order : {"standard", "interleaved"})
      for (const char* be : {"cpu:llmc", "npu:sim-phoenix"})
        EXPECT_NE(find(j, std::string("gradorder/") + be + "/" + layer + "/" + order), nullptr) << be << layer << order;
  const json* s = find(j, "gradorder/cpu:llmc/qkv/standard");
  const json* i = find(j, "gradorder/cpu:llmc/qkv/interleaved");
  ASSERT_TRUE(s && i);
  EXPECT_DOUBLE_EQ((*s)["model_DRAM_bytes"].get<double>(), 228864.0) << s->dump();
  EXPECT_DOUBLE_EQ((*i)["model_DRAM_bytes"].get<double>(), 228864.0) << i->dump();
  EXPECT_EQ((*i)["block_rows"].get<double>(), 300);
  EXPECT_EQ((*s)["auto_picks"].get<double>(), 1);
  EXPECT_EQ((*i)["auto_picks"].get<double>(), 0);
  EXPECT_GT((*s)["FLOP/s"].get<double>(), 0);
  // Simulated rows: modelled time and energy, labelled.
  const json* n = find(j, "gradorder/npu:sim-phoenix/fc/interleaved");
  ASSERT_NE(n, nullptr);
  EXPECT_TRUE(n->contains("FLOP/J")) << n->dump();
  EXPECT_NE((*n)["label"].get<std::string>().find("simulated"), std::string::npos) << n->dump();
  for (const char* bad : {"--grad-order-model=d99 --benchmark_list_tests",
                          "--grad-order-model=tiny --grad-order-tokens=0 --benchmark_list_tests"}) {
    Result b = bench(bad);
    EXPECT_EQ(b.code, 2) << bad << ": " << b.err;
    EXPECT_EQ(std::count(b.err.begin(), b.err.end(), '\n'), 1) << bad << ": " << b.err;
  }
}

// Ceilings for this host and the laptop fixture's CPU at one thread, where
// flopwatt_bench looks for them when FLOPWATT_PEAK_DIR is `dir`.
void store_one_thread_ceilings(const fs::path& dir, double fp32_flop_per_s, double dram_bytes_per_s) {
  flopwatt::StoredPeak p;
  char host[256] = {};
  ASSERT_EQ(::gethostname(host, sizeof host - 1), 0);
  p.host = host;
  p.cpu = flopwatt::cpu_model(kLaptop.string());
  p.measured_by = "run peak";
  p.measured_at = std::time(nullptr);
  flopwatt::Ceilings c;
  c.label = "cpu";
  c.threads = 1;
  c.peak_flop_per_s["fp32"] = fp32_flop_per_s;
  c.memory.push_back({"dram_triad", dram_bytes_per_s});
  p.by_threads = {c};
  std::string why;
  ASSERT_TRUE(flopwatt::write_stored_peak(flopwatt::peak_file(dir.string(), p.host, p.cpu), p, &why)) << why;
}

// Each host GEMM row is placed on this machine's stored ceilings, as `run
// gemm` places it: against a stored peak of 10 kFLOP/s every GEMM is far above
// its roof, so the row carries roof_fraction > 1.05, a label and a warning;
// with no stored ceilings there is no roof_fraction and the context says why.
TEST(Bench, GemmRowsAboveTheirRoofAreFlagged) {
  const fs::path peaks = temp_dir("peaks");
  // 10 kFLOP/s: under ASan on a loaded machine the one 16x16x16 call Google
  // Benchmark timed took 12 ms, 0.66 of a 1 MFLOP/s roof.
  store_one_thread_ceilings(peaks, 1e4, 1e12);

  const std::string args = " OMP_NUM_THREADS=1 " + std::string(FLOPWATT_BENCH_BINARY) + " --sysfs-root=" +
                           kLaptop.string() + " --shapes 16,16,16 --backends=cpu:llmc --gpt2-presets=none" +
                           " --power=none --no-store --benchmark_min_time=0.01 --benchmark_format=json";
  const Result r = flopwatt::testing::run_command_line("FLOPWATT_PEAK_DIR=" + peaks.string() + args);
  ASSERT_EQ(r.code, 0) << r.err;
  const json j = json::parse(r.out);
  const json* row = find(j, "gemm/cpu:llmc/16x16x16");
  ASSERT_NE(row, nullptr) << r.out;
  ASSERT_TRUE(row->contains("roof_fraction")) << row->dump();
  EXPECT_GT((*row)["roof_fraction"].get<double>(), 1.05);
  EXPECT_NE(row->value("label", "").find("above its roof"), std::string::npos) << row->dump();
  EXPECT_NE(r.err.find("warning: above 105% of its roof: 16x16x16"), std::string::npos) << r.err;
  EXPECT_NE(j["context"].value("flopwatt_roofline", "").find(peaks.string()), std::string::npos) << j["context"];

  const Result none = flopwatt::testing::run_command_line("FLOPWATT_PEAK_DIR=" + temp_dir("no-peaks").string() + args);
  ASSERT_EQ(none.code, 0) << none.err;
  const json jn = json::parse(none.out);
  const json* plain = find(jn, "gemm/cpu:llmc/16x16x16");
  ASSERT_NE(plain, nullptr);
  EXPECT_FALSE(plain->contains("roof_fraction"));
  EXPECT_NE(jn["context"].value("flopwatt_roofline", "").find("flopwatt run peak"), std::string::npos);
  EXPECT_EQ(none.err.find("above"), std::string::npos) << none.err;
}

// Every op of a step outside the GEMMs (but the batch loading) runs alone as
// gpt2/<preset>/op/<op>/<pass>, with its FLOP/s from the op table; on stored
// ceilings it gets a roof_fraction, and against ceilings of 1 MFLOP/s and
// 1 kB/s every one is far above its roof, labelled and warned about as the
// GEMM rows are. Without stored ceilings there is no roof_fraction.
TEST(Bench, Gpt2OpsRunAloneAgainstTheirRoofs) {
  const fs::path peaks = temp_dir("op-peaks");
  store_one_thread_ceilings(peaks, 1e6, 1e3);
  const std::string args = " OMP_NUM_THREADS=1 " + std::string(FLOPWATT_BENCH_BINARY) + " --sysfs-root=" +
                           kLaptop.string() + " --shapes none --gpt2-presets=tiny --gpt2-backends=cpu:llmc" +
                           " --benchmark_filter=op/ --power=none --no-store --benchmark_min_time=0.005" +
                           " --benchmark_format=json";
  const Result r = flopwatt::testing::run_command_line("FLOPWATT_PEAK_DIR=" + peaks.string() + args);
  ASSERT_EQ(r.code, 0) << r.err;
  const json j = json::parse(r.out);
  const Result none = flopwatt::testing::run_command_line("FLOPWATT_PEAK_DIR=" + temp_dir("op-no-peaks").string() + args);
  ASSERT_EQ(none.code, 0) << none.err;
  const json jn = json::parse(none.out);
  namespace gpt2 = flopwatt::gpt2;
  int rows = 0;
  for (int i = 0; i < gpt2::kNumOps; ++i) {
    const gpt2::OpInfo& info = gpt2::op_info(gpt2::Op(i));
    if (info.gemm || info.op == gpt2::Op::Data) continue;
    const std::string name = std::string("gpt2/tiny/op/") + info.name + "/" + info.pass;
    SCOPED_TRACE(name);
    const json* row = find(j, name);
    ASSERT_NE(row, nullptr) << r.out;
    ++rows;
    EXPECT_FALSE(row->value("error_occurred", false)) << row->dump();
    const double flop = gpt2::op_cost(info.op, gpt2::preset("tiny"), 4, 64, flopwatt::DType::F32).flop;
    const double t = (*row)["real_time"].get<double>() * 1e-6;
    if (flop > 0) {
      // FLOP/s is over the energy window's wall time (flopwatt/benchmark.h), which holds the op's
      // paused per-iteration set-up that Google Benchmark's real time leaves out: never above the
      // timed rate, and the FLOP the row records is the op's own.
      EXPECT_GT((*row)["FLOP/s"].get<double>(), 0.0) << row->dump();
      EXPECT_LE((*row)["FLOP/s"].get<double>(), flop / t * 1.01) << row->dump();
      EXPECT_DOUBLE_EQ((*row)["FLOP/iter"].get<double>(), flop) << row->dump();
    }
    ASSERT_TRUE(row->contains("roof_fraction")) << row->dump();
    EXPECT_GT((*row)["roof_fraction"].get<double>(), 1.05);
    EXPECT_NE(row->value("label", "").find("above its roof"), std::string::npos) << row->dump();
    EXPECT_NE(r.err.find(std::string("warning: above 105% of its roof: ") + info.name + " " + info.pass + " (host)"),
              std::string::npos)
        << r.err;
    const json* plain = find(jn, name);
    ASSERT_NE(plain, nullptr) << none.out;
    EXPECT_FALSE(plain->contains("roof_fraction")) << plain->dump();
  }
  EXPECT_EQ(rows, 17);  // embed, ln1, ln2, lnf, attn, gelu, softmax_xent both ways, residual, zero_grad, adamw
  EXPECT_EQ(none.err.find("above"), std::string::npos) << none.err;

  // --gpt2-ops picks ops by name; --gpt2-presets none still means no GPT-2 rows at all.
  Result some = bench("--power none --shapes none --gpt2-presets=tiny --gpt2-ops=attn,adamw --benchmark_list_tests");
  ASSERT_EQ(some.code, 0) << some.err;
  EXPECT_NE(some.out.find("gpt2/tiny/op/attn/bwd/real_time\n"), std::string::npos) << some.out;
  EXPECT_NE(some.out.find("gpt2/tiny/op/adamw/opt/real_time\n"), std::string::npos) << some.out;
  EXPECT_EQ(some.out.find("op/ln1/"), std::string::npos) << some.out;
  Result off = bench("--power none --shapes none --gpt2-presets=none --benchmark_list_tests");
  ASSERT_EQ(off.code, 0) << off.err;
  EXPECT_EQ(off.out.find("gpt2/"), std::string::npos) << off.out;
  Result bad = bench("--gpt2-presets=tiny --gpt2-ops=qkv --benchmark_list_tests");
  EXPECT_EQ(bad.code, 2) << bad.err;
  fs::remove_all(peaks);
}

TEST(Bench, BadFlagsExitTwo) {
  for (const char* args : {"--shapes 1,2 --benchmark_list_tests", "--backends=cpu:nope --benchmark_list_tests",
                                  "--power=nosuch --benchmark_list_tests", "--benchmark_no_such_flag",
                                  "--gpt2-presets=d99 --benchmark_list_tests", "--sample-period=0 --benchmark_list_tests",
                           "--power"}) {
    Result r = bench(args);
    EXPECT_EQ(r.code, 2) << args << ": " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << args << ": " << r.err;
  }
  Result list = bench("--power none --gpt2-presets=tiny --benchmark_list_tests");
  EXPECT_EQ(list.code, 0);
  EXPECT_NE(list.out.find("gemm/cpu:openblas/qkv/real_time\n"), std::string::npos) << list.out;
  EXPECT_NE(list.out.find("gemm/npu:sim-phoenix/lm_head/iterations:3/manual_time\n"), std::string::npos);
  EXPECT_NE(list.out.find("gpt2/tiny/"), std::string::npos);
  EXPECT_EQ(list.out.find("cpu:reference"), std::string::npos);  // the oracle is not timed
}

TEST(Bench, RunIsRecordedInTheResultsStoreWithItsRepetitions) {
  const fs::path d = temp_dir("store");
  const std::string store = (d / "s.sqlite3").string();
  const std::string args = "--power none --shapes 32,24,16 --backends cpu:llmc --gpt2-presets none "
                           "--benchmark_min_time=0.005 --benchmark_repetitions=3 --benchmark_format=json ";
  Result r = bench(args + "--store " + store);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(json::accept(r.out)) << r.out;  // Google Benchmark's own output is unchanged
  const std::string flopwatt = FLOPWATT_BINARY;
  Result ex = flopwatt::testing::run_command_line(flopwatt + " store export --format json --store " + store);
  ASSERT_EQ(ex.code, 0) << ex.err;
  const json runs = json::parse(ex.out);
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0]["context"]["command"], "flopwatt_bench");
  ASSERT_EQ(runs[0]["measurements"].size(), 1u);
  const json& m = runs[0]["measurements"][0];
  EXPECT_EQ(m["backend"], "cpu:llmc");
  EXPECT_EQ(m["op"], "32x24x16");
  EXPECT_EQ(m["rep_times_s"].size(), 3u);
  EXPECT_DOUBLE_EQ(m["flop"].get<double>(), 2.0 * 32 * 24 * 16);
  // --no-store: nothing recorded.
  r = bench(args + "--no-store --store " + (d / "none.sqlite3").string());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_FALSE(fs::exists(d / "none.sqlite3"));
  fs::remove_all(d);
}

}  // namespace

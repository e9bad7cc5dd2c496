// flopwatt_bench: flopwatt's GEMMs and GPT-2 steps as Google Benchmark
// benchmarks, with the power sampler's energy as user counters. flopwatt's
// own flags are taken out of argv before benchmark::Initialize sees it, so
// every --benchmark_* flag and output format (and Google Benchmark's own
// tools, such as its compare script) keep working.
#include <benchmark/benchmark.h>
#include <fmt/core.h>
#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <sstream>
#include <thread>

#include "flopwatt/meter.h"
#include "harness/run/backend_registry.h"
#include "bench/energy.h"
#include "bench/gemm.h"
#include "bench/gpt2.h"
#include "bench/grad_order.h"
#include "bench/record.h"
#include "harness/run/ceilings_store.h"
#include "harness/run/context.h"
#include "harness/output/run_model.h"
#include "harness/run/session.h"
#include "harness/store/store.h"
#include "harness/output/version.h"
#include "harness/output/text.h"
#include "harness/run/run_options.h"
#include "power/power_state.h"
#include "power/supply_track.h"
#include "workloads/error.h"
#include "workloads/shapes.h"

namespace {

using namespace flopwatt;

struct Flag {
  const char* name;
  const char* help;
  std::string* value;
};

struct BenchArgs {
  PowerOptions power;
  std::string idle = "0", sample_period = "0.01", power_counters = "headline";
  std::string shapes = "gpt2-124m", backends, dtype = "fp32";
  std::string gpt2_presets = "tiny,d12", gpt2_ops = "all", gpt2_backends, gpt2_batch = "4", gpt2_seq = "64";
  std::string grad_order_model = "none", grad_order_tokens = "4096";
  std::string overhead = "none";
  std::string store;  // results store; empty: $FLOPWATT_STORE or the default file
  bool help = false;
};

double to_number(const std::string& s, const char* flag) {
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (s.empty() || *end || !(v >= 0))
    throw InputError(std::string(flag) + " " + s, "not a number >= 0", std::string("pass for example ") + flag + "=1");
  return v;
}

// Removes flopwatt's flags (--name=value or --name value) from argv.
void take_flags(int& argc, char** argv, std::vector<Flag>& flags, bool& help) {
  int out = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--help" || a == "-h") help = true;
    bool taken = false;
    for (auto& f : flags) {
      const std::string n = std::string("--") + f.name;
      if (a == n) {
        if (i + 1 >= argc) throw InputError(n, "needs a value", std::string("pass ") + n + "=VALUE");
        *f.value = argv[++i];
        taken = true;
      } else if (a.rfind(n + "=", 0) == 0) {
        *f.value = a.substr(n.size() + 1);
        taken = true;
      }
      if (taken) break;
    }
    if (!taken) argv[out++] = argv[i];
  }
  argc = out;
  argv[argc] = nullptr;
}

// The loop length Google Benchmark will report: --benchmark_min_time (seconds,
// default 0.5; "Nx", an iteration count, makes every loop reported).
double reported_loop_min_s(int argc, char** argv) {
  double t = 0.5;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const std::string key = "--benchmark_min_time=";
    if (a.rfind(key, 0) != 0) continue;
    const std::string v = a.substr(key.size());
    if (!v.empty() && v.back() == 'x') return 0;
    t = std::strtod(v.c_str(), nullptr);
  }
  return t;
}

// The sampler's cost to the measured work: the same GEMM with the sampler
// thread stopped and running, registered side by side so one run (use
// --benchmark_repetitions to interleave) gives the ratio on the same machine state.
void register_sampler_overhead(EnergyMeter& meter, const std::string& shape_spec) {
  std::shared_ptr<Backend> be(default_gemm_backend());
  if (!be) return;
  const GemmDesc d = parse_shapes(shape_spec, "--overhead")[0].desc;
  auto bufs = std::make_shared<std::vector<float>>(std::size_t(d.M * d.K + d.K * d.N + d.M * d.N), 0.5f);
  for (const bool on : {false, true}) {
    const std::string name = "overhead/sampler_" + std::string(on ? "on" : "off") + "/" + be->name() + "/" + shape_spec;
    benchmark::RegisterBenchmark(name.c_str(), [&meter, be, d, bufs, on](benchmark::State& st) {
      if (!on) meter.stop();
      float* p = bufs->data();
      be->prepare(d, p + d.M * d.K);
      for (auto _ : st) be->gemm(d, p, p + d.M * d.K, p + d.M * d.K + d.K * d.N);
      if (!on) meter.start();
      st.counters["FLOP/s"] = benchmark::Counter(d.flop() * double(st.iterations()), benchmark::Counter::kIsRate);
      st.counters["sampler_running"] = on && meter.active() ? 1 : 0;
    })->UseRealTime();
  }
}

// The public API's cost per window (flopwatt/meter.h), on a meter with no
// sources and on one with the run's sources:
//   begin_close  what a loop pays per window (begin + close: clock reads and
//                a slot; the target is well under 20 us);
//   result       judging one closed window whose samples are in (the sources'
//                integrals, the supply's track, the headline rule), the CPU a
//                result costs when asked for after the loop;
//   begin_end    begin + end, which also reads the headline source at the
//                window's end (or waits for its next sample where its rate
//                does not allow a read yet): latency after the window, not inside it;
//   result_cold  result 25 ms after the window's close, only the result timed:
//                the judgement with the caches whatever ran meanwhile left,
//                as end() judged right after waiting for that sample;
//   wait_floor   a bare 10 ms sleep: what blocking and waking alone cost the
//                calling thread on this machine, as end() paid while it waited.
// The last two sleep per iteration, so they run a fixed number of them.
void register_meter_overhead(const PowerOptions& p) {
  auto options = [p](bool sources) {
    MeterOptions o;
    o.power = sources ? p.power : "none";
    o.sysfs_root = p.sysfs_root;
    o.power_log = p.power_log;
    o.sample_period_s = p.sample_period_s;
    return o;
  };
  // Each loop gets a fresh meter and one closed window.
  using Loop = void (*)(Meter&, benchmark::State&, const Meter::Closed&);
  struct Named {
    const char* name;
    Loop loop;
    int iterations = 0;  // 0: Google Benchmark decides
  };
  const Named loops[] = {
      {"meter_begin_close",
       [](Meter& m, benchmark::State& st, const Meter::Closed&) {
         const std::string name = "step";
         for (auto _ : st) benchmark::DoNotOptimize(m.close(m.begin(name)));
       }},
      {"meter_result",
       [](Meter& m, benchmark::State& st, const Meter::Closed& c) {
         for (auto _ : st) benchmark::DoNotOptimize(m.result(c));
       }},
      {"meter_begin_end",
       [](Meter& m, benchmark::State& st, const Meter::Closed&) {
         const std::string name = "step";
         for (auto _ : st) benchmark::DoNotOptimize(m.end(m.begin(name)));
       }},
      {"meter_result_cold",
       [](Meter& m, benchmark::State& st, const Meter::Closed&) {
         const std::string name = "step";
         for (auto _ : st) {
           st.PauseTiming();
           const Meter::Closed c = m.close(m.begin(name));
           std::this_thread::sleep_for(std::chrono::milliseconds(25));
           st.ResumeTiming();
           benchmark::DoNotOptimize(m.result(c));
         }
       },
       100},
      {"meter_wait_floor",
       [](Meter&, benchmark::State& st, const Meter::Closed&) {
         for (auto _ : st) std::this_thread::sleep_for(std::chrono::milliseconds(10));
       },
       100},
  };
  for (const bool sources : {false, true})
    for (const auto& [name, loop, iterations] : loops) {
      const std::string full = std::string("overhead/") + name + (sources ? "/sources" : "/none");
      auto* b = benchmark::RegisterBenchmark(full.c_str(), [options, sources, p, loop = loop](benchmark::State& st) {
        Meter meter(options(sources));
        // A closed window whose end is covered past two sample
        // periods, so judging it waits for nothing.
        const Meter::Closed c = meter.close(meter.begin("step"), 1e9);
        std::this_thread::sleep_for(std::chrono::duration<double>(3 * p.sample_period_s + 0.05));
        loop(meter, st, c);
        st.counters["sources"] = meter.active() ? 1 : 0;
      });
      b->UseRealTime();
      if (iterations > 0) b->Iterations(iterations);
    }
}

std::vector<Flag> bench_flags(BenchArgs& a) {
  return {
      {"sysfs-root", "filesystem root for /sys, /dev and /proc reads (default / or $FLOPWATT_SYSFS_ROOT)",
       &a.power.sysfs_root},
      {"power", "power sources: auto, none, or ID[,ID..] (see `flopwatt sources`)", &a.power.power},
      {"power-log", "external meter log or pipe with 't_seconds,watts' lines", &a.power.power_log},
      {"headline-domain", "domain of the FLOP/J counters (default: the widest available)", &a.power.headline_domain},
      {"idle", "seconds of idle-power baseline before the benchmarks (default 0: none)", &a.idle},
      {"sample-period", "power sampling period in seconds (default 0.01)", &a.sample_period},
      {"power-counters", "headline (default) | all: also <source id>:J/iter, :W, :FLOP/J for every source",
       &a.power_counters},
      {"shapes", "GEMM shapes as `flopwatt run gemm --shapes` (default gpt2-124m)", &a.shapes},
      {"backends", "GEMM backends (default: every available one but cpu:reference)", &a.backends},
      {"dtype", "GEMM operand dtype: fp32 | bf16 (default fp32)", &a.dtype},
      {"gpt2-presets", "GPT-2 step and op benchmarks: presets, or 'none' (default tiny,d12)", &a.gpt2_presets},
      {"gpt2-ops", "GPT-2 ops outside the GEMMs timed alone: all (default), none, or names (ln1,attn,adamw,..)",
       &a.gpt2_ops},
      {"gpt2-backends", "GEMM backends of the GPT-2 steps (default: CPU backends and one NPU)", &a.gpt2_backends},
      {"gpt2-batch", "GPT-2 batch size B (default 4)", &a.gpt2_batch},
      {"gpt2-seq", "GPT-2 sequence length T (default 64)", &a.gpt2_seq},
      {"grad-order-model", "GPT-2 preset whose linear backward pairs run standard vs interleaved, or 'none' (default)",
       &a.grad_order_model},
      {"grad-order-tokens", "rows of dY (B*T) of those pairs (default 4096: llm.c's 4 x 1024)", &a.grad_order_tokens},
      {"overhead", "also GEMM M,N,K with the sampler stopped vs running (default none)", &a.overhead},
      {"store", "results store the run is recorded in: a SQLite file or postgresql:// URI (default $FLOPWATT_STORE, "
                "else $XDG_DATA_HOME/flopwatt/results.sqlite3); --no-store skips it",
       &a.store},
  };
}

// --no-store takes no value: out of argv before the flags with values.
bool take_no_store(int& argc, char** argv) {
  bool no_store = false;
  int out = 1;
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--no-store") no_store = true;
    else argv[out++] = argv[i];
  }
  argc = out;
  argv[argc] = nullptr;
  return no_store;
}

void print_help(const std::vector<Flag>& flags) {
  fmt::print("flopwatt_bench {}: flopwatt's GEMMs and GPT-2 steps as Google Benchmark benchmarks.\n"
             "Benchmarks: gemm/<backend>/<op>, gpt2/<preset>/<backend>/step, gpt2/<preset>/op/<op>/<pass>,\n"
             "gradorder/<backend>/<layer>/<order>.\n"
             "User counters: FLOP/s (rate over real time; modelled time for simulated backends), and from the\n"
             "headline power source over each timed loop: J/iter, W, FLOP/J; gradorder rows also model_DRAM_bytes\n"
             "(the CPU traffic model), block_rows and auto_picks. flopwatt flags (--name=value or --name value):\n",
             FLOPWATT_VERSION);
  for (const auto& f : flags) fmt::print("  --{:<16} {}\n", f.name, f.help);
  fmt::print("Google Benchmark flags follow.\n\n");
}

// The power options from their flags, checked before any source is opened; returns the GEMM dtype.
DType check_args(BenchArgs& a) {
  a.power.sysfs_root = resolve_sysfs_root(a.power.sysfs_root);
  a.power.idle_s = to_number(a.idle, "--idle");
  a.power.sample_period_s = to_number(a.sample_period, "--sample-period");
  if (!(a.power.sample_period_s >= 0.001 && a.power.sample_period_s <= 10))
    throw InputError("--sample-period " + a.sample_period, "must be between 0.001 and 10 seconds",
                     "pass for example --sample-period=0.01");
  if (a.power_counters != "headline" && a.power_counters != "all")
    throw InputError("--power-counters " + a.power_counters, "unknown choice", "use headline or all");
  const auto dt = parse_dtype(a.dtype);
  if (!dt) throw InputError("--dtype " + a.dtype, "unknown dtype", "use fp32 or bf16");
  return *dt;
}

// The suites Google Benchmark runs: its registered loops point into them, so
// they live until the benchmarks have run.
struct Suites {
  Suites(EnergyMeter* meter, gbench::EnergyOptions eo) : gemm(meter, eo), gpt2(meter, eo), grad_order(meter, eo) {}
  // The GEMM and GPT-2 op rows' roofs: this machine's stored ceilings (`flopwatt run peak`),
  // never measured here, where seconds of peak would sit between benchmarks.
  RooflineSet roofs;
  std::string roof_why;                 // where the ceilings came from, or why there are none
  std::vector<std::string> above_roof;  // rows faster than their roof, warned about after the run
  std::vector<std::string> skipped;     // "backend: why" of every suite, each once
  gbench::GemmBenchmarks gemm;
  gbench::Gpt2Benchmarks gpt2;
  gbench::GradOrderBenchmarks grad_order;
};

void load_roofs(Suites& s, const std::string& sysfs_root) {
  if (const auto stored = stored_host_ceilings(sysfs_root, &s.roof_why)) {
    s.roofs.host = stored->ceilings;
    s.roof_why = stored->from;
  }
}

void register_suites(Suites& s, const BenchArgs& a, DType dt, EnergyMeter& meter) {
  gbench::GemmBenchOptions go;
  go.shapes = a.shapes;
  go.backends = a.backends;
  go.dtype = dt;
  load_roofs(s, a.power.sysfs_root);
  go.roofs = &s.roofs;
  go.above_roof = &s.above_roof;
  const gbench::Registered rg = a.shapes == "none" ? gbench::Registered{} : s.gemm.register_all(go);

  gbench::Gpt2BenchOptions po;
  po.presets = a.gpt2_presets == "none" ? std::vector<std::string>{} : split_list(a.gpt2_presets);
  po.backends = a.gpt2_backends;
  po.B = int(to_number(a.gpt2_batch, "--gpt2-batch"));
  po.T = int(to_number(a.gpt2_seq, "--gpt2-seq"));
  if (po.B < 1 || po.T < 1) throw InputError("--gpt2-batch/--gpt2-seq", "must be >= 1", "pass e.g. --gpt2-batch=4");
  po.dtype = dt;
  po.ops = a.gpt2_ops;
  po.roofs = &s.roofs;
  po.above_roof = &s.above_roof;
  const gbench::Registered rp = po.presets.empty() ? gbench::Registered{} : s.gpt2.register_all(po);
  gbench::Registered rgo;
  if (a.grad_order_model != "none") {
    gbench::GradOrderBenchOptions oo;
    oo.model = a.grad_order_model;
    oo.tokens = std::int64_t(to_number(a.grad_order_tokens, "--grad-order-tokens"));
    oo.backends = a.backends;
    oo.dtype = dt;
    rgo = s.grad_order.register_all(oo);
  }
  if (a.overhead != "none") {
    register_sampler_overhead(meter, a.overhead);
    register_meter_overhead(a.power);
  }
  s.skipped = rg.skipped;
  for (const gbench::Registered* reg : std::initializer_list<const gbench::Registered*>{&rp, &rgo})
    for (const auto& x : reg->skipped)
      if (std::find(s.skipped.begin(), s.skipped.end(), x) == s.skipped.end()) s.skipped.push_back(x);
}

// The context names what the counters measure and where they come from.
void add_power_context(const BenchArgs& a, const EnergyMeter& meter,
                       const std::optional<power::PowerState>& supply_at_start) {
  benchmark::AddCustomContext("flopwatt_version", std::string(FLOPWATT_VERSION) + " (" + FLOPWATT_GIT_REV + ")");
  benchmark::AddCustomContext("flopwatt_threads", std::to_string(omp_get_max_threads()));
  benchmark::AddCustomContext("flopwatt_dtype", a.dtype);
  benchmark::AddCustomContext("flopwatt_sysfs_root", a.power.sysfs_root);
  std::vector<std::string> avail, missing;
  for (const auto& s : meter.source_infos()) {
    if (s.available) avail.push_back(s.id + " (" + s.domain + ", " + s.kind + ")");
    else missing.push_back(s.id + ": " + s.reason.value_or("unavailable"));
  }
  // No suite-wide source: each loop is judged on its own and its label names its source.
  benchmark::AddCustomContext("flopwatt_power_headline",
                              meter.active() ? "per loop: each row's label names its own judged source" : "none");
  benchmark::AddCustomContext(
      "flopwatt_supply",
      supply_at_start ? std::string(power::to_string(power::supply_of(supply_at_start))) +
                            " at the start; a loop during a change, or on a battery headline after one (the battery no longer "
                            "discharging), carries supply_changed=1 and no energy counters"
                      : "no power supply class (desktop or virtual machine): not watched");
  benchmark::AddCustomContext("flopwatt_power_sources", avail.empty() ? "none" : join(avail, "; "));
  benchmark::AddCustomContext("flopwatt_power_unavailable", missing.empty() ? "none" : join(missing, "; "));
  benchmark::AddCustomContext(
      "flopwatt_counters",
      meter.active() ? std::string("FLOP/s: the loop's FLOP over its wall time (modelled time for simulated backends); "
                                   "J/iter, W, FLOP/J: the loop's own judged headline source over its timed loop, "
                                   "named in its label (modelled energy for simulated GEMMs)")
               : "FLOP/s: rate over real time (modelled time for simulated backends); no power source, so no energy "
                 "counters (run `flopwatt sources`)");
}

void add_suite_context(const Suites& s) {
  benchmark::AddCustomContext(
      "flopwatt_roofline",
      s.roofs.host ? "roof_fraction: each host GEMM and GPT-2 op row's FLOP/s over its roof (for an op without "
                         "FLOPs its roof time over its time), from the ceilings in " + s.roof_why +
                         "; a row above " + fmt::format("{:.0f}%", 100 * kRoofTolerance) +
                         " is labelled and warned about on stderr, the warning naming the likely causes"
                   : "no roof_fraction: no stored ceilings for this machine and thread count (" + s.roof_why +
                         "); `flopwatt run peak` stores them");
  if (!s.skipped.empty()) benchmark::AddCustomContext("flopwatt_skipped_backends", join(s.skipped, "; "));
}

void add_idle_context(EnergyMeter& meter) {
  Run idle_run;
  meter.measure_idle(idle_run);
  for (const auto& [id, f] : idle_run.idle)
    benchmark::AddCustomContext("flopwatt_idle_w:" + id, fmt::format("{:.4g}", f.power_w));
}

// The run the results store records, its measurements added after the benchmarks.
Run start_record(const BenchArgs& a, const EnergyMeter& meter) {
  Run record;
  record.flopwatt_version = FLOPWATT_VERSION;
  record.run_id = make_run_id();
  record.context = collect_context(a.power.sysfs_root, {});
  record.context["command"] = "flopwatt_bench";
  if (char host[256] = {}; ::gethostname(host, sizeof host - 1) == 0) record.context["hostname"] = store::clean_text(host);
  if (const char* l = std::getenv("FLOPWATT_MACHINE_LABEL"); l && *l) record.context["machine_label"] = store::clean_text(l);
  record.power_sources = meter.source_infos();
  return record;
}

void warn_supply_changes(const power::SupplyMonitor& supply) {
  const auto changes = supply.track().changes();
  if (changes.empty()) return;
  std::vector<std::string> what;
  for (const auto& c : changes) what.push_back(c.what + " " + c.old_value + " -> " + c.new_value);
  fmt::print(stderr,
             "flopwatt_bench: warning: the power supply changed during the run ({}); loops that overlapped a "
             "change, or ran on a battery headline after one, carry supply_changed=1 and no energy counters\n",
             join(what, ", "));
}

int bench_main(int argc, char** argv) {
  BenchArgs a;
  std::vector<Flag> flags = bench_flags(a);
  const bool no_store = take_no_store(argc, argv);
  take_flags(argc, argv, flags, a.help);
  if (a.help) print_help(flags);
  const double reported_min_s = reported_loop_min_s(argc, argv);  // Initialize consumes the flag
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 2;
  const DType dt = check_args(a);

  EnergyMeter meter(a.power);
  // Mains or battery at the start, watched through the run as `run` does (a
  // machine without a power supply class, a desktop or a VM, has none to watch).
  const auto supply_at_start = power::read_power_state(a.power.sysfs_root);
  std::unique_ptr<power::SupplyMonitor> supply;
  if (supply_at_start) supply = std::make_unique<power::SupplyMonitor>(a.power.sysfs_root);
  // Half the reported length: a later repetition may fall slightly short of it and is still reported.
  gbench::EnergyOptions eo{a.power_counters == "all", 0.5 * reported_min_s, supply.get()};
  Suites suites(&meter, eo);
  register_suites(suites, a, dt, meter);
  add_power_context(a, meter, supply_at_start);
  add_suite_context(suites);

  meter.start();
  if (a.power.idle_s > 0) add_idle_context(meter);
  meter.drain_samples();  // the bench keeps no sample log; only the windows matter
  if (supply) supply->start();
  Run record = start_record(a, meter);
  gbench::RecordingReporter reporter(benchmark::CreateDefaultDisplayReporter());
  benchmark::RunSpecifiedBenchmarks(&reporter);
  meter.stop();
  if (supply) {
    supply->stop();
    warn_supply_changes(*supply);
  }
  for (const auto& r : suites.above_roof)
    fmt::print(stderr, "flopwatt_bench: {}\n", above_roof_warning(r));
  record.complete = true;
  record.measurements = reporter.measurements(omp_get_max_threads());
  if (!record.measurements.empty())
    store::record_finished_run(record, "", {a.store, no_store, false, {}, nullptr}, stderr);
  benchmark::Shutdown();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return bench_main(argc, argv);
  } catch (const flopwatt::InputError& e) {
    fmt::print(stderr, "flopwatt_bench: {}\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    fmt::print(stderr, "flopwatt_bench: internal error: {}\n", e.what());
    return 1;
  }
}

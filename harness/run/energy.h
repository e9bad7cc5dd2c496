// Joins measurements with energy windows: owns the sampler, the idle baseline
// and the headline-source choice; turns a [t0, t1] window into EnergyFigures
// per source (gross, net, FLOP/J, confidence).
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "harness/output/run_model.h"
#include "power/sampler.h"
#include "power/supply_track.h"

namespace flopwatt {

struct PowerOptions {
  std::string power = "auto";       // auto | none | ID[,ID..]
  std::string sysfs_root;           // empty: FLOPWATT_SYSFS_ROOT or "/"
  std::string power_log;            // external meter log / pipe
  double idle_s = 3.0;
  double sample_period_s = 0.010;
  std::string headline_domain;      // empty: widest available
};

// Net energy of a window above the idle baseline, and net FLOP/J, only when
// the net clears the noise: twice the idle windows' spread over the window
// (power/net_energy.h) and 1% of the gross energy (a meter's resolution; a
// perfectly steady idle trace has no spread). Otherwise both stay null and
// why_low says which bound it missed. One rule for GEMM windows, GPT-2 steps
// and per-op sums.
// The baseline must apply: at least kMinIdleSamples samples and two parts
// with samples behind it, and the window's supply (`window_supply`, "mains"
// or "battery"; empty when unknown) the one it was taken on; otherwise net
// figures are null with the reason.
inline constexpr int kMinIdleSamples = 3;
void apply_net(EnergyFigures& f, const IdleFigure& idle, double window_s, double flop,
               const std::string& window_supply = {});

class EnergyMeter;
// The judgement of one measurement window by power/headline.h's rule, the one
// every front end (run, console, report, campaign, flopwatt_bench) shares:
// each source's figure in m.energy is checked by power::figure_usability (the
// supply and battery state over [t0, t1] from `track`, or from one poll now
// when null; plausibility; a counter that does not advance); a figure it
// refuses keeps its J and W, loses FLOP/J and net figures, and says why. The
// window's headline is then power::choose_headline over those figures, kept in
// m.headline_source / m.headline_why. Judging twice changes nothing more.
void judge_window(Measurement& m, const EnergyMeter& meter, const power::SupplyTrack* track, std::int64_t t0_ns,
                  std::int64_t t1_ns);

class EnergyMeter {
 public:
  explicit EnergyMeter(const PowerOptions& o);
  ~EnergyMeter();
  bool active() const;                                   // any source sampling
  std::vector<PowerSourceInfo> source_infos() const;    // for Run::power_sources
  // The source the headline rule picks before any window is judged (every
  // source taken as usable, batteries by the supply at the start). A plan,
  // never a figure's source: it only says whose gauge interval lengthens a
  // GEMM loop and whose sample past a window's end is waited for. Each
  // window's headline is judge_window's, and a run's is derived from its
  // rows (harness/output/headline_view.h, run_headline).
  std::optional<std::string> expected_headline() const;
  // Longest update interval among gauges (0 when none): a slow gauge's
  // sample after a window's end is waited for, so `run gpt2` defers its step
  // windows' energy past the loop when one is sampled.
  double slowest_gauge_interval_s() const;
  // The update interval of the headline source when it is a gauge (0 when it
  // is a counter or there is none): the GEMM loop is lengthened so each window
  // covers >= 3 of them. A gauge that cannot be the headline (a charging
  // battery, hwmon next to RAPL) lengthens nothing.
  double headline_gauge_interval_s() const;
  // The sources as discovered (for judge_window), the sysfs root, --headline-domain.
  const std::vector<power::SourceStatus>& status() const;
  const std::string& sysfs_root() const;
  const std::string& headline_domain() const;
  // Where a source was gone (reads failing: a battery removed) during the run:
  // its windows overlapping a gap get no energy. For context.source_gaps.
  nlohmann::json source_gaps() const;
  void start();
  void stop();
  // The run's supply monitor, polled at each judged window's end (null: none).
  void watch_supply(power::SupplyMonitor* s);
  // judge_window over [t0, t1] with the watched supply (polled now, after
  // the window), else one poll of the supply now.
  void judge(Measurement& m, std::int64_t t0_ns, std::int64_t t1_ns) const;
  // "mains" or "battery" over [t0, t1] as the watched supply saw it; empty
  // when no supply is watched or it changed.
  std::string supply_name(std::int64_t t0_ns, std::int64_t t1_ns) const;
  // Sleeps opts.idle_s measuring idle power per source, as the mean and the
  // spread of its parts; fills run.idle.
  void measure_idle(Run& run);
  // Energy per source over [t0, t1]; with net, also the net figures (apply_net).
  // A caller summing many short windows asks for net=false and applies the
  // rule to the sum. Each source's sample past t1 is waited for (at most about
  // two of its update intervals); with wait_all false only the headline
  // source's is, so a slow gauge that cannot be the headline delays nothing.
  std::map<std::string, EnergyFigures> window(std::int64_t t0_ns, std::int64_t t1_ns, double flop, bool net = true,
                                              bool wait_all = true);
  std::vector<power::SourceSamples> drain_samples();
  // power::Sampler::forget_before: bounds a long-lived meter's memory.
  void forget_before(std::int64_t t_ns);
  static std::int64_t now_ns();
  // The battery sources (domain "battery"), each with the batteries it reads
  // ("BAT0"; several for a summed source).
  std::map<std::string, std::vector<std::string>> battery_sources() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace flopwatt

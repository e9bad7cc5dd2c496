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
void apply_net(EnergyFigures& f, const IdleFigure& idle, double window_s, double flop);

class EnergyMeter;
// A battery's gauge is the machine's draw only while it discharges
// (Documentation/ABI/testing/sysfs-class-power, power_now/current_now): after
// a plug-in it reports the power going into it. Each battery source's figures
// in `energy` whose batteries were not discharging throughout [t0, t1] (as the
// supply track saw them) lose their FLOP/J and net figures and are marked low
// confidence with the reason. Returns the ids so discounted.
std::vector<std::string> discount_non_discharging_batteries(std::map<std::string, EnergyFigures>& energy,
                                                            const EnergyMeter& meter, const power::SupplyTrack& track,
                                                            std::int64_t t0_ns, std::int64_t t1_ns);

class EnergyMeter {
 public:
  explicit EnergyMeter(const PowerOptions& o);
  ~EnergyMeter();
  bool active() const;                                   // any source sampling
  std::vector<PowerSourceInfo> source_infos() const;    // for Run::power_sources
  std::optional<std::string> headline_source() const;
  // How the headline source was chosen (source, runner_up, rule, why); null
  // when no source is sampled. Recorded as the run context's "headline".
  nlohmann::json headline_choice() const;
  // Longest update interval among gauges (0 when none): the GEMM loop is
  // lengthened so each window covers >= 3 of them.
  double slowest_gauge_interval_s() const;
  void start();
  void stop();
  // Sleeps opts.idle_s measuring idle power per source, as the mean and the
  // spread of its parts; fills run.idle.
  void measure_idle(Run& run);
  // Energy per source over [t0, t1]; with net, also the net figures (apply_net).
  // A caller summing many short windows asks for net=false and applies the
  // rule to the sum.
  std::map<std::string, EnergyFigures> window(std::int64_t t0_ns, std::int64_t t1_ns, double flop, bool net = true);
  std::vector<power::SourceSamples> drain_samples();
  static std::int64_t now_ns();
  // The battery sources (domain "battery"), each with the batteries it reads
  // ("BAT0"; several for a summed source).
  std::map<std::string, std::vector<std::string>> battery_sources() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace flopwatt

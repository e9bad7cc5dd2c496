// What `flopwatt serve` exports, from one sampler started once and shared by
// every scrape (a scrape reads what the sampler has; it opens no source):
//  - per source: energy as a counter (the source's own count since it was
//    opened, wraps and resets undone by the source as for every run; a
//    gauge's power integrated over its samples), mean power over the last
//    judged window, and an info metric with that window's confidence and why
//    (its numbers as "#", so the label takes few values);
//  - the supply state (mains, battery, unknown);
//  - the headline source, as judge_window (harness/run/energy.h) judges the
//    last window: the one rule every run row gets;
//  - the latest stored result of each machine and configuration
//    (harness/prom/run_metrics.h), read from the results store.
#pragma once
#include <atomic>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <prometheus/metric_family.h>

#include "harness/output/run_model.h"
#include "harness/prom/run_metrics.h"
#include "harness/run/energy.h"
#include "harness/store/store.h"
#include "power/supply_track.h"

namespace flopwatt::serve {

struct ExporterOptions {
  PowerOptions power;
  std::string store;
  bool no_store = false;
  double window_s = 5.0;            // the judged window's length
  double tick_s = 1.0;              // how often the window is judged again
  double results_refresh_s = 10.0;  // how often the store is read for new runs
};

class Exporter {
 public:
  // Discovers the sources (throws InputError for a bad --power).
  explicit Exporter(const ExporterOptions& o);
  ~Exporter();
  Exporter(const Exporter&) = delete;
  Exporter& operator=(const Exporter&) = delete;

  // Starts the sampler, the supply monitor and the thread that judges the
  // last window each tick and reads the store.
  void start();
  void stop();
  // Every family, with each counter as of now. Safe from any thread.
  std::vector<prometheus::MetricFamily> collect();
  // False with why when the judging thread has not ticked for 3 ticks.
  bool healthy(std::string& why) const;

 private:
  struct Track {
    std::string id, domain, device, kind;
    bool counter = true;
    double total_j = 0;
    std::optional<double> last_t_s, last_value;  // the last sample taken in
  };
  struct Judged {
    bool have = false;
    std::map<std::string, EnergyFigures> figures;
    std::optional<std::string> headline;
    std::string why;
  };
  void take_samples();  // mu_ held
  void judge();
  void read_results();
  void loop();

  ExporterOptions opts_;
  std::unique_ptr<EnergyMeter> meter_;
  std::unique_ptr<power::SupplyMonitor> supply_;
  std::vector<Track> tracks_;

  mutable std::mutex mu_;  // guards everything below and the meter's samples' draining
  Judged judged_;
  std::map<std::string, prom::ResultRow> results_;  // by machine and configuration
  std::set<std::string> runs_seen_;
  std::unique_ptr<store::Store> store_;
  std::optional<bool> store_ok_;
  std::int64_t last_tick_ns_ = 0;
  // Wall-clock ms minus monotonic ms, taken once: stamps from one offset keep the
  // samples' order (recomputed per scrape, two clock reads jittered a stamp 1 ms back).
  std::int64_t wall_minus_mono_ms_ = 0;

  std::mutex wake_mu_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace flopwatt::serve

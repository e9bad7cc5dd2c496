// flopwatt's public C++ API: measure the time and energy of named windows of
// your own code, with the discovery, sampling and headline rules of the
// `flopwatt` command itself (power/headline.h: a charging battery or one on
// mains is never the headline; a figure outside physics is refused; a source
// that went away is a gap, not joules).
//
//   flopwatt::Meter meter;                 // discovers the sources, starts sampling
//   auto w = meter.begin("step");
//   train_step();
//   flopwatt::WindowResult r = meter.end(w, /*flop=*/step_flop);
//   if (r.energy_j) printf("%s: %.3f J\n", r.headline->c_str(), *r.energy_j);
//
// Windows may nest and overlap, and any thread may begin or end any window.
// The header depends on the standard library only; link with the CMake target
// flopwatt::flopwatt or `pkg-config --libs flopwatt`.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "flopwatt/bench_label.h"

#define FLOPWATT_PUBLIC __attribute__((visibility("default")))

namespace flopwatt {

// The installed library's version (the SONAME carries the major number).
FLOPWATT_PUBLIC const char* version();

struct MeterOptions {
  std::string power = "auto";    // auto | none | ID[,ID..] as `flopwatt sources` lists them
  std::string sysfs_root;        // empty: $FLOPWATT_SYSFS_ROOT, else "/"
  std::string power_log;         // an external meter's log or pipe ("t_seconds,watts" lines)
  double sample_period_s = 0.010;
  std::string headline_domain;   // empty: the widest domain available
  // How long samples are kept, so a meter living through a days-long run
  // stays small: a window can be judged until this long after it began
  // (an open window's samples are kept however old it is). 0: keep all.
  double history_s = 3600;
  // A Prometheus Pushgateway (http://HOST:PORT) to push the judged windows to,
  // as `flopwatt run --pushgateway` does a run's results: per window name a
  // histogram of durations, and per headline source a histogram of energy
  // and the FLOP of those windows (flopwatt_meter_window_*, docs/prometheus.md),
  // under job "flopwatt" and the grouping key machine and run_id. Empty:
  // $FLOPWATT_PUSHGATEWAY, else no push. A thread of the meter's own pushes,
  // at most once a second, each push bounded by push_timeout_s, and once more
  // when the meter is destroyed; a failed push is a warning on stderr, never
  // an exception or a wait in the caller of end() or result().
  std::string pushgateway;
  std::string machine;  // the grouping key's machine; empty: this host's name
  std::string run_id;   // the grouping key's run_id; empty: a new id like a run's (Meter::run_id())
  double push_timeout_s = 5.0;
};

// One power source as discovered: unavailable ones say why and how to fix it.
struct SourceInfo {
  std::string id;
  std::string domain;            // "package", "psys", "battery", "wall", ...
  bool available = false;
  std::string reason;            // why it is unavailable (empty when available)
  std::string fix;               // what would make it available
};

// One source's figures over a window.
struct SourceFigure {
  std::string id;
  std::string domain;
  double energy_j = 0;
  double avg_power_w = 0;
  std::optional<double> flop_per_j;  // only for a usable figure and flop > 0
  bool low_confidence = false;
  std::string why_low;               // the reason for low confidence or for a refused figure
  bool gap = false;                  // the source was gone for part of the window: no figure
};

struct WindowResult {
  std::string name;
  double duration_s = 0;
  double flop = 0;
  std::optional<double> flop_per_s;  // when flop > 0
  std::vector<SourceFigure> sources;
  // The headline source (the figure to quote) and why it was chosen, or why
  // there is none; energy_j, avg_power_w and flop_per_j are its figures.
  std::optional<std::string> headline;
  std::string headline_why;
  std::optional<double> energy_j;
  std::optional<double> avg_power_w;
  std::optional<double> flop_per_j;
  // "mains" or "battery" through the whole window; "changed" when the supply
  // changed inside it; empty when the machine has no power supply class.
  std::string supply;
  std::vector<std::string> notes;
};

// kLabelSource, kLabelLow and label_source(): how a Google Benchmark row names
// the source of its energy counters (flopwatt/bench_label.h).

class FLOPWATT_PUBLIC Meter {
 public:
  // A handle of an open window; ending it twice, or a handle of another
  // meter, is a std::invalid_argument.
  struct Window {
    std::uint64_t id = 0;
    std::uint32_t slot = 0;
  };

  // Discovers the power sources and starts the sampler thread (and a monitor
  // of the power supply when the machine has one). Bad options (an unknown
  // source id, a power log that cannot be opened) throw std::runtime_error
  // with a one-line message naming the option and the fix.
  explicit Meter(const MeterOptions& options = {});
  ~Meter();
  Meter(const Meter&) = delete;
  Meter& operator=(const Meter&) = delete;

  // True when at least one source is sampled; without one, windows carry
  // time only and headline_why says why.
  bool active() const;
  std::vector<SourceInfo> sources() const;
  // The headline source of the last window judged (by end() or result()),
  // nullopt before any or when that window had none. Each window is judged
  // on its own: WindowResult::headline is the source of its figures, and two
  // windows may have different ones (a counter that stopped, a battery that
  // began charging); there is no meter-wide headline chosen in advance.
  std::optional<std::string> headline_source() const;
  // The run_id of the meter's Pushgateway group (MeterOptions::run_id, or the
  // one made for it), also when it does not push.
  const std::string& run_id() const;

  // Opens a window now. Cheap: a clock read and a slot; no allocation once a
  // slot has held a name as long.
  Window begin(const std::string& name);
  // A window closed but not yet judged: its name, its ends on the meter's
  // clock (CLOCK_MONOTONIC) and its FLOP. A plain value; judge it any time
  // while the meter lives, as often as you like.
  struct Closed {
    std::uint64_t id = 0;  // the window's; a pushed window counts once, at its first judgement
    std::string name;
    std::int64_t t0_ns = 0;
    std::int64_t t1_ns = 0;
    double flop = 0;
  };

  // Closes the window now and judges it: close() then result(). The headline
  // source needs a sample past the window's end: a counter (RAPL) is read
  // there and then, on the calling thread, so end() returns in microseconds;
  // a gauge read less than a quarter of its update interval ago is waited
  // for (at most about two of its update intervals), so a window on a slow
  // gauge (a battery updating every few seconds) should be that long or
  // more, and a loop that must not stall should close() instead.
  WindowResult end(Window w, double flop = 0);
  // Closes the window now without waiting for anything: a clock read and a
  // slot freed (no allocation for a name short enough for the string's own
  // buffer). What a training loop calls at each step's end.
  Closed close(Window w, double flop = 0);
  // Judges a closed window by the same rule as end(), reading or waiting as
  // end() does only while no sample past its end is in, so results asked for after
  // the loop cost no waiting; windows that end before the last poll of the
  // power supply share that poll. A window that began more than
  // MeterOptions::history_s ago has no energy figures, and says so.
  WindowResult result(const Closed& c);

 private:
  void start_pushes(const MeterOptions& o);
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace flopwatt

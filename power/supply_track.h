// The supply state as a time series: what a run polls while it measures, so
// a plug or unplug, or a battery that starts or stops charging, is recorded
// with its time and the windows overlapping it can be flagged.
#pragma once
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <thread>
#include <string>
#include <vector>

#include "power/headline.h"
#include "power/power_state.h"

namespace flopwatt::power {

enum class Supply { Mains, Battery, Unknown };
const char* to_string(Supply s);  // "mains", "battery", "unknown"

// Mains or battery from one snapshot: the adapter's online flag when there is
// one; otherwise the batteries' status (Documentation/ABI/testing/
// sysfs-class-power, status: Charging, Full and "Not charging" need a charger
// attached, Discharging means none).
Supply supply_of(const std::optional<PowerState>& ps);

// What one battery is doing, for the headline rule.
ChargeState charge_state_of(BatteryStatus s);

struct SupplyChange {
  std::int64_t t_ns = 0;       // the poll that saw the change
  std::int64_t after_ns = 0;   // the poll before it: the change happened in (after_ns, t_ns]
  std::string what;            // "supply" or "battery:BAT0"
  std::string old_value, new_value;  // "mains"/"battery"/"unknown", or a battery status
};

class SupplyTrack {
 public:
  // Feeds one snapshot taken at t_ns (polls must come in time order); returns
  // the changes it found against the previous one (none at the first).
  std::vector<SupplyChange> observe(const std::optional<PowerState>& ps, std::int64_t t_ns);
  // Reads <root>/sys/class/power_supply now and observes it.
  std::vector<SupplyChange> poll(const std::string& root, std::int64_t t_ns);

  const std::vector<SupplyChange>& changes() const { return changes_; }
  std::optional<Supply> first_supply() const { return first_; }
  std::optional<Supply> last_supply() const { return last_; }
  std::int64_t polls() const { return polls_; }
  std::int64_t last_poll_ns() const { return last_ns_; }  // 0 before the first
  // True when a change may have happened inside [t0, t1] (its (after, t]
  // interval overlaps the window), or when no poll covers the window's ends.
  bool changed_during(std::int64_t t0_ns, std::int64_t t1_ns) const;
  // A battery's state over [t0, t1] as the last poll at or before t1 saw it,
  // Changed when its status changed inside the window, Unknown when never seen.
  ChargeState battery_state_over(const std::string& battery, std::int64_t t0_ns, std::int64_t t1_ns) const;
  // The combined state of several batteries (a summed source): Discharging
  // when at least one discharges and none charges or changed.
  ChargeState batteries_state_over(const std::vector<std::string>& batteries, std::int64_t t0_ns,
                                   std::int64_t t1_ns) const;
  // Mains or battery over [t0, t1] as the last poll at or before t1 saw it;
  // Unknown when it changed inside the window or was never seen.
  Supply supply_over(std::int64_t t0_ns, std::int64_t t1_ns) const;

 private:
  struct Poll {
    std::int64_t t_ns;
    Supply supply;
    std::vector<std::pair<std::string, BatteryStatus>> batteries;
  };
  std::vector<Poll> polls_list_;  // only polls that differ from their predecessor, plus the first
  std::vector<SupplyChange> changes_;
  std::optional<Supply> first_, last_;
  std::int64_t polls_ = 0, first_ns_ = 0, last_ns_ = 0;
};

// Polls <root>/sys/class/power_supply on a thread of its own, so a plug or
// unplug inside a long measurement is seen within one period. Reading
// power_supply costs an ACPI round trip (milliseconds), hence a slow default.
class SupplyMonitor {
 public:
  // now_ns: the clock of the measurement windows (CLOCK_MONOTONIC).
  explicit SupplyMonitor(std::string root, double period_s = 1.0);
  ~SupplyMonitor();
  SupplyMonitor(const SupplyMonitor&) = delete;
  SupplyMonitor& operator=(const SupplyMonitor&) = delete;
  void start();  // polls once at once, then every period
  void stop();   // joins the thread after one last poll
  void poll_now();  // an extra poll (at a window's edge, say)
  // Makes the track cover t_ns: polls now unless a poll at or after
  // t_ns - kReuseNs is already in it. A window's end needs a poll near it;
  // windows ending together (a loop's windows, a result asked for late)
  // share one, so a loop of short windows reads power_supply (a tenth of a
  // millisecond from sysfs, milliseconds through ACPI) at most ten times a
  // second rather than once a window. The price: a plug or unplug in a
  // window's last 0.1 s is not seen by that window, and the next window,
  // whose polls bracket it, is flagged as changed instead.
  static constexpr std::int64_t kReuseNs = 100'000'000;
  void cover(std::int64_t t_ns);
  SupplyTrack track() const;  // a copy, safe while the thread runs

 private:
  void loop();
  std::string root_;
  double period_s_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false, running_ = false;
  SupplyTrack track_;
  std::thread thread_;
};

}  // namespace flopwatt::power

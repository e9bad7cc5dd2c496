#include "power/supply_track.h"

#include <algorithm>
#include <chrono>

#include "power/clock.h"

namespace flopwatt::power {

const char* to_string(Supply s) {
  switch (s) {
    case Supply::Mains: return "mains";
    case Supply::Battery: return "battery";
    default: return "unknown";
  }
}

Supply supply_of(const std::optional<PowerState>& ps) {
  if (!ps || !ps->ac_online) return Supply::Unknown;
  return *ps->ac_online ? Supply::Mains : Supply::Battery;
}

ChargeState charge_state_of(BatteryStatus s) {
  switch (s) {
    case BatteryStatus::Discharging: return ChargeState::Discharging;
    case BatteryStatus::Charging: return ChargeState::Charging;
    case BatteryStatus::Full:
    case BatteryStatus::NotCharging: return ChargeState::Idle;
    default: return ChargeState::Unknown;
  }
}

std::vector<SupplyChange> SupplyTrack::observe(const std::optional<PowerState>& ps, std::int64_t t_ns) {
  Poll p{t_ns, supply_of(ps), {}};
  if (ps)
    for (const auto& b : ps->batteries) p.batteries.emplace_back(b.name, b.status);
  std::vector<SupplyChange> found;
  if (polls_ == 0) {
    first_ = p.supply;
    first_ns_ = t_ns;
    polls_list_.push_back(std::move(p));
  } else {
    const Poll& prev = polls_list_.back();
    if (prev.supply != p.supply)
      found.push_back({t_ns, last_ns_, "supply", to_string(prev.supply), to_string(p.supply)});
    auto status_in = [](const Poll& q, const std::string& n) -> std::string {
      for (const auto& [name, st] : q.batteries)
        if (name == n) return to_string(st);
      return "absent";
    };
    std::vector<std::string> names;
    for (const auto& [n, st] : prev.batteries) names.push_back(n);
    for (const auto& [n, st] : p.batteries)
      if (std::find(names.begin(), names.end(), n) == names.end()) names.push_back(n);
    for (const auto& n : names) {
      const std::string a = status_in(prev, n), b = status_in(p, n);
      if (a != b) found.push_back({t_ns, last_ns_, "battery:" + n, a, b});
    }
    if (!found.empty()) polls_list_.push_back(std::move(p));
  }
  last_ = supply_of(ps);
  last_ns_ = t_ns;
  ++polls_;
  changes_.insert(changes_.end(), found.begin(), found.end());
  return found;
}

std::vector<SupplyChange> SupplyTrack::poll(const std::string& root, std::int64_t t_ns) {
  return observe(read_supply_state(root), t_ns);
}

bool SupplyTrack::changed_during(std::int64_t t0, std::int64_t t1) const {
  for (const auto& c : changes_)
    if (c.after_ns < t1 && c.t_ns > t0) return true;
  return false;
}

ChargeState SupplyTrack::battery_state_over(const std::string& battery, std::int64_t t0, std::int64_t t1) const {
  for (const auto& c : changes_)
    if (c.what == "battery:" + battery && c.after_ns < t1 && c.t_ns > t0) return ChargeState::Changed;
  const Poll* at = nullptr;
  for (const auto& p : polls_list_)
    if (p.t_ns <= t1) at = &p;
  if (!at && !polls_list_.empty()) at = &polls_list_.front();
  if (!at) return ChargeState::Unknown;
  for (const auto& [n, st] : at->batteries)
    if (n == battery) return charge_state_of(st);
  return ChargeState::Unknown;
}

Supply SupplyTrack::supply_over(std::int64_t t0, std::int64_t t1) const {
  for (const auto& c : changes_)
    if (c.what == "supply" && c.after_ns < t1 && c.t_ns > t0) return Supply::Unknown;
  const Poll* at = nullptr;
  for (const auto& p : polls_list_)
    if (p.t_ns <= t1) at = &p;
  if (!at && !polls_list_.empty()) at = &polls_list_.front();
  return at ? at->supply : Supply::Unknown;
}

ChargeState SupplyTrack::batteries_state_over(const std::vector<std::string>& batteries, std::int64_t t0,
                                              std::int64_t t1) const {
  bool any_discharging = false, any_idle = false;
  for (const auto& b : batteries) {
    const ChargeState s = battery_state_over(b, t0, t1);
    if (s == ChargeState::Changed || s == ChargeState::Charging) return s;
    any_discharging = any_discharging || s == ChargeState::Discharging;
    any_idle = any_idle || s == ChargeState::Idle;
  }
  if (any_discharging) return ChargeState::Discharging;
  return any_idle ? ChargeState::Idle : ChargeState::Unknown;
}

SupplyMonitor::SupplyMonitor(std::string root, double period_s) : root_(std::move(root)), period_s_(period_s) {}

SupplyMonitor::~SupplyMonitor() { stop(); }

void SupplyMonitor::poll_now() {
  // Read outside the lock (it can take milliseconds); observe in time order under it.
  auto ps = read_supply_state(root_);
  std::lock_guard<std::mutex> g(mu_);
  track_.observe(ps, monotonic_ns());
}

void SupplyMonitor::cover(std::int64_t t_ns) {
  {
    std::lock_guard<std::mutex> g(mu_);
    if (track_.polls() > 0 && track_.last_poll_ns() >= t_ns - kReuseNs) return;
  }
  poll_now();
}

void SupplyMonitor::start() {
  std::lock_guard<std::mutex> g(mu_);
  if (running_) return;
  running_ = true;
  stop_ = false;
  thread_ = std::thread([this] { loop(); });
}

void SupplyMonitor::stop() {
  {
    std::lock_guard<std::mutex> g(mu_);
    if (!running_) return;
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
  poll_now();
  std::lock_guard<std::mutex> g(mu_);
  running_ = false;
}

SupplyTrack SupplyMonitor::track() const {
  std::lock_guard<std::mutex> g(mu_);
  return track_;
}

void SupplyMonitor::loop() {
  for (;;) {
    poll_now();
    std::unique_lock<std::mutex> l(mu_);
    if (cv_.wait_for(l, std::chrono::duration<double>(period_s_), [this] { return stop_; })) return;
  }
}

}  // namespace flopwatt::power

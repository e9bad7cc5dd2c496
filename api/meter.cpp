#include "flopwatt/meter.h"

#include <unistd.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <stdexcept>

#include "harness/output/version.h"
#include "harness/run/energy.h"
#include "harness/run/run_options.h"
#include "harness/run/run_setup.h"
#include "harness/run/session.h"
#include "power/external_log.h"
#include "power/power_state.h"
#include "power/supply_track.h"
#include "window_push.h"
#include "window_result.h"
#include "workloads/error.h"

namespace flopwatt {

namespace {
struct Slot {
  std::uint64_t id = 0;  // 0: free
  std::int64_t t0_ns = 0;
  std::string name;      // kept when freed, so its capacity is reused
};
}  // namespace

const char* version() { return FLOPWATT_VERSION; }

struct Meter::Impl {
  std::string root;
  std::unique_ptr<EnergyMeter> energy;
  std::unique_ptr<power::SupplyMonitor> supply;
  std::map<std::string, std::string> domains;
  std::mutex mu;  // the slots and the id counter; the meter's own parts lock themselves
  std::vector<Slot> slots;
  std::vector<std::uint32_t> free;
  std::uint64_t next_id = 1;
  std::int64_t history_ns = 0;    // 0: keep every sample
  std::int64_t last_prune_ns = 0;  // guarded by mu
  std::int64_t forgotten_ns = 0;   // guarded by mu: samples before it are gone
  std::optional<std::string> last_headline;  // guarded by mu: the last judged window's
  std::string run_id;
  std::unique_ptr<WindowPusher> pusher;       // null: no push
  std::map<std::uint64_t, std::int64_t> pushed;  // guarded by mu: ids of windows pushed -> their t0, pruned with samples

  // Drops samples older than the history, but never an open window's, at
  // most four times per history length (an erase from the front is linear).
  // Returns the time before which samples are gone.
  std::int64_t prune() {
    std::int64_t horizon;
    {
      std::lock_guard lock(mu);
      const std::int64_t now = EnergyMeter::now_ns();
      if (history_ns <= 0 || now - last_prune_ns < history_ns / 4) return forgotten_ns;
      last_prune_ns = now;
      horizon = now - history_ns;
      for (const Slot& s : slots)
        if (s.id != 0) horizon = std::min(horizon, s.t0_ns);
      if (horizon <= forgotten_ns) return forgotten_ns;
      // Raised before the samples go, so a result racing with this prune
      // refuses its window rather than integrating half its samples.
      forgotten_ns = horizon;
      for (auto it = pushed.begin(); it != pushed.end();) it = it->second < horizon ? pushed.erase(it) : std::next(it);
    }
    energy->forget_before(horizon);
    return horizon;
  }
};

Meter::Meter(const MeterOptions& o) : impl_(std::make_unique<Impl>()) {
  PowerOptions p;
  p.power = o.power;
  p.sysfs_root = o.sysfs_root;
  p.power_log = o.power_log;
  p.sample_period_s = o.sample_period_s;
  p.headline_domain = o.headline_domain;
  p.idle_s = 0;  // a library user's windows are gross; net figures need a quiet machine we cannot promise
  impl_->history_ns = std::int64_t(std::max(0.0, o.history_s) * 1e9);
  impl_->root = resolve_sysfs_root(o.sysfs_root);
  impl_->energy = std::make_unique<EnergyMeter>(p);
  // A power log the user named and discovery could not open or parse is bad input, as for the
  // command's --power-log: an error here, never a meter that silently has no such source.
  if (!o.power_log.empty())
    for (const auto& s : impl_->energy->status())
      if (s.id == power::external_source_id(o.power_log) && !s.available)
        throw std::runtime_error("MeterOptions::power_log " + s.reason + (s.fix.empty() ? "" : "; fix: " + s.fix));
  impl_->domains = source_domains(*impl_->energy);
  if (power::read_power_state(impl_->root)) {
    impl_->supply = std::make_unique<power::SupplyMonitor>(impl_->root, kSupplyPollS);
    impl_->supply->start();
  }
  impl_->energy->watch_supply(impl_->supply.get());
  impl_->energy->start();
  impl_->run_id = o.run_id.empty() ? make_run_id() : o.run_id;
  start_pushes(o);
  impl_->slots.reserve(16);
  impl_->free.reserve(16);
}

// A bad gateway URL is bad input, as for the command's --pushgateway.
void Meter::start_pushes(const MeterOptions& o) {
  std::string url;
  try {
    url = prom::resolve_pushgateway(o.pushgateway);
  } catch (const InputError& e) {
    const std::string where = o.pushgateway.empty() ? e.where() : "MeterOptions::pushgateway " + o.pushgateway;
    throw std::runtime_error(where + ": " + e.problem() + (e.fix().empty() ? "" : "; fix: " + e.fix()));
  }
  if (url.empty()) return;
  std::string machine = o.machine;
  if (machine.empty()) {
    char host[256] = {};
    machine = ::gethostname(host, sizeof host - 1) == 0 && host[0] ? host : "unknown";
  }
  impl_->pusher = std::make_unique<WindowPusher>(prom::PushOptions{url, o.push_timeout_s}, machine, impl_->run_id);
}

Meter::~Meter() {
  impl_->energy->stop();
  if (impl_->supply) impl_->supply->stop();
}

bool Meter::active() const { return impl_->energy->active(); }

std::vector<SourceInfo> Meter::sources() const {
  std::vector<SourceInfo> v;
  for (const auto& s : impl_->energy->status()) v.push_back({s.id, s.domain, s.available, s.reason, s.fix});
  return v;
}

const std::string& Meter::run_id() const { return impl_->run_id; }

std::optional<std::string> Meter::headline_source() const {
  std::lock_guard lock(impl_->mu);
  return impl_->last_headline;
}

Meter::Window Meter::begin(const std::string& name) {
  const std::int64_t t0 = EnergyMeter::now_ns();
  std::lock_guard lock(impl_->mu);
  std::uint32_t slot;
  if (!impl_->free.empty()) {
    slot = impl_->free.back();
    impl_->free.pop_back();
  } else {
    slot = std::uint32_t(impl_->slots.size());
    impl_->slots.emplace_back();
  }
  Slot& s = impl_->slots[slot];
  s.id = impl_->next_id++;
  s.t0_ns = t0;
  s.name.assign(name);
  return {s.id, slot};
}

Meter::Closed Meter::close(Window w, double flop) {
  const std::int64_t t1 = EnergyMeter::now_ns();
  Closed c;
  c.t1_ns = t1;
  c.flop = flop;
  std::lock_guard lock(impl_->mu);
  if (w.id == 0 || w.slot >= impl_->slots.size() || impl_->slots[w.slot].id != w.id)
    throw std::invalid_argument("flopwatt::Meter: the window is not open (ended twice, or another meter's)");
  Slot& s = impl_->slots[w.slot];
  c.id = s.id;
  c.name.assign(s.name);
  c.t0_ns = s.t0_ns;
  s.id = 0;
  impl_->free.push_back(w.slot);
  return c;
}

WindowResult Meter::result(const Closed& c) {
  const WindowSpan span{c.t0_ns, c.t1_ns, c.flop, false};
  // The same judgement as every row of `flopwatt run`, and the same path as
  // flopwatt_bench's loops (window_result.h).
  const bool forgotten = c.t0_ns < impl_->prune();
  WindowResult r = forgotten
                       ? timing_only(span, "the window began more than MeterOptions::history_s ago and its samples "
                                           "were dropped; judge it sooner or raise history_s")
                       : window_result(*impl_->energy, impl_->supply.get(), impl_->domains, span);
  r.name = c.name;
  bool push = false;
  {
    std::lock_guard lock(impl_->mu);
    impl_->last_headline = r.headline;
    // Once per window, and only judged on its samples: one judged after they
    // were dropped was pushed when first judged, or never had its figures.
    push = impl_->pusher && c.id != 0 && !forgotten && impl_->pushed.emplace(c.id, c.t0_ns).second;
  }
  if (push) impl_->pusher->add(r);
  return r;
}

WindowResult Meter::end(Window w, double flop) { return result(close(w, flop)); }

}  // namespace flopwatt

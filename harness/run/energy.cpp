#include "harness/run/energy.h"
#include "harness/run/run_options.h"

#include <algorithm>
#include <cmath>
#include <chrono>
#include <cstdlib>
#include <sstream>
#include <thread>

#include <fmt/core.h>

#include "harness/output/text.h"
#include "harness/run/timing.h"
#include "power/headline.h"
#include "power/net_energy.h"
#include "power/supply_track.h"
#include "power/window_energy.h"
#include "workloads/error.h"

namespace flopwatt {

struct EnergyMeter::Impl {
  PowerOptions opts;
  std::vector<power::SourceStatus> status;
  std::unique_ptr<power::Sampler> sampler;
  std::map<std::string, IdleFigure> idle;
  std::optional<std::string> headline;  // expected_headline()
  bool running = false;
  power::SupplyMonitor* supply = nullptr;
  // The sampler's sources' ids in its order: PowerSource::id() returns a
  // copy, and every judged window names each source several times.
  std::vector<std::string> source_ids;
};

namespace {

// The batteries a battery source reads: its parts for a summed source
// ("battery:BAT0" -> "BAT0"), else its own id's.
std::vector<std::string> batteries_of(const std::string& id, const std::vector<std::string>& parts) {
  std::vector<std::string> bats;
  for (const auto& p : parts) bats.push_back(p.substr(p.find(':') + 1));
  if (bats.empty()) bats.push_back(id.substr(id.find(':') + 1));
  return bats;
}

// Whether a source's next sample past a window of `window_s` can still make a figure the rule may
// quote: a window shorter than power::min_trusted_window_s of a gauge is low confidence whatever
// arrives, so waiting up to two intervals of a slow gauge (a battery's
// seconds) only holds the window's end, as `measure -- true` was held 2.5 s and `--idle 1` over
// 15 s on a laptop whose headline is a fast counter. The expected headline is waited for anyway:
// without a sample past the end, a window between two of its samples is not covered at all.
bool worth_waiting(const power::PowerSource& s, double window_s) {
  const double interval = s.kind() == power::Kind::Gauge ? s.update_interval_s() : 0;
  return window_s >= power::min_trusted_window_s(interval);
}

constexpr int kIdleParts = 6;      // parts of the idle period, for its spread
constexpr double kNetFloor = 0.01;  // net energy below 1% of gross is not resolved

// The run's headline source: power::choose_headline (one rule for run,
// report and bench) over the sources sampled, with each battery's state from
// the supply as the run starts, so a charging or idle battery on mains never
// gives the headline FLOP/J.
power::HeadlineChoice choose_run_headline(const std::vector<std::unique_ptr<power::PowerSource>>& sources,
                                          const std::vector<power::SourceStatus>& status, const std::string& root,
                                          const std::string& only_domain) {
  power::SupplyTrack track;
  const std::int64_t t = monotonic_ns();
  track.poll(root, t);
  std::vector<power::HeadlineCandidate> cands;
  for (const auto& src : sources) {
    power::HeadlineCandidate h;
    h.id = src->id();
    h.domain = src->domain();
    h.has_energy = true;
    for (const auto& st : status)
      if (st.id == h.id) h.parts = st.sum_of;
    h.summed = !h.parts.empty();
    if (h.domain == "battery") h.charge = track.batteries_state_over(batteries_of(h.id, h.parts), t, t);
    cands.push_back(std::move(h));
  }
  return power::choose_headline(cands, only_domain);
}

}  // namespace

EnergyMeter::EnergyMeter(const PowerOptions& o) : impl_(std::make_unique<Impl>()) {
  impl_->opts = o;
  impl_->opts.sysfs_root = resolve_sysfs_root(impl_->opts.sysfs_root);
  if (o.power == "none") return;
  power::DiscoverOptions d;
  d.root = impl_->opts.sysfs_root;
  d.power_log = o.power_log;
  if (o.power != "auto") d.select = split_list(o.power);
  power::Discovery disc = power::discover(d);
  impl_->status = std::move(disc.status);
  if (!d.select.empty()) {
    for (const auto& want : d.select) {
      bool found = false;
      for (const auto& s : impl_->status) found = found || s.id.rfind(want, 0) == 0;
      if (!found)
        throw InputError("--power " + want, "no such power source",
                         "run `flopwatt sources` to list ids, or use --power auto|none");
    }
  }
  if (!o.headline_domain.empty() && !disc.sources.empty() &&
      std::none_of(disc.sources.begin(), disc.sources.end(),
                   [&](const auto& s) { return s->domain() == o.headline_domain; }))
    throw InputError("--headline-domain " + o.headline_domain, "no available source has this domain",
                     "pick one listed by `flopwatt sources`");
  if (!disc.sources.empty()) {
    const power::HeadlineChoice c =
        choose_run_headline(disc.sources, impl_->status, impl_->opts.sysfs_root, o.headline_domain);
    impl_->headline = c.source;
  }
  for (const auto& s : disc.sources) impl_->source_ids.push_back(s->id());
  if (!disc.sources.empty())
    impl_->sampler = std::make_unique<power::Sampler>(std::move(disc.sources), o.sample_period_s);
}

EnergyMeter::~EnergyMeter() { stop(); }

std::map<std::string, std::vector<std::string>> EnergyMeter::battery_sources() const {
  std::map<std::string, std::vector<std::string>> out;
  for (const auto& s : impl_->status)
    if (s.available && s.domain == "battery") out[s.id] = batteries_of(s.id, s.sum_of);
  return out;
}

void judge_window(Measurement& m, const EnergyMeter& meter, const power::SupplyTrack* track, std::int64_t t0,
                  std::int64_t t1) {
  power::SupplyTrack polled;
  if (!track) {
    polled.poll(meter.sysfs_root(), t1);
    track = &polled;
  }
  const power::Supply supply = track->supply_over(t0, t1);
  const power::DeviceClass device = power::device_class_of_backend(m.backend);
  std::vector<power::HeadlineCandidate> cands;
  std::vector<EnergyFigures*> figures;  // each candidate's
  cands.reserve(meter.status().size());
  figures.reserve(meter.status().size());
  for (const auto& s : meter.status()) {
    auto it = m.energy.find(s.id);
    if (!s.available || it == m.energy.end()) continue;
    EnergyFigures& f = it->second;
    power::HeadlineCandidate& h = cands.emplace_back();
    h.id = s.id;
    h.domain = s.domain;
    h.parts = s.sum_of;
    h.summed = !h.parts.empty();
    if (h.domain == "battery") h.charge = track->batteries_state_over(batteries_of(s.id, s.sum_of), t0, t1);
    if (supply != power::Supply::Unknown) h.on_mains = supply == power::Supply::Mains;
    h.has_energy = !f.gap;
    h.avg_power_w = f.avg_power_w;
    h.flop_per_j = f.flop_per_j;
    h.device = device;
    // A figure refused below never enters the choice, so its confidence as
    // the choice sees it is the one before the refusal. Its reason is lent
    // to the candidate and given back after the choice.
    h.low_confidence = f.confidence == "low";
    h.why_low = std::move(f.why_low);
    figures.push_back(&f);
  }
  power::HeadlineChoice c = power::choose_headline(cands, meter.headline_domain());
  for (std::size_t i = 0; i < cands.size(); ++i) {
    EnergyFigures& f = *figures[i];
    f.why_low = std::move(cands[i].why_low);
    if (const power::Usability& u = c.usability[i]; !u.usable && f.why_low.find(u.why) == std::string::npos) {
      f.flop_per_j.reset();
      f.net_j.reset();
      f.flop_per_j_net.reset();
      f.confidence = "low";
      f.why_low.insert(0, f.why_low.empty() ? "" : "; ").insert(0, u.why);
    }
  }
  m.headline_source = std::move(c.source);
  m.headline_why = std::move(c.why);
}

bool EnergyMeter::active() const { return impl_->sampler != nullptr; }

std::vector<PowerSourceInfo> EnergyMeter::source_infos() const {
  std::vector<PowerSourceInfo> v;
  for (const auto& s : impl_->status) {
    PowerSourceInfo p;
    p.id = s.id;
    p.domain = s.domain;
    p.kind = power::to_string(s.kind);
    p.available = s.available;
    if (!s.reason.empty()) p.reason = s.reason;
    if (!s.fix.empty()) p.fix = s.fix;
    if (s.update_interval_s > 0) p.update_interval_s = s.update_interval_s;
    p.contains = s.contains;
    if (!s.note.empty()) p.note = s.note;
    v.push_back(std::move(p));
  }
  if (impl_->sampler)  // the interval the sources themselves report once opened
    for (const auto& src : impl_->sampler->sources())
      for (auto& p : v)
        if (p.id == src->id()) p.update_interval_s = src->update_interval_s();
  return v;
}

std::optional<std::string> EnergyMeter::expected_headline() const { return impl_->headline; }

const std::vector<power::SourceStatus>& EnergyMeter::status() const { return impl_->status; }
const std::string& EnergyMeter::sysfs_root() const { return impl_->opts.sysfs_root; }
const std::string& EnergyMeter::headline_domain() const { return impl_->opts.headline_domain; }
void EnergyMeter::watch_supply(power::SupplyMonitor* s) { impl_->supply = s; }

std::string EnergyMeter::supply_name(std::int64_t t0, std::int64_t t1) const {
  if (!impl_->supply) return {};
  const power::Supply s = impl_->supply->track().supply_over(t0, t1);
  return s == power::Supply::Unknown ? std::string() : power::to_string(s);
}

void EnergyMeter::judge(Measurement& m, std::int64_t t0, std::int64_t t1) const {
  if (!impl_->supply) return judge_window(m, *this, nullptr, t0, t1);
  impl_->supply->cover(t1);  // a poll after t1: the window's end is covered
  const power::SupplyTrack track = impl_->supply->track();
  judge_window(m, *this, &track, t0, t1);
}

double EnergyMeter::headline_gauge_interval_s() const {
  if (!impl_->sampler || !impl_->headline) return 0;
  for (const auto& s : impl_->sampler->sources())
    if (s->id() == *impl_->headline && s->kind() == power::Kind::Gauge) return s->update_interval_s();
  return 0;
}

double EnergyMeter::slowest_gauge_interval_s() const {
  double m = 0;
  if (impl_->sampler)
    for (const auto& s : impl_->sampler->sources())
      if (s->kind() == power::Kind::Gauge) m = std::max(m, s->update_interval_s());
  return m;
}

void EnergyMeter::start() {
  if (impl_->sampler && !impl_->running) {
    impl_->sampler->start();
    impl_->running = true;
  }
}

void EnergyMeter::stop() {
  if (impl_->sampler && impl_->running) {
    impl_->sampler->stop();
    impl_->running = false;
  }
}

void EnergyMeter::measure_idle(Run& run) {
  if (!impl_->sampler || impl_->opts.idle_s <= 0) return;
  start();
  const std::int64_t t0 = now_ns();
  std::this_thread::sleep_for(std::chrono::duration<double>(impl_->opts.idle_s));
  const std::int64_t t1 = now_ns();
  // Equal parts of the idle period give the baseline's spread: the noise a
  // window's net energy has to clear. Gauges updating slower than a part give
  // repeated values and so a small spread; the 1% floor of apply_net covers them.
  const int parts = kIdleParts;
  const std::string supply = supply_name(t0, t1);
  const double idle_s = double(t1 - t0) * 1e-9;
  for (const auto& s : impl_->sampler->sources()) {
    // The parts lie inside the whole, which waited (or not) already.
    const bool wait = s->id() == impl_->headline || worth_waiting(*s, idle_s);
    const power::WindowEnergy whole = impl_->sampler->energy(s->id(), t0, t1, wait);
    std::vector<double> means;
    for (int k = 0; k < parts; ++k) {
      const std::int64_t a = t0 + (t1 - t0) * k / parts, b = t0 + (t1 - t0) * (k + 1) / parts;
      const power::WindowEnergy w = impl_->sampler->energy(s->id(), a, b, false);
      if (std::isfinite(w.avg_power_w)) means.push_back(w.avg_power_w);
    }
    const power::IdleBaseline base = power::idle_baseline_from_windows(means);
    IdleFigure f{whole.avg_power_w, double(t1 - t0) * 1e-9, std::nullopt, base.windows};
    if (base.windows >= 2) f.sd_w = base.sd_w;
    f.samples = int(whole.samples);
    if (!supply.empty()) f.supply = supply;
    impl_->idle[s->id()] = f;
    run.idle[s->id()] = f;
  }
}

void apply_net(EnergyFigures& f, const IdleFigure& idle, double window_s, double flop,
               const std::string& window_supply) {
  const power::IdleBaseline base{idle.power_w, idle.sd_w.value_or(0), idle.sd_w ? idle.windows : 0};
  const power::NetEnergy n = power::net_energy(f.j, window_s, base);
  std::string why = n.reason;
  if (idle.samples && *idle.samples < kMinIdleSamples)
    why = fmt::format("the idle baseline rests on {} sample(s), fewer than {}: it does not apply", *idle.samples,
                      kMinIdleSamples);
  else if (idle.samples && !idle.sd_w)
    why = "the idle baseline has fewer than 2 parts with samples (no spread to clear): it does not apply";
  else if (idle.supply && !window_supply.empty() && *idle.supply != window_supply)
    why = fmt::format("the idle baseline was taken on {}, this window ran on {}: it does not apply", *idle.supply,
                      window_supply);
  if (n.net_j && *n.net_j < kNetFloor * f.j)
    why = fmt::format("net {:.4g} J is within 1% of the gross {:.4g} J (below what a meter resolves)", *n.net_j, f.j);
  if (why.empty()) {
    f.net_j = n.net_j;
    if (flop > 0) f.flop_per_j_net = flop / *n.net_j;
    return;
  }
  f.net_j.reset();
  f.flop_per_j_net.reset();
  f.why_low = f.why_low.empty() ? "no net figure: " + why : f.why_low + "; no net figure: " + why;
}

std::map<std::string, EnergyFigures> EnergyMeter::window(std::int64_t t0, std::int64_t t1, double flop, bool net,
                                                         bool wait_all) {
  std::map<std::string, EnergyFigures> out;
  if (!impl_->sampler || t1 <= t0) return out;
  const double dt = double(t1 - t0) * 1e-9;
  const auto& sources = impl_->sampler->sources();
  for (std::size_t i = 0; i < sources.size(); ++i) {
    const power::PowerSource& s = *sources[i];
    const std::string& id = impl_->source_ids[i];
    const bool wait = id == impl_->headline || (wait_all && worth_waiting(s, dt));
    power::WindowEnergy w = impl_->sampler->energy(id, t0, t1, wait);
    EnergyFigures f;
    f.j = w.j;
    f.avg_power_w = w.avg_power_w;
    f.gap = w.gap;
    if (w.j > 0 && flop > 0 && !w.gap) f.flop_per_j = flop / w.j;
    if (auto it = impl_->idle.find(id); net && it != impl_->idle.end())
      apply_net(f, it->second, dt, flop, supply_name(t0, t1));
    if (w.low_confidence) f.why_low = f.why_low.empty() ? std::move(w.why_low) : w.why_low + "; " + f.why_low;
    f.confidence = f.why_low.empty() ? "ok" : "low";
    out.insert_or_assign(id, std::move(f));
  }
  return out;
}

nlohmann::json EnergyMeter::source_gaps() const {
  nlohmann::json a = nlohmann::json::array();
  if (impl_->sampler)
    for (const auto& g : impl_->sampler->gaps())
      a.push_back({{"source", g.id},
                   {"from_ns", g.from_ns},
                   {"to_ns", g.to_ns ? nlohmann::json(g.to_ns) : nlohmann::json(nullptr)},
                   {"why", g.why}});
  return a;
}

std::vector<power::SourceSamples> EnergyMeter::drain_samples() {
  return impl_->sampler ? impl_->sampler->drain_samples() : std::vector<power::SourceSamples>{};
}

void EnergyMeter::forget_before(std::int64_t t_ns) {
  if (impl_->sampler) impl_->sampler->forget_before(t_ns);
}

std::int64_t EnergyMeter::now_ns() { return monotonic_ns(); }

}  // namespace flopwatt

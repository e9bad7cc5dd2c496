#include "harness/serve/exporter.h"

#include <algorithm>
#include <cctype>
#include <chrono>

#include "harness/output/version.h"
#include "harness/prom/families.h"
#include "harness/run/run_setup.h"
#include "power/source.h"

namespace flopwatt::serve {

namespace {

using prometheus::MetricType;

// A gauge's samples further apart than this are not joined: the source was
// gone or unread, and no energy is invented for the gap.
constexpr double kMaxGaugeStepS = 10.0;
// Samples are kept this long past the judged window, then dropped.
constexpr double kKeepS = 30.0;

std::string device_of(const std::string& id) {
  const auto colon = id.find(':');
  return colon == std::string::npos ? id : id.substr(colon + 1);
}

// A why with its measured numbers as "#" ("sampling gap # ms > # x # ms"):
// a label value is a series, and a number that changes each window would make
// a new one every second.
std::string why_label(const std::string& why) {
  std::string out;
  for (std::size_t i = 0; i < why.size(); ++i) {
    // Digits inside a name (package-0, BAT0, intel-rapl:0) stay.
    const char prev = i ? why[i - 1] : ' ';
    const bool in_name = std::isalnum(static_cast<unsigned char>(prev)) || prev == '-' || prev == ':' || prev == '_';
    const bool digit = why[i] >= '0' && why[i] <= '9';
    if (!digit || in_name) {
      out += why[i];
      continue;
    }
    out += '#';
    while (i + 1 < why.size() && ((why[i + 1] >= '0' && why[i + 1] <= '9') ||
                                  (why[i + 1] == '.' && i + 2 < why.size() && why[i + 2] >= '0' && why[i + 2] <= '9')))
      ++i;
  }
  return out;
}

}  // namespace

Exporter::Exporter(const ExporterOptions& o)
    : opts_(o),
      wall_minus_mono_ms_(std::chrono::duration_cast<std::chrono::milliseconds>(
                              std::chrono::system_clock::now().time_since_epoch())
                              .count() -
                          EnergyMeter::now_ns() / 1000000) {
  opts_.power.sysfs_root = resolve_sysfs_root(opts_.power.sysfs_root);
  meter_ = std::make_unique<EnergyMeter>(opts_.power);
  supply_ = std::make_unique<power::SupplyMonitor>(opts_.power.sysfs_root, kSupplyPollS);
  meter_->watch_supply(supply_.get());
}

Exporter::~Exporter() { stop(); }

void Exporter::start() {
  meter_->start();
  supply_->start();
  last_tick_ns_ = EnergyMeter::now_ns();
  thread_ = std::thread([this] { loop(); });
}

void Exporter::stop() {
  {
    std::lock_guard<std::mutex> g(wake_mu_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  if (meter_) meter_->stop();
  if (supply_) supply_->stop();
}

void Exporter::take_samples() {
  for (const power::SourceSamples& ss : meter_->drain_samples()) {
    // A source gets its series once the sampler has read it: aliases and
    // unselected candidates never are.
    if (std::none_of(tracks_.begin(), tracks_.end(), [&](const Track& t) { return t.id == ss.id; }))
      for (const power::SourceStatus& st : meter_->status())
        if (st.id == ss.id) {
          Track t;
          t.id = st.id;
          t.domain = st.domain;
          t.device = device_of(st.id);
          t.kind = power::to_string(st.kind);
          t.counter = st.kind == power::Kind::Counter;
          tracks_.push_back(std::move(t));
        }
    for (Track& t : tracks_) {
      if (t.id != ss.id) continue;
      for (const power::Sample& s : ss.samples) {
        const double ts = double(s.t_ns) * 1e-9;
        if (t.counter) {
          // The source's count since it was opened, wraps and resets undone (power/counter_unwrap.h).
          t.total_j = s.value;
        } else if (t.last_t_s && ts - *t.last_t_s <= kMaxGaugeStepS) {
          t.total_j += 0.5 * (s.value + *t.last_value) * (ts - *t.last_t_s);
        }
        t.last_t_s = ts;
        t.last_value = s.value;
      }
    }
  }
}

void Exporter::judge() {
  if (!meter_->active()) return;
  // Ends a little before now, so the fast counters' sample after its end is already taken.
  const std::int64_t t1 = EnergyMeter::now_ns() - std::int64_t(0.1e9);
  const std::int64_t t0 = t1 - std::int64_t(opts_.window_s * 1e9);
  Measurement m;
  m.energy = meter_->window(t0, t1, 0, false, false);
  meter_->judge(m, t0, t1);
  std::lock_guard<std::mutex> g(mu_);
  judged_.have = true;
  judged_.figures = std::move(m.energy);
  judged_.headline = m.headline_source;
  judged_.why = m.headline_why.value_or("");
}

void Exporter::read_results() {
  if (opts_.no_store) return;
  try {
    if (!store_) store_ = store::Store::open(store::resolve(opts_.store), false);
    std::vector<Run> fresh;
    for (const store::RunSummary& s : store_->list({})) {
      {
        std::lock_guard<std::mutex> g(mu_);
        if (runs_seen_.count(s.run_id)) continue;
      }
      if (auto j = store_->run_json(s.run_id)) fresh.push_back(run_from_json(nlohmann::json::parse(*j)));
      std::lock_guard<std::mutex> g(mu_);
      runs_seen_.insert(s.run_id);
    }
    std::lock_guard<std::mutex> g(mu_);
    for (const Run& run : fresh)
      for (prom::ResultRow& r : prom::result_rows(run)) {
        const std::string key = r.machine + '\n' + r.config + '\n' + r.backend;
        auto it = results_.find(key);
        if (it == results_.end() || it->second.started_utc <= r.started_utc) results_[key] = std::move(r);
      }
    store_ok_ = true;
  } catch (const std::exception&) {
    // A store not created yet, or a server away: no results until it answers.
    store_.reset();
    std::lock_guard<std::mutex> g(mu_);
    store_ok_ = false;
  }
}

void Exporter::loop() {
  std::int64_t next_results = 0;
  std::unique_lock<std::mutex> lk(wake_mu_);
  while (!stop_) {
    lk.unlock();
    judge();
    const std::int64_t now = EnergyMeter::now_ns();
    if (now >= next_results) {
      read_results();
      next_results = now + std::int64_t(opts_.results_refresh_s * 1e9);
    }
    {
      std::lock_guard<std::mutex> g(mu_);
      take_samples();
      meter_->forget_before(now - std::int64_t((opts_.window_s + kKeepS) * 1e9));
      last_tick_ns_ = now;
    }
    lk.lock();
    wake_.wait_for(lk, std::chrono::duration<double>(opts_.tick_s), [this] { return stop_; });
  }
}

bool Exporter::healthy(std::string& why) const {
  std::lock_guard<std::mutex> g(mu_);
  const double age = double(EnergyMeter::now_ns() - last_tick_ns_) * 1e-9;
  if (age > 3 * opts_.tick_s + 5) {
    why = "the sampling thread last ticked " + std::to_string(age) + " s ago";
    return false;
  }
  why = std::to_string(tracks_.size()) + " power source(s) sampled";
  return true;
}

std::vector<prometheus::MetricFamily> Exporter::collect() {
  std::lock_guard<std::mutex> g(mu_);
  take_samples();
  std::vector<prometheus::MetricFamily> out;
  auto energy = prom::family("flopwatt_source_energy_joules_total",
                             "Energy the source measured since the exporter opened it (counter wraps and resets undone)",
                             MetricType::Counter);
  auto power = prom::family("flopwatt_source_power_watts", "Mean power of the source over the last judged window",
                            MetricType::Gauge);
  auto info = prom::family("flopwatt_source_info",
                           "The source, with the confidence and why of its figure over the last judged window",
                           MetricType::Gauge);
  // The energy total is stamped with when its last sample was read, not when
  // it is scraped: a sampler held up for a second would otherwise shift the
  // counter against Prometheus' clock, and rate() over 10 s read 14-21 W of a
  // 20 W fixture.
  for (const Track& t : tracks_) {
    const prom::Labels l{{"source", t.id}, {"domain", t.domain}, {"device", t.device}};
    prom::add_value(energy, l, t.total_j);
    if (t.last_t_s && !energy.metric.empty())
      energy.metric.back().timestamp_ms = wall_minus_mono_ms_ + std::int64_t(*t.last_t_s * 1000);
    std::string confidence = "unknown", why = "no window judged yet";
    if (auto it = judged_.figures.find(t.id); it != judged_.figures.end()) {
      prom::add_value(power, l, it->second.avg_power_w);
      confidence = it->second.confidence;
      why = why_label(it->second.why_low);
    }
    prom::Labels li = l;
    li.insert(li.end(), {{"kind", t.kind}, {"confidence", confidence}, {"why", why}});
    prom::add_value(info, li, 1);
  }
  for (auto* f : {&energy, &power, &info}) prom::append_nonempty(out, std::move(*f));

  auto supply = prom::family("flopwatt_supply_state", "1 for the power supply's current state (mains, battery, unknown)",
                             MetricType::Gauge);
  const power::Supply now = supply_->track().last_supply().value_or(power::Supply::Unknown);
  for (power::Supply s : {power::Supply::Mains, power::Supply::Battery, power::Supply::Unknown})
    prom::add_value(supply, {{"state", power::to_string(s)}}, s == now ? 1 : 0);
  out.push_back(std::move(supply));

  auto headline = prom::family("flopwatt_headline_source_info",
                               "The source the headline rule (power/headline.h) picks over the last judged window",
                               MetricType::Gauge);
  if (judged_.have) {
    std::string domain;
    for (const Track& t : tracks_)
      if (judged_.headline && t.id == *judged_.headline) domain = t.domain;
    prom::add_value(headline, {{"source", judged_.headline.value_or("none")}, {"domain", domain}, {"why", why_label(judged_.why)}},
                    1);
  }
  prom::append_nonempty(out, std::move(headline));

  std::vector<prom::ResultRow> rows;
  for (const auto& [key, r] : results_) rows.push_back(r);
  for (auto& f : prom::result_families(rows, true)) out.push_back(std::move(f));
  if (store_ok_) {
    auto up = prom::family("flopwatt_results_store_up", "1 when the last read of the results store succeeded",
                           MetricType::Gauge);
    prom::add_value(up, {}, *store_ok_ ? 1 : 0);
    out.push_back(std::move(up));
  }
  auto build = prom::family("flopwatt_build_info", "The flopwatt build serving these metrics", MetricType::Gauge);
  prom::add_value(build, {{"version", FLOPWATT_VERSION}, {"revision", FLOPWATT_GIT_REV}}, 1);
  out.push_back(std::move(build));
  return out;
}

}  // namespace flopwatt::serve

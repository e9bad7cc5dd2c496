#include "power/sampler.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "power/clock.h"
#include "power/window_energy.h"

namespace flopwatt::power {

namespace {

// Room for ten minutes at 100 Hz before the first reallocation of a fast
// counter; slow gauges need far less.
constexpr std::size_t kReserveCounter = 60000;
constexpr std::size_t kReserveGauge = 4096;

}  // namespace

struct Sampler::Impl {
  struct Track {
    PowerSource* src = nullptr;
    std::string id, unit;
    Kind kind = Kind::Counter;
    std::vector<Sample> samples;  // guarded by mu
    std::size_t drained = 0;      // guarded by mu
    // The sampler thread and a window's end (read_if_due) both read the
    // source; read_mu makes them take turns, and guards the fields below it.
    // Taken before mu, never while holding it.
    std::unique_ptr<std::mutex> read_mu = std::make_unique<std::mutex>();
    std::vector<Sample> scratch;
    std::int64_t next_read_ns = 0;
    std::uint64_t resets_seen = 0;
    std::int64_t last_read_ns = 0;
    std::int64_t last_good_ns = 0;
    struct Reset {
      std::int64_t after_ns, at_ns;
      std::string why;
    };
    std::vector<Reset> resets;  // guarded by mu
    std::vector<Sampler::Gap> gaps;  // guarded by mu; the last one open while to_ns == 0
  };

  std::vector<std::unique_ptr<PowerSource>> sources;
  std::vector<Track> tracks;
  std::unordered_map<std::string, std::size_t> index;
  std::int64_t period_ns = 10'000'000;
  std::int64_t forgotten_ns = 0;  // guarded by mu: samples before it were dropped

  mutable std::mutex mu;
  std::condition_variable data_cv;
  std::condition_variable stop_cv;
  std::thread thread;
  bool running = false;
  bool stop_requested = false;

  // Reads the source when its rate allows (a counter always; a gauge once
  // its min_read_interval_s has passed since its last read); false when not due.
  bool read_if_due(Track& tr) {
    std::lock_guard<std::mutex> r(*tr.read_mu);
    const std::int64_t t = monotonic_ns();
    if (t < tr.next_read_ns) return false;
    tr.scratch.clear();
    if (tr.src->read_many(tr.scratch) > 0) {
      std::lock_guard<std::mutex> g(mu);
      for (const Sample& s : tr.scratch)
        if (tr.samples.empty() || s.t_ns > tr.samples.back().t_ns) tr.samples.push_back(s);
      if (!tr.gaps.empty() && tr.gaps.back().to_ns == 0) tr.gaps.back().to_ns = tr.scratch.front().t_ns;
      tr.last_good_ns = tr.scratch.back().t_ns;
    } else if (const std::string err = tr.src->last_error(); !err.empty() && tr.last_good_ns > 0) {
      // Gone (a battery removed, a file vanished): a gauge held at its last
      // value would hand later windows joules nobody measured.
      std::lock_guard<std::mutex> g(mu);
      if (tr.gaps.empty() || tr.gaps.back().to_ns != 0) tr.gaps.push_back({tr.id, tr.last_good_ns, 0, err});
    }
    // A reset happened between the previous read and this one.
    if (const std::uint64_t r = tr.src->resets(); r != tr.resets_seen) {
      tr.resets_seen = r;
      std::lock_guard<std::mutex> g(mu);
      tr.resets.push_back({tr.last_read_ns, monotonic_ns(), tr.src->last_error()});
    }
    tr.last_read_ns = t;
    // Half a period early, so a source due every 3 periods is not pushed to 4 by jitter.
    const auto every = std::int64_t(tr.src->min_read_interval_s() * 1e9);
    tr.next_read_ns = every > 0 ? t + every - period_ns / 2 : 0;
    return true;
  }

  void tick() {
    for (auto& tr : tracks) read_if_due(tr);
    data_cv.notify_all();
  }

  void loop() {
    std::int64_t next = monotonic_ns();
    std::unique_lock<std::mutex> lk(mu);
    while (!stop_requested) {
      lk.unlock();
      tick();
      const std::int64_t now = monotonic_ns();
      next += period_ns;
      if (next <= now) next += ((now - next) / period_ns + 1) * period_ns;  // overran: skip, do not burst
      lk.lock();
      // steady_clock is CLOCK_MONOTONIC on Linux, the clock of every sample.
      stop_cv.wait_until(lk, std::chrono::steady_clock::time_point(std::chrono::nanoseconds(next)),
                         [&] { return stop_requested; });
    }
  }
};

Sampler::Sampler(std::vector<std::unique_ptr<PowerSource>> sources, double period_s) : impl_(std::make_unique<Impl>()) {
  impl_->sources = std::move(sources);
  impl_->period_ns = std::max<std::int64_t>(100'000, std::int64_t(period_s * 1e9));
  impl_->tracks.reserve(impl_->sources.size());
  for (const auto& s : impl_->sources) {
    Impl::Track t;
    t.src = s.get();
    t.id = s->id();
    t.unit = s->unit();
    t.kind = s->kind();
    t.samples.reserve(t.kind == Kind::Counter ? kReserveCounter : kReserveGauge);
    t.scratch.reserve(64);
    impl_->index.emplace(t.id, impl_->tracks.size());
    impl_->tracks.push_back(std::move(t));
  }
}

Sampler::~Sampler() { stop(); }

void Sampler::start() {
  std::lock_guard<std::mutex> g(impl_->mu);
  if (impl_->running || impl_->tracks.empty()) return;
  impl_->running = true;
  impl_->stop_requested = false;
  impl_->thread = std::thread([this] { impl_->loop(); });
}

void Sampler::stop() {
  {
    std::lock_guard<std::mutex> g(impl_->mu);
    if (!impl_->running) return;
    impl_->stop_requested = true;
  }
  impl_->stop_cv.notify_all();
  impl_->thread.join();
  // A window that ended just before stop() still gets a sample past its end.
  for (auto& tr : impl_->tracks) {
    std::lock_guard<std::mutex> r(*tr.read_mu);
    tr.next_read_ns = 0;
  }
  impl_->tick();
  std::lock_guard<std::mutex> g(impl_->mu);
  impl_->running = false;
  impl_->data_cv.notify_all();
}

bool Sampler::running() const {
  std::lock_guard<std::mutex> g(impl_->mu);
  return impl_->running;
}

double Sampler::period_s() const { return double(impl_->period_ns) * 1e-9; }

std::int64_t Sampler::now_ns() { return monotonic_ns(); }

const std::vector<std::unique_ptr<PowerSource>>& Sampler::sources() const { return impl_->sources; }

WindowEnergy Sampler::energy(const std::string& source_id, std::int64_t t0_ns, std::int64_t t1_ns, bool wait) {
  auto it = impl_->index.find(source_id);
  if (it == impl_->index.end()) {
    WindowEnergy w;
    w.low_confidence = true;
    w.why_low = "unknown source " + source_id;
    return w;
  }
  Impl::Track& tr = impl_->tracks[it->second];
  const double period = period_s();
  const double spacing = tr.src->expected_spacing_s(period);
  WindowRules rules{tr.src->update_interval_s(), spacing};
  // Wait for the first read at or after t1 so the window's end is covered, but
  // never long: a slow gauge's tail is held flat and judged by the gap rule.
  const double wait_s = wait ? std::min(2.0, 2 * spacing) + 0.05 : 0.0;
  const std::int64_t deadline = std::max(monotonic_ns(), t1_ns) + std::int64_t(wait_s * 1e9);
  std::unique_lock<std::mutex> lk(impl_->mu);
  // Under mu: the sampler is running and has no sample of this source past t1 yet.
  const auto end_uncovered = [&] {
    return impl_->running && (tr.samples.empty() || tr.samples.back().t_ns < t1_ns);
  };
  if (wait && end_uncovered() && monotonic_ns() >= t1_ns) {
    // The window's end read now, on this thread, rather than waited for: the
    // edge is then where the window ended, not up to a period later, and the
    // caller neither sleeps nor wakes (on a VM a wake alone costs 30 us of
    // CPU). Only when the source's rate allows it, else its next tick is waited for.
    lk.unlock();
    if (impl_->read_if_due(tr)) impl_->data_cv.notify_all();
    lk.lock();
  }
  while (end_uncovered() && monotonic_ns() < deadline)
    impl_->data_cv.wait_until(lk, std::chrono::steady_clock::time_point(std::chrono::nanoseconds(deadline)));
  if (t0_ns < impl_->forgotten_ns) {
    WindowEnergy w;
    w.gap = true;
    w.low_confidence = true;
    w.why_low = "the samples of the window's start were dropped (kept only from the last forget_before)";
    return w;
  }
  WindowEnergy w = integrate_window(tr.samples, tr.kind, t0_ns, t1_ns, rules);
  for (const auto& gp : tr.gaps) {
    // A counter integrates in hardware: once it is back, interpolating across
    // the outage is still right (a sampling gap, low confidence). A gauge held
    // past its last read, or a counter still gone, would be energy nobody measured.
    if (tr.kind == Kind::Counter && gp.to_ns != 0) continue;
    if (gp.from_ns < t1_ns && (gp.to_ns == 0 || gp.to_ns > t0_ns)) {
      // Only what was measured before the source went: the energy up to its
      // last good read, none held flat past it.
      w = gp.from_ns > t0_ns ? integrate_window(tr.samples, tr.kind, t0_ns, gp.from_ns, rules) : WindowEnergy{};
      w.gap = true;
      w.low_confidence = true;
      w.why_low += std::string(w.why_low.empty() ? "" : "; ") + "source gone during the window (" + gp.why +
                   "): no energy measured after it";
      break;
    }
  }
  for (const auto& r : tr.resets) {
    if (r.after_ns < t1_ns && r.at_ns > t0_ns) {
      w.low_confidence = true;
      w.why_low += std::string(w.why_low.empty() ? "" : "; ") +
                   "counter reset inside the window, the energy across it is missing (" + r.why + ")";
      break;
    }
  }
  if (tr.samples.empty()) {
    const std::string err = tr.src->last_error();
    if (!err.empty()) w.why_low += " (" + err + ")";
  }
  return w;
}

std::vector<Sampler::Gap> Sampler::gaps() const {
  std::vector<Gap> out;
  std::lock_guard<std::mutex> g(impl_->mu);
  for (const auto& tr : impl_->tracks) out.insert(out.end(), tr.gaps.begin(), tr.gaps.end());
  return out;
}

std::vector<SourceSamples> Sampler::drain_samples() {
  std::vector<SourceSamples> out;
  std::lock_guard<std::mutex> g(impl_->mu);
  out.reserve(impl_->tracks.size());
  for (auto& tr : impl_->tracks) {
    SourceSamples s;
    s.id = tr.id;
    s.unit = tr.unit;
    s.samples.assign(tr.samples.begin() + std::ptrdiff_t(tr.drained), tr.samples.end());
    tr.drained = tr.samples.size();
    out.push_back(std::move(s));
  }
  return out;
}

void Sampler::forget_before(std::int64_t t_ns) {
  std::lock_guard<std::mutex> g(impl_->mu);
  if (t_ns <= impl_->forgotten_ns) return;
  impl_->forgotten_ns = t_ns;
  for (auto& tr : impl_->tracks) {
    auto keep = std::upper_bound(tr.samples.begin(), tr.samples.end(), t_ns,
                                 [](std::int64_t t, const Sample& x) { return t < x.t_ns; });
    if (keep != tr.samples.begin()) --keep;  // the last sample at or before t_ns stays
    const auto n = std::size_t(keep - tr.samples.begin());
    tr.samples.erase(tr.samples.begin(), keep);
    tr.drained -= std::min(tr.drained, n);
  }
}

}  // namespace flopwatt::power

#include "window_push.h"

#include <chrono>
#include <cstdio>

namespace flopwatt {

WindowPusher::WindowPusher(prom::PushOptions opts, std::string machine, std::string run_id)
    : opts_(std::move(opts)), machine_(std::move(machine)), run_id_(std::move(run_id)) {
  thread_ = std::thread([this] { loop(); });
}

WindowPusher::~WindowPusher() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void WindowPusher::add(const WindowResult& r) {
  {
    std::lock_guard lock(mu_);
    prom::tally(tallies_, r.name, r.duration_s, r.headline, r.energy_j, r.flop);
    dirty_ = true;
  }
  cv_.notify_all();
}

void WindowPusher::loop() {
  std::unique_lock lock(mu_);
  for (;;) {
    cv_.wait(lock, [&] { return dirty_ || stop_; });
    if (!dirty_) return;  // stopped with everything pushed
    const auto snapshot = tallies_;
    dirty_ = false;
    lock.unlock();
    std::string why;
    const bool ok = prom::push_windows(opts_, machine_, run_id_, snapshot, &why);
    say(ok, why);
    lock.lock();
    // A second's pause between pushes, cut short by the destructor, which
    // then gets one last push if windows came meanwhile.
    cv_.wait_for(lock, std::chrono::seconds(1), [&] { return stop_; });
  }
}

void WindowPusher::say(bool ok, const std::string& why) {
  if (ok && failing_)
    std::fprintf(stderr, "flopwatt::Meter: pushes to %s work again (run_id %s)\n", opts_.url.c_str(), run_id_.c_str());
  else if (!ok && !failing_)
    std::fprintf(stderr,
                 "warning: flopwatt::Meter windows not pushed to %s: %s; fix: check the gateway is up (the windows' "
                 "results are unaffected; later pushes carry every window so far)\n",
                 opts_.url.c_str(), why.c_str());
  failing_ = !ok;
}

}  // namespace flopwatt

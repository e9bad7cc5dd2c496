// A Meter's pushes to a Prometheus Pushgateway (MeterOptions::pushgateway):
// each judged window is tallied at once, and a thread of the pusher's own
// sends the tallies, so a window's caller never waits on the network. At most
// one push a second (a burst of windows is one push), each bounded by the
// push timeout; the destructor sends what is left, then stops. A failed push
// is one warning line on stderr when pushes start failing, and one when they
// work again; the windows' results are never touched by it.
// Internal to flopwatt (not installed).
#pragma once
#include <condition_variable>
#include <map>
#include <mutex>
#include <string>
#include <thread>

#include "flopwatt/meter.h"
#include "harness/prom/push.h"

namespace flopwatt {

class WindowPusher {
 public:
  WindowPusher(prom::PushOptions opts, std::string machine, std::string run_id);
  ~WindowPusher();
  WindowPusher(const WindowPusher&) = delete;
  WindowPusher& operator=(const WindowPusher&) = delete;
  void add(const WindowResult& r);

 private:
  void loop();
  void say(bool ok, const std::string& why);
  const prom::PushOptions opts_;
  const std::string machine_, run_id_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, prom::WindowTally> tallies_;  // guarded by mu_
  bool dirty_ = false, stop_ = false;                  // guarded by mu_
  bool failing_ = false;                               // the pusher thread's own
  std::thread thread_;
};

}  // namespace flopwatt

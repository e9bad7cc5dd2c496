#include "power/net_energy.h"

#include <cmath>
#include <cstdio>

namespace flopwatt::power {

namespace {
constexpr double kSpreads = 2;  // how many idle standard deviations net energy must clear

std::string num(double v) {
  char b[64];
  std::snprintf(b, sizeof b, "%.4g", v);
  return b;
}
}  // namespace

IdleBaseline idle_baseline_from_windows(const std::vector<double>& w) {
  IdleBaseline b;
  b.windows = int(w.size());
  if (w.empty()) return b;
  double sum = 0;
  for (double x : w) sum += x;
  b.mean_w = sum / double(w.size());
  if (w.size() >= 2) {
    double ss = 0;
    for (double x : w) ss += (x - b.mean_w) * (x - b.mean_w);
    b.sd_w = std::sqrt(ss / double(w.size() - 1));
  }
  return b;
}

NetEnergy net_energy(double gross_j, double window_s, const IdleBaseline& idle) {
  NetEnergy r;
  r.bound = "net energy > 2 x the standard deviation of the idle windows' mean power x the window length";
  if (!std::isfinite(gross_j) || !std::isfinite(window_s) || window_s <= 0) {
    r.reason = "no valid gross energy or window length";
    return r;
  }
  if (idle.windows < 2 || !std::isfinite(idle.mean_w) || !std::isfinite(idle.sd_w)) {
    r.reason = "idle spread unknown: " + std::to_string(idle.windows) + " idle window(s), need at least 2";
    return r;
  }
  r.idle_j = idle.mean_w * window_s;
  r.noise_j = kSpreads * idle.sd_w * window_s;
  const double net = gross_j - r.idle_j;
  if (!(net > r.noise_j)) {
    r.reason = "net " + num(net) + " J is within the idle noise (" + num(r.noise_j) + " J = 2 x " +
               num(idle.sd_w) + " W x " + num(window_s) + " s)";
    return r;
  }
  r.net_j = net;
  return r;
}

}  // namespace flopwatt::power

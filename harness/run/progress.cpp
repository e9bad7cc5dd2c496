#include "harness/run/progress.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <cmath>

#include "harness/run/timing.h"

namespace flopwatt {

std::optional<double> eta_seconds(std::size_t done, std::size_t total, double elapsed_s) {
  if (done == 0 || total == 0 || !(elapsed_s >= 0)) return std::nullopt;
  if (done >= total) return 0.0;
  return elapsed_s / double(done) * double(total - done);
}

std::string format_duration(double s) {
  if (!std::isfinite(s) || s < 0) return "?";
  const long long t = std::llround(s);
  char b[32];
  if (t < 60) {
    std::snprintf(b, sizeof b, "%llds", t);
  } else if (t < 3600) {
    std::snprintf(b, sizeof b, "%lld:%02lld", t / 60, t % 60);
  } else {
    std::snprintf(b, sizeof b, "%lld:%02lld:%02lld", t / 3600, (t / 60) % 60, t % 60);
  }
  return b;
}

std::string format_progress(const std::string& item, std::size_t done, std::size_t total, double elapsed_s,
                            std::size_t width) {
  char head[48];
  const int digits = int(std::to_string(total).size());
  const int pct = total ? int(100.0 * double(done) / double(total)) : 0;
  std::snprintf(head, sizeof head, "[%*zu/%zu] %3d%% ", digits, done, total, pct);
  const auto eta = eta_seconds(done, total, elapsed_s);
  const std::string tail =
      " | elapsed " + format_duration(elapsed_s) + " | ETA " + (eta ? format_duration(*eta) : std::string("?"));
  const std::size_t fixed = std::string(head).size() + tail.size();
  std::string it = item;
  if (width > 0 && fixed + it.size() > width) {
    const std::size_t room = width > fixed + 1 ? width - fixed : 0;
    // Keep the end of the item: it names the shape or op, the part that changes.
    it = room > 1 ? std::string("~").append(it, it.size() - (room - 1)) : std::string();
  }
  return std::string(head) + it + tail;
}

Progress::Progress(std::optional<bool> enabled, std::FILE* out)
    : enabled_(enabled ? *enabled : (isatty(STDOUT_FILENO) && isatty(STDERR_FILENO))), out_(out),
      t0_ns_(monotonic_ns()) {}

Progress::~Progress() { clear(); }


double Progress::elapsed_s() const { return double(monotonic_ns() - t0_ns_) * 1e-9; }

namespace {

std::size_t terminal_width(std::FILE* f) {
  winsize ws{};
  if (ioctl(fileno(f), TIOCGWINSZ, &ws) == 0 && ws.ws_col > 1) return ws.ws_col - 1;
  return 100;
}

}  // namespace

void Progress::update(const std::string& item, std::size_t done, std::size_t total) {
  if (!enabled_) return;
  status(format_progress(item, done, total, elapsed_s(), terminal_width(out_)));
}

void Progress::status(const std::string& line) {
  if (!enabled_) return;
  const std::size_t w = terminal_width(out_);
  // \r plus erase-to-end-of-line: a shorter line must not leave the old one's tail.
  std::fprintf(out_, "\r%s\033[K", line.substr(0, w).c_str());
  std::fflush(out_);
  drawn_ = true;
}

void Progress::clear() {
  if (!enabled_ || !drawn_) return;
  std::fprintf(out_, "\r\033[K");
  std::fflush(out_);
  drawn_ = false;
}

}  // namespace flopwatt

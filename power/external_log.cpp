#include "power/external_log.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>

#include "power/clock.h"
#include "power/source_base.h"
#include "power/sysfs.h"

namespace flopwatt::power {

namespace {

const char* kFormatFix =
    "each line must be 't_seconds,watts' (for example '12.5,41.7') after a '# clock: realtime' or "
    "'# clock: relative' header";

std::string trim(const std::string& s) {
  std::size_t b = 0, e = s.size();
  while (b < e && (s[b] == ' ' || s[b] == '\t' || s[b] == '\r')) ++b;
  while (e > b && (s[e - 1] == ' ' || s[e - 1] == '\t' || s[e - 1] == '\r')) --e;
  return s.substr(b, e - b);
}

bool parse_number(const std::string& s, double& v) {
  const std::string t = trim(s);
  if (t.empty()) return false;
  char* end = nullptr;
  v = std::strtod(t.c_str(), &end);
  return *end == 0 && std::isfinite(v);
}

int open_log(const std::string& path, bool& fifo) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0)
    throw ConfigError("--power-log " + path, "cannot open: " + errno_text(errno),
                      "pass an existing log file or FIFO");
  fifo = S_ISFIFO(st.st_mode);
  if (!fifo && !S_ISREG(st.st_mode))
    throw ConfigError("--power-log " + path, "not a regular file or FIFO", "pass a log file or a FIFO (mkfifo)");
  // Non-blocking: a FIFO opens before its writer does, and the sampler never waits on it.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0)
    throw ConfigError("--power-log " + path, "cannot open: " + errno_text(errno),
                      "make the file readable by this user");
  return fd;
}

class ExternalLogSource final : public SourceBase {
 public:
  ExternalLogSource(const std::string& path, int fd)
      : SourceBase(external_source_id(path), "wall", Kind::Gauge, 1.0), fd_(fd),
        parser_(path, monotonic_ns()) {
    scratch_.reserve(256);
  }
  ~ExternalLogSource() override { ::close(fd_); }

  // A regular file's lines so far, read once through the descriptor the
  // source keeps: a malformed or header-less log is refused before the run
  // (ConfigError), and what it held is delivered by the first read_many.
  void take_what_is_written(const std::string& path) {
    drain(pending_, /*throw_on_error=*/true);
    if (pending_.empty() && !parser_.saw_clock())
      throw ConfigError("--power-log " + path, "holds no '# clock:' header and no 't_seconds,watts' sample",
                        "let the meter write its '# clock: realtime|relative' header before the run, or pass a "
                        "FIFO (mkfifo) the meter writes to during the run");
  }

  std::size_t read_many(std::vector<Sample>& out) override {
    if (broken_) return 0;
    const std::size_t before = out.size();
    out.insert(out.end(), pending_.begin(), pending_.end());
    pending_.clear();
    drain(out, false);
    for (std::size_t i = before; i < out.size(); ++i) {
      if (count_ == 0) first_t_ = out[i].t_ns;
      last_t_ = out[i].t_ns;
      ++count_;
    }
    if (count_ >= 2) interval_s_.store(double(last_t_ - first_t_) * 1e-9 / double(count_ - 1));
    return out.size() - before;
  }

  std::optional<Sample> read() override {
    scratch_.clear();
    if (read_many(scratch_) == 0) return std::nullopt;
    return scratch_.back();
  }

  // The meter's own cadence, measured from its timestamps.
  double update_interval_s() const override {
    const double m = interval_s_.load();
    return m > 0 ? m : nominal_interval_s();
  }
  bool interval_measured() const override { return interval_s_.load() > 0; }
  double min_read_interval_s() const override { return 0; }  // a non-blocking read costs nothing
  double expected_spacing_s(double period_s) const override { return std::max(period_s, update_interval_s()); }

 private:
  // Everything readable now, without blocking: a FIFO or a growing file is a
  // stream, read on from where the last read stopped.
  void drain(std::vector<Sample>& out, bool throw_on_error) {
    char buf[4096];
    for (;;) {
      const ssize_t n = ::read(fd_, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;  // EAGAIN: the FIFO has nothing yet; 0: end of what is written so far
      try {
        parser_.feed(buf, std::size_t(n), out);
      } catch (const ConfigError& e) {
        if (throw_on_error) throw;
        broken_ = true;  // a meter that sends garbage is not trusted for the rest of the run
        set_error(e.what());
        break;
      }
    }
  }

  int fd_;
  PowerLogParser parser_;
  bool broken_ = false;
  std::vector<Sample> scratch_, pending_;
  std::size_t count_ = 0;
  std::int64_t first_t_ = 0, last_t_ = 0;
  std::atomic<double> interval_s_{0};
};

}  // namespace

PowerLogParser::PowerLogParser(std::string path, std::int64_t opened_mono_ns)
    : path_(std::move(path)), opened_mono_ns_(opened_mono_ns), real_minus_mono_ns_(realtime_ns() - monotonic_ns()) {}

void PowerLogParser::feed(const char* data, std::size_t n, std::vector<Sample>& out) {
  partial_.append(data, n);
  std::size_t start = 0;
  for (;;) {
    const std::size_t nl = partial_.find('\n', start);
    if (nl == std::string::npos) break;
    line(partial_.substr(start, nl - start), out);
    start = nl + 1;
  }
  partial_.erase(0, start);
}

void PowerLogParser::finish(std::vector<Sample>& out) {
  if (!partial_.empty()) {
    std::string l;
    l.swap(partial_);
    line(l, out);
  }
}

void PowerLogParser::line(const std::string& raw, std::vector<Sample>& out) {
  ++line_no_;
  const std::string l = trim(raw);
  const std::string where = path_ + ":" + std::to_string(line_no_);
  if (l.empty()) return;
  if (l[0] == '#') {
    std::string body = trim(l.substr(1));
    if (body.rfind("clock:", 0) == 0) {
      const std::string c = trim(body.substr(6));
      if (c == "realtime") clock_ = Clock::Realtime;
      else if (c == "relative") clock_ = Clock::Relative;
      else throw ConfigError(where, "unknown clock '" + c + "'", "use '# clock: realtime' or '# clock: relative'");
    }
    return;  // other comments are free text
  }
  if (clock_ == Clock::Unknown)
    throw ConfigError(where, "sample before a '# clock: realtime|relative' header", kFormatFix);
  const auto comma = l.find(',');
  double t = 0, w = 0;
  if (comma == std::string::npos || !parse_number(l.substr(0, comma), t) || !parse_number(l.substr(comma + 1), w))
    throw ConfigError(where, "malformed line '" + l + "'", kFormatFix);
  if (w < 0) throw ConfigError(where, "negative power " + l.substr(comma + 1), "a meter reports watts >= 0");
  // Bounds that keep the nanosecond arithmetic below in range and reject what
  // no meter on a client machine reports: times from 1970 to 2286 (realtime)
  // or within 10^7 s (about 4 months) of opening (relative), under 1 MW.
  const double t_max = clock_ == Clock::Realtime ? 1e10 : 1e7;
  if (t < 0 || t > t_max)
    throw ConfigError(where, "time " + trim(l.substr(0, comma)) + " s is out of range",
                      clock_ == Clock::Realtime ? "realtime stamps are seconds since 1970 (0 to 1e10)"
                                                : "relative stamps are seconds since the log was opened (0 to 1e7)");
  if (w > 1e6) throw ConfigError(where, "power " + trim(l.substr(comma + 1)) + " W is implausible", "a meter reports watts below 1 MW");
  const std::int64_t t_ns = clock_ == Clock::Realtime ? std::int64_t(std::llround(t * 1e9)) - real_minus_mono_ns_
                                                      : opened_mono_ns_ + std::int64_t(std::llround(t * 1e9));
  if (t_ns <= last_t_) {
    ++dropped_;  // time must move forward; a repeated or older stamp is dropped
    return;
  }
  last_t_ = t_ns;
  out.push_back(Sample{t_ns, w});
}

std::string external_source_id(const std::string& path) {
  std::string name = path.substr(path.rfind('/') == std::string::npos ? 0 : path.rfind('/') + 1);
  const auto dot = name.find('.');
  if (dot != std::string::npos && dot > 0) name = name.substr(0, dot);
  if (name.empty()) name = "meter";
  return "external:" + name;
}

void check_power_log(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) == 0 && S_ISFIFO(st.st_mode)) {
    // Never opened here: opening releases a writer blocked in open(2), and
    // closing again leaves it writing to a pipe without a reader (SIGPIPE,
    // pipe(7)). The run opens it once and keeps it.
    if (::access(path.c_str(), R_OK) != 0)
      throw ConfigError("--power-log " + path, "cannot read: " + errno_text(errno),
                        "make the FIFO readable by this user");
    return;
  }
  open_power_log(path);
}

std::unique_ptr<PowerSource> open_power_log(const std::string& path) {
  bool fifo = false;
  const int fd = open_log(path, fifo);
  auto src = std::make_unique<ExternalLogSource>(path, fd);
  // A FIFO's lines belong to the run; a regular file (finished, or still
  // growing) is checked through the descriptor the source keeps reading.
  if (!fifo) src->take_what_is_written(path);
  return src;
}

}  // namespace flopwatt::power

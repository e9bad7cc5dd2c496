#include "power/replay.h"

#include <stdlib.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>

#include "power/clock.h"
#include "power/config_error.h"
#include "sysfs/files.h"

namespace flopwatt::power {

namespace fs = std::filesystem;

namespace {

bool starts_with(const std::string& s, const std::string& p) { return s.rfind(p, 0) == 0; }

std::string basename_of(const std::string& rel) {
  const auto s = rel.rfind('/');
  return s == std::string::npos ? rel : rel.substr(s + 1);
}

TimelineSeries::Kind kind_of(const std::string& rel) {
  const std::string b = basename_of(rel);
  if (starts_with(rel, "sys/class/powercap/") && b == "energy_uj") return TimelineSeries::Kind::Counter;
  if (starts_with(rel, "sys/class/hwmon/") && starts_with(b, "energy") && b.find("_input") != std::string::npos)
    return TimelineSeries::Kind::Counter;
  if (starts_with(rel, "sys/class/power_supply/") && (b == "energy_now" || b == "charge_now"))
    return TimelineSeries::Kind::Level;
  return TimelineSeries::Kind::Gauge;
}

// Linear between the rows around u, held before the first and after the last.
// The last row at or before u (the first row before it).
std::size_t step_index(const std::vector<TimelinePoint>& pts, double u) {
  const auto it = std::upper_bound(pts.begin(), pts.end(), u, [](double x, const TimelinePoint& p) { return x < p.t; });
  return it == pts.begin() ? 0 : std::size_t(it - pts.begin()) - 1;
}

// Linear between the rows around u, held before the first and after the last.
double interpolate(const std::vector<TimelinePoint>& pts, const std::vector<double>& v, double u) {
  const std::size_t i = step_index(pts, u);
  if (u <= pts.front().t || i + 1 >= pts.size()) return v[i];
  const double ta = pts[i].t, tb = pts[i + 1].t;
  return tb > ta ? v[i] + (v[i + 1] - v[i]) * (u - ta) / (tb - ta) : v[i + 1];
}

}  // namespace

bool is_capture_dir(const std::string& dir) {
  return sysfs::path_exists(sysfs::join_path(dir, "timeline.csv")) &&
         sysfs::path_exists(sysfs::join_path(dir, "capture.json"));
}

Timeline load_timeline(const std::string& dir) {
  const std::string file = sysfs::join_path(dir, "timeline.csv");
  std::ifstream in(file);
  if (!in) throw ConfigError(file, "cannot be read", "point --sysfs-root at a directory `flopwatt capture` wrote");
  Timeline tl;
  std::string line;
  int n = 0;
  auto bad = [&](const std::string& what, const std::string& fix) {
    return ConfigError(file + " line " + std::to_string(n), what, fix);
  };
  const std::string row_fix = "each row is t_s,path,value, e.g. 0.1000,sys/class/powercap/intel-rapl:0/energy_uj,123";
  while (std::getline(in, line)) {
    ++n;
    if (n == 1) {
      if (line != "t_s,path,value") throw bad("header is '" + line + "', not 't_s,path,value'", "restore the header line");
      continue;
    }
    if (line.empty()) continue;
    const auto c1 = line.find(','), c2 = c1 == std::string::npos ? c1 : line.find(',', c1 + 1);
    if (c2 == std::string::npos) throw bad("field path or value missing in '" + line + "'", row_fix);
    const std::string ts = line.substr(0, c1), path = line.substr(c1 + 1, c2 - c1 - 1), value = line.substr(c2 + 1);
    char* end = nullptr;
    const double t = std::strtod(ts.c_str(), &end);
    if (ts.empty() || *end != '\0' || !std::isfinite(t) || t < 0)
      throw bad("field t_s '" + ts + "' is not a time in seconds >= 0", row_fix);
    if (!(starts_with(path, "sys/") || starts_with(path, "proc/")) || path.find("..") != std::string::npos)
      throw bad("field path '" + path + "' is not below sys/ or proc/ of the capture", row_fix);
    TimelineSeries& s = tl.series[path];
    s.kind = kind_of(path);
    if (!s.points.empty() && t < s.points.back().t)
      throw bad("field t_s " + ts + " is earlier than the previous row of " + path, "keep each file's rows in time order");
    if (s.kind != TimelineSeries::Kind::Gauge && !sysfs::parse_decimal(value))
      throw bad("field value '" + value + "' of counter " + path + " is not a decimal integer", row_fix);
    s.points.push_back({t, value});
    tl.duration_s = std::max(tl.duration_s, t);
  }
  if (tl.series.empty()) throw ConfigError(file, "has no rows", "record the capture again with flopwatt capture");
  // capture.json's duration covers the quiet end after the last change.
  std::ifstream meta(sysfs::join_path(dir, "capture.json"));
  std::string text((std::istreambuf_iterator<char>(meta)), std::istreambuf_iterator<char>());
  if (const auto at = text.find("\"duration_s\":"); at != std::string::npos)
    tl.duration_s = std::max(tl.duration_s, std::strtod(text.c_str() + at + 13, nullptr));
  if (!(tl.duration_s > 0))
    throw ConfigError(sysfs::join_path(dir, "capture.json"), "field duration_s is missing or 0",
                      "set it to the capture's length in seconds");
  for (auto& [path, s] : tl.series)
    if (s.kind == TimelineSeries::Kind::Counter && starts_with(path, "sys/class/powercap/")) {
      const std::string zone = path.substr(0, path.rfind('/'));
      if (auto max = sysfs::read_int(sysfs::join_path(sysfs::join_path(dir, zone), "max_energy_range_uj")))
        s.modulus = std::uint64_t(*max) + 1;
    }
  // Counters unwrapped over the recording, so a wrap inside it is not taken
  // for energy running backwards.
  for (auto& [path, s] : tl.series) {
    if (s.kind == TimelineSeries::Kind::Gauge) continue;
    double offset = 0, prev = 0;
    for (const auto& p : s.points) {
      const double v = double(*sysfs::parse_decimal(p.value));
      if (!s.unwrapped.empty() && v < prev && s.modulus) offset += double(s.modulus);
      prev = v;
      s.unwrapped.push_back(v + offset);
    }
  }
  return tl;
}

std::string value_at(const Timeline& tl, const TimelineSeries& s, double t) {
  const double period = tl.duration_s;
  const double loops = std::floor(t / period);
  const double u = t - loops * period;
  if (s.kind == TimelineSeries::Kind::Gauge) return s.points[step_index(s.points, u)].value;
  const auto& pts = s.unwrapped;
  const double gain = pts.back() - pts.front();
  double v = s.kind == TimelineSeries::Kind::Counter ? interpolate(s.points, pts, u) : pts[step_index(s.points, u)];
  v += loops * gain;
  if (v < 0) v = 0;  // a battery drained past empty by many loops stays at 0
  std::uint64_t out = std::uint64_t(std::llround(v));
  if (s.modulus) out %= s.modulus;
  return std::to_string(out);
}

Replay::Replay(const std::string& capture_dir, std::int64_t start_ns)
    : tl_(load_timeline(capture_dir)), root_(capture_dir), start_ns_(start_ns) {
  while (root_.size() > 1 && root_.back() == '/') root_.pop_back();
  // Readers build paths from the root as they were given it; the canonical
  // form catches one that made it absolute or resolved a link on the way.
  prefixes_.push_back(root_ + "/");
  std::error_code ec;
  const std::string canon = fs::weakly_canonical(root_, ec).string();
  if (!ec && canon + "/" != prefixes_.front()) prefixes_.push_back(canon + "/");
}

Replay::~Replay() {
  if (installed_ && sysfs::overlay() == this) sysfs::set_overlay(nullptr);
}

double Replay::seconds_at(std::int64_t t_ns) const { return std::max(0.0, double(t_ns - start_ns_) * 1e-9); }

void Replay::install() {
  sysfs::set_overlay(this);
  installed_ = true;
}

const TimelineSeries* Replay::series_for(std::string_view path) const {
  for (const std::string& p : prefixes_) {
    if (path.size() <= p.size() || path.compare(0, p.size(), p) != 0) continue;
    std::string_view rel = path.substr(p.size());
    while (!rel.empty() && rel.front() == '/') rel.remove_prefix(1);
    if (auto it = tl_.series.find(rel); it != tl_.series.end()) return &it->second;
    // "a//b" or "a/./b" from a reader's own joining: the same file.
    const std::string norm = fs::path(rel).lexically_normal().string();
    if (auto it = tl_.series.find(norm); it != tl_.series.end()) return &it->second;
  }
  return nullptr;
}

bool Replay::read(std::string_view path, std::string& text) const {
  const TimelineSeries* s = series_for(path);
  if (!s) return false;
  // The reader's clock at the read: the value is the recording's at this
  // moment however late the reading thread was scheduled.
  text = value_at(tl_, *s, seconds_at(monotonic_ns()));
  text += '\n';  // as sysfs prints an attribute
  return true;
}

std::string replay_if_capture(const std::string& root, std::FILE* note) {
  if (!is_capture_dir(root)) return root;
  std::error_code ec;
  std::string canon = fs::weakly_canonical(root, ec).string();
  if (ec) canon = root;
  const std::int64_t now = monotonic_ns();
  std::int64_t start = now;
  bool inherited = false;
  if (const char* e = std::getenv(kReplayStartEnv)) {
    // "<ns> <dir>": only the same capture, and a start that has happened.
    char* end = nullptr;
    const long long ns = std::strtoll(e, &end, 10);
    if (end != e && *end == ' ' && std::string(end + 1) == canon && ns > 0 && ns <= now) {
      start = ns;
      inherited = true;
    }
  }
  // Never destroyed: a sampler thread may still read through it while the
  // process exits, and it holds no resource but memory. A second call (only
  // tests make one) installs the new replay in the old one's place; every one
  // stays listed here, so LeakSanitizer sees them reachable.
  static auto* kept = new std::vector<Replay*>;
  auto* replay = new Replay(root, start);
  kept->push_back(replay);
  replay->install();
  // Set before any thread of ours runs (options are finalized first), for a
  // campaign's `flopwatt run` children.
  ::setenv(kReplayStartEnv, (std::to_string(start) + " " + canon).c_str(), 1);
  if (note) {
    if (inherited)
      std::fprintf(note,
                   "flopwatt: replaying the capture %s (%.1f s, then from the start again), %.1f s in, as the "
                   "process that started this one\n",
                   root.c_str(), replay->timeline().duration_s, replay->seconds_at(now));
    else
      std::fprintf(note, "flopwatt: replaying the capture %s (%.1f s, then from the start again)\n", root.c_str(),
                   replay->timeline().duration_s);
  }
  return replay->root();
}

}  // namespace flopwatt::power

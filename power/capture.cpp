#include "power/capture.h"

#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "power/clock.h"
#include "power/config_error.h"
#include "sysfs/files.h"

namespace flopwatt::power {

namespace fs = std::filesystem;
using sysfs::join_path;
using sysfs::list_dir;
using sysfs::under_root;

namespace {

std::string basename_of(const std::string& rel) {
  const auto s = rel.rfind('/');
  return s == std::string::npos ? rel : rel.substr(s + 1);
}

bool starts_with(const std::string& s, const std::string& p) { return s.rfind(p, 0) == 0; }
bool ends_with(const std::string& s, const std::string& p) {
  return s.size() >= p.size() && s.compare(s.size() - p.size(), p.size(), p) == 0;
}

// /proc/cpuinfo lines that say which CPU this is and how it is laid out
// (sockets, cores), for the vendor checks and the context; the rest ("cpu
// MHz", "bogomips", "serial" on some ARM boards) changes between reads or
// identifies the unit.
const std::set<std::string> kCpuinfoKeys = {"processor", "vendor_id",  "cpu family", "model",     "model name",
                                            "stepping",  "physical id", "siblings",  "core id",  "cpu cores",
                                            "flags",     "CPU implementer", "CPU part", "Hardware"};

struct Copier {
  std::string root, out;
  CaptureSummary sum;

  void skip(const std::string& rel, std::string why) { sum.skipped.push_back({rel, std::move(why)}); }

  void copy_file(const std::string& src, const std::string& rel) {
    const sysfs::TextRead r = sysfs::read_text(src);
    if (!r.ok) {
      skip(rel, "unreadable: " + sysfs::errno_text(r.err));
      return;
    }
    const Scrubbed s = scrub(rel, r.text);
    if (!s.keep) {
      skip(rel, s.why);
      return;
    }
    const fs::path dst = fs::path(out) / rel;
    fs::create_directories(dst.parent_path());
    std::ofstream(dst, std::ios::binary | std::ios::trunc) << s.text;
    sum.files.push_back(rel);
  }

  // The attribute files of one sysfs object (stat follows the class
  // symlinks); its subdirectories (device, subsystem, power) lead elsewhere
  // in the device tree and are left out.
  void copy_attrs(const std::string& src_dir, const std::string& rel_dir) {
    for (const std::string& name : list_dir(src_dir)) {
      if (name == "uevent") continue;  // repeats the attributes, serial number included
      const std::string src = join_path(src_dir, name);
      struct stat st {};
      if (::stat(src.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
      copy_file(src, rel_dir + "/" + name);
    }
  }

  void copy_class(const std::string& cls, const std::vector<std::string>& extra_files = {}) {
    const std::string dir = under_root(root, "/sys/class/" + cls);
    for (const std::string& obj : list_dir(dir)) {
      const std::string src = join_path(dir, obj);
      if (!sysfs::is_directory(src)) continue;
      copy_attrs(src, "sys/class/" + cls + "/" + obj);
      for (const std::string& f : extra_files)
        if (sysfs::path_exists(join_path(src, f))) copy_file(join_path(src, f), "sys/class/" + cls + "/" + obj + "/" + f);
    }
  }

  void copy_pmus() {
    const std::string dir = under_root(root, "/sys/bus/event_source/devices");
    for (const std::string& pmu : list_dir(dir)) {
      const std::string src = join_path(dir, pmu);
      const std::string rel = "sys/bus/event_source/devices/" + pmu;
      for (const char* f : {"type", "cpumask"})
        if (sysfs::path_exists(join_path(src, f))) copy_file(join_path(src, f), rel + "/" + f);
      for (const char* sub : {"events", "format"})
        if (sysfs::is_directory(join_path(src, sub))) copy_attrs(join_path(src, sub), rel + "/" + sub);
    }
  }

  void copy_cpu() {
    const std::string cpu = under_root(root, "/sys/devices/system/cpu");
    for (const char* f : {"online", "possible", "present"})
      if (sysfs::path_exists(join_path(cpu, f))) copy_file(join_path(cpu, f), std::string("sys/devices/system/cpu/") + f);
    const std::string cache = join_path(cpu, "cpu0/cache");
    for (const std::string& idx : list_dir(cache)) {
      if (!starts_with(idx, "index")) continue;
      for (const char* f : {"level", "type", "size", "shared_cpu_list", "coherency_line_size"}) {
        const std::string src = join_path(join_path(cache, idx), f);
        if (sysfs::path_exists(src)) copy_file(src, "sys/devices/system/cpu/cpu0/cache/" + idx + "/" + f);
      }
    }
    for (const char* f : {"/proc/cpuinfo", "/proc/sys/kernel/perf_event_paranoid"})
      if (sysfs::path_exists(under_root(root, f))) copy_file(under_root(root, f), std::string(f).substr(1));
  }

  void copy_thermal() {
    const std::string dir = under_root(root, "/sys/class/thermal");
    for (const std::string& z : list_dir(dir)) {
      if (!starts_with(z, "thermal_zone")) continue;
      for (const char* f : {"type", "temp"})
        if (sysfs::path_exists(join_path(join_path(dir, z), f)))
          copy_file(join_path(join_path(dir, z), f), "sys/class/thermal/" + z + "/" + f);
    }
  }
};

void check_out_dir(const std::string& out) {
  if (out.empty()) throw ConfigError("--out", "missing", "pass a new directory, e.g. --out my-laptop");
  std::error_code ec;
  if (fs::exists(out, ec)) {
    if (!fs::is_directory(out, ec))
      throw ConfigError("--out " + out, "is a file, not a directory", "pass a new directory for the capture");
    if (!fs::is_empty(out, ec))
      throw ConfigError("--out " + out, "already exists and is not empty",
                        "pass a new directory; a capture never mixes with older files");
  }
  fs::create_directories(out, ec);
  if (ec) throw ConfigError("--out " + out, "cannot be created: " + ec.message(), "pass a writable directory");
}

// Every CPU busy with dependent floating-point work the compiler cannot drop,
// so the counters show the machine under load, not only at idle.
class Load {
 public:
  void start() {
    const unsigned n = std::max(1u, std::thread::hardware_concurrency());
    for (unsigned i = 0; i < n; ++i)
      threads_.emplace_back([this, i] {
        double x = 1.0 + i;
        while (!stop_.load(std::memory_order_relaxed))
          for (int k = 0; k < 100000; ++k) x = x * 0.9999999 + 1e-7;  // converges: no overflow, no denormals
        sink_ += x > 0 ? 1 : 0;
      });
  }
  void stop() {
    stop_ = true;
    for (auto& t : threads_) t.join();
    threads_.clear();
  }
  unsigned threads() const { return unsigned(threads_.size()); }
  ~Load() {
    if (!threads_.empty()) stop();
  }

 private:
  std::atomic<bool> stop_{false};
  std::atomic<int> sink_{0};
  std::vector<std::thread> threads_;
};

}  // namespace

bool is_moving_file(const std::string& rel) {
  const std::string b = basename_of(rel);
  if (starts_with(rel, "sys/class/powercap/")) return b == "energy_uj";
  if (starts_with(rel, "sys/class/power_supply/"))
    return b == "energy_now" || b == "charge_now" || b == "power_now" || b == "current_now" ||
           b == "voltage_now" || b == "status" || b == "online" || b == "capacity";
  if (starts_with(rel, "sys/class/hwmon/")) return ends_with(b, "_input") || ends_with(b, "_average");
  if (starts_with(rel, "sys/class/thermal/")) return b == "temp";
  return false;
}

Scrubbed scrub(const std::string& rel, const std::string& content) {
  const std::string b = basename_of(rel);
  if (b.find("serial") != std::string::npos) return {false, {}, "an identifier (serial number), removed"};
  if (content.find('\0') != std::string::npos) return {true, content, {}};  // binary tables (gpu_metrics)
  std::string text = content;
  if (rel == "proc/cpuinfo") {
    std::istringstream in(content);
    std::string line, kept;
    while (std::getline(in, line)) {
      const auto colon = line.find(':');
      std::string key = colon == std::string::npos ? line : line.substr(0, colon);
      while (!key.empty() && (key.back() == ' ' || key.back() == '\t')) key.pop_back();
      if (line.empty() || kCpuinfoKeys.count(key)) kept += line + "\n";
    }
    text = kept;
  }
  static const std::regex mac("([0-9A-Fa-f]{2}[:-]){5}[0-9A-Fa-f]{2}");
  text = std::regex_replace(text, mac, "00:00:00:00:00:00");
  // The host's name as a whole word only: a host called "amd" must not turn
  // the hwmon chip "amdgpu" into "hostgpu".
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) == 0 && std::string(host).size() >= 3) {
    const std::string h = host;
    auto word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-'; };
    for (auto at = text.find(h); at != std::string::npos; at = text.find(h, at + 1)) {
      const bool before = at > 0 && word(text[at - 1]), after = at + h.size() < text.size() && word(text[at + h.size()]);
      if (!before && !after) text.replace(at, h.size(), "host");
    }
  }
  return {true, text, {}};
}

CaptureSummary copy_power_tree(const std::string& root, const std::string& out) {
  Copier c{root, out, {}};
  c.copy_class("powercap");
  c.copy_class("power_supply");
  c.copy_class("hwmon", {"device/gpu_metrics"});
  c.copy_thermal();
  c.copy_pmus();
  c.copy_cpu();
  for (const std::string& f : c.sum.files)
    if (is_moving_file(f)) c.sum.moving.push_back(f);
  return c.sum;
}

CaptureSummary capture_machine(const CaptureOptions& opt) {
  if (!(opt.seconds > 0 && opt.seconds <= 3600))
    throw ConfigError("--seconds", "must be between 0 and 3600", "pass for example --seconds 20");
  if (!(opt.period_s >= 0.001 && opt.period_s <= opt.seconds))
    throw ConfigError("--period", "must be between 0.001 s and --seconds", "pass for example --period 0.1");
  check_out_dir(opt.out);
  CaptureSummary sum = copy_power_tree(opt.root, opt.out);

  // A value with a newline or a comma would break the CSV row; no counter or
  // gauge prints one, so such a file is left out of the timeline, not mangled.
  std::map<std::string, std::string> last;
  std::ofstream csv(fs::path(opt.out) / "timeline.csv", std::ios::trunc);
  csv << "t_s,path,value\n";
  const std::int64_t t0 = monotonic_ns();
  // Each row is stamped at the middle of its own file's read, not at the
  // start of the pass: on a busy machine the pass can be preempted between
  // two files (and a real battery read through ACPI takes milliseconds), and
  // a counter stamped earlier than it was read records a power that is not
  // the machine's.
  auto sample = [&]() {
    for (const std::string& rel : sum.moving) {
      const std::int64_t a = monotonic_ns();
      auto v = sysfs::read_trimmed(under_root(opt.root, "/" + rel));
      const double t = double(a + (monotonic_ns() - a) / 2 - t0) * 1e-9;
      if (!v || v->find_first_of(",\n") != std::string::npos) continue;
      auto it = last.find(rel);
      if (it != last.end() && it->second == *v) continue;
      last[rel] = *v;
      char ts[32];
      std::snprintf(ts, sizeof ts, "%.4f", t);
      csv << ts << ',' << rel << ',' << *v << '\n';
      ++sum.rows;
    }
  };
  // The first half idle, the second under load: the timeline holds both the
  // idle draw a baseline needs and the loaded draw a run sees.
  const double load_start = opt.load ? opt.seconds / 2 : opt.seconds;
  Load load;
  for (long k = 0;; ++k) {
    const std::int64_t due = t0 + std::int64_t(double(k) * opt.period_s * 1e9);
    while (monotonic_ns() < due) std::this_thread::sleep_for(std::chrono::microseconds(200));
    const double t = double(monotonic_ns() - t0) * 1e-9;
    if (opt.load && load.threads() == 0 && t >= load_start) load.start();
    sample();
    if (t >= opt.seconds) break;
  }
  const unsigned load_threads = load.threads();
  load.stop();
  csv.close();

  nlohmann::json m;
  m["format"] = "flopwatt-capture 1";
  m["duration_s"] = opt.seconds;
  m["period_s"] = opt.period_s;
  m["load"] = opt.load ? nlohmann::json{{"start_s", load_start}, {"end_s", opt.seconds}, {"threads", load_threads}}
                       : nlohmann::json(nullptr);
  // Where the tree came from, without a path of the recording machine.
  m["source"] = opt.root == "/" ? "a machine's / (flopwatt capture)" : "a --sysfs-root tree (flopwatt capture)";
  struct utsname u {};
  if (opt.root == "/" && ::uname(&u) == 0) m["kernel"] = std::string(u.release) + " " + u.machine;
  m["files"] = sum.files.size();
  m["moving"] = sum.moving;
  nlohmann::json left = nlohmann::json::array();
  for (const auto& s : sum.skipped) left.push_back({{"path", s.path}, {"why", s.why}});
  m["left_out"] = left;
  std::ofstream(fs::path(opt.out) / "capture.json", std::ios::trunc) << m.dump(2) << "\n";
  return sum;
}

}  // namespace flopwatt::power

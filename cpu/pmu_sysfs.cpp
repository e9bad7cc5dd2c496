#include "cpu/pmu_sysfs.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

namespace flopwatt::cpu {
namespace {

namespace fs = std::filesystem;

std::optional<std::string> first_line(const fs::path& p) {
  std::ifstream f(p);
  if (!f) return std::nullopt;
  std::string s;
  std::getline(f, s);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\r')) s.pop_back();
  return s;
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string part;
  while (std::getline(ss, part, sep)) out.push_back(part);
  return out;
}

std::optional<std::uint64_t> parse_number(const std::string& s) {
  if (s.empty()) return std::nullopt;
  errno = 0;
  char* end = nullptr;
  const unsigned long long v = std::strtoull(s.c_str(), &end, 0);
  if (errno || *end) return std::nullopt;
  return v;
}

// Puts `value` into the bits a format file names, low bits of the value into
// the first range first (the kernel's multi-range formats, e.g. AMD's DF umask
// "config:8-15,24-27", are filled in that order: perf's pmu.c pmu_format_value).
bool apply_format(const std::string& format, std::uint64_t value, SysfsEvent& e, std::string& problem) {
  const auto colon = format.find(':');
  if (colon == std::string::npos) {
    problem = "format '" + format + "' has no ':'";
    return false;
  }
  const std::string field = format.substr(0, colon);
  std::uint64_t* target = field == "config" ? &e.config : field == "config1" ? &e.config1
                          : field == "config2" ? &e.config2 : nullptr;
  if (!target) {
    problem = "format field '" + field + "' is not config, config1 or config2";
    return false;
  }
  int used = 0;
  for (const auto& range : split(format.substr(colon + 1), ',')) {
    const auto dash = range.find('-');
    const auto lo = parse_number(range.substr(0, dash));
    const auto hi = dash == std::string::npos ? lo : parse_number(range.substr(dash + 1));
    if (!lo || !hi || *hi < *lo || *hi > 63) {
      problem = "format range '" + range + "' is not N or N-M within 0-63";
      return false;
    }
    for (std::uint64_t bit = *lo; bit <= *hi; ++bit, ++used)
      if (used < 64 && (value >> used) & 1u) *target |= std::uint64_t(1) << bit;
  }
  if (used < 64 && (value >> used) != 0) {
    problem = "value " + std::to_string(value) + " does not fit the " + std::to_string(used) + " bits of '" + format + "'";
    return false;
  }
  return true;
}

// "event=0x0a,rdwrmask=0x1" against <pmu>/format; a term without a value is 1.
bool apply_terms(const fs::path& pmu_dir, const std::string& terms, SysfsEvent& e, std::string& problem) {
  for (const auto& t : split(terms, ',')) {
    if (t.empty()) continue;
    const auto eq = t.find('=');
    const std::string name = t.substr(0, eq);
    const auto value = eq == std::string::npos ? std::optional<std::uint64_t>(1) : parse_number(t.substr(eq + 1));
    if (!value) {
      problem = "term '" + t + "' has no number after '='";
      return false;
    }
    const auto format = first_line(pmu_dir / "format" / name);
    if (!format) {
      problem = (pmu_dir / "format" / name).string() + " missing: " + e.pmu + " has no term '" + name + "'";
      return false;
    }
    if (!apply_format(*format, *value, e, problem)) return false;
  }
  return true;
}

}  // namespace

std::optional<std::vector<int>> parse_cpu_list(const std::string& s) {
  std::vector<int> out;
  if (s.empty()) return out;
  for (const auto& part : split(s, ',')) {
    const auto dash = part.find('-');
    const auto lo = parse_number(part.substr(0, dash));
    const auto hi = dash == std::string::npos ? lo : parse_number(part.substr(dash + 1));
    if (!lo || !hi || *hi < *lo || *hi > 65535) return std::nullopt;
    for (auto c = *lo; c <= *hi; ++c) out.push_back(int(c));
  }
  return out;
}

SysfsResolve resolve_sysfs_event(const std::string& spec, const std::string& root) {
  SysfsResolve r;
  static const std::regex form(R"(([A-Za-z0-9_.-]+)/([^/]+)/?)");
  std::smatch m;
  if (!std::regex_match(spec, m, form)) {
    r.problem = "'" + spec + "' is not PMU/EVENT/";
    r.fix = "write it as perf does, e.g. uncore_imc_0/cas_count_read/ or amd_umc_0/event=0x0a,rdwrmask=0x1/";
    return r;
  }
  SysfsEvent e;
  e.pmu = m[1];
  const std::string what = m[2];
  const fs::path dir = fs::path(root) / "sys/bus/event_source/devices" / e.pmu;
  const auto type = first_line(dir / "type");
  const auto type_value = type ? parse_number(*type) : std::nullopt;
  if (!type_value) {
    r.problem = "PMU " + e.pmu + " is not exposed (" + (dir / "type").string() + " missing or not a number)";
    r.fix = "list the PMUs with `ls /sys/bus/event_source/devices`";
    return r;
  }
  e.type = std::uint32_t(*type_value);
  std::string terms = what;
  if (what.find('=') == std::string::npos) {
    const auto alias = first_line(dir / "events" / what);
    if (!alias) {
      r.problem = e.pmu + " has no event '" + what + "' (" + (dir / "events" / what).string() + " missing)";
      r.fix = "list its events with `ls " + (dir / "events").string() + "`, or give raw terms from its format/";
      return r;
    }
    terms = *alias;
    if (const auto scale = first_line(dir / "events" / (what + ".scale"))) e.scale = std::atof(scale->c_str());
    e.unit = first_line(dir / "events" / (what + ".unit")).value_or("");
  }
  if (!apply_terms(dir, terms, e, r.problem)) {
    r.fix = "check the terms against " + (dir / "format").string();
    return r;
  }
  const auto cpus = parse_cpu_list(first_line(dir / "cpumask").value_or(""));
  if (!cpus) {
    r.problem = (dir / "cpumask").string() + " is not a CPU list";
    r.fix = "report the file's contents with this message";
    return r;
  }
  e.cpus = *cpus;
  r.event = e;
  return r;
}

namespace {

// Instances of a PMU family: "base" itself or "base_N", in N order.
std::vector<std::string> instances(const fs::path& devices, const std::string& base) {
  std::vector<std::pair<int, std::string>> found;
  std::error_code ec;
  for (const auto& d : fs::directory_iterator(devices, ec)) {
    const std::string n = d.path().filename().string();
    if (n == base) found.emplace_back(-1, n);
    else if (n.rfind(base + "_", 0) == 0 && n.size() > base.size() + 1 &&
             std::all_of(n.begin() + long(base.size()) + 1, n.end(), [](char c) { return c >= '0' && c <= '9'; }))
      found.emplace_back(std::atoi(n.c_str() + base.size() + 1), n);
  }
  std::sort(found.begin(), found.end());
  std::vector<std::string> out;
  for (auto& f : found) out.push_back(f.second);
  return out;
}

// A scaled event's count in bytes: sysfs gives MiB for Intel's IMC counters.
bool to_bytes(SysfsEvent& e) {
  if (e.unit == "MiB") e.scale *= 1024.0 * 1024.0;
  else if (e.unit == "KiB") e.scale *= 1024.0;
  else if (e.unit == "bytes" || e.unit == "B") {}
  else return false;
  e.unit = "bytes";
  return true;
}

}  // namespace

DramEvents dram_events(const std::string& root, bool write) {
  const fs::path devices = fs::path(root) / "sys/bus/event_source/devices";
  struct Family {
    const char* base;
    const char* read_event;
    const char* write_event;
    double bytes_per_count;  // 0: the event's .scale and .unit say
  };
  // Intel's names are the kernel's event aliases (arch/x86/events/intel/
  // uncore_snb.c, uncore_snbep.c); AMD's UMC has none, so its terms are those
  // of perf's amdzen4 memory-controller events with one 64-byte line per CAS.
  static const Family families[] = {
      {"uncore_imc_free_running", "data_read", "data_write", 0},
      {"uncore_imc", "data_reads", "data_writes", 0},
      {"uncore_imc", "cas_count_read", "cas_count_write", 0},
      {"amd_umc", "event=0x0a,rdwrmask=0x1", "event=0x0a,rdwrmask=0x2", 64},
  };
  DramEvents out;
  for (const auto& f : families) {
    const std::string what = write ? f.write_event : f.read_event;
    const auto names = instances(devices, f.base);
    std::vector<SysfsEvent> events;
    std::string problem;
    for (const auto& pmu : names) {
      // An instance without the alias (a client IMC next to free-running
      // ones) belongs to another family row.
      if (f.bytes_per_count == 0 && !fs::exists(devices / pmu / "events" / what)) continue;
      auto r = resolve_sysfs_event(pmu + "/" + what + "/", root);
      if (!r.event) {
        problem = r.problem;
        break;
      }
      if (f.bytes_per_count > 0) {
        r.event->scale = f.bytes_per_count;
        r.event->unit = "bytes";
      } else if (!to_bytes(*r.event)) {
        problem = pmu + "/" + what + " counts in '" + r.event->unit + "', not a unit of bytes";
        break;
      }
      events.push_back(*r.event);
    }
    if (!problem.empty()) {
      out.problem = problem;
      return out;
    }
    if (!events.empty()) {
      out.events = std::move(events);
      out.family = std::string(f.base) + "/" + what + "/";
      return out;
    }
  }
  out.problem = "no memory-controller PMU in " + devices.string() +
                " (looked for uncore_imc_free_running*, uncore_imc*, amd_umc_*: Intel's uncore driver or, on AMD, "
                "Linux 6.10 or later with PerfMonV2 exposes them; virtual machines do not)";
  return out;
}

}  // namespace flopwatt::cpu

#include "cpu/pmu_sysfs.h"

#include <algorithm>
#include <regex>

#include "sysfs/files.h"

namespace flopwatt::cpu {

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
  const sysfs::Pmu pmu = sysfs::read_pmu(root, e.pmu);
  if (!pmu.present) {
    r.problem = "PMU " + e.pmu + " is not exposed (" + pmu.dir + " missing)";
    r.fix = "list the PMUs with `ls /sys/bus/event_source/devices`";
    return r;
  }
  if (!pmu.problem.empty()) {
    r.problem = pmu.problem;
    r.fix = "report the file's contents with this message";
    return r;
  }
  e.type = pmu.type;
  e.cpus = pmu.cpus;
  std::string terms = what;
  if (what.find('=') == std::string::npos) {
    const auto alias = sysfs::read_pmu_event(pmu, what);
    const std::string events = sysfs::join_path(pmu.dir, "events");
    if (!alias) {
      r.problem = e.pmu + " has no event '" + what + "' (" + sysfs::join_path(events, what) + " missing)";
      r.fix = "list its events with `ls " + events + "`, or give raw terms from its format/";
      return r;
    }
    if (!alias->problem.empty()) {
      r.problem = alias->problem;
      r.fix = "report the file's contents with this message";
      return r;
    }
    terms = alias->spec;
    e.scale = alias->scale.value_or(1.0);
    e.unit = alias->unit.value_or("");
  }
  sysfs::PerfConfig config;
  if (!sysfs::encode_terms(terms, pmu, config, r.problem)) {
    r.fix = "check the terms against " + sysfs::join_path(pmu.dir, "format");
    return r;
  }
  e.config = config.config;
  e.config1 = config.config1;
  e.config2 = config.config2;
  r.event = e;
  return r;
}

namespace {

// Instances of a PMU family: "base" itself or "base_N", in N order.
std::vector<std::string> instances(const std::string& devices, const std::string& base) {
  std::vector<std::pair<int, std::string>> found;
  for (const auto& n : sysfs::list_dir(devices)) {
    if (n == base) found.emplace_back(-1, n);
    else if (n.rfind(base + "_", 0) == 0 && n.size() > base.size() + 1 &&
             std::all_of(n.begin() + long(base.size()) + 1, n.end(), [](char c) { return c >= '0' && c <= '9'; }))
      if (const auto i = sysfs::parse_decimal(std::string_view(n).substr(base.size() + 1)); i && *i < 1u << 20)
        found.emplace_back(int(*i), n);
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
  const std::string devices = sysfs::under_root(root, "/sys/bus/event_source/devices");
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
      if (f.bytes_per_count == 0 && !sysfs::path_exists(devices + "/" + pmu + "/events/" + what)) continue;
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
  out.problem = "no memory-controller PMU in " + devices +
                " (looked for uncore_imc_free_running*, uncore_imc*, amd_umc_*: Intel's uncore driver or, on AMD, "
                "Linux 6.10 or later with PerfMonV2 exposes them; virtual machines do not)";
  return out;
}

}  // namespace flopwatt::cpu

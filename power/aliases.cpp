#include "power/aliases.h"

#include <algorithm>
#include <cctype>
#include <map>

namespace flopwatt::power {

namespace {

bool all_digits(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); });
}

// "package-0" -> ("package", "0"); "energy-pkg-1" handled by the caller.
std::optional<std::pair<std::string, std::string>> name_index(const std::string& s) {
  const auto dash = s.rfind('-');
  if (dash == std::string::npos) return std::nullopt;
  const std::string idx = s.substr(dash + 1);
  if (!all_digits(idx)) return std::nullopt;
  return std::make_pair(s.substr(0, dash), idx);
}

}  // namespace

std::optional<std::string> rapl_counter_key(const std::string& id, const std::string& domain) {
  static const char* kDomains[] = {"package", "core", "uncore", "dram", "psys"};
  if (std::find(std::begin(kDomains), std::end(kDomains), domain) == std::end(kDomains)) return std::nullopt;
  auto rest_of = [&](const char* prefix) -> std::optional<std::string> {
    const std::string p = prefix;
    if (id.rfind(p, 0) != 0) return std::nullopt;
    return id.substr(p.size());
  };
  // The sums over sockets that powercap and the MSR probe each build add up
  // the same registers.
  if ((id == "rapl-powercap:package" || id == "rapl-msr:package") && domain == "package") return "package/sum";
  if (auto r = rest_of("rapl-powercap:")) {
    // package-0, core-0, psys-0; not package-0-die-1 (no other interface has
    // per-die views) and not the sum "package".
    auto ni = name_index(*r);
    if (!ni || ni->first != domain) return std::nullopt;
    return domain + "/" + ni->second;
  }
  if (auto r = rest_of("rapl-msr:")) {
    auto ni = name_index(*r);
    if (!ni || ni->first != domain) return std::nullopt;
    return domain + "/" + ni->second;
  }
  // amd_energy / zenergy Esocket<N> reads MSR_AMD_PKG_ENERGY_STATUS of socket
  // N, the register behind the powercap package zone and perf's energy-pkg.
  for (const char* chip : {"hwmon:zenergy:Esocket", "hwmon:amd_energy:Esocket"})
    if (auto r = rest_of(chip); r && domain == "package" && all_digits(*r)) return "package/" + *r;
  if (auto r = rest_of("rapl-perf:")) {
    // energy-pkg (one package) or energy-pkg-1: the PMU's cpumask order, one
    // CPU per package, which is package order. energy-core (AMD's per-core
    // PMU, all cores summed) has no single-register counterpart.
    static const std::map<std::string, std::string> events = {
        {"energy-pkg", "package"}, {"energy-cores", "core"}, {"energy-gpu", "uncore"},
        {"energy-ram", "dram"},    {"energy-psys", "psys"}};
    std::string ev = *r, idx = "0";
    if (!events.count(ev)) {
      auto ni = name_index(ev);
      if (!ni) return std::nullopt;
      ev = ni->first;
      idx = ni->second;
    }
    auto it = events.find(ev);
    if (it == events.end() || it->second != domain) return std::nullopt;
    return domain + "/" + idx;
  }
  return std::nullopt;
}

int rapl_view_rank(const std::string& id) {
  // powercap first: readable without root once the udev rule grants it, the
  // kernel applies the per-model units, and its zone limits bound the reset
  // check. perf next: 64-bit kernel totals, but needs perf_event_paranoid or
  // CAP_PERFMON. The MSR device last: root only, 32-bit, our unit table.
  if (id.rfind("rapl-powercap:", 0) == 0) return 0;
  if (id.rfind("rapl-perf:", 0) == 0) return 1;
  if (id.rfind("rapl-msr:", 0) == 0) return 2;
  if (id.rfind("hwmon:", 0) == 0) return 3;  // an out-of-tree driver's copy of the same MSR
  return 100;
}

void apply_aliases(Discovery& d) {
  std::map<std::string, std::string> keeper;  // key -> id kept
  for (const auto& src : d.sources) {
    auto key = rapl_counter_key(src->id(), src->domain());
    if (!key) continue;
    auto it = keeper.find(*key);
    if (it == keeper.end() || rapl_view_rank(src->id()) < rapl_view_rank(it->second)) keeper[*key] = src->id();
  }
  auto status_of = [&](const std::string& id) -> SourceStatus* {
    for (auto& s : d.status)
      if (s.id == id) return &s;
    return nullptr;
  };
  std::vector<std::unique_ptr<PowerSource>> kept;
  for (auto& src : d.sources) {
    auto key = rapl_counter_key(src->id(), src->domain());
    if (!key || keeper[*key] == src->id()) {
      kept.push_back(std::move(src));
      continue;
    }
    const std::string& main = keeper[*key];
    if (SourceStatus* s = status_of(src->id())) {
      s->available = false;
      s->alias_of = main;
      s->reason = "the same counter as " + main + ", which is sampled instead (one reader per counter)";
      s->fix = "none needed; --power " + src->id() + " samples this view instead";
    }
    if (SourceStatus* m = status_of(main)) {
      m->aliases.push_back(src->id());
      if (m->note.find("also seen as") == std::string::npos)
        m->note.append(m->note.empty() ? "" : "; ")
            .append("sampled here rather than through its other views (powercap before perf before MSR before hwmon: "
                   "no root needed, kernel units, zone limits); also seen as");
      m->note.append(" ").append(src->id());
    }
  }
  d.sources = std::move(kept);
}

}  // namespace flopwatt::power

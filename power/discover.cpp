#include <algorithm>
#include <exception>

#include "power/aliases.h"
#include "power/battery.h"
#include "power/external_log.h"
#include "power/hwmon.h"
#include "power/msr_rapl.h"
#include "power/perf_rapl.h"
#include "power/powercap_rapl.h"
#include "power/source.h"

namespace flopwatt::power {

bool selected(const std::string& id, const std::vector<std::string>& select) {
  if (select.empty()) return true;
  for (const auto& s : select)
    if (!s.empty() && id.rfind(s, 0) == 0) return true;
  return false;
}

Discovery discover(const DiscoverOptions& opts) {
  Discovery all;
  const std::string root = opts.root.empty() ? "/" : opts.root;
  // Each probe is self-contained; one that fails unexpectedly must not hide the others.
  auto guarded = [&](const char* id, auto&& probe) {
    try {
      probe();
    } catch (const std::exception& e) {
      SourceStatus s;
      s.id = id;
      s.reason = std::string("probe failed: ") + e.what();
      s.fix = "report this as a bug with the output of `flopwatt sources --json`";
      all.status.push_back(std::move(s));
    }
  };
  guarded("rapl-powercap:*", [&] { probe_powercap(root, all); });
  guarded("rapl-perf:*", [&] { probe_perf_rapl(root, all); });
  guarded("rapl-msr:*", [&] { probe_msr_rapl(root, all); });
  guarded("battery:*", [&] { probe_battery(root, all); });
  guarded("hwmon:*", [&] { probe_hwmon(root, all); });
  if (!opts.power_log.empty()) {
    SourceStatus s;
    s.id = external_source_id(opts.power_log);
    s.domain = "wall";
    s.kind = Kind::Gauge;
    s.update_interval_s = 1.0;
    try {
      all.sources.push_back(open_power_log(opts.power_log));
      s.available = true;
      s.note = "external meter log " + opts.power_log;
    } catch (const ConfigError& e) {
      s.reason = e.where() + ": " + e.problem();
      s.fix = e.fix();
    } catch (const std::exception& e) {
      s.reason = e.what();
    }
    all.status.push_back(std::move(s));
  }

  Discovery out;
  out.status = std::move(all.status);
  for (auto& src : all.sources) {
    if (selected(src->id(), opts.select)) {
      out.sources.push_back(std::move(src));
    } else {
      for (auto& s : out.status)
        if (s.id == src->id()) s.note += std::string(s.note.empty() ? "" : "; ") + "not selected";
    }
  }
  // Among what was selected, so --power rapl-msr still gets the MSR view.
  apply_aliases(out);
  return out;
}

}  // namespace flopwatt::power

// `flopwatt sources`: every power source the power library can find, available
// or not, with the reason and the fix; available ones are watched for a short
// window to measure how often their value really changes.
#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <nlohmann/json.hpp>
#include <thread>

#include "harness/cli/commands.h"
#include "harness/run/run_options.h"
#include "power/config_error.h"
#include "power/external_log.h"
#include "power/power_state.h"
#include "power/replay.h"
#include "power/source_watch.h"
#include "power/source.h"
#include "power/sysfs.h"
#include "power/temperature.h"
#include "workloads/error.h"

namespace flopwatt {

namespace {

struct SourcesOptions {
  std::string root;
  std::string power_log;
  double measure_s = 2.0;
  bool json = false;
};

std::string seconds_text(double s) {
  if (s <= 0) return "-";
  if (s < 1) return fmt::format("{:.3g} ms", s * 1e3);
  return fmt::format("{:.3g} s", s);
}

void print_json(const SourcesOptions& o, const std::string& root, const power::Discovery& disc,
                const std::map<std::string, power::SourceWatch>& measured,
                const std::optional<power::PowerState>& ps, const std::vector<power::Temperature>& temps) {
  nlohmann::json j;
  j["root"] = root;
  j["measure_s"] = o.measure_s;
  j["sources"] = nlohmann::json::array();
  for (const auto& s : disc.status) {
    nlohmann::json e;
    e["id"] = s.id;
    e["domain"] = s.domain;
    e["kind"] = power::to_string(s.kind);
    e["available"] = s.available;
    e["reason"] = s.reason.empty() ? nlohmann::json() : nlohmann::json(s.reason);
    e["fix"] = s.fix.empty() ? nlohmann::json() : nlohmann::json(s.fix);
    e["note"] = s.note.empty() ? nlohmann::json() : nlohmann::json(s.note);
    e["contains"] = s.contains;
    e["update_interval_s"] = s.update_interval_s > 0 ? nlohmann::json(s.update_interval_s) : nlohmann::json();
    e["interval_measured"] = false;
    e["avg_power_w"] = nullptr;
    e["updating"] = nullptr;
    if (auto it = measured.find(s.id); it != measured.end()) {
      const power::SourceWatch& m = it->second;
      e["update_interval_s"] = m.interval_s;
      e["interval_measured"] = m.interval_measured;
      e["avg_power_w"] = m.sampled ? nlohmann::json(m.avg_power_w) : nlohmann::json();
      e["updating"] = m.changed;
      if (!m.error.empty()) e["read_error"] = m.error;
    }
    j["sources"].push_back(std::move(e));
  }
  if (ps) {
    nlohmann::json p;
    p["ac_online"] = ps->ac_online ? nlohmann::json(*ps->ac_online) : nlohmann::json();
    p["ac_inferred_from_battery_status"] = ps->ac_inferred;
    p["battery_percent"] = ps->battery_percent ? nlohmann::json(*ps->battery_percent) : nlohmann::json();
    p["batteries"] = nlohmann::json::array();
    for (const auto& b : ps->batteries)
      p["batteries"].push_back({{"name", b.name},
                                {"status", power::to_string(b.status)},
                                {"percent", b.percent ? nlohmann::json(*b.percent) : nlohmann::json()}});
    j["power_state"] = p;
  } else {
    j["power_state"] = nullptr;
  }
  j["temperatures"] = nlohmann::json::array();
  for (const auto& t : temps) j["temperatures"].push_back({{"id", t.id}, {"celsius", t.celsius}});
  fmt::print("{}\n", j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace));
}

void print_table(const SourcesOptions& o, const std::string& root, const power::Discovery& disc,
                 const std::map<std::string, power::SourceWatch>& measured,
                 const std::optional<power::PowerState>& ps, const std::vector<power::Temperature>& temps) {
  int available = 0;
  std::size_t w = 24;
  for (const auto& s : disc.status) {
    available += s.available;
    w = std::max(w, s.id.size());
  }
  fmt::print("{:<{}} {:<8} {:<8} {:<11} {:<24} {}\n", "source", w, "domain", "kind", "status", "update interval",
             o.measure_s > 0 ? fmt::format("avg W ({:g} s)", o.measure_s) : std::string("avg W"));
  for (const auto& s : disc.status) {
    std::string interval = seconds_text(s.update_interval_s) + " nominal";
    std::string power = "-";
    if (auto it = measured.find(s.id); it != measured.end()) {
      const power::SourceWatch& m = it->second;
      if (m.interval_measured)
        interval = seconds_text(m.interval_s) + " measured";
      else if (!m.changed)
        interval = fmt::format("no change in {:g} s", o.measure_s);
      else
        interval = fmt::format("<2 changes in {:g} s", o.measure_s);
      power = m.sampled ? fmt::format("{:.3f}", m.avg_power_w) : "no sample";
    } else if (!s.available) {
      interval = "-";
    }
    fmt::print("{:<{}} {:<8} {:<8} {:<11} {:<24} {}\n", s.id, w, s.domain, power::to_string(s.kind),
               s.available ? "available" : "missing", interval, power);
    if (!s.reason.empty()) fmt::print("    why: {}\n", s.reason);
    if (!s.fix.empty()) fmt::print("    fix: {}\n", s.fix);
    if (!s.note.empty()) fmt::print("    note: {}\n", s.note);
    if (!s.contains.empty()) {
      std::string c;
      for (const auto& x : s.contains) c += (c.empty() ? "" : ", ") + x;
      fmt::print("    contains: {} (never add these to it)\n", c);
    }
    if (auto it = measured.find(s.id); it != measured.end() && !it->second.error.empty())
      fmt::print("    read error: {}\n", it->second.error);
  }
  if (available == 0)
    fmt::print("\nNo power source is available: runs report FLOP/s only. Each line above says why and the fix.\n");
  if (ps) {
    std::string line = "\npower: ";
    line += ps->ac_online ? (*ps->ac_online ? "on mains" : "on battery") : "mains state unknown";
    if (ps->ac_inferred) line += " (inferred from battery status)";
    if (!ps->ac_note.empty()) line += " (" + ps->ac_note + ")";
    for (const auto& b : ps->batteries)
      line += fmt::format("; {} {} {}", b.name, b.percent ? fmt::format("{:.0f}%", *b.percent) : "?%",
                          power::to_string(b.status));
    fmt::print("{}\n", line);
  } else {
    fmt::print("\npower: no power supply information (no /sys/class/power_supply entries)\n");
  }
  if (!temps.empty()) {
    std::string line = "temperatures:";
    for (const auto& t : temps) line += fmt::format(" {}={:.1f}C", t.id, t.celsius);
    fmt::print("{}\n", line);
  }
}

void run_sources(const SourcesOptions& o, CliState& st) {
  // A capture is looked at as it moves, not frozen at its first values.
  const std::string root = power::replay_if_capture(resolve_sysfs_root(o.root), stderr);
  if (!power::is_directory(root))
    throw InputError("--sysfs-root " + root, "no such directory",
                     "pass a directory laid out like / (sys/, dev/, proc/), or unset FLOPWATT_SYSFS_ROOT");
  if (!(o.measure_s >= 0 && o.measure_s <= 600))
    throw InputError("--measure", "must be between 0 and 600 seconds", "pass for example --measure 2");
  if (!o.power_log.empty()) {
    try {
      power::check_power_log(o.power_log);
    } catch (const power::ConfigError& e) {
      throw InputError(e.where(), e.problem(), e.fix());
    }
  }
  power::DiscoverOptions dopt;
  dopt.root = root;
  dopt.power_log = o.power_log;
  power::Discovery disc = power::discover(dopt);

  using Watched = std::map<std::string, power::SourceWatch>;
  const Watched measured =
      o.measure_s > 0 ? power::watch_sources(std::move(disc.sources), o.measure_s) : Watched{};
  const auto ps = power::read_power_state(root);
  const auto temps = power::read_temperatures(root);

  if (o.json) print_json(o, root, disc, measured, ps, temps);
  else print_table(o, root, disc, measured, ps, temps);
  st.exit_code = 0;
}

}  // namespace

void register_sources(CLI::App& app, CliState& st) {
  auto o = std::make_shared<SourcesOptions>();
  auto* cmd = app.add_subcommand("sources", "Every power source, available or not, why, and the fix");
  cmd->add_option("--sysfs-root", o->root, "Filesystem root for /sys, /dev and /proc reads (default / or $FLOPWATT_SYSFS_ROOT)");
  cmd->add_option("--power-log", o->power_log, "External meter log or FIFO with 't_seconds,watts' lines");
  cmd->add_option("--measure", o->measure_s, "Seconds to watch available sources to measure update intervals (0 skips)");
  cmd->add_flag("--json", o->json, "Machine-readable output");
  cmd->callback([o, &st] { run_sources(*o, st); });
}

}  // namespace flopwatt

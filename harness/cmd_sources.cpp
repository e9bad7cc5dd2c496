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

#include "harness/commands.h"
#include "power/config_error.h"
#include "power/external_log.h"
#include "power/power_state.h"
#include "power/sampler.h"
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

struct Measured {
  bool watched = false;
  bool interval_measured = false;
  double interval_s = 0;
  double avg_power_w = 0;
  bool changed = false;   // the value moved during the window
  bool sampled = false;   // at least one sample inside the window
  std::string error;
};

std::string seconds_text(double s) {
  if (s <= 0) return "-";
  if (s < 1) return fmt::format("{:.3g} ms", s * 1e3);
  return fmt::format("{:.3g} s", s);
}

void run_sources(const SourcesOptions& o, CliState& st) {
  std::string root = o.root;
  if (root.empty()) {
    const char* env = std::getenv("FLOPWATT_SYSFS_ROOT");
    root = env && *env ? env : "/";
  }
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

  std::map<std::string, Measured> measured;
  if (o.measure_s > 0 && !disc.sources.empty()) {
    power::Sampler sampler(std::move(disc.sources), 0.010);
    sampler.start();
    // Let the first reads land so the window opens on samples, not before them.
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    const std::int64_t t0 = power::Sampler::now_ns();
    std::this_thread::sleep_for(std::chrono::duration<double>(o.measure_s));
    const std::int64_t t1 = power::Sampler::now_ns();
    sampler.stop();
    for (const auto& s : sampler.sources()) {
      Measured m;
      m.watched = true;
      m.interval_measured = s->interval_measured();
      m.interval_s = s->update_interval_s();
      const power::WindowEnergy w = sampler.energy(s->id(), t0, t1);
      m.avg_power_w = w.avg_power_w;
      m.sampled = w.samples > 0;
      // A counter that moved has energy; a gauge's value moving shows as a measured interval.
      m.changed = m.interval_measured || (s->kind() == power::Kind::Counter && w.j > 0);
      m.error = s->last_error();
      measured[s->id()] = m;
    }
  }
  const auto ps = power::read_power_state(root);
  const auto temps = power::read_temperatures(root);

  if (o.json) {
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
        const Measured& m = it->second;
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
      p["ac_inferred"] = ps->ac_inferred;
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
    st.exit_code = 0;
    return;
  }

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
      const Measured& m = it->second;
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

#include "harness/analysis/campaign_runner.h"

#include "harness/output/data_home.h"

#include <fmt/core.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <thread>

#include "harness/analysis/campaign.h"
#include "harness/output/safe_file.h"
#include "harness/output/text.h"
#include "harness/output/version.h"
#include "harness/run/backend_registry.h"
#include "harness/run/context.h"
#include "harness/run/progress.h"
#include "harness/run/session.h"
#include "harness/run/timing.h"
#include "npu/xdna/fork_guard.h"
#include "workloads/error.h"
#include "workloads/shapes.h"

namespace fs = std::filesystem;

namespace flopwatt {

namespace {

using nlohmann::json;

// Everything about the campaign so far, rewritten after each step so an
// interrupted campaign leaves a readable record.
struct Record {
  fs::path dir;
  std::unique_ptr<OutputDir> out;
  json j;
  void save() const { out->replace("campaign.json", j.dump(1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n"); }
};

// The options every child `run ...` gets from the campaign's own.
std::vector<std::string> common_child_args(const RunCommonOptions& o) {
  std::vector<std::string> a = {"--sysfs-root", o.power.sysfs_root, "--power", o.power.power,
                                "--idle", shortest(o.power.idle_s), "--sample-period", shortest(o.power.sample_period_s),
                                "--min-reps", std::to_string(o.min_reps)};
  if (!o.power.power_log.empty()) a.insert(a.end(), {"--power-log", o.power.power_log});
  if (!o.power.headline_domain.empty()) a.insert(a.end(), {"--headline-domain", o.power.headline_domain});
  if (o.min_time_set) a.insert(a.end(), {"--min-time", shortest(o.min_time_s)});
  if (o.threads > 0) a.insert(a.end(), {"--threads", std::to_string(o.threads)});
  // Each phase's run is recorded in the results store. The store goes by the
  // environment, not argv: campaign.json keeps the children's command lines,
  // and a connection string may hold a password.
  if (!o.store.empty()) ::setenv("FLOPWATT_STORE", o.store.c_str(), 1);
  if (o.no_store) a.push_back("--no-store");
  if (o.store_samples) a.push_back("--store-samples");
  for (const auto& t : o.tags) a.insert(a.end(), {"--tag", t});
  if (!o.machine_label.empty()) a.insert(a.end(), {"--label", o.machine_label});
  return a;
}

pid_t spawn_self(const std::vector<std::string>& args) {
  std::vector<char*> argv;
  static char self[] = "flopwatt";
  argv.push_back(self);
  for (const auto& s : args) argv.push_back(const_cast<char*>(s.c_str()));
  argv.push_back(nullptr);
  std::fflush(stdout);
  std::fflush(stderr);
  npu::xdna::release_contexts_before_fork();  // a child's close would end them (npu/xdna/fork_guard.h)
  const pid_t pid = fork();
  if (pid == 0) {
    execv("/proc/self/exe", argv.data());
    std::fprintf(stderr, "flopwatt: cannot run /proc/self/exe: %s\n", std::strerror(errno));
    _exit(127);
  }
  if (pid < 0) throw std::runtime_error(std::string("fork failed: ") + std::strerror(errno));
  return pid;
}

double seconds_since(std::int64_t t0) { return double(monotonic_ns() - t0) * 1e-9; }

struct Phase {
  std::string state;
  bool valid = true;
  bool interrupted = false;
  std::vector<std::string> invalid_reasons;
  std::vector<LoadedRun> runs;
  std::vector<power::Temperature> temps_start;
};

struct Campaign {
  CampaignOptions a;
  std::string root;
  std::vector<SuitePart> parts;
  Record rec;
  std::int64_t t0 = 0;
  Progress progress;

  SupplySnapshot snap() const { return read_supply(root, seconds_since(t0)); }

  Phase run_phase(int index, const std::string& state) {
    Phase ph;
    ph.state = state;
    const SupplySnapshot start = snap();
    ph.temps_start = power::read_temperatures(root);
    json& jr = open_phase_record(index, start, ph);
    std::string last = state;
    for (std::size_t i = 0; i < parts.size(); ++i) {
      const int code = run_part(index, i, ph, jr, last);
      if (code == 130 || g_interrupted.load()) {
        ph.interrupted = true;
        break;
      }
    }
    close_phase_record(start, ph, jr);
    return ph;
  }

  // The phase's entry in campaign.json, saved before its first part runs.
  json& open_phase_record(int index, const SupplySnapshot& start, const Phase& ph) {
    json jp = {{"index", index}, {"state", ph.state}};
    jp["start"] = to_json(start);
    jp["temperatures_start"] = temperatures_json(ph.temps_start);
    jp["state_changes"] = json::array();
    jp["runs"] = json::array();
    rec.j["phases"].push_back(jp);
    json& jr = rec.j["phases"].back();
    rec.save();
    return jr;
  }

  // One part of the suite as a child `flopwatt run ...`; returns its exit code.
  int run_part(int index, std::size_t i, Phase& ph, json& jr, std::string& last) {
    const SuitePart& p = parts[i];
    const std::string& state = ph.state;
    const std::string rel = parts.size() == 1 ? state : state + "/" + p.name;
    std::vector<std::string> args = p.args;
    args.insert(args.end(), {"--out", (rec.dir / rel).string()});
    const auto common = common_child_args(a.common);
    args.insert(args.end(), common.begin(), common.end());
    fmt::print("\n== phase {} ({}), part {}/{} {}: flopwatt {}\n", index, state, i + 1, parts.size(), p.name,
               join(args, " "));
    std::fflush(stdout);
    const std::int64_t c0 = monotonic_ns();
    const int code = wait_watching_supply(spawn_self(args), index, p.name, ph, jr, last);
    jr["runs"].push_back({{"part", p.name}, {"dir", rel}, {"note", p.note}, {"command", args}, {"exit_code", code},
                          {"duration_s", seconds_since(c0)}});
    if (fs::exists(rec.dir / rel / "run.json")) {
      try {
        ph.runs.push_back({state + (parts.size() > 1 ? "/" + p.name : ""), (rec.dir / rel).string(),
                           load_run_file((rec.dir / rel / "run.json").string())});
      } catch (const InputError& e) {
        ph.invalid_reasons.push_back(std::string("unreadable run: ") + e.what());
        ph.valid = false;
      }
    }
    if (code != 0) {
      ph.valid = false;
      ph.invalid_reasons.push_back(fmt::format("part {} exited with {}", p.name, code));
    }
    return code;
  }

  // Waits for the child, recording every change of supply meanwhile; a change
  // away from the phase's state makes the phase invalid. Returns the exit code
  // (128 + signal for a child killed by one).
  int wait_watching_supply(pid_t pid, int index, const std::string& part, Phase& ph, json& jr, std::string& last) {
    int status = 0;
    for (;;) {
      const pid_t w = waitpid(pid, &status, WNOHANG);
      if (w == pid) break;
      if (w < 0 && errno != EINTR) throw std::runtime_error(std::string("waitpid: ") + std::strerror(errno));
      std::this_thread::sleep_for(std::chrono::duration<double>(a.poll_s));
      const SupplySnapshot s = snap();
      const std::string now = supply_state(s);
      if (now != last && now != "unknown") {
        jr["state_changes"].push_back(to_json(s));
        if (now != ph.state) {
          const std::string why = fmt::format("power state changed to {} at {:.1f} s, during part {}", now, s.t_s, part);
          if (ph.valid) fmt::print(stderr, "flopwatt: phase {} ({}) is invalid: {}\n", index, ph.state, why);
          ph.valid = false;
          ph.invalid_reasons.push_back(why);
        }
        last = now;
        rec.save();
      }
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }

  void close_phase_record(const SupplySnapshot& start, Phase& ph, json& jr) {
    const SupplySnapshot end = snap();
    if (supply_state(end) != ph.state && ph.valid) {
      ph.valid = false;
      ph.invalid_reasons.push_back("power state at the end of the phase is " + supply_state(end));
    }
    jr["end"] = to_json(end);
    jr["temperatures_end"] = temperatures_json(power::read_temperatures(root));
    if (start.battery_energy_wh && end.battery_energy_wh)
      jr["battery_energy_used_wh"] = *start.battery_energy_wh - *end.battery_energy_wh;
    jr["duration_s"] = end.t_s - start.t_s;
    jr["valid"] = ph.valid;
    jr["invalid_reasons"] = ph.invalid_reasons;
    rec.save();
  }

  // Waits for `want`; asks on a terminal unless --non-interactive.
  bool wait_for(const std::string& want) {
    bool ask = !a.non_interactive;
    const std::string action = want == "battery" ? "Unplug the charger" : "Plug in the charger";
    const std::int64_t w0 = monotonic_ns();
    json jw = {{"want", want}, {"interactive", ask}, {"timeout_s", a.wait_timeout_s}};
    if (ask)
      fmt::print("\n{} now. The campaign goes on when the machine is on {} (waits up to {} s; Enter re-checks, "
                 "Ctrl-C stops and keeps phase 1).\n",
                 action, want, a.wait_timeout_s);
    else
      fmt::print("\nwaiting up to {} s for the machine to be on {} ({})\n", a.wait_timeout_s, want,
                 want == "battery" ? "charger unplugged" : "charger plugged in");
    std::fflush(stdout);
    bool changed = false;
    for (;;) {
      const SupplySnapshot s = snap();
      if (supply_state(s) == want) {
        changed = true;
        jw["snapshot"] = to_json(s);
        break;
      }
      const double waited = seconds_since(w0);
      if (waited >= a.wait_timeout_s || g_interrupted.load()) break;
      progress.status(fmt::format("waiting for {}: {} | {} of {}", want, supply_state(s), format_duration(waited),
                                  format_duration(a.wait_timeout_s)));
      if (ask) {
        pollfd pfd{STDIN_FILENO, POLLIN, 0};
        if (poll(&pfd, 1, int(a.poll_s * 1000)) > 0) {
          std::string line;
          if (!std::getline(std::cin, line)) {
            ask = false;  // stdin closed: keep polling the supply without asking
          } else if (supply_state(snap()) != want) {
            progress.clear();
            fmt::print("still on {}: {} (or Ctrl-C to stop)\n", supply_state(snap()), action);
            std::fflush(stdout);
          }
        }
      } else {
        std::this_thread::sleep_for(std::chrono::duration<double>(a.poll_s));
      }
    }
    progress.clear();
    jw["waited_s"] = seconds_since(w0);
    jw["changed"] = changed;
    rec.j["switch"] = jw;
    rec.save();
    return changed;
  }

  void cool_down(const std::vector<power::Temperature>& start) {
    const std::int64_t c0 = monotonic_ns();
    json jc;
    if (start.empty()) {
      // No sensor to watch: a fixed pause lets the package and the battery settle.
      jc = {{"method", "pause"}, {"pause_s", a.pause_s}};
      while (seconds_since(c0) < a.pause_s && !g_interrupted.load()) {
        progress.status(fmt::format("pausing (no temperature sensor): {} of {}", format_duration(seconds_since(c0)),
                                    format_duration(a.pause_s)));
        std::this_thread::sleep_for(std::chrono::duration<double>(std::min(a.poll_s, a.pause_s)));
      }
    } else {
      jc = {{"method", "temperature"}, {"margin_c", a.cooldown_margin_c}, {"timeout_s", a.cooldown_timeout_s}};
      CooldownCheck c;
      for (;;) {
        c = check_cooldown(start, power::read_temperatures(root), a.cooldown_margin_c);
        if (c.reached || seconds_since(c0) >= a.cooldown_timeout_s || g_interrupted.load()) break;
        progress.status(fmt::format("cooling down: {} is {:.1f} C above its phase-1 start + {} C | {} of {}",
                                    c.worst_sensor, c.worst_excess_c, a.cooldown_margin_c,
                                    format_duration(seconds_since(c0)), format_duration(a.cooldown_timeout_s)));
        std::this_thread::sleep_for(std::chrono::duration<double>(a.poll_s));
      }
      jc["reached"] = c.reached;
      jc["worst_sensor"] = c.worst_sensor;
      jc["worst_excess_c"] = c.worst_excess_c;
      if (!c.reached)
        fmt::print(stderr, "flopwatt: cool-down timed out after {} s ({} still {:.1f} C above target); going on\n",
                   a.cooldown_timeout_s, c.worst_sensor, c.worst_excess_c);
    }
    progress.clear();
    jc["waited_s"] = seconds_since(c0);
    rec.j["cooldown"] = jc;
    rec.save();
  }

  void refuse_low_battery(const SupplySnapshot& s, const std::string& when) {
    rec.j["refused"] = fmt::format("battery at {:.0f}% {}, below --min-battery {}", *s.battery_percent, when,
                                   a.min_battery);
    rec.j["complete"] = false;
    rec.save();
    throw InputError("--min-battery " + shortest(a.min_battery),
                     fmt::format("battery at {:.0f}% {}: a battery phase needs at least {}%", *s.battery_percent,
                                 when, a.min_battery),
                     "charge the battery first, or lower --min-battery (low charge changes the power limits)");
  }
};

}  // namespace

namespace {

// The suite's parts, its shapes and backends checked here rather than failing
// inside a child after minutes of phase 1.
std::vector<SuitePart> plan_parts(const CampaignOptions& a) {
  SuiteSpec spec;
  spec.suite = a.suite;
  spec.shapes = a.shapes;
  spec.backends = a.backends;
  spec.gpt2_model = a.gpt2_model;
  spec.gpt2_steps = a.gpt2_steps;
  spec.have_gpt2 = a.have_gpt2;
  for (const auto& b : all_backends()) spec.backend_list.push_back({b->name(), b->availability().ok, b->simulated()});
  if (auto f = default_gemm_backend()) spec.fastest_cpu = f->name();
  if (!a.shapes.empty()) parse_shapes(a.shapes, "--shapes");
  if (!a.backends.empty()) select_backends(a.backends, "--backend");
  return suite_parts(spec);
}

// A machine that cannot tell mains from battery, or has no battery, has no campaign to run.
void require_battery(const SupplySnapshot& s0, const std::string& root) {
  const std::string where = "--sysfs-root " + root;
  if (supply_state(s0) == "unknown")
    throw InputError(where, "no AC adapter or battery under " + root + "sys/class/power_supply tells mains from battery",
                     "run the campaign on a laptop (a desktop or virtual machine has no battery)");
  if (!s0.has_battery)
    throw InputError(where, "no battery under sys/class/power_supply: there is no battery phase to run",
                     "run the campaign on a laptop");
}

// campaign.json before any phase: the options, the parts and the starting supply.
void open_record(Campaign& c, const std::string& out, const SupplySnapshot& s0) {
  const CampaignOptions& a = c.a;
  c.rec.dir = out;
  c.rec.out = std::make_unique<OutputDir>(out, "--out");
  if (c.rec.out->holds_any({"campaign.json", "run.json"}))
    throw InputError("--out " + out, "already holds a campaign or a run", "pass a new directory with --out");
  c.rec.j = {{"kind", "flopwatt-campaign"},
             {"campaign", "mains-vs-battery"},
             {"schema_version", 2},
             {"flopwatt_version", FLOPWATT_VERSION},
             {"flopwatt_git_revision", FLOPWATT_GIT_REV},
             {"suite", a.suite},
             {"complete", false},
             {"sysfs_root", c.root},
             {"options",
              {{"non_interactive", a.non_interactive}, {"wait_timeout_s", a.wait_timeout_s},
               {"min_battery", a.min_battery}, {"cooldown_margin_c", a.cooldown_margin_c},
               {"cooldown_timeout_s", a.cooldown_timeout_s}, {"pause_s", a.pause_s}, {"poll_s", a.poll_s}}},
             {"initial", to_json(s0)},
             {"phases", json::array()}};
  json jparts = json::array();
  for (const auto& p : c.parts) jparts.push_back({{"name", p.name}, {"args", p.args}, {"note", p.note}});
  c.rec.j["parts"] = jparts;
  c.rec.save();
}

// Both phases done (the second perhaps interrupted): the comparison's files
// and summary; returns the campaign's exit status.
int finish(Campaign& c, const std::string& out, const Phase& pm, const Phase& pb, bool interrupted) {
  const CampaignOptions& a = c.a;
  json cmp = compare_mains_battery(pm.runs, pb.runs, ComparisonOptions{a.baseline});
  cmp["suite"] = a.suite;
  if (a.suite == "paper") cmp["paper"] = paper_figures(cmp);
  cmp["valid"] = {{"mains", pm.valid}, {"battery", pb.valid}};
  cmp["invalid_reasons"] = {{"mains", pm.invalid_reasons}, {"battery", pb.invalid_reasons}};
  c.rec.out->replace("comparison.json", cmp.dump(1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
  c.rec.out->replace("comparison.csv", comparison_csv(cmp));
  c.rec.j["complete"] = !interrupted;
  c.rec.j["comparison"] = {{"json", "comparison.json"}, {"csv", "comparison.csv"}};
  c.rec.save();

  fmt::print("\nmains vs battery ({}):\n{}\n", a.suite, comparison_markdown(cmp));
  if (cmp.contains("paper")) fmt::print("{}\n", paper_markdown(cmp["paper"]));
  for (const Phase* p : {&pm, &pb})
    if (!p->valid)
      fmt::print(stderr, "flopwatt: phase on {} is invalid ({}); its figures are in the comparison but flagged\n",
                 p->state, join(p->invalid_reasons, "; "));
  fmt::print("campaign: {}/campaign.json, comparison: {}/comparison.json and comparison.csv\n", out, out);
  if (interrupted) return 130;
  return pm.valid && pb.valid ? 0 : 1;
}

}  // namespace

int run_mains_vs_battery(const CampaignOptions& a) {
  Campaign c;
  c.a = a;
  c.root = a.common.power.sysfs_root;
  c.t0 = monotonic_ns();
  c.parts = plan_parts(a);

  const SupplySnapshot s0 = c.snap();
  const std::string state1 = supply_state(s0);
  require_battery(s0, c.root);
  const std::string out = a.common.out.empty() ? default_run_dir("campaign-" + make_run_id()) : a.common.out;
  open_record(c, out, s0);
  fmt::print("flopwatt campaign mains-vs-battery ({}) -> {}\nstarting on {}{}\n", a.suite, out, state1,
             s0.battery_percent ? fmt::format(", battery {:.0f}%", *s0.battery_percent) : "");

  if (state1 == "battery" && s0.battery_percent && *s0.battery_percent < a.min_battery)
    c.refuse_low_battery(s0, "at the start");
  if (state1 == "mains" && s0.battery_percent && *s0.battery_percent < a.min_battery)
    fmt::print(stderr, "flopwatt: battery at {:.0f}%: it must charge to --min-battery {}% before the battery phase\n",
               *s0.battery_percent, a.min_battery);

  Phase p1 = c.run_phase(1, state1);
  if (p1.interrupted) {
    fmt::print(stderr, "interrupted: campaign record kept in {}/campaign.json\n", out);
    return 130;
  }
  const std::string state2 = state1 == "mains" ? "battery" : "mains";
  if (!c.wait_for(state2)) {
    if (g_interrupted.load()) return 130;
    fmt::print(stderr, "flopwatt: the machine did not switch to {} within --wait-timeout {} s; phase 1 is kept in {}\n",
               state2, a.wait_timeout_s, out);
    return 1;
  }
  if (state2 == "battery") {
    const SupplySnapshot s = c.snap();
    if (s.battery_percent && *s.battery_percent < a.min_battery) c.refuse_low_battery(s, "before the battery phase");
  }
  c.cool_down(p1.temps_start);
  if (g_interrupted.load()) return 130;
  Phase p2 = c.run_phase(2, state2);
  const bool mains_first = state1 == "mains";
  return finish(c, out, mains_first ? p1 : p2, mains_first ? p2 : p1, p2.interrupted);
}

}  // namespace flopwatt

#include "harness/run/run_setup.h"

#include <unistd.h>

#include <ctime>

#include <fmt/core.h>

#include "harness/output/data_home.h"
#include "harness/output/text.h"
#include "harness/output/writer.h"
#include "harness/run/context.h"
#include "harness/run/timing.h"
#include "harness/output/version.h"
#include "power/headline.h"
#include "power/power_state.h"
#include "power/sysfs.h"
#include "power/temperature.h"
#include "sysfs/files.h"

namespace flopwatt {

namespace {


nlohmann::json power_state_json(const power::PowerState& ps) {
  nlohmann::json bats = nlohmann::json::array();
  for (const auto& b : ps.batteries)
    bats.push_back({{"name", b.name},
                    {"status", power::to_string(b.status)},
                    {"percent", b.percent ? nlohmann::json(*b.percent) : nlohmann::json(nullptr)}});
  return {{"ac_online", ps.ac_online ? nlohmann::json(*ps.ac_online) : nlohmann::json(nullptr)},
          {"ac_inferred_from_battery_status", ps.ac_inferred},
          {"battery_percent", ps.battery_percent ? nlohmann::json(*ps.battery_percent) : nlohmann::json(nullptr)},
          {"batteries", bats}};
}

// Mains or battery, and the charge, as the power_supply class reports them.
// Returns whether the machine has a supply to watch.
bool add_power_state(nlohmann::json& c, const std::string& root) {
  const auto ps = power::read_power_state(root);
  if (!ps) return false;  // no supply at all: a desktop or a VM; the context keeps null
  const nlohmann::json state = power_state_json(*ps);  // items() must not outlive its json
  for (const auto& [k, v] : state.items()) c[k] = v;
  return true;
}

// The supply's changes during the run, its state at the end, a flag on every
// measurement whose window may have seen a change, and no FLOP/J from a
// battery that was not discharging through the window (plugged in earlier).
void record_supply(OpenRun& r) {
  if (!r.supply) return;
  r.supply->stop();  // one last poll: every window's end is covered
  const power::SupplyTrack track = r.supply->track();
  nlohmann::json& c = r.session->run().context;
  nlohmann::json changes = nlohmann::json::array();
  for (const auto& ch : track.changes())
    changes.push_back({{"t_ns", ch.t_ns}, {"after_ns", ch.after_ns}, {"what", ch.what}, {"from", ch.old_value},
                       {"to", ch.new_value}});
  c["supply_changes"] = changes;
  const auto end = power::read_power_state(r.root);
  c["supply_end"] = end ? power_state_json(*end) : nlohmann::json(nullptr);
  for (auto& m : r.session->run().measurements) {
    if (!m.window_ns) continue;
    if (!m.supply_changed) m.supply_changed = track.changed_during((*m.window_ns)[0], (*m.window_ns)[1]);
    if (!m.simulated && !m.energy.empty()) judge_window(m, *r.meter, &track, (*m.window_ns)[0], (*m.window_ns)[1]);
  }
}

}  // namespace

OpenRun open_run(const RunCommonOptions& o, const std::vector<const Backend*>& backends,
                 const nlohmann::json& extra_context) {
  install_interrupt_handler();
  // A store spec that is no store (a mistyped scheme, a connection string
  // libpq refuses) is bad input before anything is measured.
  if (!o.no_store) store::resolve(o.store);
  OpenRun r;
  r.root = resolve_sysfs_root(o.power.sysfs_root);
  r.meter = std::make_unique<EnergyMeter>(o.power);
  Run header;
  header.flopwatt_version = FLOPWATT_VERSION;
  header.run_id = make_run_id();
  header.context = collect_context(r.root, backends);
  if (add_power_state(header.context, r.root)) r.supply = std::make_unique<power::SupplyMonitor>(r.root, kSupplyPollS);
  header.context["temperatures_start"] = temperatures_json(power::read_temperatures(r.root));
  for (const auto& [k, v] : extra_context.items()) header.context[k] = v;
  // What a fleet's store tells machines and runs apart by.
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) == 0) header.context["hostname"] = store::clean_text(host);
  if (const auto mem = sysfs::meminfo_bytes(r.root, "MemTotal"); mem && *mem > 0)
    header.context["memory_bytes"] = static_cast<std::int64_t>(*mem);
  if (!o.command_line.empty()) header.context["command_line"] = o.command_line;
  if (!o.machine_label.empty()) header.context["machine_label"] = store::clean_text(o.machine_label);
  if (!o.tags.empty()) {
    header.context["tags"] = nlohmann::json::array();
    for (const auto& t : o.tags) header.context["tags"].push_back(store::clean_text(t));
  }
  header.power_sources = r.meter->source_infos();
  // The rule, not a source: each row's window is judged by it when the row is measured, and the
  // run's headline_source is derived from the rows when run.json is written.
  if (r.meter->active())
    header.context["headline"] = {{"rule", power::headline_rule_text()},
                                  {"judged", "per measurement window: each row's headline_source and headline_why"}};
  const std::string out = o.out.empty() ? default_run_dir(header.run_id) : o.out;
  r.session = std::make_unique<Session>(std::move(header), out, o.overwrite);
  r.backends = backends;
  r.record = {o.store, o.no_store, o.store_samples, {}, &g_interrupted};
  r.push.url = o.pushgateway;
  if (r.supply) r.supply->start();
  r.meter->watch_supply(r.supply.get());
  r.meter->start();
  r.meter->measure_idle(r.session->run());
  r.session->add_samples(r.meter->drain_samples());
  r.session->save();
  return r;
}

void close_run(OpenRun& r, bool complete) {
  r.meter->stop();
  r.session->run().context["temperatures_end"] = temperatures_json(power::read_temperatures(r.root));
  for (const Backend* b : r.backends) r.session->run().context["backends"][b->name()] = backend_notes(*b);
  r.session->add_samples(r.meter->drain_samples());
  // Sources that went away mid-run (their windows have no energy after it).
  r.session->run().context["source_gaps"] = r.meter->source_gaps();
  record_supply(r);
  r.session->run().context["ended_utc"] = utc_now();
  r.session->finish(complete);
}

OpenRun start_run(const RunCommonOptions& o, const std::vector<const Backend*>& backends,
                  const nlohmann::json& extra_context, std::FILE* out) {
  OpenRun r = open_run(o, backends, extra_context);
  fmt::print(out, "flopwatt run {} -> {}\n", r.session->run().run_id, r.session->out_dir());
  return r;
}

int end_run(OpenRun& r, bool complete, std::FILE* out, RunEnding ending) {
  close_run(r, complete);
  {
    // Only a signal during the recording stops it (the run itself may have
    // been interrupted already); the flag is left set for whoever reads it next.
    const bool interrupted = g_interrupted.exchange(false);
    store::record_finished_run(r.session->run(), r.session->out_dir(), r.record, stderr);
    if (interrupted) g_interrupted.store(true);
  }
  prom::push_run(r.session->run(), r.push, stderr);  // bounded by r.push.timeout_s; a failure is a warning
  if (ending == RunEnding::kSummary) {
    WriterTarget console;
    console.stream = out;
    console.out_dir = r.session->out_dir();
    make_writer("console", console)->finalize(r.session->run());
  }
  else fmt::print(out, "report: {}/run.json\n", r.session->out_dir());
  std::size_t flagged = 0;
  for (const auto& m : r.session->run().measurements) flagged += m.supply_changed.value_or(false);
  if (flagged)
    fmt::print(stderr, "warning: the power supply changed during {} measurement(s) (supply_changed in run.json; "
                       "context.supply_changes says when)\n", flagged);
  if (complete) return 0;
  // A run the command itself found incomplete (a measured program that failed) says why; exit 1
  // unless the command passes on a status of its own.
  if (const auto it = r.session->run().context.find("incomplete_reason");
      it != r.session->run().context.end() && it->is_string()) {
    fmt::print(stderr, "incomplete: {}; report kept in {}/run.json\n", it->get<std::string>(), r.session->out_dir());
    return 1;
  }
  fmt::print(stderr, "interrupted: partial report kept in {}/run.json\n", r.session->out_dir());
  return 130;
}

}  // namespace flopwatt

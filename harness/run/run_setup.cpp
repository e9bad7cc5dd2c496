#include "harness/run/run_setup.h"

#include <fmt/core.h>

#include "harness/output/writer.h"
#include "harness/run/context.h"
#include "harness/output/version.h"
#include "power/power_state.h"
#include "power/temperature.h"

namespace flopwatt {

namespace {

// Mains or battery, and the charge, as the power_supply class reports them.
void add_power_state(nlohmann::json& c, const std::string& root) {
  const auto ps = power::read_power_state(root);
  if (!ps) return;  // no supply at all: a desktop or a VM; the context keeps null
  c["ac_online"] = ps->ac_online ? nlohmann::json(*ps->ac_online) : nlohmann::json(nullptr);
  c["ac_inferred_from_battery_status"] = ps->ac_inferred;
  c["battery_percent"] = ps->battery_percent ? nlohmann::json(*ps->battery_percent) : nlohmann::json(nullptr);
  nlohmann::json bats = nlohmann::json::array();
  for (const auto& b : ps->batteries)
    bats.push_back({{"name", b.name},
                    {"status", power::to_string(b.status)},
                    {"percent", b.percent ? nlohmann::json(*b.percent) : nlohmann::json(nullptr)}});
  c["batteries"] = bats;
}

}  // namespace

OpenRun open_run(const RunCommonOptions& o, const std::vector<const Backend*>& backends,
                 const nlohmann::json& extra_context) {
  install_interrupt_handler();
  OpenRun r;
  r.meter = std::make_unique<EnergyMeter>(o.power);
  Run header;
  header.flopwatt_version = FLOPWATT_VERSION;
  header.run_id = make_run_id();
  header.context = collect_context(o.power.sysfs_root, backends);
  add_power_state(header.context, o.power.sysfs_root);
  header.context["temperatures_start"] = temperatures_json(power::read_temperatures(o.power.sysfs_root));
  for (const auto& [k, v] : extra_context.items()) header.context[k] = v;
  header.power_sources = r.meter->source_infos();
  header.headline_source = r.meter->headline_source();
  if (const auto hc = r.meter->headline_choice(); !hc.is_null()) header.context["headline"] = hc;
  const std::string out = o.out.empty() ? "results/runs/" + header.run_id : o.out;
  r.session = std::make_unique<Session>(std::move(header), out, o.overwrite);
  r.root = o.power.sysfs_root;
  r.backends = backends;
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
  if (ending == RunEnding::kSummary) {
    WriterTarget console;
    console.stream = out;
    console.out_dir = r.session->out_dir();
    make_writer("console", console)->finalize(r.session->run());
  }
  else fmt::print(out, "report: {}/run.json\n", r.session->out_dir());
  if (complete) return 0;
  fmt::print(stderr, "interrupted: partial report kept in {}/run.json\n", r.session->out_dir());
  return 130;
}

}  // namespace flopwatt

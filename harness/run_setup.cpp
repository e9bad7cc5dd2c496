#include "harness/run_setup.h"

#include "harness/context.h"
#include "harness/version.h"

namespace flopwatt {

OpenRun open_run(const RunCommonOptions& o, const std::vector<const Backend*>& backends,
                 const nlohmann::json& extra_context) {
  install_interrupt_handler();
  OpenRun r;
  r.meter = std::make_unique<EnergyMeter>(o.power);
  Run header;
  header.flopwatt_version = FLOPWATT_VERSION;
  header.run_id = make_run_id();
  header.context = collect_context(o.power.sysfs_root, backends);
  for (const auto& [k, v] : extra_context.items()) header.context[k] = v;
  header.power_sources = r.meter->source_infos();
  header.headline_source = r.meter->headline_source();
  const std::string out = o.out.empty() ? "results/runs/" + header.run_id : o.out;
  r.session = std::make_unique<Session>(std::move(header), out);
  r.meter->start();
  r.meter->measure_idle(r.session->run());
  r.session->add_samples(r.meter->drain_samples());
  r.session->save();
  return r;
}

void close_run(OpenRun& r, bool complete) {
  r.meter->stop();
  r.session->add_samples(r.meter->drain_samples());
  r.session->finish(complete);
}

}  // namespace flopwatt

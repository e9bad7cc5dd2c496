// Pushing a finished run's results to a Prometheus Pushgateway, as batch jobs
// do (Zeus pushes its windows' energy the same way): one group per run, under
// job "flopwatt" and the grouping key machine and run_id. A push that fails
// or times out is one warning line: the run is already in its directory and
// the results store, and its exit status does not change.
#pragma once
#include <cstdio>
#include <map>
#include <string>

#include "harness/output/run_model.h"
#include "harness/prom/window_tally.h"

namespace flopwatt::prom {

// The stated bound on a push: connecting and sending included, whatever the
// gateway does (a host that never answers, a gateway that reads slowly).
inline constexpr double kPushTimeoutS = 5.0;
inline constexpr const char* kPushJob = "flopwatt";

struct PushOptions {
  std::string url;  // --pushgateway / $FLOPWATT_PUSHGATEWAY: http(s)://HOST:PORT[/PREFIX]; empty: no push
  double timeout_s = kPushTimeoutS;
};

// The --pushgateway value when given, else $FLOPWATT_PUSHGATEWAY; checked:
// throws InputError naming the flag (or the variable) when it is not an
// http:// or https:// URL, or when this build cannot push.
std::string resolve_pushgateway(const std::string& flag_value);

// The group's URL: <url>/metrics/job/flopwatt/machine@base64/..../run_id@base64/...
std::string push_url(const std::string& base, const std::string& machine, const std::string& run_id);

// Pushes the run's results (harness/prom/run_metrics.h) with PUT, replacing
// the run's group. Never throws, never waits past opts.timeout_s; a failure
// is one line on `err` naming the gateway and the fix. Returns whether the
// gateway took the push.
bool push_run(const Run& run, const PushOptions& opts, std::FILE* err);

// Pushes a Meter's tallies (meter_push_families) with PUT to the group of
// job "flopwatt", `machine` and `run_id`, replacing what it held. Never
// throws, never waits past opts.timeout_s; on failure `why` says what
// happened (the error, or the gateway's HTTP status) and false is returned.
bool push_windows(const PushOptions& opts, const std::string& machine, const std::string& run_id,
                  const std::map<std::string, WindowTally>& tallies, std::string* why);

}  // namespace flopwatt::prom

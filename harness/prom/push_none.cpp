// Built without prometheus-cpp (FLOPWATT_WITH_PROMETHEUS=OFF or not found):
// --pushgateway is refused before anything runs, naming what is missing.
#include "harness/prom/push.h"

#include <cstdlib>

#include "workloads/error.h"

namespace flopwatt::prom {

std::string resolve_pushgateway(const std::string& flag_value) {
  const char* env = std::getenv("FLOPWATT_PUSHGATEWAY");
  const std::string where = !flag_value.empty() ? "--pushgateway" : "FLOPWATT_PUSHGATEWAY";
  if (flag_value.empty() && (!env || !*env)) return {};
  throw InputError(where, "this flopwatt was built without prometheus-cpp, so it cannot push",
                   "apt-get install prometheus-cpp-dev and rebuild (FLOPWATT_WITH_PROMETHEUS=AUTO or ON), or unset it");
}

std::string push_url(const std::string& base, const std::string&, const std::string&) { return base; }

bool push_run(const Run&, const PushOptions& opts, std::FILE* err) {
  if (opts.url.empty()) return false;
  std::fprintf(err, "warning: not pushed to %s: built without prometheus-cpp (apt-get install prometheus-cpp-dev)\n",
               opts.url.c_str());
  return false;
}

bool push_windows(const PushOptions&, const std::string&, const std::string&, const std::map<std::string, WindowTally>&,
                  std::string* why) {
  if (why) *why = "built without prometheus-cpp (apt-get install prometheus-cpp-dev)";
  return false;
}

}  // namespace flopwatt::prom

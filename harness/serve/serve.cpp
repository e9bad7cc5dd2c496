#include "harness/serve/serve.h"

#include <chrono>
#include <thread>

#include <fmt/core.h>

#include "harness/run/session.h"
#include "harness/run/timing.h"
#include "harness/serve/exporter.h"
#include "harness/serve/http_server.h"
#include "workloads/error.h"

namespace flopwatt::serve {

int serve(const ServeOptions& o, std::FILE* out) {
  const ListenAddress addr = parse_listen(o.listen);
  if (!(o.window_s >= 1 && o.window_s <= 600))
    throw InputError("--window", "must be between 1 and 600 seconds", "pass for example --window 5");
  ExporterOptions eo;
  eo.power = o.power;
  eo.store = o.store;
  eo.no_store = o.no_store;
  eo.window_s = o.window_s;
  Exporter exporter(eo);
  install_interrupt_handler();
  exporter.start();
  HttpServer http(addr.civetweb(), HttpLimits{}, [&](const HttpRequest& r) { return route(r, exporter); });
  ListenAddress bound = addr;
  bound.port = http.port();
  fmt::print(out, "flopwatt serve: metrics on http://{}{} (health {})\n", bound.civetweb(), kMetricsPath, kHealthPath);
  if (!addr.loopback)
    fmt::print(out, "note: {} is not a loopback address: anyone who can reach it reads these metrics\n", addr.host);
  std::fflush(out);
  while (!g_interrupted.load()) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  return 0;
}

}  // namespace flopwatt::serve

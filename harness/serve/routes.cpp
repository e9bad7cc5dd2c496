#include "harness/serve/routes.h"

#include "harness/prom/families.h"
#include "harness/prom/openmetrics.h"
#include "harness/serve/exporter.h"

namespace flopwatt::serve {

HttpResponse route(const HttpRequest& req, Exporter& exporter) {
  HttpResponse r;
  const bool metrics = req.path == kMetricsPath, health = req.path == kHealthPath;
  if (!metrics && !health) {
    r.status = 404;
    r.body = "not found: this exporter serves " + std::string(kMetricsPath) + " and " + kHealthPath + "\n";
    return r;
  }
  if (req.method != "GET") {
    r.status = 405;
    r.allow = "GET";
    r.body = "method not allowed: only GET\n";
    return r;
  }
  if (health) {
    std::string why;
    r.status = exporter.healthy(why) ? 200 : 503;
    r.body = (r.status == 200 ? "ok: " : "unhealthy: ") + why + "\n";
    return r;
  }
  const auto families = exporter.collect();
  if (prom::wants_openmetrics(req.accept)) {
    r.content_type = prom::kOpenMetricsType;
    r.body = prom::to_openmetrics(families);
  } else {
    r.content_type = prom::kTextType;
    r.body = prom::to_text(families);
  }
  return r;
}

}  // namespace flopwatt::serve

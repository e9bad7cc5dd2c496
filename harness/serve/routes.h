// What the exporter answers, apart from the socket: GET of /metrics (text or
// OpenMetrics by the Accept header) and of the health endpoint; any other
// method is 405, any other path 404.
#pragma once
#include <string>

namespace flopwatt::serve {

class Exporter;

inline constexpr const char* kMetricsPath = "/metrics";
inline constexpr const char* kHealthPath = "/healthz";

struct HttpRequest {
  std::string method, path;
  const char* accept = nullptr;  // the Accept header, null when absent
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
  std::string allow;  // the Allow header of a 405
};

HttpResponse route(const HttpRequest& req, Exporter& exporter);

}  // namespace flopwatt::serve

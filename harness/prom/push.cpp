#include "harness/prom/push.h"

#include <curl/curl.h>

#include <cstdlib>
#include <mutex>

#include "harness/prom/families.h"
#include "harness/prom/run_metrics.h"
#include "workloads/error.h"

namespace flopwatt::prom {

namespace {

// The Pushgateway takes any label value in a URL path segment as
// "name@base64/<base64url>" (its README, "URL"), so a run id or a machine
// label with a slash or a space still names one group.
std::string base64url(const std::string& s) {
  static const char* k = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  std::string o;
  unsigned v = 0;
  int bits = 0;
  for (unsigned char c : s) {
    v = (v << 8) | c;
    bits += 8;
    while (bits >= 6) {
      bits -= 6;
      o += k[(v >> bits) & 63];
    }
  }
  if (bits > 0) o += k[(v << (6 - bits)) & 63];
  while (o.size() % 4) o += '=';
  return o;
}

// An empty value is written "=" (base64 of nothing), which the gateway reads as "".
std::string segment(const std::string& name, const std::string& value) {
  return "/" + name + "@base64/" + (value.empty() ? std::string("=") : base64url(value));
}

std::size_t discard(char*, std::size_t size, std::size_t n, void*) { return size * n; }

// curl_global_init is not thread-safe; once per process.
void curl_once() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

}  // namespace

std::string resolve_pushgateway(const std::string& flag_value) {
  std::string where = "--pushgateway", url = flag_value;
  if (url.empty()) {
    const char* env = std::getenv("FLOPWATT_PUSHGATEWAY");
    if (!env || !*env) return {};
    where = "FLOPWATT_PUSHGATEWAY";
    url = env;
  }
  const bool scheme = url.rfind("http://", 0) == 0 || url.rfind("https://", 0) == 0;
  const std::size_t host_at = url.find("://") + 3;
  if (!scheme || url.size() <= host_at || url[host_at] == '/' || url.find_first_of(" \t\n?#") != std::string::npos)
    throw InputError(where + " " + url, "not an http:// or https:// URL of a Pushgateway",
                     "pass for example http://127.0.0.1:9091");
  while (!url.empty() && url.back() == '/') url.pop_back();
  return url;
}

std::string push_url(const std::string& base, const std::string& machine, const std::string& run_id) {
  return base + "/metrics/job/" + kPushJob + segment("machine", machine) + segment("run_id", run_id);
}

bool push_run(const Run& run, const PushOptions& opts, std::FILE* err) {
  if (opts.url.empty()) return false;
  curl_once();
  const std::string url = push_url(opts.url, machine_name(run), run.run_id);
  const std::string body = to_text(run_push_families(run));
  CURL* c = curl_easy_init();
  if (!c) {
    std::fprintf(err, "warning: run %s not pushed to %s: libcurl could not start\n", run.run_id.c_str(), opts.url.c_str());
    return false;
  }
  curl_slist* headers = curl_slist_append(nullptr, "Content-Type: text/plain; version=0.0.4; charset=utf-8");
  char error[CURL_ERROR_SIZE] = {};
  const long timeout_ms = long(opts.timeout_s * 1000);
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, "PUT");
  curl_easy_setopt(c, CURLOPT_POSTFIELDS, body.data());
  curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, long(body.size()));
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
  // The whole transfer is bounded, connect included; no signals, so a
  // timeout never interrupts the process that pushes.
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, timeout_ms);
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, discard);
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, error);
  const CURLcode rc = curl_easy_perform(c);
  long status = 0;
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
  curl_slist_free_all(headers);
  curl_easy_cleanup(c);
  if (rc != CURLE_OK) {
    std::fprintf(err,
                 "warning: run %s not pushed to --pushgateway %s: %s (within %.3g s); fix: check the gateway is up; the "
                 "run is in its directory and the results store\n",
                 run.run_id.c_str(), opts.url.c_str(), error[0] ? error : curl_easy_strerror(rc), opts.timeout_s);
    return false;
  }
  if (status / 100 != 2) {
    std::fprintf(err,
                 "warning: run %s not pushed to --pushgateway %s: HTTP %ld; fix: check the URL names a Pushgateway; the "
                 "run is in its directory and the results store\n",
                 run.run_id.c_str(), opts.url.c_str(), status);
    return false;
  }
  return true;
}

}  // namespace flopwatt::prom

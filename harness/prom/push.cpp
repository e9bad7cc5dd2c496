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

namespace {

// PUT `body` to `url`; "" when the gateway took it, else what went wrong.
std::string put_group(const std::string& url, const std::string& body, double timeout_s) {
  curl_once();
  CURL* c = curl_easy_init();
  if (!c) return "libcurl could not start";
  curl_slist* headers = curl_slist_append(nullptr, "Content-Type: text/plain; version=0.0.4; charset=utf-8");
  char error[CURL_ERROR_SIZE] = {};
  const long timeout_ms = long(timeout_s * 1000);
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
  char within[64];
  std::snprintf(within, sizeof within, " (within %.3g s)", timeout_s);
  if (rc != CURLE_OK) return std::string(error[0] ? error : curl_easy_strerror(rc)) + within;
  if (status / 100 != 2) return "HTTP " + std::to_string(status) + " (is the URL a Pushgateway's?)";
  return {};
}

}  // namespace

bool push_run(const Run& run, const PushOptions& opts, std::FILE* err) {
  if (opts.url.empty()) return false;
  const std::string why = put_group(push_url(opts.url, machine_name(run), run.run_id), to_text(run_push_families(run)),
                                    opts.timeout_s);
  if (why.empty()) return true;
  std::fprintf(err,
               "warning: run %s not pushed to --pushgateway %s: %s; fix: check the gateway is up; the run is in its "
               "directory and the results store\n",
               run.run_id.c_str(), opts.url.c_str(), why.c_str());
  return false;
}

bool push_windows(const PushOptions& opts, const std::string& machine, const std::string& run_id,
                  const std::map<std::string, WindowTally>& tallies, std::string* why) {
  const std::string w = put_group(push_url(opts.url, machine, run_id), to_text(meter_push_families(tallies)), opts.timeout_s);
  if (why) *why = w;
  return w.empty();
}

}  // namespace flopwatt::prom

#include "harness/serve/http_server.h"

#include <civetweb.h>

#include <mutex>
#include <system_error>
#include <thread>

#include <fmt/core.h>

#include "workloads/error.h"

namespace flopwatt::serve {

HttpServer::HttpServer(const std::string& listen, const HttpLimits& limits, Handler handler)
    : handler_(std::move(handler)) {
  static std::once_flag once;
  std::call_once(once, [] { mg_init_library(0); });
  const std::string threads = std::to_string(limits.threads), queue = std::to_string(limits.queue),
                    timeout = std::to_string(limits.request_timeout_ms), size = std::to_string(limits.max_request_bytes);
  // No document_root: civetweb serves no file; every request reaches on_request.
  const char* options[] = {"listening_ports", listen.c_str(), "num_threads", threads.c_str(), "connection_queue",
                           queue.c_str(), "request_timeout_ms", timeout.c_str(), "max_request_size", size.c_str(),
                           "enable_keep_alive", "no", nullptr};
  mg_callbacks callbacks{};
  callbacks.begin_request = &HttpServer::on_request;
  callbacks.log_message = [](const mg_connection*, const char*) { return 1; };  // no stderr chatter per request
  ctx_ = mg_start(&callbacks, this, options);
  if (!ctx_)
    throw InputError("--listen " + listen, "cannot listen there (the port is taken, or the address is not this machine's)",
                     "pick another port, e.g. --listen 127.0.0.1:9465");
}

HttpServer::~HttpServer() {
  if (ctx_) mg_stop(ctx_);
}

int HttpServer::port() const {
  mg_server_port ports[4];
  const int n = mg_get_server_ports(ctx_, 4, ports);
  return n > 0 ? ports[0].port : 0;
}

int HttpServer::on_request(mg_connection* conn) {
  const mg_request_info* info = mg_get_request_info(conn);
  auto* self = static_cast<HttpServer*>(info->user_data);
  HttpRequest req;
  req.method = info->request_method ? info->request_method : "";
  req.path = info->local_uri ? info->local_uri : "";
  req.accept = mg_get_header(conn, "Accept");
  HttpResponse r;
  // Debian's civetweb gives its workers 100 KiB stacks (built with
  // USE_STACK_SIZE); the handler reads the sampler and the results store
  // (SQLite, libpq), and under AddressSanitizer overflowed that on the first
  // scrape. So it runs on a thread with the system's default stack, and
  // civetweb's pool still bounds how many run at once.
  try {
    std::thread worker([&] {
      try {
        r = self->handler_(req);
      } catch (const std::exception& e) {
        r.status = 500;
        r.body = fmt::format("internal error: {}\n", e.what());
      }
    });
    worker.join();
  } catch (const std::system_error& e) {
    r.status = 503;
    r.body = fmt::format("no thread for the request: {}\n", e.what());
  }
  // One request per connection: a scraper's thread is freed as soon as its answer is written.
  std::string head = fmt::format("HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\nConnection: close\r\n", r.status,
                                 mg_get_response_code_text(conn, r.status), r.content_type, r.body.size());
  if (!r.allow.empty()) head += "Allow: " + r.allow + "\r\n";
  head += "\r\n";
  mg_write(conn, head.data(), head.size());
  mg_write(conn, r.body.data(), r.body.size());
  return r.status;  // 1..999: handled, civetweb sends nothing more
}

}  // namespace flopwatt::serve

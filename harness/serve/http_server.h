// A bounded HTTP server over civetweb (the server prometheus-cpp's Exposer
// runs on): a fixed pool of worker threads, a short queue of accepted
// connections, a cap on a request's header size and a timeout for clients
// that send or read slowly. Every request goes to one handler.
#pragma once
#include <functional>
#include <string>

#include "harness/serve/routes.h"

struct mg_context;
struct mg_connection;

namespace flopwatt::serve {

struct HttpLimits {
  int threads = 4;                 // requests served at once
  int queue = 16;                  // accepted connections waiting for a thread
  int request_timeout_ms = 10000;  // a client that sends or reads slower is dropped
  int max_request_bytes = 8192;    // request line and headers (only GET: no body)
};

class HttpServer {
 public:
  using Handler = std::function<HttpResponse(const HttpRequest&)>;
  // Binds `listen` (civetweb's form, "127.0.0.1:9464"); throws InputError
  // naming --listen when it cannot.
  HttpServer(const std::string& listen, const HttpLimits& limits, Handler handler);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;
  int port() const;  // the bound port (useful after port 0)

 private:
  static int on_request(::mg_connection* conn);
  Handler handler_;
  ::mg_context* ctx_ = nullptr;
};

}  // namespace flopwatt::serve

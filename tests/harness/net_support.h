// Loopback sockets for the tests of what flopwatt says over a network (the
// store's PostgreSQL client, the Pushgateway push, the Prometheus exporter).
#pragma once
#include <chrono>
#include <vector>

namespace flopwatt::testing {

// A port on 127.0.0.1 that was free a moment ago (bound, then closed): for a
// server the test starts next, or for a port where nobody listens.
int free_loopback_port();

// A TCP port on 127.0.0.1 that takes connections and never says a word: the
// kernel completes each handshake into the backlog, and no answer comes.
class SilentServer {
 public:
  SilentServer();
  ~SilentServer();
  SilentServer(const SilentServer&) = delete;
  SilentServer& operator=(const SilentServer&) = delete;
  int port() const { return port_; }  // -1 when the socket could not be set up
  // Waits up to `within` for a client to connect, keeps the connection open; false when none came.
  bool accept_one(std::chrono::milliseconds within);

 private:
  int fd_ = -1, port_ = -1;
  std::vector<int> accepted_;
};

}  // namespace flopwatt::testing

// Loopback sockets and real servers for the tests of what flopwatt says over
// a network (the store's PostgreSQL client, the Pushgateway pushes, the
// Prometheus exporter).
#pragma once
#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <string>
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

// A server the test starts (argv[0] looked up on PATH, stdin /dev/null,
// stdout and stderr to `log`), stopped with SIGTERM, then SIGKILL after 5 s,
// when it goes out of scope.
class ServerProcess {
 public:
  ServerProcess(std::vector<std::string> argv, const std::filesystem::path& log);
  ~ServerProcess();
  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;
  bool running() const;

 private:
  pid_t pid_ = -1;
};

// The prefix that runs a server as nobody when the test runs as root (the
// servers need no privilege, and a test never gives one away).
std::vector<std::string> as_nobody();

// GET http://127.0.0.1:<port><path> over a plain socket (HTTP/1.0): the body;
// `status` 0 when nothing answered within 5 s.
std::string loopback_get(int port, const std::string& path, int* status = nullptr);
// Polls loopback_get until it answers 200, up to `seconds`.
bool wait_until_ready(int port, const std::string& path, double seconds);

}  // namespace flopwatt::testing

#include "tests/harness/net_support.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <thread>

extern char** environ;

namespace flopwatt::testing {

namespace {

// A socket bound to an ephemeral port of 127.0.0.1; its port, or -1.
int bind_loopback(int fd) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&a), len) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0)
    return -1;
  return ntohs(a.sin_port);
}

}  // namespace

int free_loopback_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  const int port = bind_loopback(fd);
  if (fd >= 0) ::close(fd);
  return port;
}

SilentServer::SilentServer() : fd_(::socket(AF_INET, SOCK_STREAM, 0)) {
  const int port = bind_loopback(fd_);
  port_ = port > 0 && ::listen(fd_, 64) == 0 ? port : -1;
}

SilentServer::~SilentServer() {
  for (int c : accepted_) ::close(c);
  if (fd_ >= 0) ::close(fd_);
}

bool SilentServer::accept_one(std::chrono::milliseconds within) {
  pollfd p{fd_, POLLIN, 0};
  if (::poll(&p, 1, static_cast<int>(within.count())) != 1) return false;
  const int c = ::accept(fd_, nullptr, nullptr);
  if (c < 0) return false;
  accepted_.push_back(c);
  return true;
}

ServerProcess::ServerProcess(std::vector<std::string> argv, const std::filesystem::path& log) {
  std::vector<char*> args;
  for (auto& a : argv) args.push_back(a.data());
  args.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  if (posix_spawnp(&pid_, args[0], &fa, nullptr, args.data(), environ) != 0) pid_ = -1;
  posix_spawn_file_actions_destroy(&fa);
}

ServerProcess::~ServerProcess() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGTERM);
  for (int i = 0; i < 100; ++i) {
    if (::waitpid(pid_, nullptr, WNOHANG) == pid_) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ::kill(pid_, SIGKILL);
  ::waitpid(pid_, nullptr, 0);
}

bool ServerProcess::running() const { return pid_ > 0 && ::waitpid(pid_, nullptr, WNOHANG) == 0; }

std::vector<std::string> as_nobody() {
  if (::geteuid() != 0) return {};
  return {"setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "--"};
}

std::string loopback_get(int port, const std::string& path, int* status) {
  if (status) *status = 0;
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return {};
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(std::uint16_t(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string got;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) {
    const std::string req = "GET " + path + " HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
    ::send(fd, req.data(), req.size(), MSG_NOSIGNAL);
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    char buf[8192];
    for (;;) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - std::chrono::steady_clock::now());
      pollfd p{fd, POLLIN, 0};
      if (left.count() <= 0 || ::poll(&p, 1, int(left.count())) != 1) break;
      const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
      if (n <= 0) break;
      got.append(buf, std::size_t(n));
    }
  }
  ::close(fd);
  // "HTTP/1.x NNN ...", then the headers, a blank line and the body.
  const std::size_t body = got.find("\r\n\r\n");
  if (got.rfind("HTTP/1.", 0) != 0 || got.size() < 12 || body == std::string::npos) return {};
  if (status) *status = std::atoi(got.c_str() + 9);
  return got.substr(body + 4);
}

bool wait_until_ready(int port, const std::string& path, double seconds) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < end) {
    int status = 0;
    loopback_get(port, path, &status);
    if (status == 200) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

}  // namespace flopwatt::testing

#include "tests/harness/net_support.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

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

}  // namespace flopwatt::testing

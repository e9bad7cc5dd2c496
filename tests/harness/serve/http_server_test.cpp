#include "harness/serve/http_server.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <string>

#include "workloads/error.h"

using namespace flopwatt::serve;

namespace {

int connect_to(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(std::uint16_t(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// Everything the server sends until it closes, or until `limit_s` passes.
std::string read_until_closed(int fd, double limit_s, bool* closed = nullptr) {
  std::string got;
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(limit_s);
  if (closed) *closed = false;
  while (std::chrono::steady_clock::now() < end) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 50) <= 0) continue;
    char buf[4096];
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) {
      if (closed) *closed = true;
      break;
    }
    got.append(buf, std::size_t(n));
  }
  return got;
}

std::string exchange(int port, const std::string& request) {
  const int fd = connect_to(port);
  if (fd < 0) return "connect failed";
  ::send(fd, request.data(), request.size(), MSG_NOSIGNAL);
  const std::string got = read_until_closed(fd, 5);
  ::close(fd);
  return got;
}

struct Served {
  std::atomic<int> calls{0};
  HttpServer server;
  explicit Served(HttpLimits limits)
      : server("127.0.0.1:0", limits, [this](const HttpRequest& r) {
          ++calls;
          HttpResponse resp;
          resp.body = r.method + " " + r.path + " " + (r.accept ? r.accept : "-");
          return resp;
        }) {}
};

}  // namespace

TEST(HttpServer, AnswersEveryRequestThroughTheHandler) {
  Served s(HttpLimits{});
  ASSERT_GT(s.server.port(), 0);
  const std::string got = exchange(s.server.port(), "GET /metrics?x=1 HTTP/1.1\r\nHost: a\r\nAccept: text/plain\r\n\r\n");
  EXPECT_EQ(got.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << got;
  EXPECT_NE(got.find("Connection: close\r\n"), std::string::npos) << got;
  EXPECT_NE(got.find("\r\n\r\nGET /metrics text/plain"), std::string::npos) << got;
  EXPECT_EQ(s.calls.load(), 1);
}

// The handler reads the sampler and the results store; on the 100 KiB stacks
// of Debian's civetweb workers that overflowed under AddressSanitizer.
TEST(HttpServer, TheHandlerHasAStackOfAtLeastOneMebibyte) {
  std::atomic<std::size_t> stack{0};
  HttpServer server("127.0.0.1:0", HttpLimits{}, [&](const HttpRequest&) {
    pthread_attr_t a;
    std::size_t size = 0;
    if (pthread_getattr_np(pthread_self(), &a) == 0) {
      pthread_attr_getstacksize(&a, &size);
      pthread_attr_destroy(&a);
    }
    stack = size;
    return HttpResponse{};
  });
  const std::string got = exchange(server.port(), "GET /metrics HTTP/1.1\r\nHost: a\r\n\r\n");
  EXPECT_EQ(got.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << got;
  EXPECT_GE(stack.load(), std::size_t(1) << 20);
}

TEST(HttpServer, OversizedRequestNeverReachesTheHandler) {
  HttpLimits l;
  l.max_request_bytes = 1024;
  Served s(l);
  const std::string got =
      exchange(s.server.port(), "GET /metrics HTTP/1.1\r\nHost: a\r\nX-Pad: " + std::string(8000, 'a') + "\r\n\r\n");
  EXPECT_EQ(s.calls.load(), 0) << got;
  // civetweb refuses it (400) before any handler, or drops the connection.
  if (!got.empty()) {
    EXPECT_EQ(got.rfind("HTTP/1.", 0), 0u) << got.substr(0, 200);
    EXPECT_EQ(got.substr(9, 1), "4") << got.substr(0, 200);
  }
}

TEST(HttpServer, SlowClientIsDroppedAfterTheRequestTimeout) {
  HttpLimits l;
  l.request_timeout_ms = 300;
  Served s(l);
  const int fd = connect_to(s.server.port());
  ASSERT_GE(fd, 0);
  const std::string part = "GET /metrics HTTP/1.1\r\nHost: a\r\n";  // never finished
  ::send(fd, part.data(), part.size(), MSG_NOSIGNAL);
  const auto t0 = std::chrono::steady_clock::now();
  bool closed = false;
  read_until_closed(fd, 10, &closed);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ::close(fd);
  EXPECT_TRUE(closed) << "a client that never finished its request held a server thread for 10 s";
  EXPECT_LT(took, 5.0);
  EXPECT_EQ(s.calls.load(), 0);
  // The server still answers others.
  EXPECT_NE(exchange(s.server.port(), "GET /metrics HTTP/1.1\r\nHost: a\r\n\r\n").find("200 OK"), std::string::npos);
}

TEST(HttpServer, PortTakenIsBadInputNamingListen) {
  Served s(HttpLimits{});
  const std::string taken = "127.0.0.1:" + std::to_string(s.server.port());
  try {
    HttpServer again(taken, HttpLimits{}, [](const HttpRequest&) { return HttpResponse{}; });
    ADD_FAILURE() << "bound a taken port";
  } catch (const flopwatt::InputError& e) {
    EXPECT_EQ(e.where(), "--listen " + taken);
  }
}

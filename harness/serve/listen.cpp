#include <arpa/inet.h>

#include <cstdlib>

#include "harness/serve/serve.h"
#include "workloads/error.h"

namespace flopwatt::serve {

std::string ListenAddress::civetweb() const {
  return (ipv6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

ListenAddress parse_listen(const std::string& value) {
  const auto bad = [&](const std::string& why) {
    return InputError("--listen " + value, why,
                      "pass ADDR:PORT with a numeric address, e.g. 127.0.0.1:9464, [::1]:9464, or 0.0.0.0:9464 to "
                      "serve every interface");
  };
  ListenAddress a;
  std::string port;
  if (!value.empty() && value.front() == '[') {
    const auto close = value.find("]:");
    if (close == std::string::npos) throw bad("an IPv6 address needs [ADDR]:PORT");
    a.host = value.substr(1, close - 1);
    port = value.substr(close + 2);
    a.ipv6 = true;
  } else {
    const auto colon = value.rfind(':');
    if (colon == std::string::npos) throw bad("no port");
    a.host = value.substr(0, colon);
    port = value.substr(colon + 1);
  }
  unsigned char buf[16];
  if (inet_pton(a.ipv6 ? AF_INET6 : AF_INET, a.host.c_str(), buf) != 1) throw bad("not a numeric address");
  if (port.empty() || port.size() > 5 || port.find_first_not_of("0123456789") != std::string::npos ||
      std::atoi(port.c_str()) > 65535)
    throw bad("the port must be a number from 0 to 65535");
  a.port = std::atoi(port.c_str());
  a.loopback = a.ipv6 ? a.host == "::1" : buf[0] == 127;
  return a;
}

}  // namespace flopwatt::serve

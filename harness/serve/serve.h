// `flopwatt serve`: the exporter a fleet's Prometheus scrapes (exporter.h
// says what it exports), on a loopback address unless told otherwise.
#pragma once
#include <cstdio>
#include <string>

#include "harness/run/energy.h"

namespace flopwatt::serve {

// The exporter's default: loopback, on the port flopwatt takes in the
// exporters' conventional range.
inline constexpr const char* kDefaultListen = "127.0.0.1:9464";

struct ListenAddress {
  std::string host;  // numeric IPv4, or IPv6 without brackets
  int port = 0;      // 0: any free port (printed once bound)
  bool ipv6 = false;
  bool loopback = false;
  std::string civetweb() const;  // "127.0.0.1:9464", "[::1]:9464"
};

// ADDR:PORT with a numeric address ([ADDR]:PORT for IPv6); throws InputError
// naming --listen.
ListenAddress parse_listen(const std::string& value);

struct ServeOptions {
  std::string listen = kDefaultListen;
  PowerOptions power;      // --power, --sysfs-root, --power-log, --sample-period, --headline-domain
  std::string store;       // --store; empty: $FLOPWATT_STORE or the default file
  bool no_store = false;   // --no-store: no results
  double window_s = 5.0;   // --window: each source's power and the headline are judged over the last window_s
};

// Serves until SIGINT or SIGTERM; prints the address once bound on `out`.
// Returns the exit status. Throws InputError for bad options or an address
// it cannot bind.
int serve(const ServeOptions& o, std::FILE* out);

}  // namespace flopwatt::serve

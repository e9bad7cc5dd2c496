#include <gtest/gtest.h>

#include "harness/serve/serve.h"
#include "workloads/error.h"

using namespace flopwatt;
using namespace flopwatt::serve;

TEST(Listen, DefaultIsLoopbackAndOthersAreExplicit) {
  const ListenAddress d = parse_listen(kDefaultListen);
  EXPECT_EQ(d.host, "127.0.0.1");
  EXPECT_EQ(d.port, 9464);
  EXPECT_TRUE(d.loopback);
  EXPECT_FALSE(parse_listen("0.0.0.0:9464").loopback);
  EXPECT_FALSE(parse_listen("192.168.1.5:80").loopback);
  const ListenAddress v6 = parse_listen("[::1]:0");
  EXPECT_TRUE(v6.ipv6);
  EXPECT_TRUE(v6.loopback);
  EXPECT_EQ(v6.civetweb(), "[::1]:0");
  EXPECT_FALSE(parse_listen("[::]:9464").loopback);
}

TEST(Listen, BadAddressNamesTheFlag) {
  for (const char* bad : {"9464", "localhost:9464", "127.0.0.1:", "127.0.0.1:70000", "127.0.0.1:9x", "::1:9464",
                          "[::1]9464", "1.2.3:80"}) {
    try {
      parse_listen(bad);
      ADD_FAILURE() << bad << " accepted";
    } catch (const InputError& e) {
      EXPECT_EQ(e.where(), std::string("--listen ") + bad);
      EXPECT_NE(e.fix().find("127.0.0.1:9464"), std::string::npos);
    }
  }
}

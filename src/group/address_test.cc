#include "group/address.h"

#include <gtest/gtest.h>

namespace strata::group {
namespace {

TEST(PeerAddress, AcceptsHostsAndPorts) {
  for (const char* good : {"127.0.0.1:7001", "[::1]:7001", "node-3.cluster.local:7070", "localhost:1", "a:65535"}) {
    EXPECT_TRUE(ParseHostPort(good).ok()) << good;
  }
  auto v6 = ParseHostPort("[::1]:7001");
  ASSERT_TRUE(v6.ok());
  EXPECT_EQ(v6->host, "::1");
  EXPECT_EQ(v6->port, 7001);
  EXPECT_EQ(FormatHostPort(*v6), "[::1]:7001");
  EXPECT_EQ(FormatHostPort({"127.0.0.1", 80}), "127.0.0.1:80");
  EXPECT_TRUE(ParseHostPort("127.0.0.1:0", /*allow_port_zero=*/true).ok());
}

// Whatever reaches a URL's authority from etcd or a flag: nothing but HOST:PORT passes.
TEST(PeerAddress, RefusesAnythingElse) {
  const std::string long_name(254, 'a');
  for (std::string bad : {std::string(""),
                          std::string(":80"),
                          std::string("host"),
                          std::string("host:"),
                          std::string("host:0"),
                          std::string("host:65536"),
                          std::string("host:8o"),
                          std::string("host:123456"),
                          std::string("::1:80"),
                          std::string("[::1:80"),
                          std::string("[nothost]:80"),
                          std::string("user@host:80"),
                          std::string("evil.example/x?:80"),
                          std::string("host name:80"),
                          std::string("h%41:80"),
                          std::string("-host:80"),
                          std::string("host-:80"),
                          std::string("a..b:80"),
                          std::string("host\r\nX:80"),
                          long_name + ":80",
                          std::string(300, '1') + ":80"}) {
    EXPECT_FALSE(ParseHostPort(bad).ok()) << bad;
  }
  auto st = ParseHostPort(std::string("evil\x01\x7f") + std::string(100, 'x') + ":80").status();
  EXPECT_EQ(st.message().find('\x01'), std::string::npos) << "quoted untrusted text is made printable";
}

}  // namespace
}  // namespace strata::group

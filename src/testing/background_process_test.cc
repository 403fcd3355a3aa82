// FreeLoopbackPort: the ports handed to servers that cannot report their own (etcd, static
// groups' members).
#include "testing/background_process.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fstream>
#include <set>

namespace strata::testing {
namespace {

bool Bindable(uint16_t port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(port);
  const bool ok = fd >= 0 && ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  if (fd >= 0) ::close(fd);
  return ok;
}

// The kernel reissues a just-closed port soon: two members of a static group once got the same
// one. Each port comes once, is free, and is outside connect()'s range of local ports.
TEST(FreeLoopbackPort, NeverTwiceAndBelowTheEphemeralRange) {
  int ephemeral_low = 32768;
  std::ifstream range("/proc/sys/net/ipv4/ip_local_port_range");
  if (!(range >> ephemeral_low)) ephemeral_low = 32768;
  std::set<uint16_t> seen;
  for (int i = 0; i < 300; ++i) {
    const uint16_t port = FreeLoopbackPort();
    ASSERT_NE(port, 0) << "call " << i;
    EXPECT_TRUE(seen.insert(port).second) << port << " handed out twice";
    EXPECT_TRUE(Bindable(port)) << port;
    if (ephemeral_low - 10000 >= 1000) {
      EXPECT_LT(port, ephemeral_low);
    }
  }
}

}  // namespace
}  // namespace strata::testing

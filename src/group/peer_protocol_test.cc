#include "group/peer_protocol.h"

#include <gtest/gtest.h>

namespace strata::group {
namespace {

BlockRequest Sample() { return BlockRequest{"s3://bucket/pre fix", "dir/a b&c=d?.bin", "abc-3", 4 << 20, 2, 9 << 20}; }

TEST(PeerProtocol, TargetRoundTrips) {
  auto r = ParseBlockTarget(FormatBlockTarget(Sample()));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->store, "s3://bucket/pre fix");
  EXPECT_EQ(r->key, "dir/a b&c=d?.bin");
  EXPECT_EQ(r->etag, "abc-3");
  EXPECT_EQ(r->block_size, 4u << 20);
  EXPECT_EQ(r->index, 2u);
  EXPECT_EQ(r->object_size, 9u << 20);
}

TEST(PeerProtocol, MalformedTargetsAreRefused) {
  std::string good = FormatBlockTarget(Sample());
  for (std::string bad :
       {std::string("/"), std::string("/strata/peer/v1/block"), good + "&x=1", good + "&bs=1",
        good.substr(0, good.find("&store")), std::string("/other?bs=1"),
        std::string("/strata/peer/v1/block?bs=0&etag=e&index=0&key=k&size=1&store=s"),
        std::string("/strata/peer/v1/block?bs=4&etag=e&index=1&key=k&size=4&store=s"),
        std::string("/strata/peer/v1/block?bs=4&etag=e&index=-1&key=k&size=4&store=s"),
        std::string("/strata/peer/v1/block?bs=4&etag=e&index=0&key=&size=4&store=s"),
        std::string("/strata/peer/v1/block?bs=4&etag=%zz&index=0&key=k&size=4&store=s"),
        std::string("/strata/peer/v1/block?bs=99999999999999999999999&etag=e&index=0&key=k&size=4&store=s")}) {
    EXPECT_FALSE(ParseBlockTarget(bad).ok()) << bad;
  }
  EXPECT_TRUE(ParseBlockTarget("/strata/peer/v1/block?bs=4&etag=e&index=1&key=k&size=5&store=s").ok());
}

TEST(PeerProtocol, SignatureVerifiesAndRefusesTampering) {
  const std::string target = FormatBlockTarget(Sample());
  const WallTime now{std::chrono::seconds(1700000000)};
  const int64_t t = 1700000000;
  std::string mac = SignPeerRequest("secret", "GET", target, t);
  EXPECT_TRUE(VerifyPeerRequest("secret", "GET", target, std::to_string(t), mac, now).ok());
  auto denied = [&](const Status& s) { return s.code() == Code::kPermissionDenied; };
  EXPECT_TRUE(denied(VerifyPeerRequest("other", "GET", target, std::to_string(t), mac, now)));
  EXPECT_TRUE(denied(VerifyPeerRequest("secret", "GET", target + "x", std::to_string(t), mac, now)));
  EXPECT_TRUE(denied(VerifyPeerRequest("secret", "PUT", target, std::to_string(t), mac, now)));
  EXPECT_TRUE(denied(VerifyPeerRequest("secret", "GET", target, std::to_string(t + 1), mac, now)));
  EXPECT_TRUE(denied(VerifyPeerRequest("secret", "GET", target, "", mac, now)));
  EXPECT_TRUE(denied(VerifyPeerRequest("secret", "GET", target, std::to_string(t), "", now)));
  EXPECT_TRUE(denied(VerifyPeerRequest("secret", "GET", target, std::to_string(t), mac.substr(1), now)));
  // Stale and future times are refused even with a correct MAC.
  const int64_t old = t - 61;
  EXPECT_TRUE(denied(VerifyPeerRequest("secret", "GET", target, std::to_string(old),
                                       SignPeerRequest("secret", "GET", target, old), now)));
  const int64_t future = t + 61;
  EXPECT_TRUE(denied(VerifyPeerRequest("secret", "GET", target, std::to_string(future),
                                       SignPeerRequest("secret", "GET", target, future), now)));
}

TEST(PeerProtocol, Checksum) {
  uint64_t v = 0;
  ASSERT_TRUE(ParseChecksum(FormatChecksum(0x0123456789abcdefull), &v));
  EXPECT_EQ(v, 0x0123456789abcdefull);
  EXPECT_FALSE(ParseChecksum("0123", &v));
  EXPECT_FALSE(ParseChecksum("0123456789abcdeg", &v));
  EXPECT_FALSE(ParseChecksum("0123456789ABCDEF", &v));
}

}  // namespace
}  // namespace strata::group

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

// The refusal says the same thing whatever failed, and never this member's clock.
TEST(PeerProtocol, RefusalTellsAStrangerNothing) {
  const std::string target = FormatBlockTarget(Sample());
  const WallTime now{std::chrono::seconds(1700000000)};
  const int64_t late = 1700000000 - 3600;
  Status stale = VerifyPeerRequest("secret", "GET", target, std::to_string(late),
                                   SignPeerRequest("secret", "GET", target, late), now);
  Status wrong = VerifyPeerRequest("secret", "GET", target, "1700000000", "00", now);
  ASSERT_FALSE(stale.ok());
  EXPECT_EQ(stale.message(), wrong.message());
  EXPECT_EQ(stale.message().find("3600"), std::string::npos) << stale.message();
  EXPECT_NE(stale.cause().find("3600"), std::string::npos) << "the member's own log may say it";
}

constexpr char kSecret[] = "peer-protocol-test-secret-0123456789";

TEST(PeerProtocol, AnswerMacBindsTheBodyTheRequestAndTheBlock) {
  const std::string target = FormatBlockTarget(Sample());
  const std::string request_mac = SignPeerRequest(kSecret, "GET", target, 1700000000);
  const std::string body(1 << 20, 'b');
  auto seal = SealPeerAnswer(kSecret, request_mac, target, body);
  ASSERT_TRUE(seal.ok()) << seal.status();
  EXPECT_EQ(seal->nonce.size(), 32u);
  EXPECT_EQ(seal->mac.size(), 32u);
  EXPECT_TRUE(VerifyPeerAnswer(kSecret, request_mac, target, seal->nonce, seal->mac, body).ok());
  auto refused = [](const Status& s) { return s.code() == Code::kCorruption; };
  std::string flipped = body;
  flipped[body.size() / 2] ^= 1;
  EXPECT_TRUE(refused(VerifyPeerAnswer(kSecret, request_mac, target, seal->nonce, seal->mac, flipped)));
  EXPECT_TRUE(refused(VerifyPeerAnswer(kSecret, request_mac, target, seal->nonce, seal->mac, body + "x")));
  EXPECT_TRUE(refused(VerifyPeerAnswer(kSecret, request_mac, target, seal->nonce, seal->mac, body.substr(1))));
  EXPECT_TRUE(refused(
      VerifyPeerAnswer("another-secret-of-the-same-length-xx", request_mac, target, seal->nonce, seal->mac, body)));
  // Another request (another time, so another MAC) or another block: not this answer.
  EXPECT_TRUE(refused(VerifyPeerAnswer(kSecret, SignPeerRequest(kSecret, "GET", target, 1700000001), target,
                                       seal->nonce, seal->mac, body)));
  BlockRequest other = Sample();
  other.index = 1;
  EXPECT_TRUE(refused(VerifyPeerAnswer(kSecret, request_mac, FormatBlockTarget(other), seal->nonce, seal->mac, body)));
  std::string nonce = seal->nonce;
  nonce[0] = nonce[0] == '0' ? '1' : '0';
  EXPECT_TRUE(refused(VerifyPeerAnswer(kSecret, request_mac, target, nonce, seal->mac, body)));
  EXPECT_TRUE(refused(VerifyPeerAnswer(kSecret, request_mac, target, seal->nonce, "", body)));
  EXPECT_TRUE(refused(VerifyPeerAnswer(kSecret, request_mac, target, "", seal->mac, body)));
  // Each answer has its own nonce, so its own one-time key.
  auto again = SealPeerAnswer(kSecret, request_mac, target, body);
  ASSERT_TRUE(again.ok());
  EXPECT_NE(again->nonce, seal->nonce);
  EXPECT_NE(again->mac, seal->mac);
  // An empty body (an empty object's block does not exist, but a status may be short) verifies too.
  auto empty = SealPeerAnswer(kSecret, request_mac, target, "");
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(VerifyPeerAnswer(kSecret, request_mac, target, empty->nonce, empty->mac, "").ok());
}

}  // namespace
}  // namespace strata::group

#include "group/member_record.h"

#include <gtest/gtest.h>

namespace strata::group {
namespace {

constexpr char kSecret[] = "member-record-test-secret-0123456789";
const WallTime kNow{std::chrono::seconds(1700000000)};
constexpr std::chrono::seconds kSkew{60};

MemberRecord Sample() { return {"127.0.0.1:7001", "127.0.0.1:7001", 1700000000, 1700000090}; }

TEST(MemberRecord, SignedRecordRoundTrips) {
  const std::string v = FormatMemberRecord(kSecret, "train", Sample());
  auto r = ParseMemberRecord(kSecret, "train", "127.0.0.1:7001", v, kNow, kSkew);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->address, "127.0.0.1:7001");
  EXPECT_EQ(r->expires, 1700000090);
  EXPECT_TRUE(RecordLive(*r, kNow + std::chrono::seconds(150), kSkew));
  EXPECT_FALSE(RecordLive(*r, kNow + std::chrono::seconds(151), kSkew));
}

// Whoever writes to etcd without the secret: no record of theirs is taken.
TEST(MemberRecord, UnsignedMovedOrAlteredRecordsAreRefused) {
  const std::string v = FormatMemberRecord(kSecret, "train", Sample());
  auto code = [&](std::string_view secret, std::string_view group, std::string_view id, std::string_view value) {
    return ParseMemberRecord(secret, group, id, value, kNow, kSkew).status().code();
  };
  EXPECT_EQ(code(kSecret, "train", "127.0.0.1:7001", "127.0.0.1:7001"), Code::kInvalidArgument);  // the old format
  EXPECT_EQ(code("another-secret-0123456789abcdefghij", "train", "127.0.0.1:7001", v), Code::kPermissionDenied);
  EXPECT_EQ(code(kSecret, "other", "127.0.0.1:7001", v), Code::kPermissionDenied);  // another group's
  EXPECT_EQ(code(kSecret, "train", "127.0.0.1:7002", v), Code::kPermissionDenied);  // under another key
  std::string moved = v;
  moved.replace(moved.find("7001"), 4, "7009");  // another address, same MAC
  EXPECT_EQ(code(kSecret, "train", "127.0.0.1:7001", moved), Code::kPermissionDenied);
  std::string later = v;
  later.replace(later.find("1700000090"), 10, "1700000100");  // a longer life, same MAC
  EXPECT_EQ(code(kSecret, "train", "127.0.0.1:7001", later), Code::kPermissionDenied);
  for (std::string bad : {std::string(""), v + " x", v.substr(0, v.size() - 1) + " ", std::string(600, 'a'),
                          std::string("strata-member-v1 127.0.0.1:7001 -1 5 00"),
                          std::string("strata-member-v1 evil/x:80 1700000000 1700000090 00")}) {
    EXPECT_EQ(code(kSecret, "train", "127.0.0.1:7001", bad), Code::kInvalidArgument) << bad;
  }
}

// A record copied from a member that left works until it expires, no longer.
TEST(MemberRecord, ReplayIsBoundedByTheRecordsLife) {
  const std::string v = FormatMemberRecord(kSecret, "train", Sample());
  EXPECT_TRUE(ParseMemberRecord(kSecret, "train", "127.0.0.1:7001", v, kNow + std::chrono::seconds(150), kSkew).ok());
  EXPECT_EQ(
      ParseMemberRecord(kSecret, "train", "127.0.0.1:7001", v, kNow + std::chrono::seconds(151), kSkew).status().code(),
      Code::kDeadlineExceeded);
  EXPECT_EQ(
      ParseMemberRecord(kSecret, "train", "127.0.0.1:7001", v, kNow - std::chrono::seconds(61), kSkew).status().code(),
      Code::kDeadlineExceeded);  // issued in the future
  MemberRecord forever = Sample();
  forever.expires = forever.issued + 601;  // even signed, no record lives longer than 10 minutes
  EXPECT_EQ(ParseMemberRecord(kSecret, "train", forever.id, FormatMemberRecord(kSecret, "train", forever), kNow, kSkew)
                .status()
                .code(),
            Code::kInvalidArgument);
}

// The bytes a member says it caches (read by the CSI scheduler extender): a
// writer to etcd without the secret cannot claim a node holds a dataset.
TEST(PublishedRecord, SignedPayloadRoundTripsAndForgeriesAreRefused) {
  const std::string payload = R"({"node": "node-a", "datasets": {"imagenet": 12582912}})";
  const std::string id = "127.0.0.1:7001";
  const std::string v = FormatPublishedRecord(kSecret, "train", id, payload, 1700000000, 1700000090);
  auto r = ParsePublishedRecord(kSecret, "train", id, v, kNow, kSkew);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(*r, payload);
  auto code = [&](std::string_view secret, std::string_view group, std::string_view key, std::string_view value,
                  WallTime now = kNow) {
    return ParsePublishedRecord(secret, group, key, value, now, kSkew).status().code();
  };
  EXPECT_EQ(code(kSecret, "train", id, payload), Code::kInvalidArgument);  // unsigned, as published before
  EXPECT_EQ(code("another-secret-0123456789abcdefghij", "train", id, v), Code::kPermissionDenied);
  EXPECT_EQ(code(kSecret, "other", id, v), Code::kPermissionDenied);
  EXPECT_EQ(code(kSecret, "train", "127.0.0.1:7002", v), Code::kPermissionDenied);  // moved to another member
  std::string more = v;
  more.replace(more.find("12582912"), 8, "99999999");  // a bigger claim, same MAC
  EXPECT_EQ(code(kSecret, "train", id, more), Code::kPermissionDenied);
  EXPECT_EQ(code(kSecret, "train", id, v, kNow + std::chrono::seconds(151)), Code::kDeadlineExceeded);
  EXPECT_EQ(
      code(kSecret, "train", id, FormatPublishedRecord(kSecret, "train", id, payload, 1700000000, 1700000000 + 601)),
      Code::kInvalidArgument);  // no record lives longer than 10 minutes
  for (std::string bad : {std::string(""), std::string("strata-cached-v1 1 2"),
                          std::string("strata-cached-v1 x 2 00 {}"), std::string((1 << 20) + 1, 'a')}) {
    EXPECT_EQ(code(kSecret, "train", id, bad), Code::kInvalidArgument) << bad.substr(0, 40);
  }
}

}  // namespace
}  // namespace strata::group

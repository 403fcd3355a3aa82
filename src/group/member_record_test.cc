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

}  // namespace
}  // namespace strata::group

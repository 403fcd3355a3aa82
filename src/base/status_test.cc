#include "base/status.h"

#include <gtest/gtest.h>

#include <cerrno>

namespace strata {
namespace {

TEST(StatusTest, OkByDefault) {
  Status s;
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(s.code(), Code::kOk);
  EXPECT_EQ(s.ToString(), "OK");
}

TEST(StatusTest, CarriesCodeMessageCauseAndRetryable) {
  Status s(Code::kThrottled, "slow down on key a", "SlowDown");
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.code(), Code::kThrottled);
  EXPECT_TRUE(s.retryable());
  EXPECT_EQ(s.ToString(), "Throttled: slow down on key a (cause: SlowDown)");
  EXPECT_FALSE(NotFoundError("x").retryable());
  EXPECT_TRUE(Status(Code::kNotFound, "x", "", true).retryable());
}

TEST(StatusTest, WithContextPrefixesMessage) {
  Status s = NotFoundError("no such key").WithContext("get s3://b/k");
  EXPECT_EQ(s.message(), "get s3://b/k: no such key");
  EXPECT_EQ(s.code(), Code::kNotFound);
}

TEST(StatusTest, ErrnoTranslation) {
  EXPECT_EQ(ErrnoToStatus(ENOENT, "open").code(), Code::kNotFound);
  EXPECT_EQ(ErrnoToStatus(ENOSPC, "write").code(), Code::kNoSpace);
  EXPECT_EQ(ErrnoToStatus(EACCES, "open").code(), Code::kPermissionDenied);
  EXPECT_EQ(ErrnoToStatus(EIO, "read").code(), Code::kIOError);
}

Result<int> Half(int x) {
  if (x % 2) return InvalidArgumentError("odd");
  return x / 2;
}

Result<int> Quarter(int x) {
  STRATA_ASSIGN_OR_RETURN(int h, Half(x));
  STRATA_ASSIGN_OR_RETURN(int q, Half(h));
  return q;
}

TEST(ResultTest, PropagatesErrorsAndValues) {
  auto ok = Quarter(8);
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(*ok, 2);
  auto bad = Quarter(6);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), Code::kInvalidArgument);
  Result<int> from_ok{Status()};
  EXPECT_EQ(from_ok.status().code(), Code::kInternal);
}

}  // namespace
}  // namespace strata

#include "base/status.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <string>
#include <vector>

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

TEST(StatusTest, ForeignCodeIsItsOwnField) {
  Status s = NotFoundError("no such key k", "HTTP 404").WithForeignCode("NoSuchKey");
  EXPECT_EQ(s.code(), Code::kNotFound);
  EXPECT_EQ(s.foreign_code(), "NoSuchKey");
  EXPECT_EQ(s.cause(), "HTTP 404");  // the cause is left as it was
  EXPECT_EQ(s.ToString(), "NotFound [NoSuchKey]: no such key k (cause: HTTP 404)");
  EXPECT_TRUE(NotFoundError("x").foreign_code().empty());
  EXPECT_TRUE(NotFoundError("x", "NoSuchKey").foreign_code().empty());  // cause text is never a code
  EXPECT_TRUE(Status::Ok().WithForeignCode("NoSuchKey").ok());
  EXPECT_TRUE(Status::Ok().foreign_code().empty());
  EXPECT_TRUE(s.WithForeignCode("").foreign_code().empty());
}

TEST(StatusTest, WithContextKeepsForeignCodeCauseAndRetryable) {
  Status s = Status(Code::kCorruption, "digest", "md5 differs", true).WithForeignCode("BadDigest");
  Status c = s.WithContext("put b/k");
  EXPECT_EQ(c.message(), "put b/k: digest");
  EXPECT_EQ(c.foreign_code(), "BadDigest");
  EXPECT_EQ(c.cause(), "md5 differs");
  EXPECT_TRUE(c.retryable());
  EXPECT_EQ(c.ToString(), "Corruption [BadDigest]: put b/k: digest (cause: md5 differs)");
  // The original is unchanged (copies share immutable state).
  EXPECT_EQ(s.message(), "digest");
  EXPECT_EQ(ThrottledError("slow").WithForeignCode("SlowDown").WithContext("get").retryable(), true);
}

TEST(StatusTest, OneHelperPerCode) {
  struct Case {
    Status status;
    Code code;
    bool retryable;
  };
  const std::vector<Case> cases = {
      {NotFoundError("m", "c"), Code::kNotFound, false},
      {InvalidArgumentError("m", "c"), Code::kInvalidArgument, false},
      {CorruptionError("m", "c"), Code::kCorruption, false},
      {IOError("m", "c"), Code::kIOError, false},
      {NoSpaceError("m", "c"), Code::kNoSpace, false},
      {PreconditionFailedError("m", "c"), Code::kPreconditionFailed, false},
      {NotModifiedError("m", "c"), Code::kNotModified, false},
      {ThrottledError("m", "c"), Code::kThrottled, true},
      {UnavailableError("m", "c"), Code::kUnavailable, true},
      {DeadlineExceededError("m", "c"), Code::kDeadlineExceeded, true},
      {NotSupportedError("m", "c"), Code::kNotSupported, false},
      {PermissionDeniedError("m", "c"), Code::kPermissionDenied, false},
      {UnauthenticatedError("m", "c"), Code::kUnauthenticated, false},
      {AlreadyExistsError("m", "c"), Code::kAlreadyExists, false},
      {OutOfRangeError("m", "c"), Code::kOutOfRange, false},
      {CancelledError("m", "c"), Code::kCancelled, false},
      {InternalError("m", "c"), Code::kInternal, false},
  };
  ASSERT_EQ(cases.size(), 17u);  // every code but kOk
  for (const auto& c : cases) {
    SCOPED_TRACE(std::string(CodeName(c.code)));
    EXPECT_FALSE(c.status.ok());
    EXPECT_EQ(c.status.code(), c.code);
    EXPECT_EQ(c.status.message(), "m");
    EXPECT_EQ(c.status.cause(), "c");
    EXPECT_EQ(c.status.retryable(), c.retryable);
    EXPECT_TRUE(c.status.foreign_code().empty());
    EXPECT_EQ(c.status, Status(c.code, "m", "c"));
  }
  EXPECT_EQ(NoSpaceError("disk full").cause(), "");
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
  EXPECT_EQ(bad.value_or(-1), -1);
}

struct Point {
  int x = 0;
};

// Taking the value of an error Result is a bug: it must stop loudly, naming
// the status, instead of reading an empty optional.
TEST(ResultDeathTest, ValueOfAnErrorAborts) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  Result<int> bad = NotFoundError("no such key k").WithForeignCode("NoSuchKey");
  EXPECT_DEATH((void)bad.value(), "value\\(\\) of an error Result.*NotFound \\[NoSuchKey\\]: no such key k");
  EXPECT_DEATH((void)*bad, "NotFound");
  EXPECT_DEATH((void)std::move(bad).value(), "NotFound");
  const Result<Point> cbad = InvalidArgumentError("odd");
  EXPECT_DEATH((void)cbad->x, "InvalidArgument: odd");
  EXPECT_DEATH((void)cbad.value(), "InvalidArgument: odd");
  EXPECT_DEATH((void)*Result<std::string>(InternalError("temp")), "Internal: temp");
}

}  // namespace
}  // namespace strata

#include "net/s3_errors.h"

#include <gtest/gtest.h>

namespace strata::net {
namespace {

TEST(S3Errors, CodesMapToStatus) {
  struct Case {
    int http;
    const char* code;
    Code want;
    bool retryable;
  } cases[] = {
      {404, "NoSuchKey", Code::kNotFound, false},
      {404, "NoSuchBucket", Code::kNotFound, false},
      {404, "NoSuchUpload", Code::kNotFound, false},
      {403, "AccessDenied", Code::kPermissionDenied, false},
      {403, "SignatureDoesNotMatch", Code::kUnauthenticated, false},
      {403, "InvalidAccessKeyId", Code::kUnauthenticated, false},
      {412, "PreconditionFailed", Code::kPreconditionFailed, false},
      {416, "InvalidRange", Code::kOutOfRange, false},
      {503, "SlowDown", Code::kThrottled, true},
      {500, "InternalError", Code::kUnavailable, true},
      {400, "EntityTooSmall", Code::kInvalidArgument, false},
      {400, "InvalidPart", Code::kInvalidArgument, false},
      {400, "InvalidArgument", Code::kInvalidArgument, false},
      {400, "MalformedXML", Code::kInvalidArgument, false},
      {304, "", Code::kNotModified, false},
      {404, "", Code::kNotFound, false},  // HEAD: no body
      {503, "", Code::kThrottled, true},
      {500, "", Code::kUnavailable, true},
      {502, "", Code::kUnavailable, true},
      {418, "SomethingNew", Code::kInvalidArgument, false},
      {409, "BucketAlreadyOwnedByYou", Code::kAlreadyExists, false},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.code);
    Status s = StatusFromS3Error(c.http, c.code, "the message", "/bucket/key");
    EXPECT_EQ(s.code(), c.want);
    EXPECT_EQ(s.retryable(), c.retryable);
    EXPECT_EQ(s.foreign_code(), c.code);  // the S3 code has a field of its own, not the free-text cause
    EXPECT_EQ(s.cause(), "HTTP " + std::to_string(c.http));
    EXPECT_NE(s.message().find("the message"), std::string::npos);
    EXPECT_NE(s.message().find("/bucket/key"), std::string::npos);
  }
}

TEST(S3Errors, RoundTripKeepsTheS3Code) {
  for (const char* code : {"NoSuchKey", "NoSuchUpload", "AccessDenied", "SignatureDoesNotMatch", "InvalidRange",
                           "SlowDown", "EntityTooSmall", "InvalidPart", "MalformedXML", "RequestTimeTooSkewed",
                           "AuthorizationHeaderMalformed", "PreconditionFailed"}) {
    int http = HttpStatusForS3Code(code);
    ASSERT_NE(http, 0) << code;
    S3ErrorInfo info = S3ErrorForStatus(StatusFromS3Error(http, code, "m", ""));
    EXPECT_EQ(info.code, code);
    EXPECT_EQ(info.http_status, http);
  }
}

TEST(S3Errors, StatusWithoutS3CauseMapsByCode) {
  EXPECT_EQ(S3ErrorForStatus(Status::Ok()).http_status, 200);
  auto check = [](Status s, int http, const char* code) {
    S3ErrorInfo i = S3ErrorForStatus(s);
    EXPECT_EQ(i.http_status, http) << s;
    EXPECT_EQ(i.code, code) << s;
  };
  check(NotFoundError("no such key k", "ENOENT"), 404, "NoSuchKey");
  check(InvalidArgumentError("bad"), 400, "InvalidArgument");
  check(Status(Code::kPreconditionFailed, "etag"), 412, "PreconditionFailed");
  check(Status(Code::kNotModified, "same"), 304, "NotModified");
  check(Status(Code::kThrottled, "slow"), 503, "SlowDown");
  check(UnavailableError("down"), 503, "ServiceUnavailable");
  check(Status(Code::kOutOfRange, "range"), 416, "InvalidRange");
  check(Status(Code::kPermissionDenied, "no"), 403, "AccessDenied");
  check(CorruptionError("bad block"), 500, "InternalError");
  check(IOError("disk"), 500, "InternalError");
  check(NotSupportedError("nope"), 501, "NotImplemented");
  check(UnauthenticatedError("sig").WithForeignCode("SignatureDoesNotMatch"), 403, "SignatureDoesNotMatch");
  check(UnauthenticatedError("expired").WithForeignCode("AccessDenied"), 403, "AccessDenied");
  check(InvalidArgumentError("missing").WithForeignCode("InvalidRequest"), 400, "InvalidRequest");
  // Context added on the way up keeps the code the gateway answers with.
  check(NotFoundError("gone").WithForeignCode("NoSuchUpload").WithContext("complete"), 404, "NoSuchUpload");
}

// The S3 code is read from its own field only: free text in the cause that
// happens to spell an S3 code does not change the answer.
TEST(S3Errors, CauseTextIsNotReadAsAnS3Code) {
  S3ErrorInfo i = S3ErrorForStatus(InvalidArgumentError("bad", "MalformedXML"));
  EXPECT_EQ(i.code, "InvalidArgument");
  EXPECT_EQ(i.http_status, 400);
  Status unknown = StatusFromS3Error(400, "", "m", "");
  EXPECT_TRUE(unknown.foreign_code().empty());
  EXPECT_EQ(unknown.cause(), "HTTP 400");
}

}  // namespace
}  // namespace strata::net

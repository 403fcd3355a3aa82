#include "net/s3_errors.h"

#include <optional>

namespace strata::net {
namespace {

struct S3CodeInfo {
  std::string_view s3_code;
  int http_status;
  Code code;
  std::optional<bool> retryable;  // unset: the Code's default
};

// AWS's documented HTTP status for each code we meet (S3 API "Error responses").
constexpr S3CodeInfo kCodes[] = {
    {"NoSuchKey", 404, Code::kNotFound, {}},
    {"NoSuchBucket", 404, Code::kNotFound, {}},
    {"NoSuchUpload", 404, Code::kNotFound, {}},
    {"NoSuchVersion", 404, Code::kNotFound, {}},
    {"NotFound", 404, Code::kNotFound, {}},
    {"AccessDenied", 403, Code::kPermissionDenied, {}},
    {"AllAccessDisabled", 403, Code::kPermissionDenied, {}},
    {"AccountProblem", 403, Code::kPermissionDenied, {}},
    {"InvalidObjectState", 403, Code::kPermissionDenied, {}},
    {"SignatureDoesNotMatch", 403, Code::kUnauthenticated, {}},
    {"InvalidAccessKeyId", 403, Code::kUnauthenticated, {}},
    {"RequestTimeTooSkewed", 403, Code::kUnauthenticated, {}},
    {"AuthorizationHeaderMalformed", 400, Code::kUnauthenticated, {}},
    {"AuthorizationQueryParametersError", 400, Code::kUnauthenticated, {}},
    {"InvalidToken", 400, Code::kUnauthenticated, {}},
    {"ExpiredToken", 400, Code::kUnauthenticated, {}},
    {"MissingSecurityHeader", 400, Code::kUnauthenticated, {}},
    {"PreconditionFailed", 412, Code::kPreconditionFailed, {}},
    {"ConditionalRequestConflict", 409, Code::kPreconditionFailed, true},
    {"NotModified", 304, Code::kNotModified, {}},
    {"InvalidRange", 416, Code::kOutOfRange, {}},
    {"InvalidPartNumber", 416, Code::kOutOfRange, {}},
    {"SlowDown", 503, Code::kThrottled, {}},
    {"ServiceUnavailable", 503, Code::kThrottled, {}},
    {"TooManyRequests", 429, Code::kThrottled, {}},
    {"RequestLimitExceeded", 503, Code::kThrottled, {}},
    {"InternalError", 500, Code::kUnavailable, true},
    {"RequestTimeout", 400, Code::kUnavailable, true},
    {"OperationAborted", 409, Code::kUnavailable, true},
    {"BadDigest", 400, Code::kCorruption, true},
    {"XAmzContentSHA256Mismatch", 400, Code::kCorruption, true},
    {"EntityTooSmall", 400, Code::kInvalidArgument, {}},
    {"EntityTooLarge", 400, Code::kInvalidArgument, {}},
    {"InvalidPart", 400, Code::kInvalidArgument, {}},
    {"InvalidPartOrder", 400, Code::kInvalidArgument, {}},
    {"InvalidArgument", 400, Code::kInvalidArgument, {}},
    {"InvalidRequest", 400, Code::kInvalidArgument, {}},
    {"MalformedXML", 400, Code::kInvalidArgument, {}},
    {"InvalidBucketName", 400, Code::kInvalidArgument, {}},
    {"KeyTooLongError", 400, Code::kInvalidArgument, {}},
    {"InvalidDigest", 400, Code::kInvalidArgument, {}},
    {"IncompleteBody", 400, Code::kInvalidArgument, {}},
    {"InvalidURI", 400, Code::kInvalidArgument, {}},
    {"MetadataTooLarge", 400, Code::kInvalidArgument, {}},
    {"MalformedACLError", 400, Code::kInvalidArgument, {}},
    {"UnexpectedContent", 400, Code::kInvalidArgument, {}},
    {"MaxMessageLengthExceeded", 400, Code::kInvalidArgument, {}},
    {"TooManyParts", 400, Code::kInvalidArgument, {}},
    {"MissingContentLength", 411, Code::kInvalidArgument, {}},
    {"PermanentRedirect", 301, Code::kInvalidArgument, {}},
    {"BucketAlreadyExists", 409, Code::kAlreadyExists, {}},
    {"BucketAlreadyOwnedByYou", 409, Code::kAlreadyExists, {}},
    {"BucketNotEmpty", 409, Code::kPreconditionFailed, {}},
    {"MethodNotAllowed", 405, Code::kNotSupported, {}},
    {"NotImplemented", 501, Code::kNotSupported, {}},
};

const S3CodeInfo* Lookup(std::string_view s3_code) {
  for (const auto& info : kCodes)
    if (info.s3_code == s3_code) return &info;
  return nullptr;
}

Code CodeForHttpStatus(int http) {
  switch (http) {
    case 304: return Code::kNotModified;
    case 401: return Code::kUnauthenticated;
    case 403: return Code::kPermissionDenied;
    case 404: return Code::kNotFound;
    case 405:
    case 501: return Code::kNotSupported;
    case 409:
    case 412: return Code::kPreconditionFailed;
    case 416: return Code::kOutOfRange;
    case 429:
    case 503: return Code::kThrottled;
    default: break;
  }
  if (http >= 500) return Code::kUnavailable;
  return Code::kInvalidArgument;  // other 4xx (and unexpected 3xx): the request as sent cannot succeed
}

}  // namespace

int HttpStatusForS3Code(std::string_view s3_code) {
  const S3CodeInfo* info = Lookup(s3_code);
  return info ? info->http_status : 0;
}

Status StatusFromS3Error(int http_status, std::string_view s3_code, std::string_view message,
                         std::string_view resource) {
  const S3CodeInfo* info = s3_code.empty() ? nullptr : Lookup(s3_code);
  Code code = info ? info->code : CodeForHttpStatus(http_status);
  std::optional<bool> retryable = info ? info->retryable : std::nullopt;
  if (!info && http_status >= 500) retryable = true;
  std::string text = "S3 ";
  text += s3_code.empty() ? std::string_view("error") : s3_code;
  text += " (HTTP " + std::to_string(http_status) + ")";
  if (!message.empty()) {
    text += ": ";
    text += message;
  }
  if (!resource.empty()) {
    text += " [";
    text += resource;
    text += "]";
  }
  return Status(code, std::move(text), "HTTP " + std::to_string(http_status), retryable)
      .WithForeignCode(std::string(s3_code));
}

S3ErrorInfo S3ErrorForStatus(const Status& status) {
  if (status.ok()) return {200, ""};
  if (const S3CodeInfo* info = Lookup(status.foreign_code())) return {info->http_status, std::string(info->s3_code)};
  switch (status.code()) {
    case Code::kNotFound: return {404, "NoSuchKey"};
    case Code::kInvalidArgument: return {400, "InvalidArgument"};
    case Code::kPreconditionFailed: return {412, "PreconditionFailed"};
    case Code::kNotModified: return {304, "NotModified"};
    case Code::kThrottled: return {503, "SlowDown"};
    case Code::kUnavailable:
    case Code::kDeadlineExceeded:
    case Code::kCancelled: return {503, "ServiceUnavailable"};
    case Code::kNotSupported: return {501, "NotImplemented"};
    case Code::kPermissionDenied: return {403, "AccessDenied"};
    case Code::kUnauthenticated: return {403, "AccessDenied"};
    case Code::kAlreadyExists: return {409, "BucketAlreadyExists"};
    case Code::kOutOfRange: return {416, "InvalidRange"};
    case Code::kOk: return {200, ""};
    case Code::kCorruption:
    case Code::kIOError:
    case Code::kNoSpace:
    case Code::kInternal: break;
  }
  return {500, "InternalError"};
}

}  // namespace strata::net

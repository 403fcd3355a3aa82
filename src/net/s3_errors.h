// The one place where S3 error codes and HTTP statuses map to Status, and
// back (for the gateway). The S3 code is kept as the Status foreign code, so
// a round trip preserves it. Pure functions, thread-safe.
#pragma once

#include <string>
#include <string_view>

#include "base/status.h"

namespace strata::net {

// NoSuchKey/NoSuchBucket/NoSuchUpload -> NotFound, AccessDenied ->
// PermissionDenied, SignatureDoesNotMatch/InvalidAccessKeyId/... ->
// Unauthenticated, PreconditionFailed -> PreconditionFailed, InvalidRange ->
// OutOfRange, SlowDown/503 -> Throttled, InternalError/500 -> Unavailable
// (retryable), EntityTooSmall/InvalidPart/MalformedXML/... -> InvalidArgument,
// 304 -> NotModified, BucketAlreadyExists... -> AlreadyExists; unknown codes
// fall back on the HTTP status. foreign_code = s3_code (may be empty),
// cause = "HTTP <status>".
Status StatusFromS3Error(int http_status, std::string_view s3_code, std::string_view message,
                         std::string_view resource);

struct S3ErrorInfo {
  int http_status = 500;
  std::string code;  // "NoSuchKey", ... ; empty for OK
};

// For the gateway: uses status.foreign_code() when it names a known S3 code,
// otherwise maps by Status code (NotFound -> 404 NoSuchKey, ...).
// OK -> {200, ""}.
S3ErrorInfo S3ErrorForStatus(const Status& status);

// The HTTP status AWS uses for a known S3 error code, or 0 if unknown.
int HttpStatusForS3Code(std::string_view s3_code);

}  // namespace strata::net

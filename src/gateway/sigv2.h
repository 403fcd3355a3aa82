// AWS Signature Version 2 verification, for the clients that still use it:
// boto3/botocore presign S3 URLs with it by default in us-east-1
// (?AWSAccessKeyId=..&Expires=..&Signature=..), s3cmd with signature_v2 and
// s3fs's fallback sign headers with it ("Authorization: AWS AK:sig").
// Pure functions, thread-safe. Errors match VerifyRequest's (Unauthenticated
// with the S3 code as foreign code, AccessDenied for expired URLs).
#pragma once

#include <string>
#include <string_view>

#include "base/clock.h"
#include "base/status.h"
#include "net/sigv4.h"

namespace strata::gateway {

// "/bucket/key" (raw, as on the wire) plus the signed subresources of the
// raw query, sorted: "/b/k?partNumber=1&uploadId=x".
std::string SigV2CanonicalResource(std::string_view raw_path, std::string_view raw_query);
// VERB \n Content-MD5 \n Content-Type \n date \n x-amz-* headers + resource.
std::string SigV2StringToSign(const net::HttpRequestParts& req, std::string_view date);
// base64(HMAC-SHA1(secret, string_to_sign)).
std::string SigV2Signature(std::string_view secret, std::string_view string_to_sign);

// Whether the request carries a SigV2 header or query signature.
bool IsSigV2Request(const net::HttpRequestParts& req);
// Verifies either form. payload_sha256 of the result is UNSIGNED-PAYLOAD
// (SigV2 signs no body hash; Content-MD5 still applies).
Result<net::VerifiedRequest> VerifySigV2(const net::HttpRequestParts& req, const net::SecretLookup& secret_lookup,
                                         WallTime now, Duration max_skew = std::chrono::minutes(15));

}  // namespace strata::gateway

// AWS Signature Version 4: one canonicalisation used both to sign (S3
// client) and to verify (gateway), header and presigned-URL forms, and the
// aws-chunked streaming upload decoder. Pure functions, thread-safe;
// AwsChunkedDecoder is single-threaded (one per request body).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/clock.h"
#include "base/status.h"
#include "net/http.h"

namespace strata::net {

// A request as signed: what goes on the wire.
struct HttpRequestParts {
  std::string method;   // "GET", "PUT", ...
  std::string path;     // raw, as on the wire, percent-encoded ("/bucket/my%20key")
  std::string query;    // raw query string without '?' ("list-type=2&prefix=a%2F")
  HttpHeaders headers;  // names in any case; duplicates allowed
};

struct AwsCredentials {
  std::string access_key_id;
  std::string secret_access_key;
  std::string session_token;  // empty unless temporary credentials
};

inline constexpr std::string_view kSigV4Algorithm = "AWS4-HMAC-SHA256";
inline constexpr std::string_view kUnsignedPayload = "UNSIGNED-PAYLOAD";
inline constexpr std::string_view kStreamingPayload = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD";
inline constexpr std::string_view kStreamingPayloadTrailer = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER";
inline constexpr std::string_view kStreamingUnsignedTrailer = "STREAMING-UNSIGNED-PAYLOAD-TRAILER";
// hex(sha256("")).
inline constexpr std::string_view kEmptyPayloadSha256 =
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

struct SigV4Options {
  // Remove "." / ".." segments and collapse "//" in the canonical URI. S3
  // does not (its keys may contain them); the generic AWS test suite does.
  bool normalize_path = false;
  // Sign: add the x-amz-content-sha256 header (S3 requires it; the generic
  // suite has none). Verify: when false and the header is absent, the payload
  // hash is `verify_payload_sha256` below.
  bool content_sha256_header = true;
  std::string verify_payload_sha256;  // only for verifying without the header
};

// ---- Building blocks (the chunk decoder signs with them too) ----

// Canonical URI: the path percent-decoded, optionally normalised, and
// re-encoded with RFC 3986 unreserved characters only ('/' kept).
std::string CanonicalUri(std::string_view raw_path, bool normalize_path);
// Canonical query: pairs decoded then re-encoded, sorted by key then value;
// "X-Amz-Signature" is dropped when exclude_signature.
std::string CanonicalQuery(std::string_view raw_query, bool exclude_signature = false);
// Lowercase, sorted, unique names of the headers SignRequest signs: all
// present except authorization, user-agent, expect, x-amzn-trace-id.
std::vector<std::string> SignableHeaderNames(const HttpHeaders& headers);
// "name:value\n" per signed name (values trimmed, inner space runs collapsed,
// duplicates joined with ','), then "\n" + signed names joined with ';'.
// A name in `signed_names` that is absent from `headers` yields "name:".
std::string CanonicalRequest(const HttpRequestParts& req, const std::vector<std::string>& signed_names,
                             std::string_view payload_sha256, const SigV4Options& options = {});
// "20130524/us-east-1/s3/aws4_request".
std::string CredentialScope(std::string_view date8, std::string_view region, std::string_view service);
// "AWS4-HMAC-SHA256\n<amz_date>\n<scope>\n<hex sha256(canonical_request)>".
std::string StringToSign(std::string_view amz_date, std::string_view scope, std::string_view canonical_request);
// kSigning = HMAC chain over "AWS4"+secret, date8, region, service, "aws4_request" (32 raw bytes).
std::string DeriveSigningKey(std::string_view secret, std::string_view date8, std::string_view region,
                             std::string_view service);
// hex(HMAC(signing_key, string_to_sign)).
std::string SignatureHex(std::string_view signing_key, std::string_view string_to_sign);

// ---- Signing (client) ----

// Signs `req` in place: sets x-amz-date (from `now`), x-amz-content-sha256
// (= payload_sha256_hex, which may be kUnsignedPayload or kStreamingPayload;
// skipped when !options.content_sha256_header), x-amz-security-token (when
// the credentials have one), then Authorization over every signable header.
// The caller must have set Host: InvalidArgument otherwise.
Status SignRequest(HttpRequestParts& req, const AwsCredentials& creds, std::string_view region,
                   std::string_view service, WallTime now, std::string_view payload_sha256_hex,
                   const SigV4Options& options = {});

// Presigned URL: returns the full query string (without '?') to put after
// req.path: req.query's parameters plus X-Amz-Algorithm, X-Amz-Credential,
// X-Amz-Date, X-Amz-Expires, X-Amz-SignedHeaders (all signable headers of req,
// Host required), [X-Amz-Security-Token], and X-Amz-Signature last. Payload
// is UNSIGNED-PAYLOAD. expires: 1 s .. 7 days, else InvalidArgument.
Result<std::string> PresignUrl(const HttpRequestParts& req, const AwsCredentials& creds, std::string_view region,
                               std::string_view service, WallTime now, Duration expires,
                               const SigV4Options& options = {});

// ---- Verification (gateway) ----

struct VerifiedRequest {
  std::string access_key_id;
  bool presigned = false;
  // What the client claims for the body: a hex SHA-256, kUnsignedPayload or
  // one of the streaming values. For a hex hash the caller must still check
  // the body against it (CheckPayloadSha256).
  std::string payload_sha256;
  std::string amz_date;  // "20130524T000000Z"
  std::string region;
  std::string service;
  std::string scope;           // "20130524/us-east-1/s3/aws4_request"
  std::string signing_key;     // raw 32 bytes, to verify streaming chunks
  std::string seed_signature;  // hex signature of the request itself
  bool streaming() const;      // payload_sha256 names an aws-chunked form
};

// Returns the secret for an access key, or nullopt if unknown.
using SecretLookup = std::function<std::optional<std::string>(std::string_view access_key_id)>;

// Verifies the Authorization header form or, without that header, the
// presigned query form (X-Amz-Signature). All failures are Unauthenticated
// (or InvalidArgument for a missing x-amz-content-sha256, foreign code
// "InvalidRequest") with the S3 error code as foreign code:
//   AccessDenied (unsigned request, missing date, expired / not-yet-valid presign),
//   InvalidAccessKeyId, AuthorizationHeaderMalformed (bad header syntax or scope),
//   AuthorizationQueryParametersError (bad presign parameters),
//   RequestTimeTooSkewed (|now - x-amz-date| > max_skew), SignatureDoesNotMatch.
Result<VerifiedRequest> VerifyRequest(const HttpRequestParts& req, const SecretLookup& secret_lookup, WallTime now,
                                      Duration max_skew = std::chrono::minutes(15), const SigV4Options& options = {});

// For a VerifiedRequest whose payload_sha256 is a hex hash: compares it with
// the body's actual hash. InvalidArgument, foreign code "XAmzContentSHA256Mismatch".
Status CheckPayloadSha256(const VerifiedRequest& verified, std::string_view actual_sha256_hex);

// ---- aws-chunked streaming bodies ----

// String to sign of one chunk: "AWS4-HMAC-SHA256-PAYLOAD\n" date "\n" scope
// "\n" previous_signature "\n" hex(sha256("")) "\n" hex(sha256(chunk)).
std::string ChunkStringToSign(std::string_view amz_date, std::string_view scope, std::string_view previous_signature,
                              std::string_view chunk_data);
// Frames one chunk for a signed streaming upload (client side):
// "hex(size);chunk-signature=<sig>\r\n<data>\r\n". Updates *previous_signature.
std::string EncodeSignedChunk(std::string_view signing_key, std::string_view amz_date, std::string_view scope,
                              std::string* previous_signature, std::string_view chunk_data);

// Incrementally decodes an aws-chunked body ("hex-size;chunk-signature=..\r\n
// data\r\n" ... final zero-size chunk [trailers] "\r\n"), verifying each chunk
// signature chained from the seed (signed modes), and yields the payload.
// Sizes are bounded by max_chunk_size before anything is buffered, so lying
// sizes never allocate. Errors: Unauthenticated foreign code SignatureDoesNotMatch
// (bad chunk signature), InvalidArgument foreign code IncompleteBody / InvalidRequest
// (framing, truncation, decoded length mismatch).
struct AwsChunkedOptions {
  bool signed_chunks = true;    // false for STREAMING-UNSIGNED-PAYLOAD-TRAILER
  bool signed_trailer = false;  // STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER: x-amz-trailer-signature
  uint64_t max_chunk_size = 64ull << 20;
  std::optional<uint64_t> decoded_content_length;  // x-amz-decoded-content-length
};

class AwsChunkedDecoder {
 public:
  using Options = AwsChunkedOptions;
  // Signed mode: keys from `VerifiedRequest`. Unsigned mode ignores them.
  AwsChunkedDecoder(std::string signing_key, std::string amz_date, std::string scope, std::string seed_signature,
                    Options options);
  // Builds a decoder for a verified streaming request (mode from its payload_sha256).
  static AwsChunkedDecoder ForRequest(const VerifiedRequest& verified, Options options = {});

  // Feeds the next wire bytes (any split); appends decoded payload to *out.
  // After an error the decoder stays failed.
  Status Feed(std::string_view wire, std::string* out);
  // Call at end of input: error unless the final chunk (and trailers) arrived.
  Status Finish() const;
  bool done() const { return state_ == State::kDone; }
  uint64_t decoded_bytes() const { return decoded_; }
  // Trailing headers after the final chunk (e.g. x-amz-checksum-crc32), lowercased names.
  const HttpHeaders& trailers() const { return trailers_; }

 private:
  enum class State { kHeader, kData, kDataCrLf, kTrailer, kDone, kFailed };
  Status ParseHeaderLine(std::string_view line);
  Status ParseTrailerLine(std::string_view line);
  Status EndChunk();
  Status Fail(Status s);
  bool Signed() const { return options_.signed_chunks; }

  std::string signing_key_, amz_date_, scope_, previous_signature_;
  Options options_;
  State state_ = State::kHeader;
  std::string line_;         // partial header/trailer line (bounded)
  std::string chunk_;        // current chunk's data (bounded by its declared size)
  uint64_t chunk_size_ = 0;  // declared size of the current chunk
  std::string chunk_signature_;
  uint64_t decoded_ = 0;
  HttpHeaders trailers_;
  std::string trailer_text_;  // canonical "name:value\n" lines, for the trailer signature
  std::string trailer_signature_;
  Status error_;
};

}  // namespace strata::net

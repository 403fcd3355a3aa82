// S3Handler: the S3 REST API over a BucketSet, on the gateway's own
// request/response structs (no sockets; the server calls it).
//
// Addressing is path-style only: "/" (ListBuckets), "/bucket" (bucket
// operations), "/bucket/key" (object operations). Authentication is SigV4
// (header form, presigned URLs, aws-chunked streaming bodies signed or not,
// UNSIGNED-PAYLOAD, hex payload hashes checked against the body); anonymous
// requests only when allow_anonymous. Every failure becomes an S3 XML error
// through S3ErrorForStatus (one place: ErrorResponse in s3_handler.cc).
// Thread-safe: Handle may run on many threads at once.
#pragma once

#include <atomic>
#include <map>
#include <optional>
#include <string>

#include "base/clock.h"
#include "gateway/buckets.h"
#include "gateway/types.h"

namespace strata {

struct S3HandlerOptions {
  std::string region = "us-east-1";
  std::map<std::string, std::string> keys;  // access key -> secret
  bool allow_anonymous = false;
  Duration max_skew = std::chrono::minutes(15);
  uint64_t max_copy_bytes = 5ull << 30;  // CopyObject across buckets is read+write
  uint64_t stream_chunk = 4ull << 20;    // GET bodies are produced in pieces of this size (block aligned)
  Clock* clock = nullptr;                // default RealClock(): request dates, Date header
};

class S3Handler {
 public:
  S3Handler(BucketSet& buckets, S3HandlerOptions options);

  // Runs on the headers alone, before a body is read: authenticates, so a
  // bad signature is refused without reading (or 100-continuing) the body.
  // nullopt means go on.
  std::optional<GatewayResponse> PreCheck(const GatewayRequest& headers_only);

  // Serves one request. Never fails: errors are S3 error responses.
  GatewayResponse Handle(const GatewayRequest& request);

  // A bare error response (for the server's own refusals: oversized headers, ...).
  GatewayResponse Error(int http_status, std::string_view s3_code, std::string_view message, std::string_view resource);

  const S3HandlerOptions& options() const { return options_; }
  BucketSet& buckets() { return buckets_; }
  Clock& clock() { return clock_; }
  std::string NextRequestId();

 private:
  BucketSet& buckets_;
  S3HandlerOptions options_;
  Clock& clock_;
  std::atomic<uint64_t> request_counter_{0};
};

}  // namespace strata

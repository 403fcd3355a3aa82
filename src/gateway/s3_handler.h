// S3Handler: the S3 REST API over a BucketSet, on the gateway's own
// request/response structs (no sockets; the server calls it).
//
// Addressing is path-style only: "/" (ListBuckets), "/bucket" (bucket
// operations), "/bucket/key" (object operations). Authentication is SigV4
// (header form, presigned URLs, aws-chunked streaming bodies signed or not,
// UNSIGNED-PAYLOAD, hex payload hashes checked against the body), then each
// operation is authorized by the access policy (access.h): an unsigned
// request is anonymous and gets only what public-read gives; one with an
// Origin header (a browser's) is refused. Every failure becomes an S3 XML error
// through S3ErrorForStatus (one place: ErrorResponse in s3_handler.cc).
// Thread-safe: Handle may run on many threads at once.
#pragma once

#include <atomic>
#include <map>
#include <optional>
#include <string>

#include "base/clock.h"
#include "gateway/access.h"
#include "gateway/buckets.h"
#include "gateway/types.h"

namespace strata::gateway {

struct S3HandlerOptions {
  std::string region = "us-east-1";
  std::map<std::string, std::string> keys;  // access key -> secret
  AccessPolicy access;  // keys' scopes, bucket settings (keys here without an entry there are unrestricted)
  Duration max_skew = std::chrono::minutes(15);
  uint64_t max_copy_bytes = 5ull << 30;  // CopyObject across buckets is read+write
  uint64_t stream_chunk = 4ull << 20;    // GET bodies are produced in pieces of this size (block aligned)
  Clock* clock = nullptr;                // default RealClock(): request dates, Date header
};

class S3Handler {
 public:
  S3Handler(BucketSet& buckets, S3HandlerOptions options);

  // Runs on the headers alone, before a body is read: authenticates and
  // authorizes, so a bad signature, or a write the requester may not make
  // (anonymous, another key's bucket, a read-only key), is refused without
  // reading (or 100-continuing) the body. nullopt means go on.
  // On success records the outcome in headers_only.auth, which Handle then
  // trusts: authentication is decided once, when the headers arrive.
  std::optional<GatewayResponse> PreCheck(GatewayRequest& headers_only);
  std::optional<GatewayResponse> PreCheck(GatewayRequest&& headers_only) { return PreCheck(headers_only); }

  // Serves one request. Never fails and never throws: errors are S3 error
  // responses, and an exception (std::bad_alloc included) is a logged 500.
  GatewayResponse Handle(const GatewayRequest& request);

  // A bare error response (for the server's own refusals: oversized headers, ...).
  GatewayResponse Error(int http_status, std::string_view s3_code, std::string_view message, std::string_view resource);

  const S3HandlerOptions& options() const { return options_; }
  BucketSet& buckets() { return buckets_; }
  Clock& clock() { return clock_; }
  std::string NextRequestId();
  // Exceptions the request boundary turned into 500s (each one is a bug).
  uint64_t exceptions_caught() const { return exceptions_caught_.load(); }

 private:
  GatewayResponse HandleUnguarded(const GatewayRequest& request);
  // PreCheck's authorization: the error response when the requester may not do what the headers ask.
  std::optional<GatewayResponse> Refusal(const GatewayRequest& request);
  // Inside a catch block: logs the exception and answers 500 InternalError.
  GatewayResponse Internal(const GatewayRequest& request, std::string_view where);

  BucketSet& buckets_;
  S3HandlerOptions options_;
  Clock& clock_;
  std::atomic<uint64_t> request_counter_{0};
  std::atomic<uint64_t> exceptions_caught_{0};
};

}  // namespace strata::gateway

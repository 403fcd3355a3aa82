// S3Requester: one signed S3 REST call with retries. Builds the URL for the
// configured addressing, signs with SigV4 (real payload SHA-256), sends over
// the shared HttpClient, maps HTTP/S3 errors to Status via net/s3_errors.h,
// and retries retryable failures with exponential backoff and full jitter
// (sleeping on the config's Clock). Internal to the S3 store. Thread-safe.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/buffer.h"
#include "base/clock.h"
#include "base/metrics.h"
#include "base/random.h"
#include "base/status.h"
#include "net/http_client.h"
#include "object/s3_config.h"

namespace strata::object {

struct S3Call {
  std::string op;                  // metric label and error context: "GetObject", "PutObject", ...
  std::string method;              // GET HEAD PUT POST DELETE
  std::optional<std::string> key;  // full key (store prefix included); nullopt: the bucket
  std::vector<std::pair<std::string, std::string>> query;  // decoded; encoded here
  net::HttpHeaders headers;
  Buffer body;
  // A streamed body instead of `body`: read_body(offset, dst, n) supplies
  // bytes [offset, offset + n) of body_size (again from 0 on a retry), and
  // body_sha256 is its hex SHA-256 (empty: sent as UNSIGNED-PAYLOAD).
  std::function<Status(uint64_t offset, void* dst, size_t n)> read_body;
  uint64_t body_size = 0;
  std::string body_sha256;
  std::optional<net::BodySink> sink;
  // Called on every 2xx response; a non-OK result is treated like an error
  // response (retried when retryable). Lets callers reject wrong ranges or
  // 200-with-error bodies before they count as success.
  std::function<Status(const net::HttpResponse&)> validate;
  // Passed to HttpRequest::on_headers (reject before the body arrives).
  std::function<Status(int status, const net::HttpHeaders& headers)> on_headers;
};

class S3Requester {
 public:
  // An empty config.bucket addresses the endpoint itself (ListBuckets).
  static Result<std::unique_ptr<S3Requester>> Create(const S3Config& config);

  // 2xx (and validated) response, or the error. After retries are exhausted
  // the error message ends with "after N attempts".
  Result<net::HttpResponse> Execute(const S3Call& call);

  // The full key for a store-relative key.
  std::string FullKey(std::string_view key) const { return config_.prefix + std::string(key); }
  // "s3://bucket/full-key", for messages.
  std::string Resource(std::string_view full_key) const;
  const S3Config& config() const { return config_; }
  Clock& clock() { return *clock_; }

  // Full-jitter backoff before retry `attempt` (0-based): uniform in
  // [0, min(cap, base * 2^attempt)].
  Duration Backoff(int attempt);

 private:
  S3Requester(const S3Config& config, S3Endpoint endpoint);
  // Maps an error response to a Status.
  static Status ErrorFromResponse(const net::HttpResponse& resp, std::string_view what, std::string_view resource);
  net::HttpRequest Sign(const S3Call& call, const std::string& payload_sha256) const;
  void Count(const std::string& op, const std::string& status);

  S3Config config_;
  S3Endpoint endpoint_;
  Clock* clock_;
  Random random_;
  net::HttpClient http_;
};

// ETag without surrounding quotes (S3 quotes it; some servers don't).
std::string UnquoteEtag(std::string_view etag);

}  // namespace strata::object

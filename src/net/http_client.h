// HttpClient: a libcurl HTTP/1.1 client with pooled keep-alive connections.
// One instance is shared by everything talking to one service; it is
// thread-safe and Send() may be called from any number of threads at once.
// Errors are translated from curl once, here: connection failures and
// truncated bodies are Unavailable (retryable), timeouts DeadlineExceeded.
// HTTP error statuses are NOT errors at this layer: the caller maps them.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/buffer.h"
#include "base/status.h"
#include "net/http.h"  // HttpHeaders: name/value pairs, case-insensitive lookup helpers

namespace strata::net {

// Supplies request body bytes: fill up to `size` bytes at `dst`, return the
// count (0 = end). Called on the client's I/O thread; must not block long.
// May be called again from the start if the request is rewound (see
// HttpRequest::rewind).
using UploadFn = std::function<size_t(uint8_t* dst, size_t size)>;

// Receives streamed body bytes: `size` bytes that start `offset` bytes into
// the body, in arrival order. A non-OK Status aborts the request and becomes
// its result.
using BodyWriteFn = std::function<Status(uint64_t offset, const uint8_t* data, size_t size)>;

// Where a successful (2xx) response body goes instead of HttpResponse::body:
// a caller-owned region of `capacity` bytes that must outlive the request, or,
// when `write` is set, straight to write() as the bytes arrive (no copy in
// between; called on the I/O thread, so keep it short: a memcpy or a pwrite to
// the page cache, never a network call). If the request is retried the body
// is delivered again from offset 0. A body larger than capacity fails the
// request (Unavailable: the server sent more than asked for).
struct BodySink {
  uint8_t* data = nullptr;
  size_t capacity = 0;
  BodyWriteFn write;  // set: stream here instead of `data`
};

struct HttpRequest {
  std::string method = "GET";  // GET HEAD PUT POST DELETE ...
  std::string url;             // absolute, already percent-encoded
  HttpHeaders headers;
  Buffer body;                          // sent as-is unless `upload` is set
  UploadFn upload;                      // streaming body (then set upload_size)
  std::optional<uint64_t> upload_size;  // Content-Length for `upload`
  std::function<void()> rewind;         // resets `upload` to the start (curl may resend)
  std::optional<BodySink> sink;         // stream a 2xx body here
  // Called once the final response's headers are in, before any body byte
  // (on the I/O thread). A non-OK Status aborts the transfer and becomes the
  // request's result: lets callers refuse a response whose headers are
  // already wrong instead of waiting for a body that may never come.
  std::function<Status(int status, const HttpHeaders& headers)> on_headers;
  // Per-request overrides of the client's defaults (zero: use the default).
  std::chrono::milliseconds timeout{0};
};

struct HttpResponse {
  int status = 0;
  HttpHeaders headers;      // of the final response (after any 100-continue)
  Buffer body;              // empty when written to the sink
  uint64_t body_bytes = 0;  // bytes received (to the sink or into body)
  bool sunk = false;        // body went to the request's sink

  // First value of header `name` (case-insensitive), or nullopt.
  std::optional<std::string> Header(std::string_view name) const;
};

struct HttpClientOptions {
  std::chrono::milliseconds connect_timeout{5000};
  // Stall detection: fail when fewer than low_speed_bytes per second arrive
  // for low_speed_time (curl measures in whole seconds, minimum 1 s).
  std::chrono::seconds low_speed_time{30};
  uint32_t low_speed_bytes = 1;
  std::chrono::milliseconds total_timeout{0};  // 0 = none (large objects)
  int max_connections = 64;                    // in flight at once; more wait
  bool verify_tls = true;
  std::string ca_bundle;  // empty: curl's default
  // A client certificate (PEM) and its private key, for servers that ask for
  // one (etcd --client-cert-auth). Empty: none.
  std::string client_cert, client_key;
};

using HttpCallback = std::function<void(Result<HttpResponse>)>;

class HttpClient {
 public:
  explicit HttpClient(HttpClientOptions options = {});
  ~HttpClient();  // fails requests still in flight with Cancelled
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  // Sends and waits. Any HTTP status is a successful Result; errors are
  // transport failures only.
  Result<HttpResponse> Send(HttpRequest request);
  // Sends without waiting; `done` runs exactly once, on the I/O thread
  // (keep it short; never call Send() from it).
  void SendAsync(HttpRequest request, HttpCallback done);

  const HttpClientOptions& options() const { return options_; }

 private:
  struct Impl;
  HttpClientOptions options_;
  std::unique_ptr<Impl> impl_;
};

// Translates a curl error code (CURLcode as int, to keep curl.h out of
// headers) into a Status naming `what` (e.g. "GET http://.../key").
Status CurlCodeToStatus(int curl_code, std::string_view what, std::string_view detail = {});

}  // namespace strata::net

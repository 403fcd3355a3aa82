// The gateway's own small HTTP request/response structs: the S3 logic works
// on these (no Boost.Beast), so it is unit-testable without sockets. The
// server (server.cc) converts to and from the wire. Plain values; a
// GatewayResponse's stream is read by one thread at a time.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "base/buffer.h"
#include "base/status.h"
#include "net/http.h"
#include "net/sigv4.h"

namespace strata::gateway {

class BodyFile;

// How a request authenticated (S3Handler::PreCheck decides it once, when the
// headers arrive, so a long upload is never refused after its body came).
struct RequestAuth {
  net::VerifiedRequest verified;
  bool anonymous = false;
};

struct GatewayRequest {
  std::string method;  // "GET", "PUT", ...
  std::string target;  // raw request-target as on the wire: "/bucket/my%20key?uploads"
  net::HttpHeaders headers;
  Buffer body;         // the whole body (HTTP-level chunking already removed)
  std::string remote;  // "ip:port" of the client, for logs
  // Set by S3Handler::PreCheck when the headers authenticated; Handle then
  // uses it instead of authenticating again (the clock has moved on since).
  std::shared_ptr<const RequestAuth> auth = nullptr;
  // Last, so positional initialisers stay valid. Set instead of `body` for a large single PUT the server spilled to a
  // temp file (GatewayLimits::spill_bytes); PutObject and UploadPart read it.
  std::shared_ptr<const BodyFile> body_file = nullptr;
};

// A response body produced piecewise (large GETs): Next() returns the next
// bytes, an empty Buffer at the end, or an error (the server then closes the
// connection, since the status line is already sent). May block (cache fills).
class BodySource {
 public:
  virtual ~BodySource() = default;
  virtual Result<Buffer> Next() = 0;
};

struct GatewayResponse {
  int status = 200;
  net::HttpHeaders headers;  // Content-Length is added by the server from content_length
  std::string body;          // small bodies (XML); ignored when `stream` is set
  std::unique_ptr<BodySource> stream;
  uint64_t content_length = 0;  // bytes of body (for HEAD: what GET would send)
  bool send_body = true;        // false for HEAD and 304
  bool close = false;           // close the connection after this response

  // For the access log and metrics.
  std::string op;  // "GetObject", "PutObject", ...
  std::string bucket, key;
  std::string error_code;  // S3 error code, empty on success
  std::string access_key;
  uint64_t bytes_in = 0;  // request body bytes consumed
};

// The target split into its parts. path and query stay raw (encoded).
struct ParsedTarget {
  std::string raw_path;   // "/bucket/my%20key"
  std::string raw_query;  // "uploads&prefix=a%2F"
  std::string bucket;     // decoded; empty for "/"
  std::string key;        // decoded; empty for bucket-level requests
};
// InvalidArgument (foreign code "InvalidURI") for a target that is not an
// origin-form path, has a malformed escape, or names a bucket or key that is
// not UTF-8 (S3 keys are Unicode text).
Result<ParsedTarget> ParseTarget(std::string_view target);

}  // namespace strata::gateway

#include "object/s3_request.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>

#include "base/hash.h"
#include "base/log.h"
#include "net/s3_errors.h"
#include "net/s3_xml.h"
#include "net/sigv4.h"
#include "net/uri.h"

namespace strata::object {

std::string UnquoteEtag(std::string_view etag) {
  if (etag.size() >= 2 && etag.front() == '"' && etag.back() == '"') etag = etag.substr(1, etag.size() - 2);
  // Some servers send &quot; entities inside XML ETags that the decoder left alone.
  std::string out(etag);
  if (out.rfind("&quot;", 0) == 0 && out.size() >= 12 && out.substr(out.size() - 6) == "&quot;") {
    out = out.substr(6, out.size() - 12);
  }
  return out;
}

Result<std::unique_ptr<S3Requester>> S3Requester::Create(const S3Config& config) {
  if (config.part_size == 0) return InvalidArgumentError("S3 part_size must be positive");
  if (config.concurrency < 1) return InvalidArgumentError("S3 concurrency must be at least 1");
  if (config.max_retries < 0) return InvalidArgumentError("S3 max_retries must not be negative");
  STRATA_ASSIGN_OR_RETURN(S3Endpoint endpoint, ResolveS3Endpoint(config));
  return std::unique_ptr<S3Requester>(new S3Requester(config, std::move(endpoint)));
}

namespace {
net::HttpClientOptions ClientOptions(const S3Config& c) {
  net::HttpClientOptions o;
  o.connect_timeout = c.connect_timeout;
  o.low_speed_time = c.stall_timeout;
  o.total_timeout = c.request_timeout;
  o.max_connections = c.max_connections;
  o.verify_tls = c.verify_tls;
  return o;
}
}  // namespace

S3Requester::S3Requester(const S3Config& config, S3Endpoint endpoint)
    : config_(config),
      endpoint_(std::move(endpoint)),
      clock_(config.clock ? config.clock : &RealClock()),
      random_(config.seed ? config.seed : std::random_device{}()),
      http_(ClientOptions(config)) {}

std::string S3Requester::Resource(std::string_view full_key) const {
  return "s3://" + config_.bucket + "/" + std::string(full_key);
}

net::HttpRequest S3Requester::Sign(const S3Call& call, const std::string& payload_sha256) const {
  net::HttpRequestParts parts;
  parts.method = call.method;
  std::string path = endpoint_.bucket_path;
  path += "/";
  if (call.key) path += net::UriEncode(*call.key, /*encode_slash=*/false);
  parts.path = path;
  std::string query;
  for (const auto& [k, v] : call.query) {
    if (!query.empty()) query += '&';
    query += net::UriEncode(k);
    // Sub-resources like "uploads" and "delete" go on the wire without "=".
    if (!v.empty() || (k != "uploads" && k != "delete")) query += "=" + net::UriEncode(v);
  }
  parts.query = query;
  parts.headers = call.headers;
  net::SetHeader(parts.headers, "Host", endpoint_.host_header);
  if (!config_.credentials.access_key_id.empty()) {
    Status s = net::SignRequest(parts, config_.credentials, config_.region, "s3", clock_->WallNow(), payload_sha256);
    if (!s.ok()) STRATA_LOG_ERROR("SigV4 signing failed: {}", s.ToString());  // only without Host: a bug
  }
  net::HttpRequest req;
  req.method = call.method;
  req.url = endpoint_.base_url + path + (query.empty() ? "" : "?" + query);
  req.headers = std::move(parts.headers);
  req.body = call.body;
  if (call.read_body) {
    // The client reads on its I/O thread, from the start again when it rewinds.
    auto offset = std::make_shared<uint64_t>(0);
    req.upload = [offset, read = call.read_body, size = call.body_size](uint8_t* dst, size_t n) -> size_t {
      n = static_cast<size_t>(std::min<uint64_t>(n, size - *offset));
      if (n == 0 || !read(*offset, dst, n).ok()) return 0;  // short: the request fails and is retried
      *offset += n;
      return n;
    };
    req.upload_size = call.body_size;
    req.rewind = [offset] { *offset = 0; };
  }
  req.sink = call.sink;
  req.on_headers = call.on_headers;
  return req;
}

Status S3Requester::ErrorFromResponse(const net::HttpResponse& resp, std::string_view what, std::string_view resource) {
  std::string code, message;
  if (!resp.body.empty()) {
    auto err = net::DecodeS3Error(resp.body.view());
    if (err.ok()) {
      code = err->code;
      message = err->message;
    } else {
      message = std::string(resp.body.view().substr(0, 200));  // a proxy's HTML page, say
    }
  } else if (resp.status == 404) {
    // HEAD answers carry no body.
    code = "NoSuchKey";
  }
  if (code.empty() && resp.status == 503) code = "SlowDown";
  Status s = net::StatusFromS3Error(resp.status, code, message, resource);
  return s.WithContext(what);
}

Duration S3Requester::Backoff(int attempt) {
  double cap = std::chrono::duration<double>(config_.backoff_cap).count();
  double base = std::chrono::duration<double>(config_.backoff_base).count();
  double ceiling = std::min(cap, base * std::pow(2.0, std::min(attempt, 30)));
  double seconds = random_.UniformDouble() * ceiling;
  return std::chrono::duration_cast<Duration>(std::chrono::duration<double>(seconds));
}

void S3Requester::Count(const std::string& op, const std::string& status) {
  MetricsRegistry::Global()
      .GetCounter("strata_s3_requests_total", "S3 requests by operation and outcome", {{"op", op}, {"status", status}})
      .Inc();
}

Result<net::HttpResponse> S3Requester::Execute(const S3Call& call) {
  auto& registry = MetricsRegistry::Global();
  const std::string payload_sha256 =
      call.read_body      ? (call.body_sha256.empty() ? std::string("UNSIGNED-PAYLOAD") : call.body_sha256)
      : call.body.empty() ? std::string(net::kEmptyPayloadSha256)
                          : ToHex(Sha256(call.body.data(), call.body.size()));
  const std::string what = call.op + " " + (call.key ? Resource(*call.key) : "s3://" + config_.bucket);
  const std::string resource = call.key ? Resource(*call.key) : "s3://" + config_.bucket;
  Status last;
  int attempts = 0;
  for (int attempt = 0; attempt <= config_.max_retries; ++attempt) {
    if (attempt > 0) {
      registry.GetCounter("strata_s3_retries_total", "S3 request retries", {{"op", call.op}}).Inc();
      Duration wait = Backoff(attempt - 1);
      STRATA_LOG_DEBUG("{}: retry {} in {:.3f}s after {}", what, attempt, Seconds(wait), last.ToString());
      clock_->SleepFor(wait);
    }
    ++attempts;
    auto start = clock_->Now();
    Result<net::HttpResponse> resp = http_.Send(Sign(call, payload_sha256));
    registry.GetHistogram("strata_s3_request_seconds", "S3 request latency", {{"op", call.op}})
        .Observe(Seconds(clock_->Now() - start));
    if (uint64_t out = call.read_body ? call.body_size : call.body.size(); out > 0) {
      registry.GetCounter("strata_s3_bytes_total", "S3 payload bytes", {{"direction", "out"}}).Inc(out);
    }
    if (!resp.ok()) {
      Count(call.op, "error");
      last = resp.status();
      if (!last.retryable()) return last;
      continue;
    }
    registry.GetCounter("strata_s3_bytes_total", "S3 payload bytes", {{"direction", "in"}}).Inc(resp->body_bytes);
    Count(call.op, std::to_string(resp->status));
    if (resp->status >= 200 && resp->status < 300) {
      Status valid = call.validate ? call.validate(*resp) : Status::Ok();
      if (valid.ok()) return resp;
      last = valid.WithContext(what);
    } else {
      last = ErrorFromResponse(*resp, what, resource);
    }
    if (!last.retryable()) return last;
  }
  return Status(last.code(), last.message() + " (after " + std::to_string(attempts) + " attempts)", last.cause(),
                last.retryable())
      .WithForeignCode(last.foreign_code());
}

}  // namespace strata::object

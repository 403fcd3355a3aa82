// Gateway observability: Prometheus metrics (requests by operation and
// status, latency histograms per operation, bytes in/out, open connections,
// cache hit ratio) in MetricsRegistry::Global(), and an access log with one
// line per request, like S3 server access logs:
//   2026-11-22T10:00:00.123Z 127.0.0.1:51234 AKID 00000000000000A1 GetObject bucket/key%20x 206 - 1048576 0 3.2ms
//   time remote access-key request-id operation bucket/key status error-code bytes-out bytes-in duration
// (keys are percent-encoded so a line never breaks). Thread-safe.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>

#include "base/clock.h"
#include "base/metrics.h"
#include "base/mutex.h"
#include "base/status.h"
#include "cache/block_cache.h"

namespace strata::gateway {

struct RequestRecord {
  WallTime start{};
  std::string remote, access_key, request_id, op, bucket, key, error_code;
  int status = 0;
  uint64_t bytes_out = 0, bytes_in = 0;
  double seconds = 0;
};

class GatewayObserver {
 public:
  // access_log: a path (appended to), "-" for stderr, "" for none. `cache`
  // (may be null) feeds the hit ratio; it must outlive the observer.
  static Result<std::unique_ptr<GatewayObserver>> Open(const std::string& access_log, cache::BlockCache* cache);
  ~GatewayObserver();

  void Record(const RequestRecord& r);
  void ConnectionOpened() {
    connections_->Add(1);
    accepted_->Inc();
  }
  void ConnectionClosed() { connections_->Add(-1); }
  void ConnectionEvicted() { evicted_->Inc(); }
  void ConnectionRefused() { refused_->Inc(); }
  // Refreshes derived gauges, then renders the whole registry.
  std::string RenderMetrics();

 private:
  friend class GatewayObserverTestPeer;
  // One access-log line (no newline).
  static std::string FormatLogLine(const RequestRecord& r);
  GatewayObserver() = default;
  cache::BlockCache* cache_ = nullptr;
  Mutex log_mu_;  // one line at a time (the pointer is set once, at Create)
  FILE* log_ PT_GUARDED_BY(log_mu_) = nullptr;
  bool own_log_ = false;
  Counter* bytes_out_ = nullptr;
  Counter* bytes_in_ = nullptr;
  Gauge* connections_ = nullptr;
  Counter* accepted_ = nullptr;
  Counter* evicted_ = nullptr;
  Counter* refused_ = nullptr;
  Gauge* hit_ratio_ppm_ = nullptr;
};

}  // namespace strata::gateway

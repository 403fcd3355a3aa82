#include "gateway/observer.h"

#include <cerrno>
#include <cstring>

#include "net/http.h"
#include "net/uri.h"

namespace strata::gateway {

Result<std::unique_ptr<GatewayObserver>> GatewayObserver::Open(const std::string& access_log,
                                                               cache::BlockCache* cache) {
  std::unique_ptr<GatewayObserver> o(new GatewayObserver());
  o->cache_ = cache;
  if (access_log == "-") {
    o->log_ = stderr;
  } else if (!access_log.empty()) {
    o->log_ = std::fopen(access_log.c_str(), "a");
    if (!o->log_) return ErrnoToStatus(errno, "opening access log " + access_log);
    o->own_log_ = true;
  }
  auto& reg = MetricsRegistry::Global();
  o->bytes_out_ = &reg.GetCounter("strata_gateway_bytes_out_total", "Response body bytes sent by the S3 gateway");
  o->bytes_in_ = &reg.GetCounter("strata_gateway_bytes_in_total", "Request body bytes received by the S3 gateway");
  o->connections_ = &reg.GetGauge("strata_gateway_connections", "Open client connections to the S3 gateway");
  o->accepted_ =
      &reg.GetCounter("strata_gateway_connections_accepted_total", "Client connections accepted by the S3 gateway");
  o->evicted_ = &reg.GetCounter("strata_gateway_connections_evicted_total",
                                "Idle client connections closed to make room under a connection cap");
  o->refused_ = &reg.GetCounter("strata_gateway_connections_refused_total",
                                "Client connections refused at a connection cap (none idle to close)");
  o->hit_ratio_ppm_ = &reg.GetGauge("strata_gateway_cache_hit_ratio_ppm",
                                    "Block cache hits (RAM+disk) per million block lookups, since start");
  return o;
}

GatewayObserver::~GatewayObserver() {
  if (own_log_ && log_) std::fclose(log_);
}

std::string GatewayObserver::FormatLogLine(const RequestRecord& r) {
  std::string key = r.bucket.empty() ? "-" : net::UriEncode(r.bucket + (r.key.empty() ? "" : "/" + r.key), false);
  char ms[32];
  std::snprintf(ms, sizeof(ms), "%.1fms", r.seconds * 1e3);
  auto dash = [](const std::string& s) { return s.empty() ? std::string("-") : s; };
  return net::FormatIso8601(r.start) + " " + dash(r.remote) + " " + dash(r.access_key) + " " + dash(r.request_id) +
         " " + dash(r.op) + " " + key + " " + std::to_string(r.status) + " " + dash(r.error_code) + " " +
         std::to_string(r.bytes_out) + " " + std::to_string(r.bytes_in) + " " + ms;
}

void GatewayObserver::Record(const RequestRecord& r) {
  auto& reg = MetricsRegistry::Global();
  std::string op = r.op.empty() ? "Unknown" : r.op;
  reg.GetCounter("strata_gateway_requests_total", "S3 gateway requests by operation and HTTP status",
                 {{"op", op}, {"status", std::to_string(r.status)}})
      .Inc();
  reg.GetHistogram("strata_gateway_request_seconds", "S3 gateway request latency (to the last body byte)", {{"op", op}})
      .Observe(r.seconds);
  bytes_out_->Inc(r.bytes_out);
  bytes_in_->Inc(r.bytes_in);
  if (!log_) return;
  std::string line = FormatLogLine(r);
  line += '\n';
  MutexLock lock(log_mu_);
  std::fwrite(line.data(), 1, line.size(), log_);
  std::fflush(log_);
}

std::string GatewayObserver::RenderMetrics() {
  if (cache_) {
    cache::CacheStats s = cache_->Stats();
    uint64_t hits = s[cache::CacheCounter::kRamHits] + s[cache::CacheCounter::kDiskHits];
    uint64_t total = hits + s[cache::CacheCounter::kMisses];
    hit_ratio_ppm_->Set(total ? static_cast<int64_t>(hits * 1000000 / total) : 0);
  }
  std::string out = MetricsRegistry::Global().RenderPrometheus();
  if (cache_) {
    // The ratio as a float too, which Prometheus gauges allow (the registry keeps integers).
    out +=
        "# HELP strata_gateway_cache_hit_ratio Block cache hit ratio since start (0..1)\n"
        "# TYPE strata_gateway_cache_hit_ratio gauge\n";
    char buf[64];
    std::snprintf(buf, sizeof(buf), "strata_gateway_cache_hit_ratio %.6f\n", hit_ratio_ppm_->Value() / 1e6);
    out += buf;
  }
  return out;
}

}  // namespace strata::gateway

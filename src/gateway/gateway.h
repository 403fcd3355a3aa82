// Gateway: `strata serve` assembled from a GatewayConfig: the block cache,
// the buckets (backends, optional cloud emulation below the cache), the S3
// handler, metrics/access log and the HTTP server. Start() returns once the
// socket listens. Thread-safe; Shutdown() is graceful and idempotent.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "base/status.h"
#include "cache/block_cache.h"
#include "gateway/buckets.h"
#include "gateway/config.h"
#include "gateway/observer.h"
#include "gateway/s3_handler.h"
#include "gateway/server.h"

namespace strata::gateway {

class Gateway {
 public:
  // `on_store` is BucketSetOptions::on_store (`strata serve --cache-group` attaches each store).
  static Result<std::unique_ptr<Gateway>> Start(
      const GatewayConfig& config, std::function<void(const std::shared_ptr<cache::CachedStore>&)> on_store = {});
  ~Gateway();

  uint16_t port() const { return server_->port(); }
  std::string url() const { return server_->url(); }
  void Shutdown();

  BucketSet& buckets() { return *buckets_; }
  cache::BlockCache& cache() { return *cache_; }

 private:
  Gateway() = default;
  // Declaration order is destruction order reversed: the server goes first.
  std::shared_ptr<cache::BlockCache> cache_;
  std::unique_ptr<BucketSet> buckets_;
  std::unique_ptr<GatewayObserver> observer_;
  std::unique_ptr<S3Handler> handler_;
  std::unique_ptr<GatewayServer> server_;
};

// The CacheOptions a config implies (what Gateway::Create opens its cache with).
cache::CacheOptions CacheOptionsFor(const GatewayConfig& config);

}  // namespace strata::gateway

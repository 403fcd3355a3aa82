#include "gateway/gateway.h"

#include "object/cloud_store.h"

namespace strata::gateway {

cache::CacheOptions CacheOptionsFor(const GatewayConfig& config) {
  cache::CacheOptions o;
  o.block_size = config.cache.block_size;
  o.ram_bytes = config.cache.ram_bytes;
  o.dir = config.cache.dir;
  o.disk_bytes = config.cache.disk_bytes;
  o.disk_min_free = config.cache.free_space;
  return o;
}

Result<std::unique_ptr<Gateway>> Gateway::Start(
    const GatewayConfig& config, std::function<void(const std::shared_ptr<cache::CachedStore>&)> on_store) {
  STRATA_RETURN_IF_ERROR(ValidateGatewayConfig(config));
  std::unique_ptr<Gateway> g(new Gateway());
  cache::CacheOptions co = CacheOptionsFor(config);
  if (!config.cache.encryption_key_file.empty()) {
    STRATA_ASSIGN_OR_RETURN(co.sealer, cache::BlockSealer::FromKeyFile(config.cache.encryption_key_file));
  }
  STRATA_ASSIGN_OR_RETURN(g->cache_, cache::BlockCache::Open(co));
  BucketSet::Options bo;
  if (!config.emulate.empty()) {
    STRATA_ASSIGN_OR_RETURN(object::CloudProfile profile, object::ParseCloudProfile(config.emulate));
    bo.emulate = profile;
  }
  bo.cached.metadata_ttl = config.cache.metadata_ttl;
  bo.cached.backend_timeout = config.cache.backend_timeout;
  bo.cached.revalidate_timeout = config.cache.revalidate_timeout;
  bo.cached.serve_stale = !config.cache.strict_revalidate;
  bo.on_store = std::move(on_store);
  STRATA_ASSIGN_OR_RETURN(g->buckets_, BucketSet::Open(config.backends, g->cache_, bo));
  STRATA_ASSIGN_OR_RETURN(g->observer_, GatewayObserver::Open(config.access_log, g->cache_.get()));
  S3HandlerOptions ho;
  ho.region = config.region;
  ho.keys = config.keys;
  ho.access = AccessPolicy(config.key_access, config.bucket_settings);
  ho.stream_chunk = config.cache.block_size;
  g->handler_ = std::make_unique<S3Handler>(*g->buckets_, ho);
  ServerOptions so;
  STRATA_RETURN_IF_ERROR(ParseListenAddress(config.listen, &so.host, &so.port));
  so.io_threads = config.io_threads;
  so.workers = config.workers;
  so.limits = config.limits;
  STRATA_ASSIGN_OR_RETURN(g->server_, GatewayServer::Start(so, *g->handler_, *g->observer_));
  return g;
}

Gateway::~Gateway() { Shutdown(); }

void Gateway::Shutdown() {
  if (server_) server_->Shutdown();
}

}  // namespace strata::gateway

#include "cache/cache_metrics.h"

#include <utility>

namespace strata::cache {
namespace {
struct Desc {
  const char* short_name;  // for Stats().ToString()
  const char* family;      // Prometheus family
  const char* help;
  Labels labels;
};

const Desc& DescOf(CacheCounter c) {
  static const Desc kDescs[] = {
      {"ram_hits", "strata_cache_hits_total", "Block reads served from a cache tier", {{"tier", "ram"}}},
      {"disk_hits", "strata_cache_hits_total", "Block reads served from a cache tier", {{"tier", "disk"}}},
      {"misses", "strata_cache_misses_total", "Block reads that fetched from the backend", {}},
      {"singleflight_joins", "strata_cache_singleflight_joins_total", "Misses that shared another fetch", {}},
      {"bytes_from_ram", "strata_cache_read_bytes_total", "Bytes read by source", {{"source", "ram"}}},
      {"bytes_from_disk", "strata_cache_read_bytes_total", "Bytes read by source", {{"source", "disk"}}},
      {"bytes_from_backend", "strata_cache_read_bytes_total", "Bytes read by source", {{"source", "backend"}}},
      {"ram_evictions", "strata_cache_evictions_total", "Blocks evicted", {{"tier", "ram"}}},
      {"disk_evictions", "strata_cache_evictions_total", "Blocks evicted", {{"tier", "disk"}}},
      {"expired", "strata_cache_expired_total", "Blocks dropped after their TTL", {}},
      {"checksum_failures", "strata_cache_checksum_failures_total", "Disk blocks failing verification", {}},
      {"disk_read_errors", "strata_cache_disk_read_errors_total", "Disk blocks missing or unreadable", {}},
      {"disk_writes", "strata_cache_disk_writes_total", "Blocks written to the disk tier", {}},
      {"disk_write_errors", "strata_cache_disk_write_errors_total", "Failed disk tier writes", {}},
      {"disk_write_skipped", "strata_cache_disk_write_skipped_total", "Disk writes skipped for lack of room", {}},
      {"backend_errors", "strata_cache_backend_errors_total", "Block fills that failed", {}},
      {"readahead_issued", "strata_cache_readahead_blocks_total", "Read-ahead blocks", {{"outcome", "issued"}}},
      {"readahead_hits", "strata_cache_readahead_blocks_total", "Read-ahead blocks", {{"outcome", "hit"}}},
      {"readahead_wasted", "strata_cache_readahead_blocks_total", "Read-ahead blocks", {{"outcome", "wasted"}}},
      {"readahead_throttled", "strata_cache_readahead_blocks_total", "Read-ahead blocks", {{"outcome", "throttled"}}},
      {"invalidations", "strata_cache_invalidations_total", "Blocks dropped because the object was written", {}},
      {"meta_hits", "strata_cache_metadata_total", "Head/List lookups", {{"result", "hit"}}},
      {"meta_misses", "strata_cache_metadata_total", "Head/List lookups", {{"result", "miss"}}},
      {"stale_served", "strata_cache_metadata_total", "Head/List lookups", {{"result", "stale"}}},
      {"backend_timeouts", "strata_cache_backend_timeouts_total", "Backend calls given up unanswered", {}},
      {"disk_write_dropped",
       "strata_cache_not_admitted_total",
       "Blocks not written to the disk tier",
       {{"reason", "disk_busy"}}},
      {"disk_not_admitted",
       "strata_cache_not_admitted_total",
       "Blocks not written to the disk tier",
       {{"reason", "admission"}}},
      {"disk_low_space",
       "strata_cache_not_admitted_total",
       "Blocks not written to the disk tier",
       {{"reason", "low_space"}}},
  };
  static_assert(sizeof(kDescs) / sizeof(kDescs[0]) == static_cast<size_t>(CacheCounter::kCount));
  return kDescs[static_cast<size_t>(c)];
}
}  // namespace

std::string_view CacheCounterName(CacheCounter c) { return DescOf(c).short_name; }

CacheMetrics::CacheMetrics() {
  auto& reg = MetricsRegistry::Global();
  for (size_t i = 0; i < global_.size(); ++i) {
    const Desc& d = DescOf(static_cast<CacheCounter>(i));
    global_[i] = &reg.GetCounter(d.family, d.help, d.labels);
  }
  ram_gauge_ = &reg.GetGauge("strata_cache_occupancy_bytes", "Bytes held per cache tier", {{"tier", "ram"}});
  disk_gauge_ = &reg.GetGauge("strata_cache_occupancy_bytes", "Bytes held per cache tier", {{"tier", "disk"}});
}

std::string CacheStats::ToString() const {
  std::string out;
  for (size_t i = 0; i < counters.size(); ++i) {
    out += std::string(CacheCounterName(static_cast<CacheCounter>(i))) + " " + std::to_string(counters[i]) + "\n";
  }
  out += "ram_bytes " + std::to_string(ram_bytes) + "\nram_capacity " + std::to_string(ram_capacity) + "\nram_blocks " +
         std::to_string(ram_blocks) + "\ndisk_bytes " + std::to_string(disk_bytes) + "\ndisk_capacity " +
         std::to_string(disk_capacity) + "\ndisk_blocks " + std::to_string(disk_blocks) + "\n";
  return out;
}

}  // namespace strata::cache

// Cache counters: each BlockCache keeps its own (for `Stats()` and tests) and
// mirrors every increment into MetricsRegistry::Global() (for Prometheus), so
// both views agree. Occupancy gauges are maintained by the tiers' indexes.
// Thread-safe, lock-free.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <string>

#include "base/metrics.h"

namespace strata::cache {

enum class CacheCounter {
  kRamHits,
  kDiskHits,
  kMisses,             // block fetched from the backend
  kSingleFlightJoins,  // a miss that waited on another caller's fetch
  kBytesFromRam,
  kBytesFromDisk,
  kBytesFromBackend,
  kRamEvictions,
  kDiskEvictions,
  kExpired,           // blocks dropped because their TTL passed
  kChecksumFailures,  // disk blocks that failed verification (dropped, refetched)
  kDiskReadErrors,    // disk blocks unreadable or missing (dropped, refetched)
  kDiskWrites,
  kDiskWriteErrors,     // e.g. disk full: the block is served, not cached on disk
  kDiskWriteSkipped,    // no room below the limit (everything left is pinned)
  kBackendErrors,       // fills that failed (nothing cached)
  kReadaheadIssued,     // blocks prefetched
  kReadaheadHits,       // prefetched blocks later read
  kReadaheadWasted,     // prefetched blocks evicted unread
  kReadaheadThrottled,  // prefetches skipped at the global cap
  kInvalidations,       // blocks dropped because their object was written
  kMetaHits,
  kMetaMisses,
  kStaleServed,       // expired metadata served because the backend failed or was slow to revalidate
  kBackendTimeouts,   // lookups and fills given up after backend_timeout (the backend did not answer)
  kDiskWriteDropped,  // not admitted: the disk write queue was full (the disk could not keep up)
  kDiskNotAdmitted,   // not admitted: the disk tier is full of blocks read at least as often
  kDiskLowSpace,      // not admitted: the file system is down to its free-space floor
  kCount,
};

struct CacheStats {
  std::array<uint64_t, static_cast<size_t>(CacheCounter::kCount)> counters{};
  uint64_t ram_bytes = 0, ram_capacity = 0, ram_blocks = 0;
  uint64_t disk_bytes = 0, disk_capacity = 0, disk_blocks = 0;
  uint64_t operator[](CacheCounter c) const { return counters[static_cast<size_t>(c)]; }
  std::string ToString() const;  // one "name value" per line
};

std::string_view CacheCounterName(CacheCounter c);

class CacheMetrics {
 public:
  CacheMetrics();
  void Inc(CacheCounter c, uint64_t n = 1) {
    local_[static_cast<size_t>(c)].fetch_add(n, std::memory_order_relaxed);
    global_[static_cast<size_t>(c)]->Inc(n);
  }
  uint64_t Get(CacheCounter c) const { return local_[static_cast<size_t>(c)].load(std::memory_order_relaxed); }
  Gauge& ram_occupancy() { return *ram_gauge_; }
  Gauge& disk_occupancy() { return *disk_gauge_; }

 private:
  std::array<std::atomic<uint64_t>, static_cast<size_t>(CacheCounter::kCount)> local_{};
  std::array<Counter*, static_cast<size_t>(CacheCounter::kCount)> global_{};
  Gauge* ram_gauge_;
  Gauge* disk_gauge_;
};

}  // namespace strata::cache

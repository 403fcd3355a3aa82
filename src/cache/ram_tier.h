// RamTier: the memory tier. Bounded by the sum of block sizes it holds;
// blocks are immutable Buffers handed out by reference (zero copy), so a
// reader may keep a block alive after it is evicted (its bytes then no longer
// count here). LRU eviction skips pinned blocks; evicted blocks are returned
// to the caller for demotion to disk. Thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "base/buffer.h"
#include "base/mutex.h"
#include "cache/lru_index.h"

namespace strata::cache {

struct CachedBlock {
  BlockId id;
  Buffer data;
  int64_t created_ms = 0;   // unix ms when fetched from the backend
  bool prefetched = false;  // filled by read-ahead and not yet read
  bool ram_only = false;    // another group member owns it: dropped, not demoted, on eviction
};

class RamTier {
 public:
  explicit RamTier(uint64_t capacity_bytes, Gauge* occupancy = nullptr) : capacity_(capacity_bytes) {
    index_.set_gauge(occupancy);
  }

  // The block, marked most recently used; `prefetched` is reported as it was
  // and then cleared (the first read of a read-ahead block).
  std::optional<CachedBlock> Get(const BlockHash& h);
  bool Contains(const BlockHash& h) const;
  // Stores the block, evicting least recently used unpinned blocks into
  // *evicted. Returns false (and stores nothing) when it cannot fit.
  bool Put(const BlockHash& h, CachedBlock block, bool pinned, std::vector<CachedBlock>* evicted);
  std::optional<CachedBlock> Remove(const BlockHash& h);
  std::vector<CachedBlock> RemoveObject(const std::string& object);
  template <typename Pred>  // Pred(const BlockId&) -> bool
  void Repin(Pred pred) {
    MutexLock lock(mu_);
    index_.ForEach([&](auto& n) { n.pinned = pred(n.entry.id); });
  }
  template <typename Pred>  // removes blocks for which Pred(const BlockId&) is true
  std::vector<CachedBlock> RemoveIf(Pred pred) {
    MutexLock lock(mu_);
    std::vector<BlockHash> victims;
    index_.ForEach([&](auto& n) {
      if (pred(n.entry.id)) victims.push_back(n.hash);
    });
    return RemoveLocked(victims);
  }

  uint64_t bytes() const;
  size_t blocks() const;
  uint64_t capacity() const { return capacity_; }

 private:
  std::vector<CachedBlock> RemoveLocked(const std::vector<BlockHash>& hashes) REQUIRES(mu_);
  mutable Mutex mu_;
  const uint64_t capacity_;
  LruIndex<CachedBlock> index_ GUARDED_BY(mu_);
};

}  // namespace strata::cache

// ShardCache: whole shards of one dataset held locally for the loader, in
// RAM (bounded by ram_bytes) and optionally in a disk directory (bounded by
// disk_bytes), filled from the object store with parallel ranged GETs.
//
// Every byte served is verified: a fetch must return the index's size and
// one ETag across all its ranged parts; disk files carry a header (magic,
// key, size, XXH3 of the data) checked on every load, and a mismatch is a
// miss (the file is removed, the shard refetched). Files are written
// temp + fsync + rename + fsync(dir). Eviction takes shards released by the
// loader (consumed) first, in release order, then the least recently used;
// files other processes wrote into the same directory count towards the
// bound (the directory is rescanned before each write).
// Thread-safe; concurrent Gets of one shard share one fetch.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "base/buffer.h"
#include "base/executor.h"
#include "base/status.h"
#include "dataset/manifest.h"
#include "object/object_store.h"

namespace strata::loader {

struct ShardCacheOptions {
  std::string dir;  // empty: RAM only
  uint64_t disk_bytes = 16ull << 30;
  uint64_t ram_bytes = 256ull << 20;
  size_t fetch_concurrency = 16;        // ranged GETs in flight (all shards together)
  uint64_t min_part_size = 1ull << 20;  // parts are size/fetch_concurrency, clamped to these
  uint64_t max_part_size = 16ull << 20;
};

struct ShardFetch {
  Buffer data;
  bool from_store = false;  // false: served from RAM or disk
};

class ShardCache {
 public:
  // `keys[k]` is shard k's object key in `store`, `sizes[k]` its size from the index.
  static Result<std::shared_ptr<ShardCache>> Open(ObjectStorePtr store, std::vector<std::string> keys,
                                                  std::vector<uint64_t> sizes, ShardCacheOptions options);
  ~ShardCache();

  // The shard's bytes, from RAM, disk or the store (in that order).
  Result<ShardFetch> Get(size_t shard);
  // The loader is done with this shard for now: evict it before others.
  void Release(size_t shard);
  // Forget any cached copy (after the loader found the bytes unparsable).
  void Invalidate(size_t shard);

  struct Counters {
    uint64_t ram_hits = 0, disk_hits = 0, fetches = 0, fetched_bytes = 0, disk_evictions = 0, ram_evictions = 0;
    uint64_t disk_bytes = 0, ram_bytes = 0, verify_failures = 0;
  };
  Counters counters() const;
  const ShardCacheOptions& options() const { return options_; }

 private:
  ShardCache(ObjectStorePtr store, std::vector<std::string> keys, std::vector<uint64_t> sizes,
             ShardCacheOptions options);
  Result<Buffer> FetchFromStore(size_t shard);
  Result<Buffer> LoadFromDisk(size_t shard);
  void StoreToDisk(size_t shard, const Buffer& data);
  void PutInRam(size_t shard, const Buffer& data);
  std::string FileName(size_t shard) const;
  uint64_t Priority(size_t shard) const;  // lower: evicted first (callers hold mu_)

  ObjectStorePtr store_;
  std::vector<std::string> keys_;
  std::vector<uint64_t> sizes_;
  ShardCacheOptions options_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::map<size_t, Buffer> ram_;
  uint64_t ram_used_ = 0;
  std::vector<uint64_t> last_use_;     // use sequence per shard
  std::vector<uint64_t> released_at_;  // release sequence per shard (0: not released)
  uint64_t seq_ = 0;
  std::map<size_t, bool> inflight_;  // shards being fetched (single flight)
  Counters counters_;
  std::mutex disk_mu_;  // one writer/evictor of the directory at a time
  std::unique_ptr<ThreadPool> parts_;
};

}  // namespace strata::loader

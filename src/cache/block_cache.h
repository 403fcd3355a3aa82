// BlockCache: two tiers (RAM, then a local disk directory) of fixed-size
// blocks of objects, filled on miss by a caller-supplied fetcher.
//
// Block size: 4 MiB by default. At 30 ms to first byte and 25 MB/s per
// connection a 4 MiB fetch spends ~80% of its time moving bytes (168 ms
// transfer vs 30 ms wait), while 1 MiB blocks would spend ~40% waiting and
// need 4x the requests (and index entries); 8 MiB blocks would double what a
// random 4 KiB reader drags in. 4 MiB is also JuiceFS's default, so users'
// intuitions carry over. Fills may still be split into parallel ranged GETs
// (CachedStore's fetch_part_size) to put more bytes in flight.
//
// Lookup order: RAM, blocks queued for the disk, disk (verified; promoted to
// RAM), then the fetcher under single-flight (concurrent misses of one block
// cause one fetch). A filled block goes to RAM and, with write-through
// (default), is queued for the disk at once, so a crash soon after keeps a
// warm cache warm; blocks leaving RAM are demoted to disk when not already
// there. A fetch that fails or returns the wrong length caches nothing and
// reports a clear error. Disk trouble (full, deleted, corrupt, slow) never
// fails or slows a read: the block is served from the backend instead.
//
// The disk never throttles a read: disk writes go through a bounded
// write-behind queue (write_behind.h); when it is full the block is not
// written (kDiskWriteDropped). When the disk tier is full, a block is written
// only if it was read more often lately than the block it would evict
// (frequency_sketch.h, kDiskNotAdmitted): a dataset larger than the cache
// streamed once per epoch keeps the part that fitted instead of churning.
// Thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/buffer.h"
#include "base/clock.h"
#include "base/mutex.h"
#include "base/single_flight.h"
#include "base/status.h"
#include "cache/cache_metrics.h"
#include "cache/disk_tier.h"
#include "cache/frequency_sketch.h"
#include "cache/meta_journal.h"
#include "cache/ram_tier.h"
#include "cache/write_behind.h"
#include "io/file_system.h"

namespace strata::cache {

inline constexpr uint64_t kDefaultBlockSize = 4ull << 20;

struct CacheOptions {
  uint64_t block_size = kDefaultBlockSize;
  uint64_t ram_bytes = 1ull << 30;  // 0 disables the RAM tier
  std::string dir;                  // empty: no disk tier
  uint64_t disk_bytes = 10ull << 30;
  SpaceFloor disk_min_free = kDefaultCacheFreeSpace;  // left free on the disk tier's file system (disk_tier.h)
  Duration disk_floor_check_interval = std::chrono::seconds(1);  // between writes; 0: at writes only
  double high_watermark = 0.95;                                  // disk eviction starts above this fraction...
  double low_watermark = 0.85;                                   // ...and frees down to this one
  Duration ttl{0};                                               // blocks older than this are misses; 0: never expire
  std::vector<std::string> pinned_prefixes;                      // object keys never evicted
  bool write_through = true;                                     // write fills to disk at once (else only on demotion)
  // Disk writes queued behind the reader, in bytes; past this a block is not
  // written (counted) rather than slowing its read. 0: written inline.
  uint64_t disk_write_queue_bytes = 256ull << 20;
  // A full disk tier admits a block only if it was read more often lately
  // than the block it would evict (TinyLFU); false: always (plain LRU).
  bool disk_admission = true;
  bool direct_io = false;  // read disk blocks with O_DIRECT
  // With direct_io: parts of one disk block read in flight at once
  // (io_uring), its data hashed as they land; 0: one read (queue depth 1).
  uint64_t disk_read_part_bytes = 1ull << 20;
  bool read_only = false;                     // inspect a directory another process owns
  std::shared_ptr<const BlockSealer> sealer;  // encrypts the disk tier's blocks (block_sealer.h); null: clear
  bool headers_only = false;                  // a sealed directory without its key: evict and check only
  io::FileSystem* fs = nullptr;               // default: DefaultFileSystem()
  Clock* clock = nullptr;                     // default: RealClock() (TTL uses WallNow)
};

struct GetBlockOptions {
  bool prefetch = false;  // a read-ahead fill: counted separately, hit-tracked
  bool ram_only = false;  // a fill owned by another group member: never written to disk
  // An explicit warm-up (`strata warm`): the fill is written to disk before
  // Get returns (back-pressure, nothing dropped) and admitted whatever the
  // frequency rule says (the caller asked for these blocks).
  bool warm = false;
};

class BlockCache {
 public:
  using Fetcher = std::function<Result<Buffer>()>;

  static Result<std::shared_ptr<BlockCache>> Open(CacheOptions options, DiskOpenReport* report = nullptr);
  ~BlockCache();

  // The bytes of block `id` (exactly `length` of them: the last block of an
  // object is short). Errors come only from the fetcher, or Corruption when it
  // returns another length.
  Result<Buffer> Get(const BlockId& id, uint64_t length, const Fetcher& fetch, const GetBlockOptions& options = {});
  // Whether a tier holds the block or a fill is in flight (read-ahead skips it).
  bool Contains(const BlockId& id) const;
  // Whether the RAM tier holds it (a disk block is not read yet: read-ahead promotes it).
  bool InRam(const BlockId& id) const { return ram_->Contains(HashBlockId(id)); }
  bool InFlight(const BlockId& id) const;
  size_t FlightWaiters(const BlockId& id) const { return flights_.Waiters(HashBlockId(id)); }

  // Drops every cached block of an object (any ETag): on write.
  void InvalidateObject(const std::string& store, const std::string& key);
  // Drops blocks whose key starts with `prefix` (all stores); returns how many.
  size_t EvictPrefix(const std::string& prefix);
  void Pin(const std::string& prefix);
  void Unpin(const std::string& prefix);

  // Waits until every queued disk write is done and the metadata journal is
  // written (tests, benchmarks, before a planned restart).
  void Flush();

  CacheStats Stats() const;
  CacheMetrics& metrics() { return metrics_; }
  const CacheOptions& options() const { return options_; }
  DiskTier* disk() { return disk_.get(); }
  // What CachedStores know of objects, kept beside the disk tier (null without one).
  MetaJournal* journal() { return journal_.get(); }
  RamTier& ram() { return *ram_; }

 private:
  explicit BlockCache(CacheOptions options);
  bool IsPinned(const BlockId& id) const;
  bool Expired(int64_t created_ms) const;
  int64_t NowMs() const;
  // Inserts into RAM (demoting what falls out) and writes through to disk.
  void Store(const BlockHash& h, CachedBlock block, const GetBlockOptions& options);
  void Demote(std::vector<CachedBlock> evicted);
  // A block for the disk: queued behind the reader (or written inline without a queue).
  void WriteToDisk(const BlockHash& h, const CachedBlock& block, bool pinned, bool warm = false);
  struct PendingWrite {
    CachedBlock block;
    bool pinned = false;
    bool cancelled = false;  // the object was written or evicted meanwhile: drop, do not keep
  };
  void WritePending(const BlockHash& h, const std::shared_ptr<PendingWrite>& p);
  Status WriteAdmitted(const BlockHash& h, const CachedBlock& block, bool pinned, bool warm = false);
  std::optional<Buffer> PendingData(const BlockHash& h, uint64_t length);
  void CancelPending(const std::function<bool(const BlockId&)>& pred);
  Result<Buffer> Fill(const BlockHash& h, const BlockId& id, uint64_t length, const Fetcher& fetch,
                      const GetBlockOptions& options);
  void CountHit(CacheCounter tier, CacheCounter bytes_counter, const CachedBlock& block,
                const GetBlockOptions& options);

  CacheOptions options_;
  Clock& clock_;
  CacheMetrics metrics_;
  std::unique_ptr<RamTier> ram_;
  std::unique_ptr<DiskTier> disk_;
  std::unique_ptr<MetaJournal> journal_;
  std::unique_ptr<FrequencySketch> sketch_;  // with disk_admission
  mutable Mutex pending_mu_;
  std::unordered_map<BlockHash, std::shared_ptr<PendingWrite>, BlockHashHasher> pending_ GUARDED_BY(pending_mu_);
  std::unique_ptr<WriteBehind> writer_;  // stopped (drained) first, in the destructor
  SingleFlight<BlockHash, Result<Buffer>, BlockHashHasher> flights_;
  mutable Mutex pin_mu_;
  std::vector<std::string> pins_ GUARDED_BY(pin_mu_);
};

}  // namespace strata::cache

// DiskTier: the local-disk tier, a directory bounded in bytes.
//
//   D/LOCK              exclusive flock while a process owns D; holds its PID
//   D/blocks/ab/<hash>.blk   one file per block (block_format.h), named by
//                       HashBlockId (first two hex digits pick the subdir)
//   D/tmp/              blocks being written; renamed into blocks/ when whole
//
// Sharing: one process owns a cache directory at a time (exclusive flock; a
// second opener gets Unavailable naming the holder's PID). Several processes
// writing one directory would need cross-process accounting of the byte limit
// and eviction; a single owner keeps the limit exact and eviction simple, and
// other processes reach the cache through that owner (`strata serve`/mount).
// Read-only opens (`strata cache stats|ls` beside a running owner) take no
// lock and change nothing.
//
// Crash safety: a block becomes visible only by rename of a complete temp
// file, so kill -9 at any moment leaves whole blocks plus temp files, which
// the next Open deletes. Blocks are not fsynced: a power cut can leave a
// renamed file with lost bytes, but every read verifies the header (naming
// key, ETag, offset, length) and the data checksum, so such a block is
// dropped and refetched, never served. Open rebuilds the index from headers
// only (one 4 KiB read per block); data is verified lazily, on each read.
//
// Encryption at rest (`sealer`, block_sealer.h): each block's data is sealed
// with AES-256-GCM, its header (clear) authenticated with it; the data
// checksum covers the sealed bytes, so torn files are found without the key.
// A read with the key opens the seal as the file lands (each O_DIRECT part
// while the rest is in flight, each buffered step while it is in the CPU's
// cache), and the GCM tag, which covers every byte, is its check: the XXH3
// is not computed again.
//
// Eviction: LRU, pinned blocks skipped; when a write would pass the high
// watermark, blocks are evicted down to the low watermark (Alluxio-style) so
// eviction runs in batches, not on every write; the capacity is never passed.
// An admission rule (Write's may_evict) can refuse to evict a victim for a
// new block: the block is then not written when it does not fit.
//
// Free-space floor (min_free, like JuiceFS's --free-space-ratio): the tier
// never fills the file system it shares with checkpoints, logs and other
// caches past the floor. Each write first reads the file system's free
// space; where the write would cross the floor, the tier's own blocks are
// evicted as for the byte limit (the tier shrinks when others fill the
// disk), and a block that still does not fit is not written (counted:
// disk_low_space). Open shrinks a tier found below the floor, and a
// background thread looks every floor_check_interval, so a tier that only
// serves hits still gives space back (a checkpoint being written beside a
// warm dataset gets the room it needs).
// Thread-safe: the index is under a mutex, file I/O runs outside it.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/mutex.h"
#include "base/periodic_task.h"
#include "base/status.h"
#include "base/units.h"
#include "cache/block_format.h"
#include "cache/block_sealer.h"
#include "cache/cache_metrics.h"
#include "cache/lru_index.h"
#include "cache/ram_tier.h"
#include "io/file_system.h"

namespace strata::cache {

// What a cache leaves free on its disk unless told otherwise: 2% of the file
// system (a volume that is nearly full still caches into what is left).
inline constexpr SpaceFloor kDefaultCacheFreeSpace{.percent = 2};

struct DiskTierOptions {
  std::string dir;
  uint64_t capacity_bytes = 0;  // counted as file bytes: 4 KiB header + data per block
  double high_watermark = 0.95;
  double low_watermark = 0.85;
  io::FileSystem* fs = nullptr;  // default: DefaultFileSystem()
  Clock* clock = nullptr;        // times Open's scan (DiskOpenReport::seconds); default: RealClock()
  bool direct_io = false;        // read blocks with O_DIRECT (PosixFileSystem only; else buffered)
  // With direct_io, a block is read as parts of this size all in flight at
  // once (io_uring; one read where the kernel refuses it), its data hashed as
  // they land; a lone reader otherwise waits at queue depth 1. 0: one read.
  uint64_t read_part_bytes = 1ull << 20;
  bool read_only = false;  // no lock, no writes, no cleanup (inspection beside a running owner)
  // Seals blocks at rest; null: clear. A directory sealed with one key opens
  // with that key only, or without a key for its headers only (read_only, or
  // headers_only: evicting and checking blocks; their data is then neither
  // read nor written).
  std::shared_ptr<const BlockSealer> sealer;
  bool headers_only = false;
  // Free space the tier leaves on its file system (a share of its size, or
  // bytes); a share is taken of the size at Open.
  SpaceFloor min_free = kDefaultCacheFreeSpace;
  // How often the floor is checked between writes (0: at writes and Open only).
  Duration floor_check_interval = std::chrono::seconds(1);
};

struct DiskOpenReport {
  uint64_t valid_blocks = 0;
  uint64_t valid_bytes = 0;
  uint64_t invalid_blocks = 0;  // bad header, wrong name, wrong size: deleted
  uint64_t temp_files = 0;      // leftovers of interrupted writes: deleted
  double seconds = 0;
};

struct DiskBlockInfo {
  BlockId id;
  uint64_t length = 0;
  int64_t created_ms = 0;
  bool pinned = false;
  std::string path;
};

struct VerifyReport {
  uint64_t checked = 0;
  uint64_t ok = 0;
  uint64_t bad = 0;  // dropped when drop_bad
  std::vector<std::string> bad_paths;
};

class DiskTier {
 public:
  // Creates the layout if missing, takes the lock, deletes temp files and
  // invalid blocks, and indexes the valid ones.
  static Result<std::unique_ptr<DiskTier>> Open(const DiskTierOptions& options, CacheMetrics* metrics,
                                                DiskOpenReport* report = nullptr);
  ~DiskTier();

  // Reads and verifies a block. NotFound when not cached; Corruption (checksum,
  // header, size) or IOError when the file failed: it has then been dropped.
  Result<CachedBlock> Read(const BlockHash& h, const BlockId& id, uint64_t length);
  bool Contains(const BlockHash& h) const;
  // Whether the block `victim` may be evicted for the one being written (an
  // admission rule); empty: any (LRU).
  using EvictFilter = std::function<bool(const BlockHash& victim)>;
  // Writes temp + rename, evicting first as needed. NoSpace when it cannot
  // fit under the capacity (everything else pinned, or `may_evict` refused
  // the victims: counted as not admitted) or the disk is full.
  Status Write(const BlockHash& h, const CachedBlock& block, bool pinned, const EvictFilter& may_evict = {});
  void Remove(const BlockHash& h);
  size_t RemoveObject(const std::string& object);
  size_t RemoveIf(const std::function<bool(const BlockId&)>& pred);
  void Repin(const std::function<bool(const BlockId&)>& pred);

  std::vector<DiskBlockInfo> List() const;
  // Reads every block fully and checks it; bad blocks are dropped when drop_bad.
  VerifyReport Verify(bool drop_bad);

  uint64_t bytes() const;
  size_t blocks() const;
  uint64_t capacity() const { return options_.capacity_bytes; }
  uint64_t min_free_bytes() const { return min_free_bytes_; }  // the floor, in bytes
  // Evicts down to the floor if the file system is below it (the background
  // check calls it; tests may too).
  void KeepFloor();
  const std::string& dir() const { return options_.dir; }
  std::string PathOf(const BlockHash& h) const;

 private:
  struct Entry {
    BlockId id;
    uint64_t length = 0;
    int64_t created_ms = 0;
    bool prefetched = false;
  };
  using Index = LruIndex<Entry>;

  DiskTier(DiskTierOptions options, CacheMetrics* metrics);
  Status Scan(DiskOpenReport* report);
  Status CheckFile(const std::string& path, const std::string& expected_hash, uint64_t file_size, Entry* out);
  // Evicts (under mu_) so that `need` more bytes fit under `cap` (capacity,
  // or less where the free-space floor binds); false if they cannot.
  // Stops at the first victim `may_evict` refuses (*refused then set).
  bool MakeRoomLocked(uint64_t need, uint64_t cap, const EvictFilter& may_evict = {}, bool* refused = nullptr)
      REQUIRES(mu_);
  // io::RoomAboveFloor of the directory; INT64_MAX where that has none.
  int64_t RoomAboveFloor();
  // What the tier may hold now: its capacity, or its blocks plus `room` when
  // less (the free space read includes what writes in progress have yet to
  // write, so they count against it). `room` must be read under mu_, with
  // the index it is added to.
  uint64_t CapacityNowLocked(int64_t room) const REQUIRES(mu_);
  void DropLocked(const BlockHash& h, bool evicted) REQUIRES(mu_);
  Status WriteFile(const BlockHash& h, const CachedBlock& block, const std::string& final_path);
  // Reads a whole block file (header page, then the block's bytes), calling
  // landed(file, bytes) as each leading run of its bytes arrives, in order,
  // so the caller checks them while the rest is read.
  using Landed = std::function<void(uint8_t* file, size_t bytes)>;
  Result<Buffer> ReadFile(const std::string& path, uint64_t total, const Landed& landed);
  Status EnsureLayout();
  // A block file's bytes: header page, data, and the seal's nonce and tag when sealed.
  uint64_t FileBytes(uint64_t length) const {
    return kBlockHeaderSize + length + (sealed_ ? BlockSealer::kOverhead : 0);
  }
  Result<Buffer> Seal(const CachedBlock& block) const;
  bool HoldsBlocks();

  const DiskTierOptions options_;
  bool sealed_ = false;          // the directory's blocks are sealed (set by Open)
  uint64_t min_free_bytes_ = 0;  // options_.min_free resolved by Open
  io::FileSystem& fs_;
  Clock& clock_;
  CacheMetrics* metrics_;
  std::unique_ptr<io::FileLock> lock_;
  mutable Mutex mu_;
  Index index_ GUARDED_BY(mu_);
  uint64_t reserved_ GUARDED_BY(mu_) = 0;  // bytes of writes in progress
  std::atomic<uint64_t> temp_seq_{0};
  std::unique_ptr<PeriodicTask> floor_check_;  // KeepFloor, started by Open when there is a floor
};

}  // namespace strata::cache

// ShardCache: whole shards of one dataset held locally for the loader, in
// RAM (bounded by ram_bytes) and optionally in a disk directory (bounded by
// disk_bytes), filled from the object store with parallel ranged GETs.
//
// Every byte served is verified: a fetch must return the index's size and
// one ETag across all its ranged parts; disk files carry a header (magic,
// key, size, XXH3 of the data) checked on every load, and a mismatch is a
// miss (the file is removed, the shard refetched); with a sealer the data is
// encrypted at rest and its GCM tag checked too. Bytes so checked are
// passed to the parser as verified, which then skips the format's per-record
// CRCs (one verification per byte, not two); bytes from the store are
// verified by those CRCs before their disk copy is written (GetParsed parses
// them first), and bytes that fail them are invalidated. Files are written
// temp + fsync + rename + fsync(dir), behind the reader (async_disk_writes):
// a shard the disk cannot keep up with is not admitted, and counted. Shards of
// 1 MiB or more start at a 4 KiB boundary of their file. Where memory is
// ample a file is written through the page cache and stays there, so the next
// epoch reads it at memory speed; else with O_DIRECT where the file system
// takes it (no copy into, and no eviction of, the page cache).
// A disk hit whose file the page cache holds is read at memory speed; one
// that is not is read from the device (buffered where memory is ample, so
// it stays for the next epoch; else with O_DIRECT) unless the reads queued
// there would keep it waiting longer than a fetch from the store takes at
// the store's measured pace: then it is fetched (counted:
// store_instead_of_disk), so a hit is never slower than a miss.
// Eviction takes shards released by the loader (consumed) first, in release
// order, then the least recently used; files other processes wrote into the
// same directory count towards the bound (the directory is rescanned before
// each write). A dataset larger than the disk bound does not evict its own
// shards to admit others (each is read once per epoch: that would only churn
// the disk); its shards fill the free room and stay.
// Thread-safe. Concurrent Gets of one shard share one fetch (a "flight"):
// callers that arrive while it runs get its bytes, even when the RAM tier
// cannot keep them; the flight lasts until the disk copy is written, so no
// caller refetches a shard whose file is still being written.
//
// Sharing. OpenShared returns one cache per identity (store URL, dataset
// prefix, index, cache_dir) per process, so every StreamingDataset of the same
// data in a process (the ranks of a node run as threads, several workers)
// shares the RAM tier, the single-flight fetches and the parsed shards: each
// shard is fetched and parsed once per process however many ranks read it.
// The RAM and disk bounds of a shared cache are the largest any opener asked
// for (the bound is per process, not per rank); its store and other options
// are the first opener's. A forked child opens caches of its own.
// Processes sharing `dir` coordinate through a lock file per shard
// ("<file>.lock", flock): one downloads while the others wait for its
// verified file; a holder that dies releases the lock, and a waiter that then
// finds no valid file downloads. The disk bound holds across processes too:
// each evicts and writes under the directory's budget lock.
// Temp files ("<file>.tmp.<pid>.<n>") count towards the disk bound while
// their writer lives; Open removes those whose writer is dead (a killed
// DataLoader worker) and that have not been written for a minute.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "base/buffer.h"
#include "base/clock.h"
#include "base/executor.h"
#include "base/mutex.h"
#include "base/periodic_task.h"
#include "base/single_flight.h"
#include "base/status.h"
#include "base/units.h"
#include "cache/block_sealer.h"
#include "cache/disk_tier.h"
#include "dataset/manifest.h"
#include "io/file_system.h"
#include "io/process.h"
#include "loader/throughput.h"
#include "object/object_store.h"

namespace strata::loader {

struct ParsedShard;  // loader/internal.h: what the loader parses a shard into

struct ShardCacheOptions {
  std::string dir;  // empty: RAM only
  // Names the shards' content (the loader passes its index fingerprint, which
  // has the shards' sha256 when the dataset records them): part of every file
  // name in `dir`, so a dataset regenerated with the same layout never reads
  // the files of the one it replaced.
  std::string content_id;
  // Per shard, the hex CRC-32C or SHA-256 the dataset's manifest records
  // ("" or absent: unknown; crc32c is checked when both are given). Bytes
  // fetched from the store must match it, or the fetch fails (Corruption,
  // retryable): the index's size and the format's CRCs cannot tell a lagging
  // replica's old shard of the same size from the current one. The loader
  // fills one of the two per its ShardVerify option.
  std::vector<std::string> crc32c;
  std::vector<std::string> sha256;
  uint64_t disk_bytes = 16ull << 30;
  // Free space the directory leaves on its file system (cache/disk_tier.h):
  // past it, other files there and then this cache's own shards are evicted,
  // and a shard that still does not fit is not admitted (not_admitted_low_space).
  SpaceFloor min_free = cache::kDefaultCacheFreeSpace;
  // How often a background thread checks the floor between writes, so a
  // cache that only serves hits still gives space back (0: at writes only).
  Duration floor_check_interval = std::chrono::seconds(1);
  uint64_t ram_bytes = 256ull << 20;
  size_t fetch_concurrency = 16;        // ranged GETs per shard fetch; also `connections` when that is 0
  size_t connections = 0;               // ranged GETs in flight (all shards together; per opener when shared)
  uint64_t min_part_size = 1ull << 20;  // parts are size/fetch_concurrency, clamped to these
  uint64_t max_part_size = 16ull << 20;
  io::FileSystem* fs = nullptr;  // the disk tier's; nullptr: DefaultFileSystem()
  Clock* clock = nullptr;        // ages temp files for the start-up sweep; nullptr: RealClock()
  // Write-behind: disk copies are written on a background thread, so a fetch
  // is delivered without waiting for its file (written and fsynced one at a
  // time): the disk never throttles a cold read. Until the file is written
  // the shard's bytes are served from memory (Gets never refetch it) and its
  // download lock is held (other processes wait for the file). At most
  // write_behind_bytes of writes wait; a shard fetched while they are full is
  // not admitted to disk (counted: not_admitted_busy) rather than slowing
  // the fetch. The destructor finishes the queued writes. false: each fetch
  // writes its own copy before it returns (a disk known to outpace the store).
  bool async_disk_writes = true;
  // 0: max(ram_bytes, 64 MiB). Memory the process holds beyond the RAM tier
  // while the disk is behind (one shard at least: a larger one queues alone).
  uint64_t write_behind_bytes = 0;
  // A fetch from the store (all its ranged parts) waits at most this long in
  // total, then fails with a retryable DeadlineExceeded naming the shard; the
  // store calls still running are left to finish on background threads (a
  // hung store holds neither the caller nor the cache's destruction).
  // 0: wait as long as the store's own timeouts.
  std::chrono::milliseconds fetch_timeout{60000};
  // Seals shard files at rest (cache/block_sealer.h: AES-256-GCM, the file's
  // key, size and content id authenticated with it); null: clear. A
  // directory sealed with one key opens with that key only.
  std::shared_ptr<const cache::BlockSealer> sealer;
  // At most this many calls given up on may still hold a thread each; past it
  // a fetch fails at once (Unavailable, retryable) until one returns (0: no
  // bound). The process's count is the gauge strata_loader_hung_store_calls.
  size_t max_hung_calls = 256;
  // The machine's memory now (MemTotal, MemAvailable), which decides whether
  // a shard file is written and read through the page cache; a test's hook.
  // nullptr: io::ReadMemoryInfo.
  std::function<std::optional<io::MemoryInfo>()> memory_info;
};

struct ShardFetch {
  Buffer data;
  bool from_store = false;  // false: served from RAM or disk
  // The cache checked these bytes whole as it loaded them (a disk copy's
  // XXH3, or the manifest's crc32c/sha256 of a fetch from the store); false
  // otherwise, when only the format's own checksums can verify them (the
  // parser must check them).
  bool verified = false;
};

struct ParsedFetch {
  std::shared_ptr<const ParsedShard> parsed;
  bool from_store = false;   // this call fetched the bytes from the store
  bool parsed_here = false;  // this call parsed them (false: shared with another caller)
};

// Parses a shard's bytes; also returns the bytes the result holds beyond the
// shard's own (charged to the RAM bound with them). `verified` is
// ShardFetch::verified: when true the parser skips per-record checksums, so
// every byte is verified once (by the disk tier's hash or by the format).
struct ParsedValue {
  std::shared_ptr<const ParsedShard> parsed;
  uint64_t extra_bytes = 0;
};
using ShardParser = std::function<Result<ParsedValue>(const Buffer& bytes, bool verified)>;
// Verifies bytes fetched from the store before they are written to disk; a
// failure keeps them off disk, so no other process ever loads them as verified.
// `verified` as ShardFetch::verified (checked whole against the manifest).
using ShardCheck = std::function<Status(const Buffer& bytes, bool verified)>;

class ShardCache {
 public:
  // `keys[k]` is shard k's object key in `store`, `sizes[k]` its size from the index.
  static Result<std::shared_ptr<ShardCache>> Open(object::ObjectStorePtr store, std::vector<std::string> keys,
                                                  std::vector<uint64_t> sizes, ShardCacheOptions options);
  // The process-wide cache of `identity` (the caller names the store URL,
  // prefix, index and dir in it): the live one if any (its bounds raised to
  // these options' if larger), else a new one, registered until its last user goes.
  static Result<std::shared_ptr<ShardCache>> OpenShared(const std::string& identity, object::ObjectStorePtr store,
                                                        std::vector<std::string> keys, std::vector<uint64_t> sizes,
                                                        ShardCacheOptions options);
  ~ShardCache();  // finishes pending disk writes (async_disk_writes)
  // Waits until the disk writes queued so far are done (written or given up).
  void FlushDiskWrites();

  // The shard's bytes, from RAM, disk or the store (in that order). Bytes this
  // call fetches from the store are written to disk only if `check` (when
  // given) passes them; it runs at most once, only when from_store is true.
  Result<ShardFetch> Get(size_t shard, const ShardCheck& check = {});
  // The shard parsed by `parse`, memoised with the RAM tier: concurrent
  // callers share one fetch and one parse. Bytes that fail to parse are
  // invalidated (the next call refetches) and the error returned.
  // Each success counts one user of the shard until Release.
  Result<ParsedFetch> GetParsed(size_t shard, const ShardParser& parse);
  // A user is done with this shard for now: once none is left, evict it before others.
  void Release(size_t shard);
  // Forget any cached copy (after the loader found the bytes unparsable):
  // RAM, disk, a finished flight, and a disk copy a flight has yet to write.
  void Invalidate(size_t shard);

  struct Counters {
    uint64_t ram_hits = 0, disk_hits = 0, fetches = 0, fetched_bytes = 0, disk_evictions = 0, ram_evictions = 0;
    uint64_t disk_bytes = 0, ram_bytes = 0, verify_failures = 0;
    uint64_t flight_joins = 0;            // Gets that waited for another caller's fetch of the shard
    uint64_t parses = 0, parse_hits = 0;  // GetParsed: parsed here / shared a memoised or in-flight parse
    uint64_t lock_waits = 0;              // fetches that waited for another process's (or cache's) download lock
    uint64_t temps_swept = 0;             // dead writers' temp files Open removed
    uint64_t sha256_bytes = 0;            // bytes from the store checked against the manifest's sha256
    uint64_t crc32c_bytes = 0;            // ... against its crc32c
    uint64_t disk_writes = 0;             // shard files written (admitted to the disk tier)
    // Shards fetched from the store and not kept on disk: the write-behind
    // queue was full (the disk could not keep up with the store), or the
    // disk tier was full of this dataset's shards while the dataset is larger
    // than it (streamed once per epoch, any shard evicted for another is
    // re-read as late as the other: admitting it would only churn the disk).
    uint64_t not_admitted_busy = 0, not_admitted_no_reuse = 0;
    // ... or the file system was down to its free-space floor (min_free).
    uint64_t not_admitted_low_space = 0;
    // Disk hits whose file the page cache held whole (read at memory speed).
    uint64_t disk_hits_resident = 0;
    // Shards on disk fetched from the store instead: their file was not in
    // memory and the disk's queued reads would have kept them waiting longer
    // than a fetch takes at the store's measured pace.
    uint64_t store_instead_of_disk = 0;
  };
  Counters counters() const;
  // Evicts down to the free-space floor if the file system is below it (the
  // background check calls it every floor_check_interval).
  void KeepFloor();
  const ShardCacheOptions& options() const { return options_; }  // as opened (bounds: see ram_bytes/disk_bytes)
  uint64_t ram_bytes() const { return ram_bytes_; }
  uint64_t disk_bytes() const { return disk_bytes_; }
  // The ranged GETs a fetch of this shard from the store makes (1 if it is unknown).
  size_t Parts(size_t shard) const;
  // The shard's size from the index (0 if it is unknown).
  uint64_t ShardSize(size_t shard) const { return shard < sizes_.size() ? sizes_[shard] : 0; }
  // The shard's file in `dir` (its lock file is this + ".lock").
  std::string FilePath(size_t shard) const;
  // The lock file (flock) under which every cache on `dir`, in any process,
  // counts the directory's bytes, evicts and writes a shard.
  std::string BudgetLockPath() const;

 private:
  ShardCache(object::ObjectStorePtr store, std::vector<std::string> keys, std::vector<uint64_t> sizes,
             ShardCacheOptions options);
  // A shard in RAM: its bytes, and its parsed form once some caller parsed it.
  struct RamEntry {
    Buffer bytes;
    std::shared_ptr<const ParsedShard> parsed;
    uint64_t charge = 0;    // bytes + the parsed form's extra bytes
    bool verified = false;  // loaded with a whole-shard hash checked (ShardFetch::verified)
  };

  // A disk copy waiting for the writer (async_disk_writes); `lock` is the shard's download lock.
  struct DiskWrite {
    size_t shard;
    Buffer data;
    uint64_t generation;
    std::unique_ptr<io::FileLock> lock;
  };

  // Removes temp files of dead writers from `dir` (at Open, under the budget lock).
  void SweepDeadTemps();
  bool HoldsShardFiles();  // `dir` has a shard file (of any dataset)
  // `*hashed`: the bytes were checked whole against the manifest's hash here
  // (false when the ETag was verified before: this transfer's bytes were not).
  Result<Buffer> FetchFromStore(size_t shard, bool* hashed);
  // store_->Get, given up on at `deadline` (fetch_timeout; without one, the plain call).
  Result<object::GetResult> BoundedGet(const std::string& key, const object::GetOptions& get,
                                       std::chrono::steady_clock::time_point deadline);
  // `*skipped`: the file is there but was not read (see Counters::store_instead_of_disk).
  Result<Buffer> LoadFromDisk(size_t shard, bool* skipped);
  // How long a read of `bytes` may wait for the disk: what fetching them
  // from the store takes at its measured pace (unmeasured: no bound).
  double StoreSeconds(uint64_t bytes) const;
  // Whether the machine has memory to spare for `bytes` more of the page cache.
  bool MemoryAmple(uint64_t bytes) const;
  // A shard file, opened O_DIRECT when its data is block-aligned (written so) and the file system allows.
  Result<std::unique_ptr<io::RandomAccessFile>> OpenShardFile(const std::string& path, uint64_t data_offset);
  // Its `size` bytes, read as parts in flight together into page-aligned memory.
  static Result<Buffer> ReadShardFile(io::RandomAccessFile& file, uint64_t size);
  // Writes the disk copy unless the shard was invalidated after `generation` was read.
  void StoreToDisk(size_t shard, const Buffer& data, uint64_t generation);
  // Encryption at rest (options_.sealer): a file's data sealed, and opened back.
  uint64_t SealOverhead() const { return options_.sealer ? cache::BlockSealer::kOverhead : 0; }
  Result<Buffer> Seal(size_t shard, const Buffer& data) const;
  Result<Buffer> Unseal(size_t shard, const Buffer& stored) const;  // in place: `stored` is held nowhere else
  // StoreToDisk now, or queued for the writer thread (async_disk_writes), or
  // not at all when the queue is full; `lock` is held until written.
  void WriteToDisk(size_t shard, const Buffer& data, uint64_t generation, std::unique_ptr<io::FileLock> lock);
  enum class NotAdmitted { kBusy, kNoReuse, kLowSpace };
  // One shard not admitted to the disk tier: counted here and in the process's metrics.
  void CountNotAdmitted(NotAdmitted why);
  // What `dir` may hold now that it holds `used` bytes: disk_bytes_, or less
  // where the free-space floor binds (used plus the free bytes above it).
  uint64_t DiskBoundNow(uint64_t used);
  // A shard file `dir` holds that may be evicted (another dataset's too).
  struct Victim {
    uint64_t priority;  // lowest goes first
    std::string name;
    uint64_t size;
    bool ours;  // one of this dataset's shards
  };
  struct DirUsage {
    uint64_t used = 0;            // shard files and live writers' temp files
    std::vector<Victim> victims;  // by priority
    std::set<std::string> names;  // the shard files present
  };
  // Lists `dir` (under disk_mu_ and the budget lock); nullopt when it cannot be listed.
  std::optional<DirUsage> ReadDirUsage();

  void WriteLoop();  // the writer thread
  void WriteQueued(DiskWrite w);
  void PutInRam(size_t shard, const Buffer& data, bool verified) REQUIRES(mu_);
  // Keeps `parsed` with the shard's bytes if the RAM bound allows.
  void PutParsedLocked(size_t shard, const Buffer& data, const ParsedValue& parsed) REQUIRES(mu_);
  // Evicts others (by Priority) until `need` more bytes fit; false if they cannot.
  bool MakeRoomLocked(size_t keep, uint64_t need) REQUIRES(mu_);
  std::shared_ptr<const ParsedShard> TakeParsedLocked(size_t shard) REQUIRES(mu_);
  void CountParseHitLocked(size_t shard) REQUIRES(mu_);
  std::string FileName(size_t shard) const;
  // Where the shard's data starts in its file (after the header and its padding).
  uint64_t DataOffset(size_t shard) const;
  uint64_t Priority(size_t shard) const REQUIRES(mu_);  // lower: evicted first

  object::ObjectStorePtr store_;
  std::vector<std::string> keys_;
  std::vector<uint64_t> sizes_;
  ShardCacheOptions options_;
  io::FileSystem& fs_;
  Clock& clock_;

  mutable Mutex mu_;
  Throughput disk_reads_;                         // of shard files not in the page cache
  Throughput store_fetches_;                      // of shards from the store
  std::atomic<uint64_t> ram_bytes_, disk_bytes_;  // the bounds (raised by OpenShared)
  std::atomic<size_t> fetch_threads_;             // the openers' connections summed (capped)
  std::map<size_t, RamEntry> ram_ GUARDED_BY(mu_);
  uint64_t ram_used_ GUARDED_BY(mu_) = 0;
  std::vector<uint32_t> users_ GUARDED_BY(mu_);        // per shard: GetParsed successes not yet Released
  std::vector<uint64_t> last_use_ GUARDED_BY(mu_);     // use sequence per shard
  std::vector<uint64_t> released_at_ GUARDED_BY(mu_);  // release sequence per shard (0: not released)
  uint64_t seq_ GUARDED_BY(mu_) = 0;
  std::vector<uint64_t> generation_ GUARDED_BY(mu_);  // per shard, bumped by Invalidate: bytes read before are stale
  // One fetch of a shard at a time, shared by the callers that want it (its
  // own lock; taken after mu_, never before).
  SingleFlight<size_t, Result<Buffer>> flights_;
  SingleFlight<size_t, Result<std::shared_ptr<const ParsedShard>>> parse_flights_;  // one parse likewise
  Counters counters_ GUARDED_BY(mu_);
  // Per shard: the store ETag whose bytes last matched the manifest's hash.
  // An ETag names one content, so a refetch answered with it needs no second
  // hash; another ETag (a stale replica, a replacement) is hashed.
  std::map<size_t, std::string> verified_etag_ GUARDED_BY(mu_);
  Mutex disk_mu_;  // one writer/evictor of the directory at a time
  // Threads for the ranged GETs of multi-part fetches, started on first use
  // (a dataset that is only opened, or has small shards, starts none).
  std::once_flag parts_once_;
  std::unique_ptr<ThreadPool> parts_;
  // fetch_timeout: the store calls given up on that still run, each on a
  // detached thread of its own (shared with those threads: they may outlive this).
  std::shared_ptr<std::atomic<size_t>> hung_calls_ = std::make_shared<std::atomic<size_t>>(0);
  // async_disk_writes: shards whose file is being written (guarded by mu_),
  // and the writer's queue (guarded by write_mu_, taken without mu_ held).
  std::map<size_t, Buffer> writing_ GUARDED_BY(mu_);
  uint64_t writing_bytes_ GUARDED_BY(mu_) = 0;
  Mutex write_mu_;
  CondVar write_cv_;
  std::deque<DiskWrite> writes_ GUARDED_BY(write_mu_);
  size_t writes_running_ GUARDED_BY(write_mu_) = 0;  // writes taken off the queue, not done yet
  CondVar flushed_cv_;                               // the queue went empty and no write is running
  bool stop_writes_ GUARDED_BY(write_mu_) = false;
  // The dataset's shard files together (headers included): larger than the
  // disk bound, this dataset's files are not evicted to admit its others.
  uint64_t dataset_disk_bytes_ = 0;
  // When a write last found the disk full of this dataset's shards or down
  // to its free-space floor (so shards are not queued for a while, only to
  // be refused), if since, and which.
  std::optional<TimePoint> full_since_ GUARDED_BY(mu_);
  NotAdmitted full_reason_ GUARDED_BY(mu_) = NotAdmitted::kNoReuse;
  uint64_t min_free_bytes_ = 0;                // options_.min_free resolved by Open
  std::thread writer_ GUARDED_BY(mu_);         // started by the first queued write
  std::unique_ptr<PeriodicTask> floor_check_;  // KeepFloor, started by Open when there is a floor
};

}  // namespace strata::loader

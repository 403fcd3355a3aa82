// CachedStore: an ObjectStore that reads through a BlockCache.
//
// Reads: object metadata (size, ETag) comes from a Head/List cache with a
// TTL; a read is split into blocks keyed by that ETag; cached blocks are
// served from RAM (zero copy when the read falls in one block) or disk, and
// missing ones are fetched once each (single-flight) with ranged GETs carrying
// If-Match, split into parallel parts so each fill keeps several connections
// busy (at 30 ms first byte, bytes in flight are what hide latency). A read
// that finds the object changed underneath refreshes its metadata and retries
// once. Read-ahead (readahead.h) follows sequential streams: a ReadStream
// from OpenStream() is one stream (use it from FUSE handles and loaders);
// plain Get calls are tracked per object key as a heuristic.
//
// Metadata persists with the disk tier (meta_journal.h): after a restart an
// entry validated within metadata_ttl answers with no request. An expired
// entry is revalidated in bulk: one LIST of its directory from the earliest
// expired entry before it (up to 1,000 keys) refreshes every entry it shows,
// instead of a HEAD per object; a lone expired entry is HEADed. A plain Get
// takes a listed entry (no metadata) as it is and keeps the metadata the
// fill's GET brought; only a read served wholly from cache asks for it.
//
// Writes (Put, Delete, CompleteMultipartUpload, Copy) go to the backend, then
// drop that object's blocks and metadata and any cached List under a prefix
// of its key. Changes made by other writers are seen when the metadata TTL
// passes (as with JuiceFS/Alluxio metadata caches); a version once seen is
// never mixed with another, since blocks are keyed by ETag.
// Thread-safe. Streams must not outlive the store.
#pragma once

#include <atomic>
#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/clock.h"
#include "base/executor.h"
#include "base/mutex.h"
#include "base/single_flight.h"
#include "cache/block_cache.h"
#include "cache/block_router.h"
#include "cache/meta_journal.h"
#include "cache/readahead.h"
#include "object/store_wrapper.h"

namespace strata::cache {

struct CachedStoreOptions {
  Duration metadata_ttl = std::chrono::seconds(10);
  // Fills are split into parallel ranged GETs of this size (0: one GET per
  // block). 1 MiB at 25 MB/s is 42 ms of transfer per 30 ms wait.
  uint64_t fetch_part_size = 1ull << 20;
  size_t max_parallel_blocks = 8;                  // missing blocks of one read fetched at once
  uint64_t readahead_max_window = 64ull << 20;     // per stream
  uint64_t readahead_global_bytes = 256ull << 20;  // all streams (and Prefetch) together
  size_t readahead_threads = 8;                    // concurrent read-ahead fills
  size_t max_tracked_streams = 4096;               // plain-Get stream heuristics kept (LRU)
  size_t max_metadata_entries = 1 << 20;
  // A stream's first read at offset 0 starts read-ahead at once with this
  // window (0: off, the window starts on the second sequential read): a
  // file opened and read from its start is fetched in parallel blocks, not
  // one block per round trip.
  uint64_t open_window = 0;
  // Bounded waits when the backend stops answering (issue 15). backend_timeout
  // bounds each metadata lookup and block fill as its caller sees it: past it
  // the call fails with DeadlineExceeded (retryable; the gateway's 503) while
  // the request finishes in the background. 0: wait as long as the backend takes.
  Duration backend_timeout{0};
  // serve_stale: an expired metadata entry whose revalidation fails (other
  // than NotFound) or takes longer than revalidate_timeout is served as it
  // was (counted in stale_served, logged); cached blocks of that version keep
  // being served. Off: strict freshness, the lookup waits and fails.
  bool serve_stale = false;
  Duration revalidate_timeout = std::chrono::seconds(1);
  Clock* clock = nullptr;  // default RealClock(); TTLs use Now()
};

class CachedStore;

// One sequential reader of one object version (fixed at open). Not
// thread-safe (one reader); many streams may run concurrently.
class ReadStream {
 public:
  // [offset, offset+length) clamped to the object; empty at or past the end.
  // PreconditionFailed if the object changed since the stream was opened.
  Result<Buffer> Read(uint64_t offset, uint64_t length);
  const object::ObjectInfo& info() const { return info_; }
  // Whether every block of [offset, offset+length) is in the cache now (a
  // read of it needs no backend request, unless evicted meanwhile).
  bool Cached(uint64_t offset, uint64_t length) const;

 private:
  friend class CachedStore;
  ReadStream(CachedStore* store, std::string key, object::ObjectInfo info)
      : store_(store), key_(std::move(key)), info_(std::move(info)) {}
  CachedStore* store_;
  std::string key_;
  object::ObjectInfo info_;
  ReadaheadState state_;
};

class CachedStore : public object::StoreWrapper {
 public:
  CachedStore(object::ObjectStorePtr backend, std::shared_ptr<BlockCache> cache, CachedStoreOptions options = {});
  ~CachedStore() override;

  Result<std::unique_ptr<ReadStream>> OpenStream(std::string_view key);
  // A stream of the version the caller already knows (`known`: size, ETag,
  // mtime), with no metadata request: serves cached blocks while the backend
  // cannot answer. Blocks still missing are fetched with If-Match its ETag.
  Result<std::unique_ptr<ReadStream>> OpenStream(std::string_view key, const object::ObjectInfo& known);
  // Fills the cache with every block of `key` (no read-ahead); returns its
  // size. Blocks are on disk when it returns, admitted whatever the frequency
  // rule says (an explicit warm-up; block_cache.h).
  Result<uint64_t> Warm(std::string_view key);
  // Fetches [0, min(size, max_bytes)) of one known version into the cache in
  // the background (read-ahead's pool and global budget: what does not fit
  // now is skipped, never queued); blocks only on disk are read into RAM.
  // Returns the blocks issued (0: all in RAM, in flight, or no budget).
  size_t Prefetch(std::string_view key, const object::ObjectInfo& known, uint64_t max_bytes);
  // Blocks until no read-ahead is queued or running (tests, benchmarks).
  void WaitForReadahead();
  // Ranged GETs the cache sent to the backend to fill blocks, and the most
  // that were in flight at once (how many connections the reads kept busy).
  struct FetchStats {
    uint64_t gets = 0;
    uint64_t peak_in_flight = 0;
  };
  FetchStats fetch_stats() const { return {fetch_gets_.load(), fetch_peak_.load()}; }
  // Drops cached metadata (not blocks).
  void InvalidateMetadata();

  // Joins a cache group: misses of blocks `router` says another node owns are
  // asked of it first and kept in RAM only. Call before the first read (the
  // router itself may change its members at any time).
  void SetBlockRouter(std::shared_ptr<BlockRouter> router) { router_ = std::move(router); }
  // A group peer's request: block `index` of version `etag` of `key`, an
  // object of `object_size` bytes, from this node's tiers or the backend (one
  // fetch for all concurrent askers, single-flight), never from another peer
  // (one hop at most). *from_backend says whether this call fetched it.
  Result<Buffer> ServeBlock(const std::string& key, const std::string& etag, uint64_t object_size, uint64_t index,
                            bool* from_backend = nullptr);

  BlockCache& cache() { return *cache_; }
  const object::ObjectStorePtr& backend() const { return base_; }

  using object::StoreWrapper::CompleteMultipartUpload;
  using object::StoreWrapper::Copy;
  using object::StoreWrapper::Get;
  using object::StoreWrapper::Put;

  // Multipart calls other than Complete, and Url, pass through (StoreWrapper).
  Result<object::GetResult> Get(std::string_view key, const object::GetOptions& options) override;
  Result<object::ObjectInfo> Head(std::string_view key) override;
  Result<object::ListResult> List(const object::ListOptions& options) override;
  Result<object::ObjectInfo> Put(std::string_view key, Buffer data, const object::PutOptions& options) override;
  Status Delete(std::string_view key) override;
  Result<object::ObjectInfo> CompleteMultipartUpload(std::string_view key, std::string_view upload_id,
                                                     const std::vector<object::CompletedPart>& parts,
                                                     const object::CompleteOptions& options) override;
  Result<object::ObjectInfo> Copy(std::string_view src_key, std::string_view dst_key,
                                  const object::CopyOptions& options) override;
  // ?partNumber=: from the part sizes known for this version (Head on stores
  // that keep them, or learned from a Complete through this store), else the
  // backend's answer (s3:// asks its upstream), kept per (key, ETag, part) so
  // a version's part is asked for once. Not multipart ETags need no request.
  Result<object::PartRange> GetPartRange(std::string_view key, std::string_view etag, int part_number) override;
  // Ranges are read through the cache (Get), never streamed past it.
  Status ReadRangeTo(std::string_view key, std::string_view etag, uint64_t offset, uint64_t length,
                     const object::RangeConsumer& consume) override {
    return object::ObjectStore::ReadRangeTo(key, etag, offset, length, consume);
  }
  object::StoreCapabilities Capabilities() const override;

 private:
  friend class ReadStream;
  struct MetaEntry {
    object::ObjectInfo info;
    TimePoint expires;
    bool listed = false;       // from a List: info.metadata unknown, so Head/OpenStream ask the backend
    int64_t validated_ms = 0;  // unix ms of the store's answer (journaled: TTLs survive a restart)
  };
  // The known keys of one directory a LIST revalidates together.
  struct Window {
    std::string dir;          // the LIST's prefix (up to the last '/')
    std::string start_after;  // just before the earliest expired entry
  };
  struct PartsEntry {                          // one version of a multipart object
    std::vector<uint64_t> sizes;               // all of its parts, when known
    std::map<int, object::PartRange> answers;  // the backend's, by part number
  };
  struct ListEntry {
    object::ListOptions options;
    object::ListResult result;
    TimePoint expires;
  };

  // need_metadata: a List entry (no metadata) does not answer.
  Result<object::ObjectInfo> Meta(const std::string& key, bool refresh, bool need_metadata = true);
  // A HEAD (or the bulk revalidation of a known, expired entry), given up after `timeout`.
  Result<object::ObjectInfo> BoundedLookup(const std::string& key, bool known, bool need_metadata, Duration timeout);
  Result<object::ObjectInfo> HeadNow(const std::string& key);
  // An expired entry's version, confirmed by a LIST of its window (see the
  // header comment), else by a HEAD.
  Result<object::ObjectInfo> Revalidate(const std::string& key, bool need_metadata);
  std::optional<Window> ExpiredWindowLocked(const std::string& key) REQUIRES(meta_mu_);
  Status ListWindow(const Window& window);
  // The full entry (metadata known) of this version of `key`, if any.
  std::optional<object::ObjectInfo> FullMeta(const std::string& key, const std::string& etag);
  // What a fill's GET said of the version it read (metadata included).
  void RememberFetched(const object::ObjectInfo& info, uint64_t generation);
  void LoadJournal();
  void JournalLocked(const MetaEntry& entry) REQUIRES(meta_mu_);
  void ClearMetaLocked() REQUIRES(meta_mu_);
  int64_t WallMs() const;
  Result<Buffer> BoundedBlock(const std::string& key, const object::ObjectInfo& info, uint64_t index, bool prefetch);
  void RememberMeta(const object::ObjectInfo& info, uint64_t generation, bool listed = false);
  void Invalidate(const std::string& key);
  void RememberParts(const std::string& key, const std::string& etag, std::vector<uint64_t> sizes,
                     std::optional<object::PartRange> answer, int part_number);
  // The bytes [begin, end) of one version of an object.
  Result<Buffer> ReadRange(const std::string& key, const object::ObjectInfo& info, uint64_t begin, uint64_t end);
  Result<Buffer> FetchBlock(const std::string& key, const object::ObjectInfo& info, uint64_t index, uint64_t length);
  Result<Buffer> GetBlock(const std::string& key, const object::ObjectInfo& info, uint64_t index, bool prefetch,
                          bool warm = false);
  BlockId MakeBlockId(const std::string& key, const object::ObjectInfo& info, uint64_t index) const;
  uint64_t BlockLength(const object::ObjectInfo& info, uint64_t index) const;
  void Readahead(const std::string& key, const object::ObjectInfo& info, ReadaheadState& state, uint64_t begin,
                 uint64_t end);
  // Queues fills of blocks [first, end) on the pool within the budget; the
  // index of the first block not issued (end when all were).
  uint64_t IssueBlocks(const std::string& key, const object::ObjectInfo& info, uint64_t first, uint64_t end,
                       size_t* issued = nullptr);
  ReadaheadState& TrackedStreamLocked(const std::string& key) REQUIRES(streams_mu_);

  std::shared_ptr<BlockCache> cache_;
  std::shared_ptr<BlockRouter> router_;  // set before reads, then read-only
  CachedStoreOptions options_;
  Clock& clock_;
  const std::string url_;  // the backend's, named in block ids
  const uint64_t block_size_;

  MetaJournal* journal_;  // the cache's (null: no disk tier)
  Mutex meta_mu_;
  std::map<std::string, MetaEntry> meta_ GUARDED_BY(meta_mu_);   // ordered: revalidation lists key ranges
  std::map<std::string, ListEntry> lists_ GUARDED_BY(meta_mu_);  // by encoded ListOptions
  // By key + '\0' + ETag: an ETag names one content, so entries never go stale.
  std::unordered_map<std::string, PartsEntry> parts_ GUARDED_BY(meta_mu_);
  std::atomic<uint64_t> write_generation_{0};
  SingleFlight<std::string, Result<object::ObjectInfo>> head_flights_;
  SingleFlight<std::string, Status> list_flights_;  // by directory

  Mutex streams_mu_;
  std::list<std::pair<std::string, ReadaheadState>> stream_lru_ GUARDED_BY(streams_mu_);
  std::unordered_map<std::string, std::list<std::pair<std::string, ReadaheadState>>::iterator> streams_
      GUARDED_BY(streams_mu_);

  ReadaheadBudget budget_;
  Mutex ra_mu_;
  CondVar ra_cv_;
  size_t ra_pending_ GUARDED_BY(ra_mu_) = 0;
  std::atomic<uint64_t> fetch_gets_{0}, fetch_in_flight_{0}, fetch_peak_{0};
  // Backend calls with bounded waits (backend_timeout, serve_stale): grows with demand, so it
  // never caps concurrent fetches or spends a call's deadline in a queue.
  std::unique_ptr<Executor> wait_pool_;
  std::unique_ptr<ThreadPool> pool_;  // last: destroyed (drained) first
};

}  // namespace strata::cache

#include "cache/block_cache.h"

#include <algorithm>

#include "base/log.h"

namespace strata::cache {
namespace {
uint64_t FileBytesOf(const CachedBlock& block) { return kBlockHeaderSize + block.data.size(); }
}  // namespace

BlockCache::BlockCache(CacheOptions options)
    : options_(std::move(options)),
      clock_(options_.clock ? *options_.clock : RealClock()),
      pins_(options_.pinned_prefixes) {
  ram_ = std::make_unique<RamTier>(options_.ram_bytes, &metrics_.ram_occupancy());
}

BlockCache::~BlockCache() {
  writer_.reset();  // the queued writes use the tiers: done before they go
}

Result<std::shared_ptr<BlockCache>> BlockCache::Open(CacheOptions options, DiskOpenReport* report) {
  if (options.block_size < 4096 || options.block_size > (64ull << 20)) {
    return InvalidArgumentError("cache block size must be between 4 KiB and 64 MiB");
  }
  std::shared_ptr<BlockCache> cache(new BlockCache(std::move(options)));
  if (!cache->options_.dir.empty()) {
    DiskTierOptions d;
    d.dir = cache->options_.dir;
    d.capacity_bytes = cache->options_.disk_bytes;
    d.min_free = cache->options_.disk_min_free;
    d.floor_check_interval = cache->options_.disk_floor_check_interval;
    d.high_watermark = cache->options_.high_watermark;
    d.low_watermark = cache->options_.low_watermark;
    d.fs = cache->options_.fs;
    d.clock = cache->options_.clock;
    d.direct_io = cache->options_.direct_io;
    d.read_part_bytes = cache->options_.disk_read_part_bytes;
    d.read_only = cache->options_.read_only;
    d.sealer = cache->options_.sealer;
    d.headers_only = cache->options_.headers_only;
    STRATA_ASSIGN_OR_RETURN(cache->disk_, DiskTier::Open(d, &cache->metrics_, report));
    // Metadata is a convenience: a journal that cannot be opened costs revalidations, not the cache.
    io::FileSystem& fs = cache->options_.fs ? *cache->options_.fs : io::DefaultFileSystem();
    auto journal = MetaJournal::Open(fs, io::JoinPath(d.dir, "meta.journal"), d.read_only);
    if (journal.ok()) {
      cache->journal_ = std::move(journal).value();
    } else {
      STRATA_LOG_WARN("cache: object metadata of {} not kept across restarts: {}", d.dir, journal.status().ToString());
    }
    cache->disk_->Repin([c = cache.get()](const BlockId& id) { return c->IsPinned(id); });
    if (!d.read_only && cache->options_.disk_admission) {
      cache->sketch_ = std::make_unique<FrequencySketch>(d.capacity_bytes / (cache->options_.block_size + 4096) + 1);
    }
    if (!d.read_only && cache->options_.disk_write_queue_bytes > 0) {
      cache->writer_ = std::make_unique<WriteBehind>(
          WriteBehindOptions{.max_bytes = cache->options_.disk_write_queue_bytes, .name = "strata-cache-wb"});
    }
  }
  return cache;
}

int64_t BlockCache::NowMs() const {
  return std::chrono::duration_cast<std::chrono::milliseconds>(clock_.WallNow().time_since_epoch()).count();
}

bool BlockCache::Expired(int64_t created_ms) const {
  if (options_.ttl.count() <= 0) return false;
  return NowMs() - created_ms >= std::chrono::duration_cast<std::chrono::milliseconds>(options_.ttl).count();
}

bool BlockCache::IsPinned(const BlockId& id) const {
  MutexLock lock(pin_mu_);
  return std::any_of(pins_.begin(), pins_.end(), [&](const std::string& p) { return id.key.starts_with(p); });
}

void BlockCache::CountHit(CacheCounter tier, CacheCounter bytes_counter, const CachedBlock& block,
                          const GetBlockOptions& options) {
  if (options.prefetch) return;  // read-ahead touching a cached block is not a reader's hit
  metrics_.Inc(tier);
  metrics_.Inc(bytes_counter, block.data.size());
  if (block.prefetched) metrics_.Inc(CacheCounter::kReadaheadHits);
}

Result<Buffer> BlockCache::Get(const BlockId& id, uint64_t length, const Fetcher& fetch,
                               const GetBlockOptions& options) {
  const BlockHash h = HashBlockId(id);
  if (sketch_ && !options.prefetch) sketch_->Increment(h.lo);  // a reader's access (read-ahead anticipates one)
  if (auto block = ram_->Get(h)) {
    if (!Expired(block->created_ms) && block->data.size() == length) {
      CountHit(CacheCounter::kRamHits, CacheCounter::kBytesFromRam, *block, options);
      return block->data;
    }
    ram_->Remove(h);
    if (disk_) disk_->Remove(h);
    metrics_.Inc(CacheCounter::kExpired);
  }
  bool joined = false;
  auto result = flights_.Do(
      h, [&]() -> Result<Buffer> { return Fill(h, id, length, fetch, options); }, &joined);
  if (joined && !options.prefetch) {
    metrics_.Inc(CacheCounter::kSingleFlightJoins);
    if (result.ok()) {
      metrics_.Inc(CacheCounter::kRamHits);  // served from memory another caller filled
      metrics_.Inc(CacheCounter::kBytesFromRam, result->size());
    }
  }
  return result;
}

Result<Buffer> BlockCache::Fill(const BlockHash& h, const BlockId& id, uint64_t length, const Fetcher& fetch,
                                const GetBlockOptions& options) {
  // Another caller may have filled it between our RAM miss and taking the flight.
  if (auto block = ram_->Get(h); block && block->data.size() == length && !Expired(block->created_ms)) {
    CountHit(CacheCounter::kRamHits, CacheCounter::kBytesFromRam, *block, options);
    return block->data;
  }
  if (auto queued = PendingData(h, length)) {  // still on its way to the disk
    if (!options.prefetch) {
      metrics_.Inc(CacheCounter::kRamHits);
      metrics_.Inc(CacheCounter::kBytesFromRam, length);
    }
    return *queued;
  }
  if (disk_) {
    auto block = disk_->Read(h, id, length);
    if (block.ok() && Expired(block->created_ms)) {
      disk_->Remove(h);
      metrics_.Inc(CacheCounter::kExpired);
    } else if (block.ok()) {
      CountHit(CacheCounter::kDiskHits, CacheCounter::kBytesFromDisk, *block, options);
      Buffer data = block->data;
      std::vector<CachedBlock> evicted;
      block->prefetched = options.prefetch;  // read ahead from disk: its reader's hit counts as read-ahead's
      if (ram_->Put(h, std::move(*block), IsPinned(id), &evicted)) Demote(std::move(evicted));
      return data;
    }
  }
  auto fetched = fetch();
  if (!fetched.ok()) {
    metrics_.Inc(CacheCounter::kBackendErrors);
    return fetched.status().WithContext("fetching block " + std::to_string(id.index) + " of " + id.key);
  }
  if (fetched->size() != length) {
    metrics_.Inc(CacheCounter::kBackendErrors);
    return UnavailableError("backend returned " + std::to_string(fetched->size()) + " bytes for block " +
                            std::to_string(id.index) + " of " + id.key + ", expected " + std::to_string(length) +
                            " (truncated body?); nothing cached");
  }
  if (!options.prefetch) metrics_.Inc(CacheCounter::kMisses);
  metrics_.Inc(CacheCounter::kBytesFromBackend, length);
  Store(h, CachedBlock{id, *fetched, NowMs(), options.prefetch, options.ram_only}, options);
  return fetched;
}

void BlockCache::Store(const BlockHash& h, CachedBlock block, const GetBlockOptions& options) {
  const bool pinned = IsPinned(block.id);
  if (options.ram_only) {
    std::vector<CachedBlock> evicted;
    if (ram_->Put(h, std::move(block), pinned, &evicted)) Demote(std::move(evicted));
    return;
  }
  const bool write =
      disk_ && !options_.read_only && (options_.write_through || options_.ram_bytes == 0 || options.warm);
  if (write) WriteToDisk(h, block, pinned, options.warm);
  std::vector<CachedBlock> evicted;
  if (ram_->Put(h, block, pinned, &evicted)) {
    Demote(std::move(evicted));
  } else if (!write && disk_ && !options_.read_only) {
    Demote({std::move(block)});
  }
}

void BlockCache::Demote(std::vector<CachedBlock> evicted) {
  for (auto& block : evicted) {
    metrics_.Inc(CacheCounter::kRamEvictions);
    BlockHash h = HashBlockId(block.id);
    if (!disk_ || options_.read_only || block.ram_only) {
      if (block.prefetched) metrics_.Inc(CacheCounter::kReadaheadWasted);
      continue;
    }
    if (!disk_->Contains(h)) WriteToDisk(h, block, IsPinned(block.id));
  }
}

// Evicts for the new block only blocks read less often lately (no filter
// without admission: LRU).
Status BlockCache::WriteAdmitted(const BlockHash& h, const CachedBlock& block, bool pinned, bool warm) {
  if (!sketch_ || warm) return disk_->Write(h, block, pinned);
  const uint32_t freq = sketch_->Estimate(h.lo);
  return disk_->Write(h, block, pinned, [&](const BlockHash& victim) { return sketch_->Estimate(victim.lo) < freq; });
}

void BlockCache::WriteToDisk(const BlockHash& h, const CachedBlock& block, bool pinned, bool warm) {
  if (!writer_ || warm) {
    Status st = WriteAdmitted(h, block, pinned, warm);
    if (!st.ok()) STRATA_LOG_DEBUG("cache: block of {} not written to disk: {}", block.id.key, st.ToString());
    return;
  }
  auto p = std::make_shared<PendingWrite>(PendingWrite{block, pinned});
  {
    MutexLock lock(pending_mu_);
    if (!pending_.emplace(h, p).second) return;  // already on its way
  }
  if (writer_->TryQueue(FileBytesOf(block), [this, h, p] { WritePending(h, p); })) return;
  {
    MutexLock lock(pending_mu_);
    pending_.erase(h);
  }
  metrics_.Inc(CacheCounter::kDiskWriteDropped);
}

void BlockCache::WritePending(const BlockHash& h, const std::shared_ptr<PendingWrite>& p) {
  bool cancelled = false;
  {
    MutexLock lock(pending_mu_);
    cancelled = p->cancelled;
  }
  Status st = cancelled ? Status::Ok() : WriteAdmitted(h, p->block, p->pinned);
  if (!st.ok()) STRATA_LOG_DEBUG("cache: block of {} not written to disk: {}", p->block.id.key, st.ToString());
  {
    MutexLock lock(pending_mu_);
    if (auto it = pending_.find(h); it != pending_.end() && it->second == p) pending_.erase(it);
    cancelled = p->cancelled;
  }
  // Invalidated while being written: the file landed after its object's were dropped.
  if (cancelled && st.ok()) disk_->Remove(h);
}

std::optional<Buffer> BlockCache::PendingData(const BlockHash& h, uint64_t length) {
  if (!writer_) return std::nullopt;
  MutexLock lock(pending_mu_);
  auto it = pending_.find(h);
  if (it == pending_.end() || it->second->cancelled || it->second->block.data.size() != length) return std::nullopt;
  return it->second->block.data;
}

void BlockCache::CancelPending(const std::function<bool(const BlockId&)>& pred) {
  if (!writer_) return;
  MutexLock lock(pending_mu_);
  for (auto it = pending_.begin(); it != pending_.end();) {
    if (pred(it->second->block.id)) {
      it->second->cancelled = true;
      it = pending_.erase(it);
    } else {
      ++it;
    }
  }
}

void BlockCache::Flush() {
  if (writer_) writer_->Drain();
  if (journal_) {
    Status st = journal_->Flush();
    if (!st.ok()) STRATA_LOG_WARN("cache: metadata journal not written: {}", st.ToString());
  }
}

bool BlockCache::Contains(const BlockId& id) const {
  BlockHash h = HashBlockId(id);
  if (ram_->Contains(h) || (disk_ && disk_->Contains(h))) return true;
  if (!writer_) return false;
  MutexLock lock(pending_mu_);
  return pending_.contains(h);
}

bool BlockCache::InFlight(const BlockId& id) const { return flights_.InFlight(HashBlockId(id)); }

void BlockCache::InvalidateObject(const std::string& store, const std::string& key) {
  std::string object = ObjectKeyOf(store, key);
  CancelPending([&](const BlockId& id) { return id.store == store && id.key == key; });
  size_t n = ram_->RemoveObject(object).size();
  if (disk_ && !options_.read_only) n += disk_->RemoveObject(object);
  if (n) metrics_.Inc(CacheCounter::kInvalidations, n);
}

size_t BlockCache::EvictPrefix(const std::string& prefix) {
  auto match = [&](const BlockId& id) { return id.key.starts_with(prefix); };
  CancelPending(match);
  size_t n = ram_->RemoveIf(match).size();
  if (disk_ && !options_.read_only) n += disk_->RemoveIf(match);
  return n;
}

void BlockCache::Pin(const std::string& prefix) {
  {
    MutexLock lock(pin_mu_);
    if (std::find(pins_.begin(), pins_.end(), prefix) == pins_.end()) pins_.push_back(prefix);
  }
  auto pred = [this](const BlockId& id) { return IsPinned(id); };
  ram_->Repin(pred);
  if (disk_) disk_->Repin(pred);
}

void BlockCache::Unpin(const std::string& prefix) {
  {
    MutexLock lock(pin_mu_);
    pins_.erase(std::remove(pins_.begin(), pins_.end(), prefix), pins_.end());
  }
  auto pred = [this](const BlockId& id) { return IsPinned(id); };
  ram_->Repin(pred);
  if (disk_) disk_->Repin(pred);
}

CacheStats BlockCache::Stats() const {
  CacheStats s;
  for (size_t i = 0; i < s.counters.size(); ++i) s.counters[i] = metrics_.Get(static_cast<CacheCounter>(i));
  s.ram_bytes = ram_->bytes();
  s.ram_capacity = ram_->capacity();
  s.ram_blocks = ram_->blocks();
  if (disk_) {
    s.disk_bytes = disk_->bytes();
    s.disk_capacity = disk_->capacity();
    s.disk_blocks = disk_->blocks();
  }
  return s;
}

}  // namespace strata::cache

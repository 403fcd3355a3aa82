#include "cache/cached_store.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <optional>

#include "base/elastic_pool.h"
#include "base/log.h"
#include "cache/bounded_call.h"
#include "object/list_util.h"

namespace strata::cache {

CachedStore::CachedStore(object::ObjectStorePtr backend, std::shared_ptr<BlockCache> cache, CachedStoreOptions options)
    : object::StoreWrapper(std::move(backend)),
      cache_(std::move(cache)),
      options_(options),
      clock_(options.clock ? *options.clock : RealClock()),
      url_(base_->Url()),
      block_size_(cache_->options().block_size),
      journal_(cache_->journal()),
      budget_(options.readahead_global_bytes) {
  LoadJournal();
  if (options_.readahead_threads > 0) {
    pool_ = std::make_unique<ThreadPool>(options_.readahead_threads, "strata-readahead");
  }
  if (options_.backend_timeout.count() > 0 || options_.serve_stale) {
    // Up to one thread per concurrent backend call; idle ones leave after 10 s.
    wait_pool_ = std::make_unique<ElasticThreadPool>(kMaxWaitThreads, std::chrono::seconds(10), "strata-cache-wait");
  }
}

CachedStore::~CachedStore() {
  WaitForReadahead();
  pool_.reset();
  wait_pool_.reset();  // waits for calls given up on (a backend still hung holds this)
}

void CachedStore::WaitForReadahead() {
  MutexLock lock(ra_mu_);
  ra_cv_.Wait(lock, [&]() REQUIRES(ra_mu_) { return ra_pending_ == 0; });
}

Result<Buffer> CachedStore::BoundedBlock(const std::string& key, const object::ObjectInfo& info, uint64_t index,
                                         bool prefetch) {
  if (options_.backend_timeout.count() <= 0 || !wait_pool_ || cache_->Contains(MakeBlockId(key, info, index))) {
    return GetBlock(key, info, index, prefetch);  // cached: no backend wait
  }
  auto r = RunBounded<Buffer>(
      *wait_pool_, options_.backend_timeout,
      [this, key, info, index, prefetch] { return GetBlock(key, info, index, prefetch); },
      "reading block " + std::to_string(index) + " of " + key);
  if (r.status().code() == Code::kDeadlineExceeded) cache_->metrics().Inc(CacheCounter::kBackendTimeouts);
  return r;
}

// ---- reads ----

BlockId CachedStore::MakeBlockId(const std::string& key, const object::ObjectInfo& info, uint64_t index) const {
  return BlockId{url_, key, info.etag, block_size_, index};
}

uint64_t CachedStore::BlockLength(const object::ObjectInfo& info, uint64_t index) const {
  uint64_t offset = index * block_size_;
  return std::min(block_size_, info.size - offset);
}

Result<Buffer> CachedStore::FetchBlock(const std::string& key, const object::ObjectInfo& info, uint64_t index,
                                       uint64_t length) {
  const uint64_t offset = index * block_size_;
  const uint64_t generation = write_generation_.load();
  const uint64_t part = options_.fetch_part_size ? options_.fetch_part_size : length;
  const size_t parts = static_cast<size_t>((length + part - 1) / part);
  auto get_part = [&](uint64_t off, uint64_t len) -> Result<object::GetResult> {
    object::GetOptions o;
    o.range = object::ByteRange::Of(off, len);
    o.if_match = info.etag;
    ++fetch_gets_;
    const uint64_t now_in_flight = ++fetch_in_flight_;
    for (uint64_t peak = fetch_peak_.load(); now_in_flight > peak;) {
      if (fetch_peak_.compare_exchange_weak(peak, now_in_flight)) break;
    }
    auto r = base_->Get(key, o);
    --fetch_in_flight_;
    if (r.ok() && !info.etag.empty() && !r->info.etag.empty() && r->info.etag != info.etag) {
      return PreconditionFailedError(key + " changed while being read (ETag " + r->info.etag + ")");
    }
    if (r.ok() && r->data.size() != len) {
      return UnavailableError("backend returned " + std::to_string(r->data.size()) + " of " + std::to_string(len) +
                              " bytes at offset " + std::to_string(off) + " of " + key);
    }
    if (r.ok() && off == offset && r->info.etag == info.etag && r->info.key == key)
      RememberFetched(r->info, generation);
    return r;
  };
  if (parts <= 1) {
    STRATA_ASSIGN_OR_RETURN(object::GetResult r, get_part(offset, length));
    return std::move(r.data);
  }
  MutableBuffer buf(length);
  std::mutex mu;
  Status first_error;
  ParallelFor(parts, parts, [&](size_t i) {
    uint64_t off = i * part, len = std::min(part, length - off);
    auto r = get_part(offset + off, len);
    if (!r.ok()) {
      std::lock_guard lock(mu);
      if (first_error.ok()) first_error = r.status();
      return;
    }
    std::memcpy(buf.data() + off, r->data.data(), len);
  });
  if (!first_error.ok()) return first_error;
  return std::move(buf).Freeze();
}

Result<Buffer> CachedStore::GetBlock(const std::string& key, const object::ObjectInfo& info, uint64_t index,
                                     bool prefetch, bool warm) {
  uint64_t length = BlockLength(info, index);
  GetBlockOptions o;
  o.prefetch = prefetch;
  o.warm = warm;
  BlockId id = MakeBlockId(key, info, index);
  if (router_ && router_->Remote(id)) {
    o.ram_only = true;
    return cache_->Get(
        id, length,
        [&]() -> Result<Buffer> {
          auto r = router_->FetchRemote(id, length, info.size);
          if (r.ok()) return r;
          return FetchBlock(key, info, index, length);  // the owner failed: the bucket itself
        },
        o);
  }
  return cache_->Get(
      id, length, [&]() { return FetchBlock(key, info, index, length); }, o);
}

Result<Buffer> CachedStore::ServeBlock(const std::string& key, const std::string& etag, uint64_t object_size,
                                       uint64_t index, bool* from_backend) {
  if (from_backend) *from_backend = false;
  STRATA_RETURN_IF_ERROR(object::ValidateKey(key));
  if (index >= (object_size + block_size_ - 1) / block_size_) {
    return InvalidArgumentError("block " + std::to_string(index) + " is past the end of " + key);
  }
  object::ObjectInfo info;
  info.key = key;
  info.etag = etag;
  info.size = object_size;
  const uint64_t length = BlockLength(info, index);
  return cache_->Get(MakeBlockId(key, info, index), length, [&]() {
    if (from_backend) *from_backend = true;
    return FetchBlock(key, info, index, length);
  });
}

Result<Buffer> CachedStore::ReadRange(const std::string& key, const object::ObjectInfo& info, uint64_t begin,
                                      uint64_t end) {
  if (begin >= end) return Buffer();
  const uint64_t first = begin / block_size_, last = (end - 1) / block_size_;
  if (first == last) {
    STRATA_ASSIGN_OR_RETURN(Buffer block, BoundedBlock(key, info, first, false));
    return block.Slice(begin - first * block_size_, end - begin);  // zero copy
  }
  const size_t n = last - first + 1;
  std::vector<Result<Buffer>> blocks(n, Result<Buffer>(InternalError("block not read")));
  std::vector<size_t> missing;
  for (size_t i = 0; i < n; ++i) {
    if (cache_->Contains(MakeBlockId(key, info, first + i))) {
      blocks[i] = GetBlock(key, info, first + i, false);
    } else {
      missing.push_back(i);
    }
  }
  ParallelFor(missing.size(), options_.max_parallel_blocks,
              [&](size_t j) { blocks[missing[j]] = BoundedBlock(key, info, first + missing[j], false); });
  std::vector<Buffer> parts;
  parts.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    if (!blocks[i].ok()) return blocks[i].status();
    uint64_t block_begin = (first + i) * block_size_;
    uint64_t lo = std::max(begin, block_begin) - block_begin;
    uint64_t hi = std::min(end, block_begin + blocks[i]->size()) - block_begin;
    parts.push_back(blocks[i]->Slice(lo, hi - lo));
  }
  return Concat(parts);
}

void CachedStore::Readahead(const std::string& key, const object::ObjectInfo& info, ReadaheadState& state,
                            uint64_t begin, uint64_t end) {
  ReadaheadPlan plan = PlanReadahead(state, begin, end, info.size, block_size_, options_.readahead_max_window);
  if (plan.first_block >= plan.end_block) return;
  uint64_t stopped = IssueBlocks(key, info, plan.first_block, plan.end_block);
  if (stopped < plan.end_block) state.issued_until = stopped;  // retry these on the next sequential read
}

uint64_t CachedStore::IssueBlocks(const std::string& key, const object::ObjectInfo& info, uint64_t first, uint64_t end,
                                  size_t* issued) {
  if (!pool_) return end;
  // A block only on disk is read into RAM ahead too (when there is a RAM
  // tier): after a restart every block is there, and a reader would
  // otherwise wait on each disk read and checksum in turn.
  const bool promote = cache_->ram().capacity() > 0;
  for (uint64_t index = first; index < end; ++index) {
    BlockId id = MakeBlockId(key, info, index);
    if ((promote ? cache_->InRam(id) : cache_->Contains(id)) || cache_->InFlight(id)) continue;
    uint64_t length = BlockLength(info, index);
    if (!budget_.TryAcquire(length)) {
      cache_->metrics().Inc(CacheCounter::kReadaheadThrottled, end - index);
      return index;
    }
    cache_->metrics().Inc(CacheCounter::kReadaheadIssued);
    if (issued) ++*issued;
    {
      MutexLock lock(ra_mu_);
      ++ra_pending_;
    }
    pool_->Submit([this, key, info, index, length] {
      auto r = GetBlock(key, info, index, true);
      if (!r.ok())
        STRATA_LOG_DEBUG("cache: read-ahead of block {} of {} failed: {}", index, key, r.status().ToString());
      budget_.Release(length);
      MutexLock lock(ra_mu_);
      if (--ra_pending_ == 0) ra_cv_.NotifyAll();
    });
  }
  return end;
}

size_t CachedStore::Prefetch(std::string_view key, const object::ObjectInfo& known, uint64_t max_bytes) {
  if (!object::ValidateKey(key).ok() || known.size == 0 || max_bytes == 0) return 0;
  object::ObjectInfo info = known;
  info.key = std::string(key);
  const uint64_t bytes = std::min(info.size, max_bytes);
  size_t issued = 0;
  IssueBlocks(info.key, info, 0, (bytes + block_size_ - 1) / block_size_, &issued);
  return issued;
}

ReadaheadState& CachedStore::TrackedStreamLocked(const std::string& key) {
  auto it = streams_.find(key);
  if (it != streams_.end()) {
    stream_lru_.splice(stream_lru_.begin(), stream_lru_, it->second);
    return it->second->second;
  }
  if (streams_.size() >= std::max<size_t>(1, options_.max_tracked_streams)) {
    streams_.erase(stream_lru_.back().first);
    stream_lru_.pop_back();
  }
  stream_lru_.emplace_front(key, ReadaheadState{});
  streams_[key] = stream_lru_.begin();
  return stream_lru_.front().second;
}

Result<object::GetResult> CachedStore::Get(std::string_view key_view, const object::GetOptions& options) {
  STRATA_RETURN_IF_ERROR(object::ValidateKey(key_view));
  std::string key(key_view);
  for (int attempt = 0;; ++attempt) {
    // A listed entry (no metadata) will do to read: the fill's GET brings the metadata.
    STRATA_ASSIGN_OR_RETURN(object::ObjectInfo info, Meta(key, attempt > 0, /*need_metadata=*/false));
    Status cond = object::CheckGetConditions(options, info);
    if (!cond.ok() && attempt == 0) continue;  // the cached metadata may be stale: ask the backend
    STRATA_RETURN_IF_ERROR(cond);
    uint64_t begin = 0, end = 0;
    STRATA_RETURN_IF_ERROR(object::ResolveRange(options.range, info.size, &begin, &end));
    auto data = ReadRange(key, info, begin, end);
    if (!data.ok() && data.status().code() == Code::kPreconditionFailed && attempt == 0) continue;
    if (!data.ok()) return data.status();
    if (options_.metadata_ttl.count() > 0) {
      if (auto full = FullMeta(key, info.etag)) {
        info = std::move(*full);
      } else {  // listed, and every block was cached: the metadata costs a HEAD
        STRATA_ASSIGN_OR_RETURN(object::ObjectInfo head, Meta(key, /*refresh=*/true));
        if (head.etag != info.etag) {
          if (attempt == 0) continue;
          return UnavailableError(key + " changed while being read; retry");
        }
        info = std::move(head);
      }
    }
    {
      MutexLock lock(streams_mu_);
      ReadaheadState state = TrackedStreamLocked(key);
      Readahead(key, info, state, begin, end);
      TrackedStreamLocked(key) = state;
    }
    return object::GetResult{info, begin, std::move(data).value()};
  }
}

Result<std::unique_ptr<ReadStream>> CachedStore::OpenStream(std::string_view key) {
  STRATA_RETURN_IF_ERROR(object::ValidateKey(key));
  STRATA_ASSIGN_OR_RETURN(object::ObjectInfo info, Meta(std::string(key), false));
  return std::unique_ptr<ReadStream>(new ReadStream(this, std::string(key), std::move(info)));
}

Result<std::unique_ptr<ReadStream>> CachedStore::OpenStream(std::string_view key, const object::ObjectInfo& known) {
  STRATA_RETURN_IF_ERROR(object::ValidateKey(key));
  object::ObjectInfo info = known;
  info.key = std::string(key);
  return std::unique_ptr<ReadStream>(new ReadStream(this, std::string(key), std::move(info)));
}

bool ReadStream::Cached(uint64_t offset, uint64_t length) const {
  if (offset >= info_.size || length == 0) return true;
  const uint64_t end = offset + std::min(length, info_.size - offset), block = store_->block_size_;
  for (uint64_t index = offset / block; index <= (end - 1) / block; ++index) {
    if (!store_->cache_->Contains(store_->MakeBlockId(key_, info_, index))) return false;
  }
  return true;
}

Result<Buffer> ReadStream::Read(uint64_t offset, uint64_t length) {
  if (offset >= info_.size || length == 0) return Buffer();
  uint64_t end = offset + std::min(length, info_.size - offset);
  const uint64_t open_window = store_->options_.open_window;
  const bool opening = open_window > 0 && offset == 0 && state_.next_offset == ReadaheadState::kUnset;
  if (opening) {
    // Read from its start: the rest of the first window is fetched
    // alongside this read, each block on its own connections.
    state_.next_offset = 0;
    state_.window = open_window / 2;  // the planner doubles it
    store_->Readahead(key_, info_, state_, 0, end);
  }
  auto data = store_->ReadRange(key_, info_, offset, end);
  if (!data.ok() && data.status().code() == Code::kPreconditionFailed) {
    return PreconditionFailedError(key_ + " changed since it was opened; reopen to read the new version");
  }
  if (data.ok() && !opening) store_->Readahead(key_, info_, state_, offset, end);
  return data;
}

Result<uint64_t> CachedStore::Warm(std::string_view key_view) {
  std::string key(key_view);
  STRATA_ASSIGN_OR_RETURN(object::ObjectInfo info, Meta(key, false, /*need_metadata=*/false));
  if (info.size == 0) return uint64_t{0};
  uint64_t blocks = (info.size + block_size_ - 1) / block_size_;
  std::mutex mu;
  Status first_error;
  ParallelFor(blocks, options_.max_parallel_blocks, [&](size_t i) {
    if (cache_->Contains(MakeBlockId(key, info, i))) return;
    auto r = GetBlock(key, info, i, false, /*warm=*/true);
    std::lock_guard lock(mu);
    if (!r.ok() && first_error.ok()) first_error = r.status();
  });
  if (!first_error.ok()) return first_error;
  return info.size;
}

// ---- writes: through to the backend, then invalidate ----

Result<object::ObjectInfo> CachedStore::Put(std::string_view key, Buffer data, const object::PutOptions& options) {
  auto r = base_->Put(key, std::move(data), options);
  Invalidate(std::string(key));
  return r;
}

Status CachedStore::Delete(std::string_view key) {
  Status st = base_->Delete(key);
  Invalidate(std::string(key));
  return st;
}

Result<object::ObjectInfo> CachedStore::CompleteMultipartUpload(std::string_view key, std::string_view upload_id,
                                                                const std::vector<object::CompletedPart>& parts,
                                                                const object::CompleteOptions& options) {
  auto r = base_->CompleteMultipartUpload(key, upload_id, parts, options);
  Invalidate(std::string(key));
  if (r.ok() && !r->part_sizes.empty()) RememberParts(std::string(key), r->etag, r->part_sizes, std::nullopt, 0);
  return r;
}

Result<object::ObjectInfo> CachedStore::Copy(std::string_view src_key, std::string_view dst_key,
                                             const object::CopyOptions& options) {
  auto r = base_->Copy(src_key, dst_key, options);
  Invalidate(std::string(dst_key));
  return r;
}

// ---- ?partNumber= ----

void CachedStore::RememberParts(const std::string& key, const std::string& etag, std::vector<uint64_t> sizes,
                                std::optional<object::PartRange> answer, int part_number) {
  if (etag.empty()) return;
  constexpr size_t kMaxPartsEntries = 1 << 16;  // versions; each holds at most 10000 parts
  MutexLock lock(meta_mu_);
  if (parts_.size() >= kMaxPartsEntries) parts_.clear();
  PartsEntry& e = parts_[key + '\0' + etag];
  if (!sizes.empty()) e.sizes = std::move(sizes);
  if (answer) e.answers[part_number] = *answer;
}

Result<object::PartRange> CachedStore::GetPartRange(std::string_view key, std::string_view etag, int part_number) {
  STRATA_RETURN_IF_ERROR(object::ValidateKey(key));
  if (part_number < 1 || part_number > 10000) {
    return InvalidArgumentError("part number " + std::to_string(part_number) + " is not in 1..10000");
  }
  const std::string k(key);
  STRATA_ASSIGN_OR_RETURN(object::ObjectInfo info, Meta(k, false));
  if (!etag.empty() && info.etag != etag) {  // the cached entry may predate the caller's version
    STRATA_ASSIGN_OR_RETURN(info, Meta(k, true));
    if (info.etag != etag) return PreconditionFailedError(k + " is no longer version " + std::string(etag));
  }
  {
    MutexLock lock(meta_mu_);
    if (auto it = parts_.find(k + '\0' + info.etag); it != parts_.end()) {
      if (info.part_sizes.empty()) info.part_sizes = it->second.sizes;
      if (auto a = it->second.answers.find(part_number); a != it->second.answers.end()) return a->second;
    }
  }
  // Sizes known, or a store that would say so in Head, or not a multipart
  // ETag ("md5-N" on S3 and its clones): answered here.
  if (!info.part_sizes.empty() || base_->Capabilities().part_sizes_kept || info.etag.find('-') == std::string::npos) {
    return object::PartRangeOf(info, part_number);
  }
  auto ask = [this, k, etag = info.etag, part_number]() -> Result<object::PartRange> {
    return base_->GetPartRange(k, etag, part_number);
  };
  Result<object::PartRange> r = InternalError("not asked");
  if (options_.backend_timeout.count() > 0 && wait_pool_) {
    r = RunBounded<object::PartRange>(*wait_pool_, options_.backend_timeout, ask,
                                      "part " + std::to_string(part_number) + " of " + k);
    if (r.status().code() == Code::kDeadlineExceeded) cache_->metrics().Inc(CacheCounter::kBackendTimeouts);
  } else {
    r = ask();
  }
  // Kept only when it describes the version the caller reads.
  if (r.ok() && (r->etag.empty() || r->etag == info.etag) && r->object_size == info.size) {
    r->etag = info.etag;
    RememberParts(k, info.etag, {}, *r, part_number);
  } else if (r.ok()) {
    return UnavailableError(k + " changed while its part " + std::to_string(part_number) + " was looked up; retry");
  }
  return r;
}

object::StoreCapabilities CachedStore::Capabilities() const {
  object::StoreCapabilities caps = base_->Capabilities();
  caps.range_streaming = false;  // reads go through the cache's blocks
  return caps;
}

}  // namespace strata::cache

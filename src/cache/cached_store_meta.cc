// CachedStore's metadata: the Head/List cache, its journal beside the disk
// tier, and the bulk revalidation of expired entries (cached_store.h).
#include <algorithm>
#include <chrono>
#include <unordered_set>

#include "base/log.h"
#include "cache/bounded_call.h"
#include "cache/cached_store.h"

namespace strata::cache {
namespace {

constexpr size_t kWindowKeys = 1000;  // one LIST page

std::string EncodeListOptions(const object::ListOptions& o) {
  std::string s;
  for (const std::string* f : {&o.prefix, &o.delimiter, &o.start_after, &o.continuation_token}) {
    s += std::to_string(f->size()) + ":" + *f;
  }
  return s + std::to_string(o.max_keys);
}

// The LIST prefix naming a key's directory: up to and including its last '/'.
std::string DirOf(const std::string& key) {
  const size_t slash = key.rfind('/');
  return slash == std::string::npos ? std::string() : key.substr(0, slash + 1);
}
// Whether a LIST of `dir` with delimiter '/' shows `key` itself (not folded into a common prefix).
bool ListedIn(const std::string& key, const std::string& dir) {
  return key.size() > dir.size() && key.starts_with(dir) && key.find('/', dir.size()) == std::string::npos;
}
int64_t ToMs(Duration d) { return std::chrono::duration_cast<std::chrono::milliseconds>(d).count(); }

}  // namespace

int64_t CachedStore::WallMs() const {
  return std::chrono::duration_cast<std::chrono::milliseconds>(clock_.WallNow().time_since_epoch()).count();
}

// Entries validated within the TTL before the restart stay fresh for the rest
// of it; older ones are known but expired (revalidated in bulk when read).
void CachedStore::LoadJournal() {
  if (!journal_ || options_.metadata_ttl.count() <= 0) return;
  std::vector<JournalEntry> entries = journal_->Entries(url_);
  const int64_t ttl_ms = ToMs(options_.metadata_ttl), now_ms = WallMs();
  const TimePoint now = clock_.Now();
  MutexLock lock(meta_mu_);
  for (JournalEntry& e : entries) {
    if (meta_.size() >= options_.max_metadata_entries) break;
    // Clamped: a wall clock that stepped back does not stretch the TTL.
    const int64_t left = std::clamp<int64_t>(e.validated_ms + ttl_ms - now_ms, -ttl_ms, ttl_ms);
    std::string key = e.info.key;
    meta_[key] = MetaEntry{std::move(e.info), now + std::chrono::milliseconds(left), e.listed, e.validated_ms};
  }
}

void CachedStore::JournalLocked(const MetaEntry& entry) {
  if (!journal_) return;
  // A version confirmed again within half a TTL is not worth a record.
  journal_->Record(url_, JournalEntry{entry.info, entry.listed, entry.validated_ms}, ToMs(options_.metadata_ttl) / 2);
}

void CachedStore::ClearMetaLocked() {
  meta_.clear();
  if (journal_) journal_->ForgetStore(url_);
}

// ---- lookups ----

Result<object::ObjectInfo> CachedStore::Meta(const std::string& key, bool refresh, bool need_metadata) {
  std::optional<object::ObjectInfo> stale;  // the expired entry, served if revalidation fails
  bool known = false;
  if (!refresh) {
    MutexLock lock(meta_mu_);
    auto it = meta_.find(key);
    if (it != meta_.end() && !(need_metadata && it->second.listed)) {
      if (clock_.Now() < it->second.expires) {
        cache_->metrics().Inc(CacheCounter::kMetaHits);
        return it->second.info;
      }
      known = true;
      if (options_.serve_stale) stale = it->second.info;
    }
  }
  cache_->metrics().Inc(CacheCounter::kMetaMisses);
  if (!stale) return BoundedLookup(key, known, need_metadata, options_.backend_timeout);
  Duration limit = options_.revalidate_timeout;
  if (options_.backend_timeout.count() > 0) limit = std::min(limit, options_.backend_timeout);
  auto info = BoundedLookup(key, known, need_metadata, limit);
  if (info.ok() || info.status().code() == Code::kNotFound) return info;
  cache_->metrics().Inc(CacheCounter::kStaleServed);
  STRATA_LOG_WARN("cache: could not revalidate {} ({}); serving the cached version", key, info.status().ToString());
  return *stale;
}

Result<object::ObjectInfo> CachedStore::BoundedLookup(const std::string& key, bool known, bool need_metadata,
                                                      Duration timeout) {
  std::function<Result<object::ObjectInfo>()> lookup = [this, key, known, need_metadata] {
    return known ? Revalidate(key, need_metadata) : HeadNow(key);
  };
  if (timeout.count() <= 0 || !wait_pool_) return lookup();
  auto r = RunBounded<object::ObjectInfo>(*wait_pool_, timeout, lookup, "looking up " + key);
  if (r.status().code() == Code::kDeadlineExceeded) cache_->metrics().Inc(CacheCounter::kBackendTimeouts);
  return r;
}

Result<object::ObjectInfo> CachedStore::HeadNow(const std::string& key) {
  const uint64_t generation = write_generation_.load();
  return head_flights_.Do(key, [&]() -> Result<object::ObjectInfo> {
    auto info = base_->Head(key);
    if (info.ok()) RememberMeta(*info, generation);
    return info;
  });
}

Result<object::ObjectInfo> CachedStore::Revalidate(const std::string& key, bool need_metadata) {
  // Two windows at most: a LIST joined from another reader may have covered
  // other keys than this one; past that, a HEAD.
  for (int round = 0; round < 2; ++round) {
    std::optional<Window> window;
    {
      MutexLock lock(meta_mu_);
      window = ExpiredWindowLocked(key);
    }
    if (!window) break;
    STRATA_RETURN_IF_ERROR(list_flights_.Do(window->dir, [&] { return ListWindow(*window); }));
    MutexLock lock(meta_mu_);
    auto it = meta_.find(key);
    if (it == meta_.end()) break;  // not in the listing (gone?): the HEAD says
    if (clock_.Now() < it->second.expires) {
      if (need_metadata && it->second.listed) break;  // a new version: its metadata needs the HEAD
      return it->second.info;
    }
  }
  return HeadNow(key);
}

// The LIST that revalidates `key` with its neighbours: its directory from
// the earliest expired entry before it, so that the one page (1,000 keys)
// covers as many expired entries as it can. None when `key` is the only
// expired entry there (a HEAD is the cheaper request then) or names a directory.
std::optional<CachedStore::Window> CachedStore::ExpiredWindowLocked(const std::string& key) {
  const std::string dir = DirOf(key);
  auto it = meta_.find(key);
  if (it == meta_.end() || !ListedIn(key, dir)) return std::nullopt;
  const TimePoint now = clock_.Now();
  auto first = it;
  size_t keys = 1, expired = 1;
  while (first != meta_.begin() && keys < kWindowKeys) {
    auto prev = std::prev(first);
    if (!ListedIn(prev->first, dir) || now < prev->second.expires) break;
    first = prev;
    ++keys;
    ++expired;
  }
  for (auto next = std::next(it); next != meta_.end() && keys < kWindowKeys && ListedIn(next->first, dir);
       ++next, ++keys) {
    if (next->second.expires <= now) ++expired;
  }
  if (expired < 2) return std::nullopt;
  // Just before the first key: nothing lies between it and the key but names
  // that start with it too, which the listing then shows as well.
  return Window{dir, first->first.substr(0, first->first.size() - 1)};
}

Status CachedStore::ListWindow(const Window& window) {
  const uint64_t generation = write_generation_.load();
  object::ListOptions o;
  o.prefix = window.dir;
  o.delimiter = "/";
  o.start_after = window.start_after;
  o.max_keys = static_cast<int>(kWindowKeys);
  STRATA_ASSIGN_OR_RETURN(object::ListResult page, base_->List(o));
  std::unordered_set<std::string> shown;
  for (const auto& obj : page.objects) {
    shown.insert(obj.key);
    if (!obj.etag.empty()) RememberMeta(obj, generation, /*listed=*/true);
  }
  // Known entries the listing passed over are gone: forgotten (a later
  // lookup asks the store itself). A truncated page covers up to its last name.
  std::string last;
  if (page.truncated) {
    if (!page.objects.empty()) last = page.objects.back().key;
    if (!page.common_prefixes.empty()) last = std::max(last, page.common_prefixes.back());
    if (last.empty()) return Status::Ok();
  }
  MutexLock lock(meta_mu_);
  if (write_generation_.load() != generation) return Status::Ok();
  for (auto it = meta_.upper_bound(window.start_after); it != meta_.end() && it->first.starts_with(window.dir);) {
    if (page.truncated && it->first > last) break;
    if (ListedIn(it->first, window.dir) && !shown.contains(it->first)) {
      if (journal_) journal_->Forget(url_, it->first);
      it = meta_.erase(it);
    } else {
      ++it;
    }
  }
  return Status::Ok();
}

std::optional<object::ObjectInfo> CachedStore::FullMeta(const std::string& key, const std::string& etag) {
  MutexLock lock(meta_mu_);
  auto it = meta_.find(key);
  if (it == meta_.end() || it->second.listed || it->second.info.etag != etag) return std::nullopt;
  return it->second.info;
}

// ---- remembering ----

void CachedStore::RememberMeta(const object::ObjectInfo& info, uint64_t generation, bool listed) {
  if (options_.metadata_ttl.count() <= 0) return;
  MutexLock lock(meta_mu_);
  // A write since the lookup started may have made this answer stale.
  if (write_generation_.load() != generation) return;
  const TimePoint expires = clock_.Now() + options_.metadata_ttl;
  const int64_t now_ms = WallMs();
  if (listed) {
    // A listing that shows the same ETag and Last-Modified (in seconds: a
    // listing has milliseconds, HEAD seconds) revalidates a full entry,
    // metadata included. Metadata changes with a write (a new ETag) or a copy
    // onto itself (a new Last-Modified, same ETag: chmod by another client).
    using std::chrono::duration_cast;
    using std::chrono::seconds;
    auto it = meta_.find(info.key);
    if (it != meta_.end() && !it->second.listed && it->second.info.etag == info.etag &&
        duration_cast<seconds>(it->second.info.mtime.time_since_epoch()) ==
            duration_cast<seconds>(info.mtime.time_since_epoch())) {
      it->second.expires = expires;
      it->second.validated_ms = now_ms;
      JournalLocked(it->second);
      return;
    }
  }
  if (meta_.size() >= options_.max_metadata_entries) ClearMetaLocked();
  MetaEntry& e = meta_[info.key];
  e = MetaEntry{info, expires, listed, now_ms};
  JournalLocked(e);
}

// A fill's GET (If-Match this version) answers with the object's metadata:
// a listed entry of that version becomes a full one, and a version read
// through a known-info stream is remembered, so no HEAD is needed later.
void CachedStore::RememberFetched(const object::ObjectInfo& info, uint64_t generation) {
  if (options_.metadata_ttl.count() <= 0 || info.etag.empty()) return;
  MutexLock lock(meta_mu_);
  if (write_generation_.load() != generation) return;
  auto it = meta_.find(info.key);
  if (it != meta_.end() && (!it->second.listed || it->second.info.etag != info.etag)) return;
  if (it == meta_.end()) {
    if (meta_.size() >= options_.max_metadata_entries) return;
    it = meta_.emplace(info.key, MetaEntry{info, clock_.Now() + options_.metadata_ttl, false, WallMs()}).first;
  } else if (it->second.info.size != info.size) {
    return;
  } else {
    it->second.info = info;
    it->second.listed = false;
  }
  JournalLocked(it->second);
}

void CachedStore::InvalidateMetadata() {
  MutexLock lock(meta_mu_);
  ++write_generation_;
  ClearMetaLocked();
  lists_.clear();
}

void CachedStore::Invalidate(const std::string& key) {
  {
    MutexLock lock(meta_mu_);
    ++write_generation_;
    if (meta_.erase(key) && journal_) journal_->Forget(url_, key);
    for (auto it = lists_.begin(); it != lists_.end();) {
      if (key.starts_with(it->second.options.prefix))
        it = lists_.erase(it);
      else
        ++it;
    }
  }
  {
    MutexLock lock(streams_mu_);
    if (auto it = streams_.find(key); it != streams_.end()) {
      stream_lru_.erase(it->second);
      streams_.erase(it);
    }
  }
  cache_->InvalidateObject(url_, key);
}

Result<object::ObjectInfo> CachedStore::Head(std::string_view key) {
  STRATA_RETURN_IF_ERROR(object::ValidateKey(key));
  return Meta(std::string(key), false);
}

Result<object::ListResult> CachedStore::List(const object::ListOptions& options) {
  std::string enc = EncodeListOptions(options);
  {
    MutexLock lock(meta_mu_);
    auto it = lists_.find(enc);
    if (it != lists_.end() && clock_.Now() < it->second.expires) {
      cache_->metrics().Inc(CacheCounter::kMetaHits);
      return it->second.result;
    }
  }
  cache_->metrics().Inc(CacheCounter::kMetaMisses);
  uint64_t generation = write_generation_.load();
  STRATA_ASSIGN_OR_RETURN(object::ListResult result, base_->List(options));
  if (options_.metadata_ttl.count() > 0) {
    for (const auto& o : result.objects) {
      if (!o.etag.empty()) RememberMeta(o, generation, /*listed=*/true);
    }
    MutexLock lock(meta_mu_);
    if (write_generation_.load() == generation) {
      if (lists_.size() >= 4096) lists_.clear();
      lists_[enc] = ListEntry{options, result, clock_.Now() + options_.metadata_ttl};
    }
  }
  return result;
}

}  // namespace strata::cache

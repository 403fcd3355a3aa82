#include "loader/shard_cache.h"

#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <limits>
#include <optional>
#include <system_error>
#include <thread>

#include "base/buffer_pool.h"
#include "base/executor.h"
#include "base/hash.h"
#include "base/log.h"
#include "base/metrics.h"
#include "io/file_system.h"
#include "io/process.h"

namespace strata::loader {
namespace {

void RaiseTo(std::atomic<uint64_t>& bound, uint64_t v) {
  uint64_t cur = bound.load();
  while (v > cur && !bound.compare_exchange_weak(cur, v)) {
  }
}

// The caches OpenShared handed out, by identity, while some user holds them.
struct Registry {
  const pid_t pid = ::getpid();
  std::mutex mu;
  std::map<std::string, std::weak_ptr<ShardCache>> caches;
};
// This process's registry (never destroyed: caches may outlive static
// destruction). A process forked from one that had a registry (torch
// DataLoader workers) starts its own and leaks the copy: the parent's caches
// own threads that do not exist here, and its lock may have been held at fork.
Registry& SharedCaches() {
  static std::atomic<Registry*> current{new Registry()};
  Registry* r = current.load();
  while (r->pid != ::getpid()) {
    auto* fresh = new Registry();
    if (current.compare_exchange_strong(r, fresh)) return *fresh;
    delete fresh;  // another thread installed one first (`r` is it now)
  }
  return *r;
}

// Runs `f` when it goes out of scope (every return of a function).
template <class F>
struct OnExit {
  F f;
  ~OnExit() { f(); }
};
template <class F>
OnExit(F) -> OnExit<F>;

}  // namespace

ShardCache::ShardCache(object::ObjectStorePtr store, std::vector<std::string> keys, std::vector<uint64_t> sizes,
                       ShardCacheOptions options)
    : store_(std::move(store)),
      keys_(std::move(keys)),
      sizes_(std::move(sizes)),
      options_(std::move(options)),
      fs_(options_.fs ? *options_.fs : io::DefaultFileSystem()),
      clock_(options_.clock ? *options_.clock : RealClock()),
      ram_bytes_(options_.ram_bytes),
      disk_bytes_(options_.disk_bytes),
      fetch_threads_(std::max<size_t>(options_.connections ? options_.connections : options_.fetch_concurrency, 1)),
      users_(keys_.size(), 0),
      last_use_(keys_.size(), 0),
      released_at_(keys_.size(), 0),
      generation_(keys_.size(), 0) {
  for (size_t k = 0; k < keys_.size(); ++k) {
    dataset_disk_bytes_ += DataOffset(k) + sizes_[k] + SealOverhead();
  }
}

ShardCache::~ShardCache() {
  FlushDiskWrites();
  {
    MutexLock lock(write_mu_);
    stop_writes_ = true;
  }
  write_cv_.NotifyAll();
  if (writer_.joinable()) writer_.join();
  floor_check_.reset();
  if (const size_t hung = hung_calls_->load(); hung > 0) {
    // Not waited for (that would block until the store answers): each thread
    // holds what its call uses and ends when the call returns.
    STRATA_LOG_INFO("loader cache: {} store call(s) given up on still waiting on {}; left to end in the background",
                    hung, store_->Url());
  }
}

Result<std::shared_ptr<ShardCache>> ShardCache::Open(object::ObjectStorePtr store, std::vector<std::string> keys,
                                                     std::vector<uint64_t> sizes, ShardCacheOptions options) {
  std::shared_ptr<ShardCache> cache(new ShardCache(std::move(store), std::move(keys), std::move(sizes), options));
  if (!options.dir.empty()) {
    Status s = cache->fs_.CreateDirs(options.dir);
    if (!s.ok()) return s.WithContext("creating the loader's cache directory " + options.dir);
    auto space = cache->fs_.Space(options.dir);
    cache->min_free_bytes_ = space.ok() ? options.min_free.Of(space->total) : options.min_free.bytes;
    STRATA_RETURN_IF_ERROR(cache::CheckSealedDir(cache->fs_, options.dir, options.sealer.get(), {}, [&] {
                             return cache->HoldsShardFiles();
                           }).status());
    cache->SweepDeadTemps();
    if (cache->min_free_bytes_ > 0 && options.floor_check_interval > Duration::zero()) {
      cache->floor_check_ = std::make_unique<PeriodicTask>("strata-floor", options.floor_check_interval,
                                                           [c = cache.get()] { c->KeepFloor(); });
    }
  }
  return cache;
}

Result<std::shared_ptr<ShardCache>> ShardCache::OpenShared(const std::string& identity, object::ObjectStorePtr store,
                                                           std::vector<std::string> keys, std::vector<uint64_t> sizes,
                                                           ShardCacheOptions options) {
  Registry& registry = SharedCaches();
  std::lock_guard lock(registry.mu);
  std::erase_if(registry.caches, [](const auto& entry) { return entry.second.expired(); });
  auto it = registry.caches.find(identity);
  if (it != registry.caches.end()) {
    std::shared_ptr<ShardCache> live = it->second.lock();
    // The identity names the index, so keys and sizes agree; if a caller's
    // identity is too coarse, it gets a cache of its own rather than wrong shards.
    if (live && live->keys_ == keys && live->sizes_ == sizes) {
      RaiseTo(live->ram_bytes_, options.ram_bytes);
      RaiseTo(live->disk_bytes_, options.disk_bytes);
      // Each opener (rank) brings its own GETs in flight, as when each had a
      // cache, so N ranks still keep N times the bytes in flight. Openers
      // after the first multi-part fetch (which starts the threads) add none.
      // (Capped: two ranks of the default 256 connections.)
      constexpr size_t kMaxFetchThreads = 512;
      size_t threads = live->fetch_threads_.load();
      while (threads < kMaxFetchThreads &&
             !live->fetch_threads_.compare_exchange_weak(
                 threads,
                 std::min(kMaxFetchThreads,
                          threads + std::max<size_t>(
                                        options.connections ? options.connections : options.fetch_concurrency, 1)))) {
      }
      return live;
    }
    if (live) return Open(std::move(store), std::move(keys), std::move(sizes), std::move(options));
  }
  STRATA_ASSIGN_OR_RETURN(auto cache, Open(std::move(store), std::move(keys), std::move(sizes), std::move(options)));
  registry.caches[identity] = cache;
  return cache;
}

uint64_t ShardCache::Priority(size_t shard) const {
  return released_at_[shard] ? released_at_[shard] : (1ull << 62) + last_use_[shard];
}

Result<ShardFetch> ShardCache::Get(size_t shard, const ShardCheck& check) {
  if (shard >= keys_.size()) return InvalidArgumentError("no shard " + std::to_string(shard));
  {
    MutexLock lock(mu_);
    last_use_[shard] = ++seq_;
    released_at_[shard] = 0;
  }
  while (true) {
    {
      MutexLock lock(mu_);
      if (auto it = ram_.find(shard); it != ram_.end()) {
        ++counters_.ram_hits;
        return ShardFetch{it->second.bytes, false, it->second.verified};
      }
      if (auto it = writing_.find(shard); it != writing_.end()) {  // its file is being written
        ++counters_.ram_hits;
        return ShardFetch{it->second, false};
      }
    }
    bool shared = false, from_store = false, verified = false;
    bool on_disk = false;  // fetched from the store while its file is there (LoadFromDisk's `skipped`)
    uint64_t generation = 0;
    // Other processes (or caches) on this directory wait while we fetch and
    // write; the lock file goes with the lock, so lock files do not pile up.
    std::unique_ptr<io::FileLock> download;
    auto fill = [&]() -> Result<Buffer> {
      {
        MutexLock lock(mu_);
        // Another caller's flight may have landed between our RAM miss and taking this one.
        if (auto it = ram_.find(shard); it != ram_.end()) {
          ++counters_.ram_hits;
          verified = it->second.verified;
          return it->second.bytes;
        }
        if (auto it = writing_.find(shard); it != writing_.end()) {
          ++counters_.ram_hits;
          return it->second;
        }
        generation = generation_[shard];
      }
      Result<Buffer> got = LoadFromDisk(shard, &on_disk);
      bool from_disk = got.ok();
      if (!from_disk && !on_disk && !options_.dir.empty()) {
        io::LockWaitOptions wait;
        wait.remove_on_unlock = true;
        wait.on_wait = [this] {
          MutexLock lock(mu_);
          ++counters_.lock_waits;
        };
        auto locked = fs_.LockFileBlocking(FilePath(shard) + ".lock", wait);
        if (locked.ok()) {
          download = std::move(locked).value();
          got = LoadFromDisk(shard, &on_disk);  // written by the holder we waited for, or just before we looked
          from_disk = got.ok();
        } else {
          STRATA_LOG_WARN("loader cache: {}; fetching {} unlocked (another process may fetch it too)",
                          locked.status().ToString(), keys_[shard]);
        }
      }
      bool hashed = false;
      if (!from_disk) got = FetchFromStore(shard, &hashed);
      from_store = !from_disk && got.ok();
      MutexLock lock(mu_);
      if (from_disk) ++counters_.disk_hits;
      if (on_disk && from_store) {
        ++counters_.store_instead_of_disk;
        static Counter& metric = MetricsRegistry::Global().GetCounter(
            "strata_loader_disk_hits_fetched_from_store_total",
            "Shards in the loader's disk cache fetched from the store instead (sooner than the disk's queue)");
        metric.Inc();
      }
      // LoadFromDisk checked the file's XXH3, FetchFromStore the manifest's
      // hash: per-record checksums would check the same bytes again.
      verified = from_disk || (from_store && hashed);
      if (got.ok() && generation_[shard] == generation) PutInRam(shard, *got, verified);
      return got;
    };
    // The flight stays open while the disk copy is written: a Get arriving
    // then shares these bytes rather than missing the file being written and
    // fetching the shard again.
    Result<Buffer> got = flights_.Do(shard, fill, &shared, [&](const Result<Buffer>& landed) {
      if (!from_store || on_disk) return;
      if (check) {
        if (Status checked = check(*landed, verified); !checked.ok()) {
          STRATA_LOG_WARN("loader cache: {} from the store failed verification, not cached on disk: {}", keys_[shard],
                          checked.ToString());
          return;
        }
      }
      WriteToDisk(shard, *landed, generation, std::move(download));
    });
    if (shared && !got.ok()) continue;  // that fetch failed: look again, and fetch ourselves if nobody else is
    if (!got.ok()) return got.status();
    // A joiner of another caller's flight does not know how it was loaded: unverified.
    return ShardFetch{std::move(*got), from_store, verified && !shared};
  }
}

// A parsed copy kept with the shard's bytes, counted as a hit and a user.
std::shared_ptr<const ParsedShard> ShardCache::TakeParsedLocked(size_t shard) {
  auto it = ram_.find(shard);
  if (it == ram_.end() || !it->second.parsed) return nullptr;
  CountParseHitLocked(shard);
  return it->second.parsed;
}

void ShardCache::CountParseHitLocked(size_t shard) {
  last_use_[shard] = ++seq_;
  released_at_[shard] = 0;
  ++users_[shard];
  ++counters_.parse_hits;
}

Result<ParsedFetch> ShardCache::GetParsed(size_t shard, const ShardParser& parse) {
  if (shard >= keys_.size()) return InvalidArgumentError("no shard " + std::to_string(shard));
  while (true) {
    {
      MutexLock lock(mu_);
      if (auto parsed = TakeParsedLocked(shard)) return ParsedFetch{std::move(parsed), false, false};
    }
    ParsedFetch mine;  // what the leader returns
    auto fill = [&]() -> Result<std::shared_ptr<const ParsedShard>> {
      uint64_t generation = 0;
      {
        MutexLock lock(mu_);
        if (auto parsed = TakeParsedLocked(shard)) {  // parsed by a flight that landed after our look
          mine = ParsedFetch{parsed, false, false};
          return parsed;
        }
        generation = generation_[shard];
      }
      // Bytes this call fetches from the store are parsed (their CRCs checked)
      // before their disk copy is written: others trust that copy's hash alone.
      std::optional<Result<ParsedValue>> parsed_before_write;
      Result<ShardFetch> got = Get(shard, [&](const Buffer& bytes, bool verified) {
        parsed_before_write.emplace(parse(bytes, verified));
        return parsed_before_write->status();
      });
      Result<ParsedValue> parsed = !got.ok()                                  ? Result<ParsedValue>(got.status())
                                   : (got->from_store && parsed_before_write) ? std::move(*parsed_before_write)
                                                                              : parse(got->data, got->verified);
      if (got.ok() && !parsed.ok()) Invalidate(shard);  // the next call refetches rather than reparsing bad bytes
      if (!parsed.ok()) return parsed.status();
      MutexLock lock(mu_);
      ++counters_.parses;
      ++users_[shard];
      if (generation_[shard] == generation) PutParsedLocked(shard, got->data, *parsed);
      mine = ParsedFetch{parsed->parsed, got->from_store, true};
      return parsed->parsed;
    };
    bool shared = false;
    Result<std::shared_ptr<const ParsedShard>> result = parse_flights_.Do(shard, fill, &shared);
    if (!result.ok()) {
      if (shared) continue;  // look again; parse ourselves if nobody else is
      return result.status();
    }
    if (!shared) return mine;
    MutexLock lock(mu_);
    CountParseHitLocked(shard);
    return ParsedFetch{std::move(*result), false, false};
  }
}

void ShardCache::Release(size_t shard) {
  MutexLock lock(mu_);
  if (shard >= released_at_.size()) return;
  if (users_[shard] > 0) --users_[shard];
  if (users_[shard] == 0) released_at_[shard] = ++seq_;  // other users (ranks) still reading keep it
}

void ShardCache::Invalidate(size_t shard) {
  if (shard >= keys_.size()) return;
  {
    MutexLock lock(mu_);
    ++generation_[shard];  // a flight that read the bad bytes keeps them out of RAM and off disk
    auto it = ram_.find(shard);
    if (it != ram_.end()) ram_used_ -= it->second.charge, ram_.erase(it);
    if (auto w = writing_.find(shard); w != writing_.end()) writing_bytes_ -= w->second.size(), writing_.erase(w);
    flights_.Forget(shard);  // later Gets must not share its bytes
    full_since_.reset();     // its file goes: room for another
  }
  if (!options_.dir.empty()) {
    // Under disk_mu_: a StoreToDisk that passed its generation check writes
    // first, and this removes the file after it.
    MutexLock lock(disk_mu_);
    (void)fs_.Remove(options_.dir + "/" + FileName(shard));
  }
}

ShardCache::Counters ShardCache::counters() const {
  MutexLock lock(mu_);
  Counters c = counters_;
  c.flight_joins = flights_.Joins();
  c.ram_bytes = ram_used_;
  return c;
}

bool ShardCache::MakeRoomLocked(size_t keep, uint64_t need) {
  const uint64_t bound = ram_bytes_;
  if (need > bound) return false;
  while (ram_used_ + need > bound) {
    auto victim = ram_.end();
    for (auto it = ram_.begin(); it != ram_.end(); ++it) {
      if (it->first != keep && (victim == ram_.end() || Priority(it->first) < Priority(victim->first))) victim = it;
    }
    if (victim == ram_.end()) return false;
    ram_used_ -= victim->second.charge;
    ram_.erase(victim);
    ++counters_.ram_evictions;
  }
  return true;
}

void ShardCache::PutInRam(size_t shard, const Buffer& data, bool verified) {
  if (ram_.count(shard) || !MakeRoomLocked(shard, data.size())) return;
  ram_.emplace(shard, RamEntry{data, nullptr, data.size(), verified});
  ram_used_ += data.size();
}

void ShardCache::PutParsedLocked(size_t shard, const Buffer& data, const ParsedValue& parsed) {
  auto it = ram_.find(shard);
  if (it != ram_.end() && it->second.parsed) return;
  uint64_t need = parsed.extra_bytes + (it == ram_.end() ? data.size() : 0);
  if (!MakeRoomLocked(shard, need)) return;  // (evicts others only: `it` stays valid)
  if (it == ram_.end()) it = ram_.emplace(shard, RamEntry{data, nullptr, 0}).first;
  it->second.parsed = parsed.parsed;
  it->second.charge += need;
  ram_used_ += need;
}

namespace {
uint64_t PartSize(uint64_t size, const ShardCacheOptions& o) {
  size_t conc = std::max<size_t>(o.fetch_concurrency, 1);
  return std::max<uint64_t>(std::clamp<uint64_t>((size + conc - 1) / conc, o.min_part_size, o.max_part_size), 1);
}
}  // namespace

size_t ShardCache::Parts(size_t shard) const {
  const uint64_t size = ShardSize(shard);
  const uint64_t part = PartSize(size, options_);
  return size == 0 ? 1 : static_cast<size_t>((size + part - 1) / part);
}

Result<Buffer> ShardCache::FetchFromStore(size_t shard, bool* hashed) {
  *hashed = false;
  const std::string& key = keys_[shard];
  const uint64_t size = sizes_[shard];
  const uint64_t part = PartSize(size, options_);
  const size_t n = Parts(shard);
  std::vector<Result<object::GetResult>> results(n, InternalError("not run"));
  // One deadline for the whole fetch: parts queued behind others spend it too.
  // Real monotonic time, not clock_: it bounds a condition-variable wait on a
  // real store thread, which a FakeClock's time would end at once or never.
  const auto deadline = std::chrono::steady_clock::now() + options_.fetch_timeout;
  // The parts land in one buffer: where the store can read into it (the
  // file store), directly; else each part is copied in on its own thread.
  // Without it the parts were concatenated afterwards, one more serial copy
  // of the whole shard (14% of the cycles of a 2 GB/s cold stream here).
  std::shared_ptr<uint8_t> whole = n > 1 ? BufferPoolAllocate(size) : nullptr;
  // Its pace is what a disk hit's wait is weighed against (StoreSeconds).
  const auto started = store_fetches_.Begin(size, std::numeric_limits<double>::infinity());
  uint64_t landed = 0;
  OnExit metered{[&] { store_fetches_.End(*started, size, landed); }};
  auto part_length = [&](size_t i) { return size > 0 ? std::min(part, size - i * part) : 0; };
  auto get_part = [&](size_t i) {
    object::GetOptions get;
    const uint64_t length = part_length(i);
    if (size > 0) get.range = object::ByteRange::Of(i * part, length);
    if (whole) get.into = {whole, whole.get() + i * part, length};
    results[i] = BoundedGet(key, get, deadline);
    if (whole && results[i].ok() && results[i]->data.data() != get.into.data && results[i]->data.size() == length) {
      std::memcpy(get.into.data, results[i]->data.data(), length);
    }
  };
  if (n == 1) {
    get_part(0);  // on the caller's thread: no hand-off for a one-part shard
  } else {
    std::call_once(parts_once_,
                   [&] { parts_ = std::make_unique<ThreadPool>(fetch_threads_.load(), "strata-shard-get"); });
    TaskGroup group(*parts_);
    for (size_t i = 0; i < n; ++i) group.Run([&get_part, i] { get_part(i); });
    group.Wait();
  }
  for (size_t i = 0; i < n; ++i) {
    if (!results[i].ok()) return results[i].status().WithContext("fetching shard " + key);
    const object::GetResult& r = *results[i];
    if (r.info.size != size) {
      return CorruptionError("shard " + key + " is " + std::to_string(r.info.size) + " bytes, the index says " +
                             std::to_string(size) + " (replaced or truncated?)");
    }
    if (r.info.etag != results[0]->info.etag) {
      return UnavailableError("shard " + key + " changed while it was being fetched (ETag " + results[0]->info.etag +
                              " then " + r.info.etag + ")");
    }
    if (whole && r.data.size() != part_length(i)) {
      return CorruptionError("shard " + key + ": bytes " + std::to_string(i * part) + "+ came back as " +
                             std::to_string(r.data.size()) + " bytes, asked " + std::to_string(part_length(i)));
    }
  }
  Buffer data = whole ? Buffer::Wrap(whole, whole.get(), size) : results[0]->data;
  if (data.size() != size) {
    return CorruptionError("shard " + key + ": fetched " + std::to_string(data.size()) + " bytes, expected " +
                           std::to_string(size));
  }
  const std::string& etag = results[0]->info.etag;
  auto recorded = [shard](const std::vector<std::string>& v) { return shard < v.size() && !v[shard].empty(); };
  const bool crc = recorded(options_.crc32c);
  bool hash = crc || recorded(options_.sha256);
  if (hash) {
    MutexLock lock(mu_);
    auto it = verified_etag_.find(shard);
    hash = etag.empty() || it == verified_etag_.end() || it->second != etag;
    if (hash) (crc ? counters_.crc32c_bytes : counters_.sha256_bytes) += size;
  }
  if (hash) {
    const char* alg = crc ? "crc32c" : "sha256";
    const std::string& want = crc ? options_.crc32c[shard] : options_.sha256[shard];
    const std::string got = crc ? Crc32cHex(Crc32c(data.data(), data.size())) : ToHex(Sha256(data.data(), data.size()));
    if (got != want) {
      // Retryable: a lagging replica answers the current version later.
      return Status(Code::kCorruption,
                    "shard " + key + " from the store has " + alg + " " + got + ", the dataset's manifest records " +
                        want + " (a stale replica, or the shard was replaced): not used",
                    "", /*retryable=*/true);
    }
  }
  *hashed = hash;
  landed = size;
  MutexLock lock(mu_);
  if (hash && !etag.empty()) verified_etag_[shard] = etag;
  ++counters_.fetches;
  counters_.fetched_bytes += size;
  return data;
}

namespace {

// Store calls some cache gave up on (fetch_timeout) that have not returned yet,
// in the whole process: each holds a thread until the store answers.
Gauge& HungStoreCalls() {
  static Gauge& g = MetricsRegistry::Global().GetGauge(
      "strata_loader_hung_store_calls", "Loader store calls given up on (fetch_timeout) that have not returned");
  return g;
}
Counter& RefusedStoreCalls() {
  static Counter& c = MetricsRegistry::Global().GetCounter("strata_loader_refused_store_calls_total",
                                                           "Loader store calls not started: max_hung_calls were hung");
  return c;
}

}  // namespace

Result<object::GetResult> ShardCache::BoundedGet(const std::string& key, const object::GetOptions& get,
                                                 std::chrono::steady_clock::time_point deadline) {
  if (options_.fetch_timeout.count() <= 0) return store_->Get(key, get);
  if (options_.max_hung_calls > 0 && hung_calls_->load() >= options_.max_hung_calls) {
    RefusedStoreCalls().Inc();
    return UnavailableError(std::to_string(hung_calls_->load()) + " store calls given up on have not returned" +
                            " (max_hung_calls); not starting another for " + key);
  }
  struct Call {
    std::mutex mu;
    std::condition_variable cv;
    std::optional<Result<object::GetResult>> result;
    bool given_up = false;  // the caller left: the call counts as hung until it returns
  };
  auto call = std::make_shared<Call>();
  // A thread of its own, detached: a call given up on keeps it until the store
  // answers, then it ends and frees all it held (the store, the result). No
  // pool outlives this cache; nothing waits for a hung store, nothing leaks.
  // A thread costs microseconds, a ranged GET milliseconds.
  try {
    std::thread([call, store = store_, key, get, hung = hung_calls_] {
      pthread_setname_np(pthread_self(), "strata-getwait");
      Result<object::GetResult> r = InternalError("not run");
      Status threw = RunGuarded("loader: fetching " + key, [&] { r = store->Get(key, get); });
      if (!threw.ok()) r = threw;
      std::lock_guard lock(call->mu);
      if (call->given_up) {
        --*hung;
        HungStoreCalls().Add(-1);
      }
      call->result = std::move(r);
      call->cv.notify_all();
    }).detach();
  } catch (const std::system_error& e) {  // no thread to be had (a limit): fail this call only
    return UnavailableError("cannot start a thread for a store call for " + key, e.what());
  }
  std::unique_lock lock(call->mu);
  // Real time: a hung store does not advance a test's fake clock.
  if (!call->cv.wait_until(lock, deadline, [&] { return call->result.has_value(); })) {
    call->given_up = true;
    ++*hung_calls_;
    HungStoreCalls().Add(1);
    std::string range = get.range && get.range->length ? " (bytes " + std::to_string(get.range->offset) + "+" +
                                                             std::to_string(*get.range->length) + ")"
                                                       : "";
    return Status(Code::kDeadlineExceeded,
                  "no answer from the store within " + std::to_string(options_.fetch_timeout.count()) +
                      " ms (fetch_timeout)" + range,
                  "", /*retryable=*/true);
  }
  return std::move(*call->result);
}

double ShardCache::StoreSeconds(uint64_t bytes) const {
  const double store = store_fetches_.BytesPerSecondPerRead();
  // Not fetched from yet (a warm start): nothing says the store would be sooner.
  return store > 0 ? static_cast<double>(bytes) / store : std::numeric_limits<double>::infinity();
}

}  // namespace strata::loader

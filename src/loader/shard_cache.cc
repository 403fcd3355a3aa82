#include "loader/shard_cache.h"

#include <pthread.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <limits>
#include <optional>
#include <system_error>
#include <thread>

#include "base/buffer_pool.h"
#include "base/coding.h"
#include "base/executor.h"
#include "base/hash.h"
#include "base/log.h"
#include "base/metrics.h"
#include "io/durable.h"
#include "io/file_system.h"
#include "io/process.h"

namespace strata::loader {
namespace {

constexpr char kMagic[8] = {'S', 'T', 'R', 'S', 'H', 'C', '0', '2'};
constexpr uint64_t kFixedHeader = 8 + 8 + 8 + 4;
// A shard this large starts at a 4 KiB boundary of its file (the header is
// padded), so where memory is short its file is written from the page-aligned
// fetch buffer with O_DIRECT: buffered, with its fsync, the same write ran at
// a third of the speed here and took a core copying into fresh page-cache
// pages. Where memory is ample that copy is what keeps the file resident for
// the next epoch, worth more than the shards it keeps off the disk (fewer
// are admitted, but their hits come from memory, not the device).
constexpr uint64_t kAlignedFrom = 1ull << 20;
constexpr uint64_t kBlock = io::PosixFileSystem::kDirectAlignment;
constexpr std::string_view kSuffix = ".shard";
// A disk found full of the dataset's own shards is taken to stay so this long
// (shards fetched meanwhile are not queued); then a write looks again.
constexpr auto kFullRecheck = std::chrono::seconds(1);

// What a sealed shard file's data is bound to: the shard it is and the dataset's content.
std::string SealAad(const std::string& key, uint64_t size, const std::string& content_id) {
  return "strata shard v1\n" + key + "\n" + std::to_string(size) + "\n" + content_id;
}

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

// A temp file of WriteFileAtomic for a shard file: "<hex>.shard.tmp.<pid>.<n>".
constexpr std::string_view kTempInfix = ".shard.tmp.";
// A dead writer's temp file younger than this is kept: its writer may be a
// live process in another PID namespace sharing the directory.
constexpr auto kTempGrace = std::chrono::minutes(1);

// The writer's pid in a temp file's name, or 0 if the name is not one.
pid_t TempOwner(std::string_view name) {
  size_t at = name.find(kTempInfix);
  if (at == std::string_view::npos) return 0;
  std::string_view rest = name.substr(at + kTempInfix.size());
  long pid = 0;
  auto [end, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), pid);
  if (ec != std::errc() || pid <= 0 || pid > std::numeric_limits<pid_t>::max()) return 0;
  if (end == rest.data() + rest.size() || *end != '.') return 0;
  return static_cast<pid_t>(pid);
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
  if (const size_t hung = hung_calls_->load(); hung > 0) {
    // Not waited for (that would block until the store answers): each thread
    // holds what its call uses and ends when the call returns.
    STRATA_LOG_INFO("loader cache: {} store call(s) given up on still waiting on {}; left to end in the background",
                    hung, store_->Url());
  }
}

void ShardCache::WriteToDisk(size_t shard, const Buffer& data, uint64_t generation,
                             std::unique_ptr<io::FileLock> lock) {
  if (options_.dir.empty()) return;
  if (!options_.async_disk_writes) return StoreToDisk(shard, data, generation);  // (the lock goes after)
  {
    MutexLock guard(mu_);
    if (writing_.count(shard)) return;  // queued by another flight already
    if (full_of_ours_since_ && clock_.Now() - *full_of_ours_since_ < kFullRecheck) {
      guard.Unlock();
      return CountNotAdmitted(/*busy=*/false);
    }
    const uint64_t limit =
        options_.write_behind_bytes ? options_.write_behind_bytes : std::max<uint64_t>(ram_bytes_, 64ull << 20);
    // A shard larger than the whole queue still goes when the queue is empty.
    if (writing_bytes_ == 0 || writing_bytes_ + data.size() <= limit) {
      writing_.emplace(shard, data);
      writing_bytes_ += data.size();
      MutexLock wl(write_mu_);
      writes_.push_back(DiskWrite{shard, data, generation, std::move(lock)});
      if (!writer_.joinable()) writer_ = std::thread([this] { WriteLoop(); });
      write_cv_.NotifyOne();
      return;
    }
  }
  // The disk is behind the store: the reader goes on without a disk copy
  // (the lock goes now, so processes waiting for the file fetch it themselves).
  CountNotAdmitted(/*busy=*/true);
}

void ShardCache::CountNotAdmitted(bool busy) {
  static Counter& busy_metric = MetricsRegistry::Global().GetCounter(
      "strata_loader_shards_not_admitted_total", "Shards fetched but not kept in the loader's disk cache",
      {{"reason", "disk_busy"}});
  static Counter& no_reuse_metric = MetricsRegistry::Global().GetCounter(
      "strata_loader_shards_not_admitted_total", "Shards fetched but not kept in the loader's disk cache",
      {{"reason", "no_reuse"}});
  (busy ? busy_metric : no_reuse_metric).Inc();
  MutexLock lock(mu_);
  ++(busy ? counters_.not_admitted_busy : counters_.not_admitted_no_reuse);
}

void ShardCache::FlushDiskWrites() {
  MutexLock lock(write_mu_);
  // The writer thread may get little CPU (it runs at nice 10): what is
  // still queued is written here, on the caller's thread.
  while (!writes_.empty()) {
    DiskWrite w = std::move(writes_.front());
    writes_.pop_front();
    ++writes_running_;
    lock.Unlock();
    WriteQueued(std::move(w));
    lock.Lock();
    --writes_running_;
  }
  flushed_cv_.Wait(lock, [&] {
    write_mu_.AssertHeld();  // the predicate runs under the lock
    return writes_.empty() && writes_running_ == 0;
  });
  flushed_cv_.NotifyAll();  // (other flushers waiting for the writes this one ran)
}

void ShardCache::WriteQueued(DiskWrite w) {
  // A writer thread's boundary: an exception loses this disk copy (the shard
  // is fetched again next time), never the process.
  RunGuarded("loader: writing shard " + std::to_string(w.shard) + " to the disk cache", [&] {
    StoreToDisk(w.shard, w.data, w.generation);
  }).IgnoreError();  // logged
  w.lock.reset();    // other processes waiting for this shard find the file now
  MutexLock guard(mu_);
  auto it = writing_.find(w.shard);
  if (it != writing_.end() && it->second.data() == w.data.data()) {
    writing_bytes_ -= it->second.size();
    writing_.erase(it);
  }
}

void ShardCache::WriteLoop() {
  // Behind the reader in CPU too, but not starved: a write costs its XXH3
  // (tens of GB/s), the system calls and, where memory is ample, the copy
  // into the page cache (the price of a hit from memory next epoch). At nice
  // 10 it yields to the reader's threads (a tenth of their weight) yet still
  // runs on a machine kept busy by others (at idle priority, SCHED_IDLE, it
  // got no CPU at all while any nice'd process was runnable).
  (void)setpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()), 10);
  MutexLock lock(write_mu_);
  while (true) {
    write_cv_.Wait(lock, [&] {
      write_mu_.AssertHeld();  // the predicate runs under the lock
      return stop_writes_ || !writes_.empty();
    });
    if (writes_.empty()) return;  // stopping, and nothing left to write
    DiskWrite w = std::move(writes_.front());
    writes_.pop_front();
    ++writes_running_;
    lock.Unlock();
    WriteQueued(std::move(w));
    lock.Lock();
    if (--writes_running_ == 0 && writes_.empty()) flushed_cv_.NotifyAll();
  }
}

Result<std::shared_ptr<ShardCache>> ShardCache::Open(object::ObjectStorePtr store, std::vector<std::string> keys,
                                                     std::vector<uint64_t> sizes, ShardCacheOptions options) {
  std::shared_ptr<ShardCache> cache(new ShardCache(std::move(store), std::move(keys), std::move(sizes), options));
  if (!options.dir.empty()) {
    Status s = cache->fs_.CreateDirs(options.dir);
    if (!s.ok()) return s.WithContext("creating the loader's cache directory " + options.dir);
    auto holds_shards = [&] {
      auto entries = cache->fs_.ListDir(options.dir);
      return entries.ok() && std::any_of(entries->begin(), entries->end(), [](const io::DirEntry& e) {
               return std::string_view(e.name).ends_with(kSuffix);
             });
    };
    STRATA_RETURN_IF_ERROR(
        cache::CheckSealedDir(cache->fs_, options.dir, options.sealer.get(), {}, holds_shards).status());
    cache->SweepDeadTemps();
  }
  return cache;
}

void ShardCache::SweepDeadTemps() {
  auto budget = fs_.LockFileBlocking(BudgetLockPath(), {});  // no writer in any process counts meanwhile
  if (!budget.ok()) {
    STRATA_LOG_WARN("loader cache: {}; not sweeping temp files", budget.status().ToString());
    return;
  }
  auto entries = fs_.ListDir(options_.dir);
  if (!entries.ok()) return;
  const WallTime now = clock_.WallNow();
  for (const io::DirEntry& e : *entries) {
    const pid_t pid = e.is_dir ? 0 : TempOwner(e.name);
    if (pid == 0 || pid == ::getpid() || now - e.mtime < kTempGrace) continue;
    // Boot time is a fact of the real clock: under a fake one, mtimes say nothing about it.
    const bool before_boot = &clock_ == &RealClock() && e.mtime < io::BootTime();
    if (!before_boot && io::ProcessAlive(pid)) continue;
    Status removed = fs_.Remove(io::JoinPath(options_.dir, e.name));
    if (removed.ok()) {
      MutexLock lock(mu_);
      ++counters_.temps_swept;
    } else if (removed.code() != Code::kNotFound) {
      STRATA_LOG_WARN("loader cache: could not remove the dead writer's temp file: {}", removed.ToString());
    }
  }
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
      constexpr size_t kMaxFetchThreads = 256;
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

std::string ShardCache::FilePath(size_t shard) const { return options_.dir + "/" + FileName(shard); }

std::string ShardCache::BudgetLockPath() const { return options_.dir + "/budget.lock"; }

uint64_t ShardCache::DataOffset(size_t shard) const {
  const uint64_t header = kFixedHeader + keys_[shard].size();
  return sizes_[shard] >= kAlignedFrom ? (header + kBlock - 1) / kBlock * kBlock : header;
}

std::string ShardCache::FileName(size_t shard) const {
  // "v2": the layout of kMagic's version (files of the previous one are another dataset's to the eviction).
  std::string id = "v2\n" + store_->Url() + "\n" + keys_[shard] + "\n" + std::to_string(sizes_[shard]);
  if (!options_.content_id.empty()) id += "\n" + options_.content_id;
  char hex[17];
  snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(XxHash3(id)));
  return std::string(hex) + std::string(kSuffix);
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
    flights_.Forget(shard);       // later Gets must not share its bytes
    full_of_ours_since_.reset();  // its file goes: room for another
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

bool ShardCache::MemoryAmple(uint64_t bytes) const {
  // A quarter of the machine stays available beyond the file: the page cache
  // would otherwise evict others' pages to keep ours (and ours theirs).
  const std::optional<io::MemoryInfo> m = options_.memory_info ? options_.memory_info() : io::ReadMemoryInfo();
  return m && m->available_bytes >= bytes + m->total_bytes / 4;
}

Result<std::unique_ptr<io::RandomAccessFile>> ShardCache::OpenShardFile(const std::string& path, uint64_t data_offset) {
  // Where memory is short, files written around the page cache are read
  // around it too (8 MiB O_DIRECT parts in flight together, at the device's
  // speed), so a read does not evict what others keep there.
  if (data_offset % kBlock == 0) {
    if (auto* posix = dynamic_cast<io::PosixFileSystem*>(&fs_)) {
      auto direct = posix->OpenForReadDirect(path);
      if (direct.ok() || direct.status().code() == Code::kNotFound) return direct;
    }
  }
  return fs_.OpenForRead(path);
}

Result<Buffer> ShardCache::ReadShardFile(io::RandomAccessFile& file, uint64_t size) {
  constexpr size_t kPart = 8 << 20;
  const uint64_t rounded = (size + kBlock - 1) / kBlock * kBlock;  // O_DIRECT reads whole blocks (short at the end)
  // Page-aligned, in the pool's size classes as a fetch's buffer is: at
  // exact sizes (each shard's differs) every hit mapped fresh memory, whose
  // first touch on this VM runs at 0.3-2 GB/s (unet3d epoch 2: 75% -> 81% AU
  // at N=1, 52% -> 59% at N=2; docs/benchmarks.md). The RAM tier may keep it.
  std::shared_ptr<uint8_t> buf = BufferPoolAllocate(rounded);
  uint8_t* data = buf.get();
  STRATA_ASSIGN_OR_RETURN(size_t n, file.ReadAtParts(0, rounded, data, kPart, [](size_t) {}));
  return Buffer::Wrap(std::move(buf), data, std::min<uint64_t>(n, size));
}

Result<Buffer> ShardCache::LoadFromDisk(size_t shard, bool* skipped) {
  *skipped = false;
  if (options_.dir.empty()) return NotFoundError("no disk tier");
  std::string path = options_.dir + "/" + FileName(shard);
  const std::string& key = keys_[shard];
  const uint64_t offset = DataOffset(shard);
  uint64_t expect = offset + sizes_[shard] + SealOverhead();
  auto* posix = dynamic_cast<io::PosixFileSystem*>(&fs_);
  // A file the page cache holds whole is read at memory speed, never put
  // off; one that is not waits for the device, behind the reads in flight.
  bool resident = false;
  if (posix) {
    auto in_memory = io::PosixFileSystem::ResidentBytes(path, 0, expect);
    if (!in_memory.ok() && in_memory.status().code() == Code::kNotFound) return in_memory.status();
    resident = in_memory.ok() && *in_memory == expect;
  }
  std::optional<Throughput::TimePoint> started;
  if (!resident) {
    if (auto st = fs_.Stat(path); !st.ok()) return st.status();  // a plain miss
    // One read of 8 MiB parts in flight keeps the device busy and others
    // queue behind it: when the queue would make this one wait longer than
    // the store takes to fetch it, it comes from the store instead (its file
    // stays; nothing is rewritten). Waiting only while the disk is sooner,
    // not whenever the store's total pace is higher: the store's bytes cost
    // CPU (copies, TLS in production) that a direct read does not, and on a
    // busy 2-core machine sending every concurrent hit to the store made the
    // warm epochs slower (unet3d N=1 epoch 2: 75% AU against 79%).
    started = disk_reads_.Begin(expect, StoreSeconds(expect));
    if (!started) {
      *skipped = true;
      return UnavailableError("the disk would take longer than the store");
    }
  }
  // Read buffered where memory is ample, so the pages stay and the next
  // epoch (or process) reads them at memory speed: a second copy of a
  // dataset that fits in RAM is what makes its warm epochs fast. Its 8 MiB
  // parts in flight together keep it near the device's speed (fio here, 8 MiB
  // reads at queue depth 16 on a file not in the page cache: buffered
  // 0.7-2.8 GB/s, O_DIRECT 1.2-1.4 GB/s, loaded machine; one buffered read at
  // a time ran at a quarter of it). Else around the page cache (O_DIRECT),
  // not evicting what others keep there.
  const bool keep_resident = resident || MemoryAmple(expect);
  auto file = keep_resident ? fs_.OpenForRead(path) : OpenShardFile(path, offset);
  auto size = file.ok() ? (*file)->Size() : Result<uint64_t>(file.status());
  Result<Buffer> data = size.ok() && *size == expect ? ReadShardFile(**file, expect) : Result<Buffer>(Buffer());
  if (started) disk_reads_.End(*started, expect, data.ok() ? data->size() : 0);
  if (!file.ok()) return file.status();
  bool good = data.ok() && data->size() == expect && std::memcmp(data->data(), kMagic, 8) == 0;
  if (good) {
    const uint8_t* p = data->data();
    good = DecodeFixed64(p + 8) == sizes_[shard] && DecodeFixed32(p + 24) == key.size() &&
           std::memcmp(p + kFixedHeader, key.data(), key.size()) == 0;
    if (good) {
      Buffer body = data->Slice(offset);
      if (XxHash3(body.data(), body.size()) == DecodeFixed64(p + 16)) {
        auto plain = options_.sealer ? Unseal(shard, body) : Result<Buffer>(body);
        if (plain.ok()) {
          if (resident) {
            MutexLock lock(mu_);
            ++counters_.disk_hits_resident;
          }
          return plain;
        }
        STRATA_LOG_WARN("loader cache: {}: {}", path, plain.status().ToString());
      }
      good = false;
    }
  }
  // A file that fails verification is a miss: drop it and refetch.
  STRATA_LOG_WARN("loader cache: {} failed verification for {}; refetching", path, key);
  {
    MutexLock lock(mu_);
    ++counters_.verify_failures;
    full_of_ours_since_.reset();  // its file goes: room for another
  }
  MutexLock lock(disk_mu_);
  (void)fs_.Remove(path);
  return CorruptionError(path + ": cached copy of " + key + " failed verification");
}

void ShardCache::StoreToDisk(size_t shard, const Buffer& data, uint64_t generation) {
  if (options_.dir.empty()) return;
  auto stale = [&] {
    MutexLock lock(mu_);
    return generation_[shard] != generation;
  };
  const std::string& key = keys_[shard];
  uint64_t need = DataOffset(shard) + data.size() + SealOverhead();
  if (need > disk_bytes_) return;
  MutexLock disk(disk_mu_);
  // Caches in other processes (DataLoader workers) share the directory and
  // its bound: count, evict and write under its lock, or two of them could
  // each find room for one more shard and overshoot the bound together.
  auto budget = fs_.LockFileBlocking(BudgetLockPath(), {});
  if (!budget.ok()) {
    STRATA_LOG_WARN("loader cache: {}; not keeping {} on disk", budget.status().ToString(), keys_[shard]);
    return;
  }
  if (stale()) return;
  auto entries = fs_.ListDir(options_.dir);
  if (!entries.ok()) return;
  std::map<std::string, size_t> ours;
  for (size_t k = 0; k < keys_.size(); ++k) ours.emplace(FileName(k), k);
  std::vector<uint64_t> priority(keys_.size());
  {
    MutexLock lock(mu_);  // once, not per file: this may run on the low-priority writer
    for (size_t k = 0; k < keys_.size(); ++k) priority[k] = Priority(k);
  }
  std::string name = FileName(shard);
  struct Victim {
    uint64_t priority;
    std::string name;
    uint64_t size;
    bool ours;  // one of this dataset's shards
  };
  std::vector<Victim> victims;
  uint64_t used = 0;
  for (const io::DirEntry& e : *entries) {
    if (e.is_dir) continue;
    if (TempOwner(e.name) != 0) {
      used += e.size;  // a live writer's file to be (or a dead one's, until the next start): counted, not evictable
      continue;
    }
    if (!std::string_view(e.name).ends_with(kSuffix)) continue;
    if (e.name == name) return;  // another process cached it meanwhile
    used += e.size;
    auto it = ours.find(e.name);
    const uint64_t prio =
        it != ours.end()
            ? priority[it->second]
            : (1ull << 61) + static_cast<uint64_t>(
                                 std::chrono::duration_cast<std::chrono::seconds>(e.mtime.time_since_epoch()).count());
    victims.push_back({prio, e.name, e.size, it != ours.end()});
  }
  std::sort(victims.begin(), victims.end(), [](const Victim& a, const Victim& b) { return a.priority < b.priority; });
  // A dataset larger than the bound, streamed once per epoch, re-reads a
  // shard evicted now as late as the one it would make room for: keep what
  // is cached (every later epoch hits it) and admit the rest only into free
  // room. Other files (another dataset, a replaced version) still make room.
  const bool keep_ours = dataset_disk_bytes_ > disk_bytes_;
  for (const Victim& v : victims) {
    if (used + need <= disk_bytes_) break;
    if (keep_ours && v.ours) continue;
    if (fs_.Remove(options_.dir + "/" + v.name).ok()) {
      used -= v.size;
      MutexLock lock(mu_);
      ++counters_.disk_evictions;
    }
  }
  if (stale()) return;
  if (used + need > disk_bytes_) {
    if (!keep_ours) return;
    {
      MutexLock lock(mu_);
      full_of_ours_since_ = clock_.Now();
    }
    return CountNotAdmitted(/*busy=*/false);
  }
  Result<Buffer> stored = options_.sealer ? Seal(shard, data) : Result<Buffer>(data);
  if (!stored.ok()) {
    STRATA_LOG_WARN("loader cache: could not seal {}: {}", key, stored.status().ToString());
    return;
  }
  std::string header(kMagic, 8);
  PutFixed64(&header, data.size());
  PutFixed64(&header, XxHash3(stored->data(), stored->size()));
  PutFixed32(&header, key.size());
  header += key;
  // Header and body written one after the other: no copy of the shard to join
  // them; a padded header in aligned memory keeps the body's blocks direct.
  const uint64_t offset = DataOffset(shard);
  std::shared_ptr<uint8_t> head = BufferPoolAllocate(offset);
  std::memcpy(head.get(), header.data(), header.size());
  std::memset(head.get() + header.size(), 0, offset - header.size());
  uint8_t* head_data = head.get();
  std::vector<Buffer> parts = {Buffer::Wrap(std::move(head), head_data, offset), *stored};
  const std::string path = options_.dir + "/" + name;
  // Where memory is ample the file goes through the page cache and stays
  // there: the next epoch's hit is read at memory speed, where one from the
  // device here was no sooner than a fetch from the store (unet3d, 5 runs,
  // epochs 2 and 3 at N=1: 84-86% / 86-89% AU against 70-77% / 78-82%
  // written with O_DIRECT; the cold epoch unchanged). Else around it
  // (O_DIRECT), evicting nothing others keep there.
  const bool direct = offset % kBlock == 0 && !MemoryAmple(need);
  Status s = direct ? io::WriteFileAtomicStreaming(fs_, path, parts) : io::WriteFileAtomic(fs_, path, parts);
  if (!s.ok()) {
    STRATA_LOG_WARN("loader cache: could not keep {} on disk: {}", key, s.ToString());
    return;
  }
  MutexLock lock(mu_);
  counters_.disk_bytes = used + need;
  ++counters_.disk_writes;
  full_of_ours_since_.reset();
}

Result<Buffer> ShardCache::Seal(size_t shard, const Buffer& data) const {
  const size_t n = data.size() + cache::BlockSealer::kOverhead;
  std::shared_ptr<uint8_t> out = BufferPoolAllocate(n);
  STRATA_RETURN_IF_ERROR(options_.sealer->Seal(SealAad(keys_[shard], data.size(), options_.content_id), data.data(),
                                               data.size(), out.get()));
  uint8_t* p = out.get();
  return Buffer::Wrap(std::move(out), p, n);
}

Result<Buffer> ShardCache::Unseal(size_t shard, const Buffer& stored) const {
  const size_t n = stored.size() - cache::BlockSealer::kOverhead;
  // In place, in the buffer LoadFromDisk just read (no other holder).
  uint8_t* plain = const_cast<uint8_t*>(stored.data()) + kGcmNonceBytes;
  STRATA_RETURN_IF_ERROR(
      options_.sealer->Open(SealAad(keys_[shard], n, options_.content_id), stored.data(), stored.size(), plain));
  return stored.Slice(kGcmNonceBytes, n);
}

}  // namespace strata::loader

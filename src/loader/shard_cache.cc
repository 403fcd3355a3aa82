#include "loader/shard_cache.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "base/hash.h"
#include "base/log.h"
#include "io/durable.h"
#include "io/file_system.h"

namespace strata::loader {
namespace {

constexpr char kMagic[8] = {'S', 'T', 'R', 'S', 'H', 'C', '0', '1'};
constexpr uint64_t kFixedHeader = 8 + 8 + 8 + 4;
constexpr std::string_view kSuffix = ".shard";

void PutLe(std::string& s, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) s.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
uint64_t GetLe(const uint8_t* p, int bytes) {
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

}  // namespace

ShardCache::ShardCache(ObjectStorePtr store, std::vector<std::string> keys, std::vector<uint64_t> sizes,
                       ShardCacheOptions options)
    : store_(std::move(store)),
      keys_(std::move(keys)),
      sizes_(std::move(sizes)),
      options_(std::move(options)),
      last_use_(keys_.size(), 0),
      released_at_(keys_.size(), 0) {
  parts_ = std::make_unique<ThreadPool>(std::max<size_t>(options_.fetch_concurrency, 1), "strata-shard-get");
}

ShardCache::~ShardCache() = default;

Result<std::shared_ptr<ShardCache>> ShardCache::Open(ObjectStorePtr store, std::vector<std::string> keys,
                                                     std::vector<uint64_t> sizes, ShardCacheOptions options) {
  if (!options.dir.empty()) {
    Status s = DefaultFileSystem().CreateDirs(options.dir);
    if (!s.ok()) return s.WithContext("creating the loader's cache directory " + options.dir);
  }
  return std::shared_ptr<ShardCache>(new ShardCache(std::move(store), std::move(keys), std::move(sizes), options));
}

std::string ShardCache::FileName(size_t shard) const {
  std::string id = store_->Url() + "\n" + keys_[shard] + "\n" + std::to_string(sizes_[shard]);
  char hex[17];
  snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(XxHash3(id)));
  return std::string(hex) + std::string(kSuffix);
}

uint64_t ShardCache::Priority(size_t shard) const {
  return released_at_[shard] ? released_at_[shard] : (1ull << 62) + last_use_[shard];
}

Result<ShardFetch> ShardCache::Get(size_t shard) {
  if (shard >= keys_.size()) return InvalidArgumentError("no shard " + std::to_string(shard));
  // Single flight: the first caller fetches, later ones wait on cv_ and then
  // find the shard in RAM (or fetch it themselves if RAM could not keep it).
  {
    std::unique_lock lock(mu_);
    last_use_[shard] = ++seq_;
    released_at_[shard] = 0;
    while (inflight_.count(shard)) cv_.wait(lock);
    auto it = ram_.find(shard);
    if (it != ram_.end()) {
      ++counters_.ram_hits;
      return ShardFetch{it->second, false};
    }
    inflight_[shard] = true;
  }
  ShardFetch out;
  Result<Buffer> got = LoadFromDisk(shard);
  bool from_disk = got.ok();
  if (!from_disk) {
    got = FetchFromStore(shard);
    out.from_store = got.ok();
  }
  {
    std::lock_guard lock(mu_);
    if (got.ok()) {
      if (from_disk) ++counters_.disk_hits;
      PutInRam(shard, *got);
    }
    inflight_.erase(shard);
  }
  cv_.notify_all();
  if (!got.ok()) return got.status();
  if (out.from_store) StoreToDisk(shard, *got);
  out.data = std::move(*got);
  return out;
}

void ShardCache::Release(size_t shard) {
  std::lock_guard lock(mu_);
  if (shard < released_at_.size()) released_at_[shard] = ++seq_;
}

void ShardCache::Invalidate(size_t shard) {
  {
    std::lock_guard lock(mu_);
    auto it = ram_.find(shard);
    if (it != ram_.end()) ram_used_ -= it->second.size(), ram_.erase(it);
  }
  if (!options_.dir.empty()) {
    std::lock_guard lock(disk_mu_);
    (void)DefaultFileSystem().Remove(options_.dir + "/" + FileName(shard));
  }
}

ShardCache::Counters ShardCache::counters() const {
  std::lock_guard lock(mu_);
  Counters c = counters_;
  c.ram_bytes = ram_used_;
  return c;
}

void ShardCache::PutInRam(size_t shard, const Buffer& data) {
  if (data.size() > options_.ram_bytes || ram_.count(shard)) return;
  while (ram_used_ + data.size() > options_.ram_bytes && !ram_.empty()) {
    auto victim = ram_.begin();
    for (auto it = ram_.begin(); it != ram_.end(); ++it) {
      if (Priority(it->first) < Priority(victim->first)) victim = it;
    }
    ram_used_ -= victim->second.size();
    ram_.erase(victim);
    ++counters_.ram_evictions;
  }
  ram_.emplace(shard, data);
  ram_used_ += data.size();
}

Result<Buffer> ShardCache::FetchFromStore(size_t shard) {
  const std::string& key = keys_[shard];
  const uint64_t size = sizes_[shard];
  size_t conc = std::max<size_t>(options_.fetch_concurrency, 1);
  uint64_t part = std::clamp<uint64_t>((size + conc - 1) / conc, options_.min_part_size, options_.max_part_size);
  size_t n = size == 0 ? 1 : static_cast<size_t>((size + part - 1) / part);
  std::vector<Result<GetResult>> results(n, Status(Code::kInternal, "not run"));
  {
    TaskGroup group(*parts_);
    for (size_t i = 0; i < n; ++i) {
      group.Run([&, i] {
        GetOptions get;
        if (size > 0) get.range = ByteRange::Of(i * part, std::min(part, size - i * part));
        results[i] = store_->Get(key, get);
      });
    }
    group.Wait();
  }
  std::vector<Buffer> parts;
  for (size_t i = 0; i < n; ++i) {
    if (!results[i].ok()) return results[i].status().WithContext("fetching shard " + key);
    const GetResult& r = *results[i];
    if (r.info.size != size) {
      return CorruptionError("shard " + key + " is " + std::to_string(r.info.size) + " bytes, the index says " +
                             std::to_string(size) + " (replaced or truncated?)");
    }
    if (r.info.etag != results[0]->info.etag) {
      return UnavailableError("shard " + key + " changed while it was being fetched (ETag " + results[0]->info.etag +
                              " then " + r.info.etag + ")");
    }
    parts.push_back(r.data);
  }
  Buffer data = parts.size() == 1 ? parts[0] : Concat(parts);
  if (data.size() != size) {
    return CorruptionError("shard " + key + ": fetched " + std::to_string(data.size()) + " bytes, expected " +
                           std::to_string(size));
  }
  std::lock_guard lock(mu_);
  ++counters_.fetches;
  counters_.fetched_bytes += size;
  return data;
}

Result<Buffer> ShardCache::LoadFromDisk(size_t shard) {
  if (options_.dir.empty()) return NotFoundError("no disk tier");
  FileSystem& fs = DefaultFileSystem();
  std::string path = options_.dir + "/" + FileName(shard);
  auto file = fs.OpenForRead(path);
  if (!file.ok()) return file.status();
  const std::string& key = keys_[shard];
  uint64_t expect = kFixedHeader + key.size() + sizes_[shard];
  auto size = (*file)->Size();
  Result<Buffer> data = size.ok() && *size == expect ? (*file)->Read(0, expect) : Result<Buffer>(Buffer());
  bool good = data.ok() && data->size() == expect && std::memcmp(data->data(), kMagic, 8) == 0;
  if (good) {
    const uint8_t* p = data->data();
    good = GetLe(p + 8, 8) == sizes_[shard] && GetLe(p + 24, 4) == key.size() &&
           std::memcmp(p + kFixedHeader, key.data(), key.size()) == 0;
    if (good) {
      Buffer body = data->Slice(kFixedHeader + key.size());
      if (XxHash3(body.data(), body.size()) == GetLe(p + 16, 8)) return body;
      good = false;
    }
  }
  // A file that fails verification is a miss: drop it and refetch.
  STRATA_LOG_WARN("loader cache: {} failed verification for {}; refetching", path, key);
  {
    std::lock_guard lock(mu_);
    ++counters_.verify_failures;
  }
  std::lock_guard lock(disk_mu_);
  (void)fs.Remove(path);
  return CorruptionError(path + ": cached copy of " + key + " failed verification");
}

void ShardCache::StoreToDisk(size_t shard, const Buffer& data) {
  if (options_.dir.empty()) return;
  const std::string& key = keys_[shard];
  uint64_t need = kFixedHeader + key.size() + data.size();
  if (need > options_.disk_bytes) return;
  FileSystem& fs = DefaultFileSystem();
  std::lock_guard disk(disk_mu_);
  auto entries = fs.ListDir(options_.dir);
  if (!entries.ok()) return;
  std::map<std::string, size_t> ours;
  for (size_t k = 0; k < keys_.size(); ++k) ours.emplace(FileName(k), k);
  std::string name = FileName(shard);
  struct Victim {
    uint64_t priority;
    std::string name;
    uint64_t size;
  };
  std::vector<Victim> victims;
  uint64_t used = 0;
  for (const DirEntry& e : *entries) {
    if (e.is_dir || !std::string_view(e.name).ends_with(kSuffix)) continue;
    if (e.name == name) return;  // another process cached it meanwhile
    used += e.size;
    auto it = ours.find(e.name);
    uint64_t prio;
    {
      std::lock_guard lock(mu_);
      prio = it != ours.end()
                 ? Priority(it->second)
                 : (1ull << 61) +
                       static_cast<uint64_t>(
                           std::chrono::duration_cast<std::chrono::seconds>(e.mtime.time_since_epoch()).count());
    }
    victims.push_back({prio, e.name, e.size});
  }
  std::sort(victims.begin(), victims.end(), [](const Victim& a, const Victim& b) { return a.priority < b.priority; });
  for (const Victim& v : victims) {
    if (used + need <= options_.disk_bytes) break;
    if (fs.Remove(options_.dir + "/" + v.name).ok()) {
      used -= v.size;
      std::lock_guard lock(mu_);
      ++counters_.disk_evictions;
    }
  }
  if (used + need > options_.disk_bytes) return;
  std::string header(kMagic, 8);
  PutLe(header, data.size(), 8);
  PutLe(header, XxHash3(data.data(), data.size()), 8);
  PutLe(header, key.size(), 4);
  header += key;
  Status s = WriteFileAtomic(fs, options_.dir + "/" + name, Concat({Buffer::FromString(header), data}));
  if (!s.ok()) {
    STRATA_LOG_WARN("loader cache: could not keep {} on disk: {}", key, s.ToString());
    return;
  }
  std::lock_guard lock(mu_);
  counters_.disk_bytes = used + need;
}

}  // namespace strata::loader

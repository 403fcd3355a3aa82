#include "cache/disk_tier.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <optional>

#include "base/buffer_pool.h"
#include "base/hash.h"
#include "base/log.h"

namespace strata::cache {
namespace {
constexpr std::string_view kBlockSuffix = ".blk";
constexpr std::string_view kTempSuffix = ".tmp";

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}
// What a sealed block's data is bound to: the block it is, its length and
// when it was fetched (so a header moved onto it, or made to look fresher,
// does not open).
std::string SealAad(const BlockId& id, uint64_t length, int64_t created_ms) {
  return "strata block v1\n" + id.store + "\n" + id.etag + "\n" + id.key + "\n" + std::to_string(id.block_size) + "\n" +
         std::to_string(id.index) + "\n" + std::to_string(length) + "\n" + std::to_string(created_ms);
}

// Buffered reads go in steps this size, each checked (hashed, or opened)
// right after it lands, while it is still in the CPU's cache: one read of a
// whole 4 MiB block, then a pass over it, fetches every byte from memory twice.
constexpr size_t kBufferedStep = 256 << 10;

// Reads [0, n) of `file` in `step`s, calling landed(bytes) after each.
Result<size_t> ReadInSteps(io::RandomAccessFile& file, size_t n, uint8_t* dst, size_t step,
                           const std::function<void(size_t)>& landed) {
  size_t at = 0;
  while (at < n) {
    const size_t want = std::min(step, n - at);
    STRATA_ASSIGN_OR_RETURN(size_t got, file.ReadAt(at, want, dst + at));
    at += got;
    if (got > 0) landed(at);
    if (got < want) break;  // end of file
  }
  return at;
}

// The XXH3 of a block file's bytes after the header, taken as they land.
class HashAsLanded {
 public:
  void operator()(const uint8_t* file, size_t bytes) {
    if (bytes > hashed_) hasher_.Update(file + hashed_, bytes - hashed_);
    hashed_ = std::max<uint64_t>(hashed_, bytes);
  }
  uint64_t Digest() const { return hasher_.Digest(); }

 private:
  XxHash3Hasher hasher_;
  uint64_t hashed_ = kBlockHeaderSize;
};

// Opens a sealed block in place as its file lands: the header first (the
// seal's AAD is what it names), then the data, whose tag covers every byte
// as the XXH3 would (so a read with the key needs no XXH3).
class OpenAsLanded {
 public:
  OpenAsLanded(const BlockSealer& sealer, const BlockId& id, uint64_t length)
      : sealer_(sealer), id_(id), length_(length) {}

  void operator()(uint8_t* file, size_t bytes) {
    if (!failure_.ok() || bytes < kBlockHeaderSize) return;
    if (!opening_) {
      auto header = DecodeBlockHeader(file, kBlockHeaderSize);
      if (!header.ok()) {
        failure_ = header.status();
        return;
      }
      if (!(header->id == id_) || header->length != length_) {
        failure_ = CorruptionError("block file header names another block");
        return;
      }
      uint8_t* sealed = file + kBlockHeaderSize;
      opening_.emplace(sealer_, SealAad(id_, length_, header->created_ms), sealed, length_ + BlockSealer::kOverhead,
                       sealed + kGcmNonceBytes);
    }
    opening_->Landed(bytes - kBlockHeaderSize);
  }

  // Once the whole file has landed: whether it opened.
  Status Finish() {
    if (!failure_.ok()) return failure_;
    if (!opening_) return CorruptionError("short block file");
    return opening_->Finish().WithContext("block " + std::to_string(id_.index) + " of " + id_.key +
                                          " does not open with this key");
  }

 private:
  const BlockSealer& sealer_;
  const BlockId& id_;
  const uint64_t length_;
  std::optional<BlockSealer::Opening> opening_;
  Status failure_;
};
}  // namespace

DiskTier::DiskTier(DiskTierOptions options, CacheMetrics* metrics)
    : options_(std::move(options)),
      fs_(options_.fs ? *options_.fs : io::DefaultFileSystem()),
      clock_(options_.clock ? *options_.clock : RealClock()),
      metrics_(metrics) {
  index_.set_gauge(&metrics_->disk_occupancy());
}

DiskTier::~DiskTier() = default;

void DiskTier::KeepFloor() {
  if (RoomAboveFloor() >= 0) return;  // above the floor: no lock taken
  MutexLock lock(mu_);
  const uint64_t cap = CapacityNowLocked(RoomAboveFloor());
  if (index_.bytes() > cap) MakeRoomLocked(0, cap);
}

Result<std::unique_ptr<DiskTier>> DiskTier::Open(const DiskTierOptions& options, CacheMetrics* metrics,
                                                 DiskOpenReport* report) {
  if (options.dir.empty()) return InvalidArgumentError("cache directory not set");
  if (!(options.low_watermark > 0 && options.low_watermark <= options.high_watermark &&
        options.high_watermark <= 1.0)) {
    return InvalidArgumentError("cache watermarks must satisfy 0 < low <= high <= 1");
  }
  std::unique_ptr<DiskTier> tier(new DiskTier(options, metrics));
  const TimePoint start = tier->clock_.Now();
  if (!options.read_only) {
    STRATA_RETURN_IF_ERROR(tier->fs_.CreateDirs(options.dir).WithContext("cache directory"));
    auto lock = tier->fs_.LockFile(io::JoinPath(options.dir, "LOCK"));
    if (!lock.ok()) {
      return Status(lock.status().code(),
                    "cache directory " + options.dir + " is in use by another strata process (" +
                        lock.status().message() + "); stop it or choose another --cache-dir",
                    lock.status().cause());
    }
    tier->lock_ = std::move(lock).value();
    STRATA_RETURN_IF_ERROR(tier->EnsureLayout());
    auto space = tier->fs_.Space(options.dir);
    if (space.ok()) {
      tier->min_free_bytes_ = options.min_free.Of(space->total);
    } else {
      tier->min_free_bytes_ = options.min_free.bytes;
      STRATA_LOG_WARN("cache: the size of {}'s file system is unknown ({}); keeping {} free", options.dir,
                      space.status().ToString(), FormatBytes(double(tier->min_free_bytes_)));
    }
  } else {
    STRATA_ASSIGN_OR_RETURN(bool exists, tier->fs_.Exists(options.dir));
    if (!exists) return NotFoundError("cache directory " + options.dir + " does not exist");
  }
  auto sealed =
      CheckSealedDir(tier->fs_, options.dir, options.sealer.get(),
                     {.read_only = options.read_only, .key_optional = options.read_only || options.headers_only},
                     [&tier] { return tier->HoldsBlocks(); });
  if (!sealed.ok()) return sealed.status();
  tier->sealed_ = *sealed;
  DiskOpenReport local;
  STRATA_RETURN_IF_ERROR(tier->Scan(&local));
  if (!options.read_only) {
    // The limit shrank since the last run, or others filled the disk past the floor.
    MutexLock lock(tier->mu_);
    const uint64_t cap = tier->CapacityNowLocked(tier->RoomAboveFloor());
    if (tier->index_.bytes() > cap) tier->MakeRoomLocked(0, cap);
  }
  if (!options.read_only && tier->min_free_bytes_ > 0 && options.floor_check_interval > Duration::zero()) {
    tier->floor_check_ = std::make_unique<PeriodicTask>("strata-floor", options.floor_check_interval,
                                                        [t = tier.get()] { t->KeepFloor(); });
  }
  local.seconds = Seconds(tier->clock_.Now() - start);
  if (report) *report = local;
  return tier;
}

Status DiskTier::EnsureLayout() {
  STRATA_RETURN_IF_ERROR(fs_.CreateDirs(io::JoinPath(options_.dir, "blocks")));
  return fs_.CreateDirs(io::JoinPath(options_.dir, "tmp"));
}

bool DiskTier::HoldsBlocks() {
  auto subdirs = fs_.ListDir(io::JoinPath(options_.dir, "blocks"));
  if (!subdirs.ok()) return false;
  for (const auto& sub : *subdirs) {
    auto files = fs_.ListDir(io::JoinPath(io::JoinPath(options_.dir, "blocks"), sub.name));
    if (!sub.is_dir || (files.ok() && !files->empty())) return true;
  }
  return false;
}

Result<Buffer> DiskTier::Seal(const CachedBlock& block) const {
  const size_t n = block.data.size() + BlockSealer::kOverhead;
  std::shared_ptr<uint8_t> out = BufferPoolAllocate(n);
  STRATA_RETURN_IF_ERROR(options_.sealer->Seal(SealAad(block.id, block.data.size(), block.created_ms),
                                               block.data.data(), block.data.size(), out.get()));
  uint8_t* data = out.get();
  return Buffer::Wrap(std::move(out), data, n);
}

std::string DiskTier::PathOf(const BlockHash& h) const {
  std::string hex = h.Hex();
  return io::JoinPath(io::JoinPath(io::JoinPath(options_.dir, "blocks"), hex.substr(0, 2)),
                      hex + std::string(kBlockSuffix));
}

Status DiskTier::Scan(DiskOpenReport* report) {
  std::string tmp = io::JoinPath(options_.dir, "tmp");
  if (auto entries = fs_.ListDir(tmp); entries.ok()) {
    for (const auto& e : *entries) {
      ++report->temp_files;
      if (!options_.read_only) fs_.Remove(io::JoinPath(tmp, e.name)).IgnoreError();
    }
  }
  std::string blocks = io::JoinPath(options_.dir, "blocks");
  auto subdirs = fs_.ListDir(blocks);
  if (!subdirs.ok()) {
    if (subdirs.status().code() == Code::kNotFound) return Status::Ok();
    return subdirs.status().WithContext("scanning cache directory");
  }
  std::vector<Index::Node> found;
  for (const auto& sub : *subdirs) {
    if (!sub.is_dir) continue;
    std::string subpath = io::JoinPath(blocks, sub.name);
    auto files = fs_.ListDir(subpath);
    if (!files.ok()) continue;
    for (const auto& f : *files) {
      std::string path = io::JoinPath(subpath, f.name);
      Entry entry;
      Status st = EndsWith(f.name, kBlockSuffix)
                      ? CheckFile(path, f.name.substr(0, f.name.size() - kBlockSuffix.size()), f.size, &entry)
                      : CorruptionError("not a block file");
      if (!st.ok()) {
        ++report->invalid_blocks;
        STRATA_LOG_WARN("cache: dropping {}: {}", path, st.ToString());
        if (!options_.read_only) fs_.Remove(path).IgnoreError();
        continue;
      }
      Index::Node node;
      node.hash = HashBlockId(entry.id);
      node.object = ObjectKeyOf(entry.id.store, entry.id.key);
      node.bytes = FileBytes(entry.length);
      node.entry = std::move(entry);
      found.push_back(std::move(node));
    }
  }
  // Oldest first, so the most recently fetched end up most recently used.
  std::sort(found.begin(), found.end(),
            [](const Index::Node& a, const Index::Node& b) { return a.entry.created_ms < b.entry.created_ms; });
  MutexLock lock(mu_);
  for (auto& node : found) {
    ++report->valid_blocks;
    report->valid_bytes += node.entry.length;
    index_.Insert(std::move(node));
  }
  return Status::Ok();
}

Status DiskTier::CheckFile(const std::string& path, const std::string& expected_hash, uint64_t file_size, Entry* out) {
  if (file_size < kBlockHeaderSize) return CorruptionError("short block file");
  STRATA_ASSIGN_OR_RETURN(auto file, fs_.OpenForRead(path));
  MutableBuffer page(kBlockHeaderSize);
  STRATA_ASSIGN_OR_RETURN(size_t n, file->ReadAt(0, kBlockHeaderSize, page.data()));
  STRATA_ASSIGN_OR_RETURN(BlockHeader h, DecodeBlockHeader(page.data(), n));
  if (HashBlockId(h.id).Hex() != expected_hash) return CorruptionError("block file name does not match its header");
  if (file_size != FileBytes(h.length)) return CorruptionError("block file size does not match its header");
  out->id = std::move(h.id);
  out->length = h.length;
  out->created_ms = h.created_ms;
  return Status::Ok();
}

Result<Buffer> DiskTier::ReadFile(const std::string& path, uint64_t total, const Landed& landed) {
  std::unique_ptr<io::RandomAccessFile> file;
  size_t read_size = total;
  bool direct = false;
  if (options_.direct_io) {
    if (auto* posix = dynamic_cast<io::PosixFileSystem*>(&fs_)) {
      auto opened = posix->OpenForReadDirect(path);
      if (opened.ok()) {
        file = std::move(opened).value();
        direct = true;
        constexpr size_t kAlign = io::PosixFileSystem::kDirectAlignment;
        read_size = (total + kAlign - 1) / kAlign * kAlign;
      }
    }
  }
  if (!file) {
    STRATA_ASSIGN_OR_RETURN(file, fs_.OpenForRead(path));
  }
  // Page aligned, as O_DIRECT needs; recycled through the process's buffer
  // pool (a fresh 4 MiB block costs ~1000 page faults), at its exact size
  // since the RAM tier may keep it.
  std::shared_ptr<uint8_t> buf = BufferPoolAllocate(read_size, BufferFit::kExact);
  uint8_t* data = buf.get();
  // The bytes are checked as they land, while the rest is still being read.
  auto on_landed = [&](size_t bytes) { landed(data, std::min<uint64_t>(bytes, total)); };
  // Parts in flight for O_DIRECT reads (the device's queue); a buffered read
  // is served from the page cache or by the kernel's own read-ahead.
  Result<size_t> n = direct ? file->ReadAtParts(0, read_size, data, options_.read_part_bytes, on_landed)
                            : ReadInSteps(*file, read_size, data, kBufferedStep, on_landed);
  if (!n.ok()) return n.status();
  // A longer file is as wrong as a shorter one: it is not the block we wrote.
  if (*n != total) {
    return CorruptionError("block file " + path + " has " + std::to_string(*n) + " bytes, expected " +
                           std::to_string(total));
  }
  return Buffer::Wrap(std::move(buf), data, *n);
}

Result<CachedBlock> DiskTier::Read(const BlockHash& h, const BlockId& id, uint64_t length) {
  if (sealed_ && !options_.sealer) return NotSupportedError("cache directory is encrypted and no key was given");
  {
    MutexLock lock(mu_);
    auto* node = index_.Find(h);
    if (!node) return NotFoundError("block not on disk");
    if (!(node->entry.id == id) || node->entry.length != length) {
      DropLocked(h, false);
      metrics_->Inc(CacheCounter::kChecksumFailures);
      return CorruptionError("disk block index entry does not match " + id.key);
    }
  }
  std::string path = PathOf(h);
  HashAsLanded hash;
  std::optional<OpenAsLanded> open;
  if (sealed_) open.emplace(*options_.sealer, id, length);
  auto file = ReadFile(path, FileBytes(length), [&](uint8_t* data, size_t bytes) {
    if (open) {
      (*open)(data, bytes);
    } else {
      hash(data, bytes);
    }
  });
  Status failure;
  CachedBlock block;
  if (!file.ok()) {
    failure = file.status();
  } else {
    auto header = DecodeBlockHeader(file->data(), kBlockHeaderSize);
    if (!header.ok()) {
      failure = header.status();
    } else if (!(header->id == id) || header->length != length) {
      failure = CorruptionError("block file header names another block");
    } else if (open) {
      failure = open->Finish();
    } else if (hash.Digest() != header->data_hash) {
      failure = CorruptionError("block data checksum mismatch");
    }
    if (failure.ok()) {
      block.id = id;
      block.data = file->Slice(kBlockHeaderSize + (open ? kGcmNonceBytes : 0), length);
      block.created_ms = header->created_ms;
    }
  }
  MutexLock lock(mu_);
  if (!failure.ok()) {
    bool corrupt = failure.code() == Code::kCorruption;
    metrics_->Inc(corrupt ? CacheCounter::kChecksumFailures : CacheCounter::kDiskReadErrors);
    STRATA_LOG_WARN("cache: dropping block {} of {} ({}): {}", id.index, id.key, path, failure.ToString());
    DropLocked(h, false);
    return failure.WithContext("cached block " + path);
  }
  if (auto* node = index_.Find(h)) {
    block.prefetched = node->entry.prefetched;
    node->entry.prefetched = false;
    index_.Touch(h);
  }
  return block;
}

bool DiskTier::Contains(const BlockHash& h) const {
  MutexLock lock(mu_);
  return const_cast<Index&>(index_).Find(h) != nullptr;
}

void DiskTier::DropLocked(const BlockHash& key, bool evicted) {
  // A copy: callers may pass a hash that lives in the node erased below.
  const BlockHash h = key;
  Index::Node node;
  if (!index_.Erase(h, &node)) return;
  if (evicted) {
    metrics_->Inc(CacheCounter::kDiskEvictions);
    if (node.entry.prefetched) metrics_->Inc(CacheCounter::kReadaheadWasted);
  }
  if (!options_.read_only) fs_.Remove(PathOf(h)).IgnoreError();
}

int64_t DiskTier::RoomAboveFloor() {
  return io::RoomAboveFloor(fs_, options_.dir, min_free_bytes_).value_or(INT64_MAX);
}

uint64_t DiskTier::CapacityNowLocked(int64_t room) const {
  const uint64_t cap = options_.capacity_bytes;
  const uint64_t on_disk = index_.bytes();
  if (room >= 0) return static_cast<uint64_t>(room) >= cap - std::min(cap, on_disk) ? cap : on_disk + room;
  const uint64_t deficit = static_cast<uint64_t>(-room);
  return std::min(cap, on_disk > deficit ? on_disk - deficit : 0);
}

bool DiskTier::MakeRoomLocked(uint64_t need, uint64_t cap, const EvictFilter& may_evict, bool* refused) {
  const auto high = static_cast<uint64_t>(cap * options_.high_watermark);
  const auto low = static_cast<uint64_t>(cap * options_.low_watermark);
  uint64_t used = index_.bytes() + reserved_;
  if (used + need <= high && used <= cap) return true;
  uint64_t target = need > low ? 0 : low - need;
  while (index_.bytes() + reserved_ > target) {
    auto* victim = index_.Victim();
    if (!victim) break;
    if (may_evict && !may_evict(victim->hash)) {
      if (refused) *refused = true;
      break;
    }
    DropLocked(victim->hash, true);
  }
  return index_.bytes() + reserved_ + need <= cap;
}

Status DiskTier::Write(const BlockHash& h, const CachedBlock& block, bool pinned, const EvictFilter& may_evict) {
  if (options_.read_only) return NotSupportedError("cache directory opened read-only");
  if (sealed_ && !options_.sealer) return NotSupportedError("cache directory is encrypted and no key was given");
  const uint64_t need = FileBytes(block.data.size());
  {
    MutexLock lock(mu_);
    if (index_.Find(h)) return Status::Ok();
    bool refused = false;
    // The free space is read under the lock, so it and the index are one
    // snapshot: read before it, a block written and indexed in between was
    // counted twice, as room and as on disk (parallel writers overshot the
    // floor by a block or two). One statvfs, about a microsecond.
    const uint64_t cap = CapacityNowLocked(RoomAboveFloor());
    if (need > cap || !MakeRoomLocked(need, cap, may_evict, &refused)) {
      if (cap < options_.capacity_bytes) {
        metrics_->Inc(CacheCounter::kDiskLowSpace);
        return NoSpaceError("cache directory " + options_.dir + ": its file system is down to the " +
                            FormatBytes(double(min_free_bytes_)) + " kept free (--cache-free-space); " + block.id.key +
                            " not cached on disk");
      }
      if (refused) {
        metrics_->Inc(CacheCounter::kDiskNotAdmitted);
        return NoSpaceError("cache directory " + options_.dir + " is full of blocks read as often as this one of " +
                            block.id.key + ": not admitted");
      }
      metrics_->Inc(CacheCounter::kDiskWriteSkipped);
      return NoSpaceError("no room in cache directory " + options_.dir + " for a block of " + block.id.key);
    }
    reserved_ += need;
  }
  std::string path = PathOf(h);
  Status st = WriteFile(h, block, path);
  if (st.code() == Code::kNotFound) {
    // The directory was deleted underneath us: recreate it; every indexed file
    // may be gone, which later reads discover (and refetch).
    STRATA_LOG_WARN("cache: directory {} vanished; recreating", options_.dir);
    if (EnsureLayout().ok()) st = WriteFile(h, block, path);
  }
  MutexLock lock(mu_);
  reserved_ -= need;
  if (!st.ok()) {
    metrics_->Inc(CacheCounter::kDiskWriteErrors);
    return st;
  }
  metrics_->Inc(CacheCounter::kDiskWrites);
  Index::Node node;
  node.hash = h;
  node.object = ObjectKeyOf(block.id.store, block.id.key);
  node.bytes = need;
  node.pinned = pinned;
  node.entry = Entry{block.id, block.data.size(), block.created_ms, block.prefetched};
  index_.Insert(std::move(node));
  return Status::Ok();
}

Status DiskTier::WriteFile(const BlockHash& h, const CachedBlock& block, const std::string& final_path) {
  STRATA_RETURN_IF_ERROR(fs_.CreateDirs(io::ParentDir(final_path)));
  std::string tmp =
      io::JoinPath(io::JoinPath(options_.dir, "tmp"), h.Hex() + "." + std::to_string(getpid()) + "." +
                                                          std::to_string(temp_seq_++) + std::string(kTempSuffix));
  Buffer stored = block.data;  // what lands after the header: the data, or it sealed
  if (sealed_) {
    STRATA_ASSIGN_OR_RETURN(stored, Seal(block));
  }
  MutableBuffer page(kBlockHeaderSize);
  BlockHeader header{block.id, block.data.size(), XxHash3(stored.data(), stored.size()), block.created_ms};
  STRATA_RETURN_IF_ERROR(EncodeBlockHeader(header, page.data()));
  auto file = fs_.CreateExclusive(tmp);
  if (!file.ok()) return file.status();
  Status st = (*file)->Append(page.data(), page.size());
  if (st.ok()) st = (*file)->Append(stored);
  Status closed = (*file)->Close();
  if (st.ok()) st = closed;
  if (st.ok()) st = fs_.Rename(tmp, final_path);
  if (!st.ok()) fs_.Remove(tmp).IgnoreError();
  return st;
}

void DiskTier::Remove(const BlockHash& h) {
  MutexLock lock(mu_);
  DropLocked(h, false);
}

size_t DiskTier::RemoveObject(const std::string& object) {
  MutexLock lock(mu_);
  auto hashes = index_.BlocksOf(object);
  for (const auto& h : hashes) DropLocked(h, false);
  return hashes.size();
}

size_t DiskTier::RemoveIf(const std::function<bool(const BlockId&)>& pred) {
  MutexLock lock(mu_);
  std::vector<BlockHash> victims;
  index_.ForEach([&](Index::Node& n) {
    if (pred(n.entry.id)) victims.push_back(n.hash);
  });
  for (const auto& h : victims) DropLocked(h, false);
  return victims.size();
}

void DiskTier::Repin(const std::function<bool(const BlockId&)>& pred) {
  MutexLock lock(mu_);
  index_.ForEach([&](Index::Node& n) { n.pinned = pred(n.entry.id); });
}

std::vector<DiskBlockInfo> DiskTier::List() const {
  MutexLock lock(mu_);
  std::vector<DiskBlockInfo> out;
  const_cast<Index&>(index_).ForEach([&](Index::Node& n) {
    out.push_back(DiskBlockInfo{n.entry.id, n.entry.length, n.entry.created_ms, n.pinned, PathOf(n.hash)});
  });
  return out;
}

VerifyReport DiskTier::Verify(bool drop_bad) {
  VerifyReport report;
  for (const auto& info : List()) {
    ++report.checked;
    BlockHash h = HashBlockId(info.id);
    Status st;
    HashAsLanded hash;  // with or without the key: the XXH3 covers the sealed bytes too
    auto file = ReadFile(info.path, FileBytes(info.length), [&](uint8_t* data, size_t bytes) { hash(data, bytes); });
    if (!file.ok()) {
      st = file.status();
    } else {
      auto header = DecodeBlockHeader(file->data(), kBlockHeaderSize);
      if (!header.ok())
        st = header.status();
      else if (!(header->id == info.id))
        st = CorruptionError("header names another block");
      else if (hash.Digest() != header->data_hash)
        st = CorruptionError("checksum mismatch");
    }
    if (st.ok()) {
      ++report.ok;
      continue;
    }
    ++report.bad;
    report.bad_paths.push_back(info.path + ": " + st.ToString());
    if (drop_bad && !options_.read_only) {
      metrics_->Inc(CacheCounter::kChecksumFailures);
      Remove(h);
    }
  }
  return report;
}

uint64_t DiskTier::bytes() const {
  MutexLock lock(mu_);
  return index_.bytes();
}

size_t DiskTier::blocks() const {
  MutexLock lock(mu_);
  return index_.size();
}

}  // namespace strata::cache

// ShardCache's disk tier: the shard file format, loading and verifying a
// file, admitting and writing one (behind the reader), the directory's
// byte bound and free-space floor, and the start-up sweep of dead writers'
// temp files. The rest of the cache is shard_cache.cc.
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <limits>
#include <map>
#include <thread>

#include "base/buffer_pool.h"
#include "base/coding.h"
#include "base/hash.h"
#include "base/log.h"
#include "base/metrics.h"
#include "io/durable.h"
#include "io/file_system.h"
#include "io/process.h"
#include "loader/shard_cache.h"

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

}  // namespace

void ShardCache::WriteToDisk(size_t shard, const Buffer& data, uint64_t generation,
                             std::unique_ptr<io::FileLock> lock) {
  if (options_.dir.empty()) return;
  if (!options_.async_disk_writes) return StoreToDisk(shard, data, generation);  // (the lock goes after)
  {
    MutexLock guard(mu_);
    if (writing_.count(shard)) return;  // queued by another flight already
    if (full_since_ && clock_.Now() - *full_since_ < kFullRecheck) {
      const NotAdmitted why = full_reason_;
      guard.Unlock();
      return CountNotAdmitted(why);
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
  CountNotAdmitted(NotAdmitted::kBusy);
}

void ShardCache::CountNotAdmitted(NotAdmitted why) {
  static const auto metric = [](const char* reason) -> Counter& {
    return MetricsRegistry::Global().GetCounter("strata_loader_shards_not_admitted_total",
                                                "Shards fetched but not kept in the loader's disk cache",
                                                {{"reason", reason}});
  };
  static Counter& busy_metric = metric("disk_busy");
  static Counter& no_reuse_metric = metric("no_reuse");
  static Counter& low_space_metric = metric("low_space");
  MutexLock lock(mu_);
  switch (why) {
    case NotAdmitted::kBusy: busy_metric.Inc(), ++counters_.not_admitted_busy; break;
    case NotAdmitted::kNoReuse: no_reuse_metric.Inc(), ++counters_.not_admitted_no_reuse; break;
    case NotAdmitted::kLowSpace: low_space_metric.Inc(), ++counters_.not_admitted_low_space; break;
  }
}

uint64_t ShardCache::DiskBoundNow(uint64_t used) {
  const std::optional<int64_t> room = io::RoomAboveFloor(fs_, options_.dir, min_free_bytes_);
  if (!room) return disk_bytes_;
  // The free space read includes what live temp files have yet to write
  // (counted in `used`): the bound errs low by at most those.
  const int64_t bound = static_cast<int64_t>(std::min<uint64_t>(used, INT64_MAX / 2)) + *room;
  return bound <= 0 ? 0 : std::min<uint64_t>(disk_bytes_, static_cast<uint64_t>(bound));
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

bool ShardCache::HoldsShardFiles() {
  auto entries = fs_.ListDir(options_.dir);
  return entries.ok() && std::any_of(entries->begin(), entries->end(),
                                     [](const io::DirEntry& e) { return std::string_view(e.name).ends_with(kSuffix); });
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
    full_since_.reset();  // its file goes: room for another
  }
  MutexLock lock(disk_mu_);
  (void)fs_.Remove(path);
  return CorruptionError(path + ": cached copy of " + key + " failed verification");
}

std::optional<ShardCache::DirUsage> ShardCache::ReadDirUsage() {
  auto entries = fs_.ListDir(options_.dir);
  if (!entries.ok()) return std::nullopt;
  std::map<std::string, size_t> ours;
  for (size_t k = 0; k < keys_.size(); ++k) ours.emplace(FileName(k), k);
  std::vector<uint64_t> priority(keys_.size());
  {
    MutexLock lock(mu_);  // once, not per file: this may run on the low-priority writer
    for (size_t k = 0; k < keys_.size(); ++k) priority[k] = Priority(k);
  }
  DirUsage dir;
  for (const io::DirEntry& e : *entries) {
    if (e.is_dir) continue;
    if (TempOwner(e.name) != 0) {
      dir.used += e.size;  // a live writer's file to be (or a dead one's, until the next start): counted, not evictable
      continue;
    }
    if (!std::string_view(e.name).ends_with(kSuffix)) continue;
    dir.used += e.size;
    dir.names.insert(e.name);
    auto it = ours.find(e.name);
    const uint64_t prio =
        it != ours.end()
            ? priority[it->second]
            : (1ull << 61) + static_cast<uint64_t>(
                                 std::chrono::duration_cast<std::chrono::seconds>(e.mtime.time_since_epoch()).count());
    dir.victims.push_back({prio, e.name, e.size, it != ours.end()});
  }
  std::sort(dir.victims.begin(), dir.victims.end(),
            [](const Victim& a, const Victim& b) { return a.priority < b.priority; });
  return dir;
}

void ShardCache::KeepFloor() {
  if (options_.dir.empty()) return;
  const std::optional<int64_t> room = io::RoomAboveFloor(fs_, options_.dir, min_free_bytes_);
  if (!room || *room >= 0) return;  // above the floor: no lock taken
  MutexLock disk(disk_mu_);
  auto budget = fs_.LockFileBlocking(BudgetLockPath(), {});
  if (!budget.ok()) return;
  std::optional<DirUsage> dir = ReadDirUsage();
  if (!dir) return;
  const uint64_t bound = DiskBoundNow(dir->used);
  for (const Victim& v : dir->victims) {
    if (dir->used <= bound) break;
    if (fs_.Remove(options_.dir + "/" + v.name).ok()) {
      dir->used -= v.size;
      MutexLock lock(mu_);
      ++counters_.disk_evictions;
    }
  }
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
  std::string name = FileName(shard);
  std::optional<DirUsage> dir = ReadDirUsage();
  if (!dir) return;
  if (dir->names.count(name)) return;  // another process cached it meanwhile
  std::vector<Victim>& victims = dir->victims;
  uint64_t used = dir->used;
  // A dataset larger than the bound, streamed once per epoch, re-reads a
  // shard evicted now as late as the one it would make room for: keep what
  // is cached (every later epoch hits it) and admit the rest only into free
  // room. Other files (another dataset, a replaced version) still make room.
  const uint64_t bound = DiskBoundNow(used);
  const bool keep_ours = dataset_disk_bytes_ > bound;
  for (const Victim& v : victims) {
    if (used + need <= bound) break;
    // Past the bound (others filled the disk to its floor, or it shrank), own
    // shards go too, down to it.
    if (keep_ours && v.ours && used <= bound) continue;
    if (fs_.Remove(options_.dir + "/" + v.name).ok()) {
      used -= v.size;
      MutexLock lock(mu_);
      ++counters_.disk_evictions;
    }
  }
  if (stale()) return;
  if (used + need > bound) {
    const bool low_space = bound < disk_bytes_ && used + need <= disk_bytes_;
    if (!keep_ours && !low_space) return;
    const NotAdmitted why = low_space ? NotAdmitted::kLowSpace : NotAdmitted::kNoReuse;
    {
      MutexLock lock(mu_);
      full_since_ = clock_.Now();
      full_reason_ = why;
    }
    return CountNotAdmitted(why);
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
  full_since_.reset();
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

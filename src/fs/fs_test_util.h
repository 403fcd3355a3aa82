// Test helpers for fs/: an in-memory FileSystem for write buffers (so unit
// tests touch no disk) and a fixture stack mem -> FaultStore -> CachedStore
// -> ObjectFs on a FakeClock.
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>

#include "cache/block_cache.h"
#include "cache/cached_store.h"
#include "fs/object_fs.h"
#include "io/file_system.h"
#include "object/fault_store.h"
#include "object/mem_store.h"
#include "object/store_wrapper.h"

namespace strata::fs::testing {

// Only what write buffers use: OpenForWrite/OpenForRead/Remove/Truncate/Exists.
class MemFileSystem : public io::FileSystem {
 public:
  struct File {
    std::mutex mu;
    std::string bytes;
  };

  Result<std::unique_ptr<io::RandomAccessFile>> OpenForRead(const std::string& path) override {
    std::lock_guard lock(mu_);
    auto it = files_.find(path);
    if (it == files_.end()) return NotFoundError(path);
    return std::unique_ptr<io::RandomAccessFile>(new Reader(it->second, path));
  }
  Result<std::unique_ptr<io::WritableFile>> OpenForWrite(const std::string& path, bool truncate) override {
    std::lock_guard lock(mu_);
    auto& f = files_[path];
    if (!f) f = std::make_shared<File>();
    if (truncate) f->bytes.clear();
    return std::unique_ptr<io::WritableFile>(new Writer(f, path));
  }
  Result<std::unique_ptr<io::WritableFile>> CreateExclusive(const std::string& path) override {
    {
      std::lock_guard lock(mu_);
      if (files_.count(path)) return AlreadyExistsError(path + " exists");
    }
    return OpenForWrite(path, true);
  }
  Status Rename(const std::string& from, const std::string& to) override {
    std::lock_guard lock(mu_);
    auto it = files_.find(from);
    if (it == files_.end()) return NotFoundError(from);
    files_[to] = it->second;  // open handles keep the same bytes, as a POSIX rename
    files_.erase(from);
    return Status::Ok();
  }
  Status Remove(const std::string& path) override {
    std::lock_guard lock(mu_);
    files_.erase(path);
    return Status::Ok();
  }
  Status RemoveDir(const std::string& path) override {
    std::lock_guard lock(mu_);
    const std::string prefix = path + "/";
    for (const auto& [p, f] : files_)
      if (p.starts_with(prefix)) return PreconditionFailedError(path + " not empty");
    dirs_.erase(path);
    return Status::Ok();
  }
  Status CreateDirs(const std::string& path) override {
    std::lock_guard lock(mu_);
    dirs_.insert(path);
    return Status::Ok();
  }
  // Files and directories directly in `dir`.
  Result<std::vector<io::DirEntry>> ListDir(const std::string& dir) override {
    std::lock_guard lock(mu_);
    std::map<std::string, io::DirEntry> out;
    const std::string prefix = dir + "/";
    auto add = [&](const std::string& path, File* file) {
      if (!path.starts_with(prefix)) return;
      const size_t slash = path.find('/', prefix.size());
      io::DirEntry e;
      e.name = path.substr(prefix.size(), slash == std::string::npos ? std::string::npos : slash - prefix.size());
      e.is_dir = slash != std::string::npos || file == nullptr;
      if (!e.is_dir) {
        std::lock_guard fl(file->mu);
        e.size = file->bytes.size();
      }
      if (!e.name.empty()) out[e.name] = e;
    };
    for (const auto& [path, file] : files_) add(path, file.get());
    for (const auto& d : dirs_) add(d, nullptr);
    std::vector<io::DirEntry> v;
    for (auto& [name, e] : out) v.push_back(std::move(e));
    return v;
  }
  // Every file path (tests look for buffers).
  std::vector<std::string> Paths() {
    std::lock_guard lock(mu_);
    std::vector<std::string> v;
    for (const auto& [path, file] : files_) v.push_back(path);
    return v;
  }
  std::string Contents(const std::string& path) {
    std::lock_guard lock(mu_);
    auto it = files_.find(path);
    if (it == files_.end()) return "<none>";
    std::lock_guard fl(it->second->mu);
    return it->second->bytes;
  }
  Result<io::FileStat> Stat(const std::string&) override { return NotSupportedError("mem fs"); }
  Status SyncDir(const std::string&) override { return Status::Ok(); }
  Result<bool> Exists(const std::string& path) override {
    std::lock_guard lock(mu_);
    return files_.count(path) > 0;
  }
  Result<io::SpaceInfo> Space(const std::string&) override {
    return io::SpaceInfo{.total = uint64_t{1} << 41, .available = uint64_t{1} << 40};
  }
  // Exclusive within the process, like flock across ObjectFs instances; held until the lock is destroyed.
  Result<std::unique_ptr<io::FileLock>> LockFile(const std::string& path) override {
    std::lock_guard lock(mu_);
    {
      std::lock_guard held(locks_->mu);
      if (!locks_->paths.insert(path).second) return UnavailableError("lock " + path + " is held");
    }
    auto& f = files_[path];
    if (!f) f = std::make_shared<File>();
    return std::unique_ptr<io::FileLock>(new Lock(locks_, path));
  }
  Result<std::unique_ptr<io::FileLock>> LockFileBlocking(const std::string&, const io::LockWaitOptions&) override {
    return NotSupportedError("mem fs");
  }
  Status Truncate(const std::string& path, uint64_t size) override {
    std::lock_guard lock(mu_);
    auto it = files_.find(path);
    if (it == files_.end()) return NotFoundError(path);
    std::lock_guard fl(it->second->mu);
    it->second->bytes.resize(size, '\0');
    return Status::Ok();
  }
  // Files but a mount's lock file (the buffers; tests check they are gone).
  size_t FileCount() {
    std::lock_guard lock(mu_);
    size_t n = 0;
    for (const auto& [path, file] : files_) n += !path.ends_with("/lock");
    return n;
  }

 private:
  class Reader : public io::RandomAccessFile {
   public:
    Reader(std::shared_ptr<File> f, std::string path) : f_(std::move(f)), path_(std::move(path)) {}
    Result<size_t> ReadAt(uint64_t offset, size_t n, void* dst) override {
      std::lock_guard lock(f_->mu);
      if (offset >= f_->bytes.size()) return size_t{0};
      size_t k = std::min<size_t>(n, f_->bytes.size() - offset);
      std::memcpy(dst, f_->bytes.data() + offset, k);
      return k;
    }
    Result<uint64_t> Size() override {
      std::lock_guard lock(f_->mu);
      return f_->bytes.size();
    }
    const std::string& path() const override { return path_; }

   private:
    std::shared_ptr<File> f_;
    std::string path_;
  };
  class Writer : public io::WritableFile {
   public:
    Writer(std::shared_ptr<File> f, std::string path) : f_(std::move(f)), path_(std::move(path)) {}
    Status Append(const void* data, size_t n) override { return WriteAt(Size(), data, n); }
    Status WriteAt(uint64_t offset, const void* data, size_t n) override {
      std::lock_guard lock(f_->mu);
      if (f_->bytes.size() < offset + n) f_->bytes.resize(offset + n, '\0');
      std::memcpy(f_->bytes.data() + offset, data, n);
      return Status::Ok();
    }
    Status Sync() override { return Status::Ok(); }
    Status Close() override { return Status::Ok(); }
    uint64_t Size() const override {
      std::lock_guard lock(f_->mu);
      return f_->bytes.size();
    }
    const std::string& path() const override { return path_; }

   private:
    std::shared_ptr<File> f_;
    std::string path_;
  };

  struct HeldLocks {
    std::mutex mu;
    std::set<std::string> paths;
  };
  class Lock : public io::FileLock {
   public:
    Lock(std::shared_ptr<HeldLocks> held, std::string path) : held_(std::move(held)), path_(std::move(path)) {}
    ~Lock() override {
      std::lock_guard lock(held_->mu);
      held_->paths.erase(path_);
    }
    const std::string& path() const override { return path_; }

   private:
    std::shared_ptr<HeldLocks> held_;
    std::string path_;
  };

  std::mutex mu_;
  std::map<std::string, std::shared_ptr<File>> files_;
  std::set<std::string> dirs_;
  std::shared_ptr<HeldLocks> locks_ = std::make_shared<HeldLocks>();
};

// A store that, like file://, cannot hold "dir/" keys and says so.
class NoMarkersStore : public object::StoreWrapper {
 public:
  using object::StoreWrapper::Put;
  using object::StoreWrapper::StoreWrapper;
  object::StoreCapabilities Capabilities() const override {
    object::StoreCapabilities caps = object::StoreWrapper::Capabilities();
    caps.directory_markers = false;
    return caps;
  }
  Result<object::ObjectInfo> Put(std::string_view key, Buffer data, const object::PutOptions& options) override {
    if (key.ends_with('/')) return InvalidArgumentError("no empty path segments");
    return object::StoreWrapper::Put(key, std::move(data), options);
  }
  Status Delete(std::string_view key) override {
    if (key.ends_with('/')) return InvalidArgumentError("no empty path segments");
    return object::StoreWrapper::Delete(key);
  }
};

// Counts the requests that reach the backend: HEADs, GETs, LISTs (per prefix).
class CountingStore : public object::StoreWrapper {
 public:
  using object::StoreWrapper::Get;
  using object::StoreWrapper::StoreWrapper;
  Result<object::ObjectInfo> Head(std::string_view key) override {
    heads++;
    return object::StoreWrapper::Head(key);
  }
  Result<object::GetResult> Get(std::string_view key, const object::GetOptions& options) override {
    gets++;
    {
      std::lock_guard lock(mu_);
      ++gets_[std::string(key)];
    }
    return object::StoreWrapper::Get(key, options);
  }
  uint64_t GetsOf(const std::string& key) {
    std::lock_guard lock(mu_);
    return gets_[key];
  }
  Result<object::ListResult> List(const object::ListOptions& options) override {
    {
      std::lock_guard lock(mu_);
      ++lists_[options.prefix];
    }
    return object::StoreWrapper::List(options);
  }
  uint64_t Lists(const std::string& prefix) {
    std::lock_guard lock(mu_);
    return lists_[prefix];
  }
  void Reset() {
    heads = gets = 0;
    std::lock_guard lock(mu_);
    lists_.clear();
    gets_.clear();
  }
  std::atomic<uint64_t> heads{0}, gets{0};

 private:
  std::mutex mu_;
  std::map<std::string, uint64_t> lists_;
  std::map<std::string, uint64_t> gets_;
};

// mem -> CountingStore -> FaultStore -> CachedStore (64 KiB blocks) -> ObjectFs, on a FakeClock;
// with markers = false, mem -> NoMarkersStore -> FaultStore -> ...; with a
// cache_dir, the cache has a disk tier there (Remount() starts over on it).
struct FsFixture {
  explicit FsFixture(FsOptions fs_options = Defaults(), size_t readahead_threads = 2, bool markers = true,
                     std::string cache_dir = "") {
    object::MemStoreOptions mo;
    mo.min_part_size = 64 << 10;
    mo.clock = &clock;
    mem = object::MakeMemStore("", mo);
    counting = std::make_shared<CountingStore>(mem);
    object::FaultConfig fc;
    fc.clock = &clock;
    fault = std::make_shared<object::FaultStore>(
        markers ? object::ObjectStorePtr(counting) : std::make_shared<NoMarkersStore>(counting), fc);
    co.block_size = kBlock;
    co.ram_bytes = 64 << 20;
    co.dir = std::move(cache_dir);
    co.clock = &clock;
    so.metadata_ttl = fs_options.attr_ttl;
    so.clock = &clock;
    so.readahead_threads = readahead_threads;
    so.fetch_part_size = 0;
    fs_options.clock = &clock;
    fs_options.local = &local;
    fs_options.write_dir = "/buffers";
    fo = fs_options;
    Remount();
  }
  // A new cache, store and ObjectFs over the same backend (and disk tier):
  // what a remount starts with.
  void Remount() {
    fs.reset();
    store.reset();
    cache.reset();  // releases the disk tier's lock
    auto opened = cache::BlockCache::Open(co);
    ASSERT_TRUE(opened.ok()) << opened.status();
    cache = *opened;
    store = std::make_shared<cache::CachedStore>(fault, cache, so);
    fs = std::make_unique<ObjectFs>(store, fo);
  }
  static FsOptions Defaults() {
    FsOptions o;
    o.attr_ttl = std::chrono::seconds(1);
    o.entry_ttl = std::chrono::seconds(1);
    o.dir_ttl = std::chrono::seconds(5);
    o.dir_prefetch = 0;
    o.uid = 1000;
    o.gid = 1000;
    return o;
  }
  void Put(const std::string& key, const std::string& data) { ASSERT_TRUE(mem->Put(key, Buffer::Copy(data)).ok()); }
  std::string Backend(const std::string& key) {
    auto r = mem->Get(key);
    return r.ok() ? r->data.ToString() : "<" + r.status().ToString() + ">";
  }
  uint64_t CacheCount(cache::CacheCounter c) { return cache->Stats()[c]; }

  static constexpr uint64_t kBlock = 64 << 10;
  cache::CacheOptions co;
  cache::CachedStoreOptions so;
  FsOptions fo;
  FakeClock clock;
  MemFileSystem local;
  std::shared_ptr<object::ObjectStore> mem;
  std::shared_ptr<CountingStore> counting;
  std::shared_ptr<object::FaultStore> fault;
  std::shared_ptr<cache::BlockCache> cache;
  std::shared_ptr<cache::CachedStore> store;
  std::unique_ptr<ObjectFs> fs;
};

}  // namespace strata::fs::testing

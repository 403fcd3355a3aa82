// Integration: a dataset packed with dataset::Pack into a file:// store
// behind cloud emulation, streamed through a disk cache directory smaller
// than the dataset. Every sample arrives each epoch, the directory stays
// within its bound (eviction works), a later epoch reuses what survived,
// and a cached file altered on disk is refetched, never served. Caches on
// one directory (processes, or caches that share nothing else) download each
// shard once between them, keep the directory within its bound together, and
// a waiter outlives a lock holder that dies. A regenerated dataset (other
// content hashes, same layout) never gets the files kept for the old one.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <set>
#include <thread>

#include "base/hash.h"
#include "dataset/pack.h"
#include "io/durable.h"
#include "io/file_system.h"
#include "loader/loader_test_util.h"
#include "loader/shard_cache.h"
#include "loader/streaming_dataset.h"
#include "object/cloud_store.h"
#include "object/mem_store.h"
#include "object/store_url.h"
#include "testing/fork.h"

namespace strata::loader {
namespace {

using testing::WaitFor;

class LoaderIntegrationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = *io::MakeTempDir("strata-loader-it-");
    auto src = object::MakeMemStore("loader-it-src");
    for (int i = 0; i < kSamples; ++i) {
      char name[32];
      snprintf(name, sizeof name, "%05d.bin", i);
      ASSERT_TRUE(
          src->Put(name, Buffer::FromString(std::string(kBytes, static_cast<char>('a' + i % 26)) + std::to_string(i)))
              .ok());
    }
    auto dst = *object::OpenStore("file://" + root_ + "/bucket");
    dataset::PackOptions po;
    po.format = dataset::ShardFormat::kTar;
    po.shard_size = 24 << 10;
    auto packed = dataset::Pack(*src, "", *dst, "data/", po);
    ASSERT_TRUE(packed.ok()) << packed.status().ToString();
    shards_ = packed->manifest.shards.size();
    ASSERT_GE(shards_, 10u);
    shard_bytes_ = packed->manifest.shards[0].size;
    for (const auto& e : packed->manifest.shards) keys_.push_back("data/" + e.name), sizes_.push_back(e.size);
    object::CloudProfile cloud;
    cloud.first_byte = std::chrono::milliseconds(2);
    cloud.bytes_per_second_per_connection = 200e6;
    store_ = object::EmulateCloud(dst, cloud);
    object::DropMemStore("loader-it-src");
  }
  void TearDown() override { (void)io::RemoveAll(io::DefaultFileSystem(), root_); }

  uint64_t CacheDirBytes(size_t* files) {
    uint64_t n = 0;
    *files = 0;
    auto list = io::DefaultFileSystem().ListDir(root_ + "/cache");
    EXPECT_TRUE(list.ok()) << list.status();
    if (!list.ok()) return 0;
    for (const auto& e : *list) {
      if (e.name.ends_with(".shard")) n += e.size, ++*files;
    }
    return n;
  }

  static constexpr int kSamples = 300;
  static constexpr int kBytes = 1000;
  std::string root_;
  object::ObjectStorePtr store_;
  size_t shards_ = 0;
  uint64_t shard_bytes_ = 0;
  std::vector<std::string> keys_;  // the shards' keys in store_, and their sizes
  std::vector<uint64_t> sizes_;
};

// Counts requests; GETs of `gated` wait until Open() (a download held in flight).
class GateStore : public testing::CountingStore {
 public:
  GateStore(object::ObjectStorePtr inner, std::string gated) : CountingStore(std::move(inner)), gated_(gated) {}
  Result<object::GetResult> Get(std::string_view key, const object::GetOptions& options) override {
    if (key == gated_) {
      std::unique_lock lock(mu_);
      ++blocked_;
      cv_.wait(lock, [&] { return open_; });
    }
    return CountingStore::Get(key, options);
  }
  void Open() {
    {
      std::lock_guard lock(mu_);
      open_ = true;
    }
    cv_.notify_all();
  }
  size_t blocked() const {
    std::lock_guard lock(mu_);
    return blocked_;
  }

 private:
  const std::string gated_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = false;
  size_t blocked_ = 0;
};

TEST_F(LoaderIntegrationTest, StreamsThroughASmallDiskCacheWithEviction) {
  StreamingOptions o;
  o.cache_dir = root_ + "/cache";
  o.cache_limit_bytes = 4 * (shard_bytes_ + 256);  // about 4 of the >= 10 shards
  o.ram_cache_bytes = 0;                           // every reuse must come from disk
  o.shuffle_window = 2;
  o.batch_size = 8;
  o.num_workers = 2;
  auto ds = StreamingDataset::Open(store_, "data", o);
  ASSERT_TRUE(ds.ok()) << ds.status().ToString();
  std::set<std::string> kept;  // the shard files after the first epoch
  for (uint64_t epoch = 0; epoch < 2; ++epoch) {
    std::multiset<uint64_t> seen;
    Stats total;
    for (size_t w = 0; w < 2; ++w) {
      auto it = *(*ds)->Iterate(w, (*ds)->MakeState(epoch, 0));
      while (true) {
        auto b = it->NextBatch();
        ASSERT_TRUE(b.ok()) << b.status().ToString();
        if (!*b) break;
        for (size_t i = 0; i < (*b)->indices.size(); ++i) {
          seen.insert((*b)->indices[i]);
          const Column& c = (*b)->columns.at("bin");
          uint64_t begin = c.offsets.empty() ? i * (c.data.size() / (*b)->indices.size()) : c.offsets[i];
          uint64_t end = c.offsets.empty() ? begin + c.data.size() / (*b)->indices.size() : c.offsets[i + 1];
          std::string v(c.data.view().substr(begin, end - begin));
          EXPECT_TRUE(v.ends_with(std::to_string((*b)->indices[i]))) << v;
        }
      }
      Stats s = it->stats();
      total.shards_fetched += s.shards_fetched;
      total.shards_from_cache += s.shards_from_cache;
      total.shards_from_previous_epoch += s.shards_from_previous_epoch;
      total.cache_not_admitted_no_reuse = s.cache_not_admitted_no_reuse;
      (*ds)->FlushCacheWrites();
      size_t files = 0;
      EXPECT_LE(CacheDirBytes(&files), o.cache_limit_bytes);
      EXPECT_LE(files, 4u);
    }
    ASSERT_EQ(seen.size(), static_cast<size_t>(kSamples));
    for (int i = 0; i < kSamples; ++i) EXPECT_EQ(seen.count(i), 1u);
    // Both workers read every shard (window shuffle deals samples of all shards to both), once:
    // epoch 1's from the store, the disk, or the head epoch 0's iterators fetched of it.
    EXPECT_EQ(total.shards_fetched + total.shards_from_cache + total.shards_from_previous_epoch, 2 * shards_);
    // The dataset is larger than the disk: what the disk holds stays (hit every epoch), the rest is not admitted.
    EXPECT_GT(total.cache_not_admitted_no_reuse, 0u);
    std::set<std::string> now;
    for (const auto& e : *io::DefaultFileSystem().ListDir(o.cache_dir))
      if (e.name.ends_with(".shard")) now.insert(e.name);
    EXPECT_FALSE(now.empty());
    if (epoch == 0) kept = now;
    EXPECT_EQ(now, kept) << "epoch " << epoch << " evicted a shard to admit another";
    if (epoch == 1) {
      // Both workers hit every kept shard (in this epoch, or while the last one ended).
      EXPECT_GE(total.shards_from_cache + total.shards_from_previous_epoch, 2 * kept.size());
    }
  }

  // Alter every cached file on disk: each is detected and refetched.
  for (const auto& e : *io::DefaultFileSystem().ListDir(o.cache_dir)) {
    if (!e.name.ends_with(".shard")) continue;  // not the lock files
    std::string path = o.cache_dir + "/" + e.name;
    std::string bytes = *io::ReadFileToString(io::DefaultFileSystem(), path, 1 << 30);
    bytes[bytes.size() - 3] ^= 0x55;
    ASSERT_TRUE(io::WriteFileAtomic(io::DefaultFileSystem(), path, bytes).ok());
  }
  auto fresh = *StreamingDataset::Open(store_, "data", o);
  uint64_t n = 0;
  for (size_t w = 0; w < 2; ++w) {
    auto it = *fresh->Iterate(w, fresh->MakeState(0, 0));
    while (true) {
      auto s = it->NextSample();
      ASSERT_TRUE(s.ok()) << s.status().ToString();
      if (!*s) break;
      EXPECT_TRUE((*s)->fields.at("bin").bytes.ToString().ends_with(std::to_string((*s)->index)));
      ++n;
    }
    if (w == 0) {
      EXPECT_EQ(it->stats().shards_from_cache, 0u);  // nothing altered was served
    }
  }
  EXPECT_EQ(n, static_cast<uint64_t>(kSamples));
}

// Two caches that share nothing but the directory (as two processes): while
// one downloads a shard the other waits for its lock, then loads the file.
TEST_F(LoaderIntegrationTest, CachesOnOneDirectoryDownloadEachShardOnce) {
  auto gate = std::make_shared<GateStore>(store_, keys_[0]);
  ShardCacheOptions co;
  co.dir = root_ + "/cache";
  co.ram_bytes = 0;  // only the directory is shared
  auto a = *ShardCache::Open(gate, keys_, sizes_, co);
  auto b = *ShardCache::Open(gate, keys_, sizes_, co);
  Result<ShardFetch> got_a = Status(Code::kInternal, "not run"), got_b = got_a;
  std::thread ta([&] { got_a = a->Get(0); });
  ASSERT_TRUE(WaitFor([&] { return gate->blocked() == 1; }));  // a holds the lock, its GET in the store
  std::thread tb([&] { got_b = b->Get(0); });
  ASSERT_TRUE(WaitFor([&] { return b->counters().lock_waits == 1; }));
  gate->Open();
  ta.join();
  tb.join();
  ASSERT_TRUE(got_a.ok()) << got_a.status().ToString();
  ASSERT_TRUE(got_b.ok()) << got_b.status().ToString();
  EXPECT_TRUE(got_a->from_store);
  EXPECT_FALSE(got_b->from_store);
  EXPECT_EQ(b->counters().disk_hits, 1u);
  EXPECT_EQ(got_b->data.ToString(), got_a->data.ToString());
  EXPECT_EQ(gate->gets(), 1u);
  EXPECT_FALSE(*io::DefaultFileSystem().Exists(a->FilePath(0) + ".lock"));  // removed by its holder

  // Every shard, both caches at once in the same order: one download each in total.
  auto all = [&](ShardCache& c) {
    for (size_t k = 0; k < keys_.size(); ++k) {
      auto g = c.Get(k);
      EXPECT_TRUE(g.ok() && g->data.size() == sizes_[k]) << k;
    }
  };
  std::thread t1([&] { all(*a); });
  std::thread t2([&] { all(*b); });
  t1.join();
  t2.join();
  EXPECT_EQ(gate->gets(), shards_);
  EXPECT_EQ(a->counters().fetches + b->counters().fetches, shards_);
}

// Two processes on one directory, each with its own cache: each shard is
// downloaded once in total (each child reports its downloads as its exit code).
TEST_F(LoaderIntegrationTest, ProcessesOnOneDirectoryDownloadEachShardOnce) {
  ASSERT_LT(shards_, 100u);
  ShardCacheOptions co;
  co.dir = root_ + "/cache";
  std::vector<pid_t> children;
  for (int i = 0; i < 2; ++i) {
    pid_t pid = strata::testing::ForkForTest();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      int code = 100;
      auto cache = ShardCache::Open(store_, keys_, sizes_, co);
      if (cache.ok()) {
        bool ok = true;
        for (size_t k = 0; k < keys_.size(); ++k) {
          auto g = (*cache)->Get(k);
          ok = ok && g.ok() && g->data.size() == sizes_[k];
        }
        (*cache)->FlushDiskWrites();  // _exit runs no destructor
        code = ok ? static_cast<int>((*cache)->counters().fetches) : 101;
      }
      _exit(code);
    }
    children.push_back(pid);
  }
  int fetches = 0;
  for (pid_t pid : children) {
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status));
    ASSERT_LT(WEXITSTATUS(status), 100) << "child failed";
    fetches += WEXITSTATUS(status);
  }
  EXPECT_EQ(fetches, static_cast<int>(shards_));
  auto cache = *ShardCache::Open(store_, keys_, sizes_, co);
  for (size_t k = 0; k < keys_.size(); ++k) EXPECT_TRUE(*io::DefaultFileSystem().Exists(cache->FilePath(k))) << k;
}

// Four processes fill one directory through caches of their own, each in a
// different order: the directory never holds more than its bound (checked
// under the same budget lock the caches use), and a cache does not write a
// shard while another process holds that lock.
TEST_F(LoaderIntegrationTest, TheDiskBoundHoldsAcrossProcesses) {
  ShardCacheOptions co;
  co.dir = root_ + "/cache";
  co.ram_bytes = 0;
  co.disk_bytes = 3 * shard_bytes_ + 3 * 1024;  // about three shard files
  std::vector<pid_t> children;
  for (size_t p = 0; p < 4; ++p) {
    pid_t pid = strata::testing::ForkForTest();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      auto cache = ShardCache::Open(store_, keys_, sizes_, co);
      bool ok = cache.ok();
      for (size_t i = 0; ok && i < 3 * keys_.size(); ++i) {
        size_t k = (i * (p + 1) + p) % keys_.size();
        auto g = (*cache)->Get(k);
        ok = g.ok() && g->data.size() == sizes_[k];
      }
      if (ok) (*cache)->FlushDiskWrites();  // _exit runs no destructor
      _exit(ok ? 0 : 1);
    }
    children.push_back(pid);
  }
  auto cache = *ShardCache::Open(store_, keys_, sizes_, co);
  auto locked_bytes = [&] {
    int fd = ::open(cache->BudgetLockPath().c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    EXPECT_GE(fd, 0);
    EXPECT_EQ(::flock(fd, LOCK_EX), 0);
    size_t files = 0;
    uint64_t bytes = CacheDirBytes(&files);
    ::close(fd);
    return bytes;
  };
  uint64_t most = 0;
  size_t running = children.size();
  while (running > 0) {
    most = std::max(most, locked_bytes());
    // Pacing only: flock is not fair, and a monitor relocking at once could starve the children.
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    for (pid_t& pid : children) {
      int status = 0;
      if (pid > 0 && waitpid(pid, &status, WNOHANG) == pid) {
        EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child failed";
        pid = 0;
        --running;
      }
    }
  }
  most = std::max(most, locked_bytes());
  EXPECT_GT(most, 0u);
  EXPECT_LE(most, co.disk_bytes);

  // Hold the budget lock as another process would: a Get that downloads a
  // shard returns at once (its file is written behind it), and the file
  // appears only once the lock is released.
  const size_t fresh = [&] {
    for (size_t k = 0; k < keys_.size(); ++k) {
      if (!*io::DefaultFileSystem().Exists(cache->FilePath(k))) return k;
    }
    return keys_.size();
  }();
  ASSERT_LT(fresh, keys_.size());
  // Room for it: the dataset is larger than the bound, so the cache would not evict one of its shards for it.
  for (size_t k = 0; k < keys_.size(); ++k) {
    if (*io::DefaultFileSystem().Exists(cache->FilePath(k))) {
      ASSERT_TRUE(io::DefaultFileSystem().Remove(cache->FilePath(k)).ok());
      break;
    }
  }
  int fd = ::open(cache->BudgetLockPath().c_str(), O_RDWR | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::flock(fd, LOCK_EX), 0);
  EXPECT_TRUE(cache->Get(fresh).ok());
  EXPECT_FALSE(*io::DefaultFileSystem().Exists(cache->FilePath(fresh)));  // cannot be written while we hold it
  ::close(fd);                                                            // releases the lock
  cache->FlushDiskWrites();
  EXPECT_TRUE(*io::DefaultFileSystem().Exists(cache->FilePath(fresh)));
}

// A forked child (a torch DataLoader worker) never gets its parent's shared
// cache, whose threads did not survive the fork: it opens its own.
TEST_F(LoaderIntegrationTest, AForkedChildOpensItsOwnSharedCache) {
  ShardCacheOptions co;
  auto parent = *ShardCache::OpenShared("fork-test", store_, keys_, sizes_, co);
  ASSERT_TRUE(parent->Get(0).ok());
  pid_t child = strata::testing::ForkForTest();
  ASSERT_GE(child, 0);
  if (child == 0) {
    auto mine = ShardCache::OpenShared("fork-test", store_, keys_, sizes_, co);
    bool own = mine.ok() && mine->get() != parent.get() && (*mine)->counters().fetches == 0;
    auto again = ShardCache::OpenShared("fork-test", store_, keys_, sizes_, co);
    bool shared = again.ok() && mine.ok() && again->get() == mine->get();  // and shares it within itself
    _exit(own && shared ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_EQ(ShardCache::OpenShared("fork-test", store_, keys_, sizes_, co)->get(), parent.get());
}

// A process holding a shard's download lock dies without writing the file:
// the kernel drops its lock and the waiting cache downloads the shard.
TEST_F(LoaderIntegrationTest, AWaiterDownloadsWhenTheLockHolderDies) {
  auto counting = std::make_shared<GateStore>(store_, "");
  ShardCacheOptions co;
  co.dir = root_ + "/cache";
  auto cache = *ShardCache::Open(counting, keys_, sizes_, co);
  const std::string lock_path = cache->FilePath(0) + ".lock";
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  pid_t holder = strata::testing::ForkForTest();
  ASSERT_GE(holder, 0);
  if (holder == 0) {  // only async-signal-safe calls here
    int fd = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0 || ::flock(fd, LOCK_EX) != 0) _exit(1);
    char c = 'x';
    if (::write(ready[1], &c, 1) != 1) _exit(1);
    while (true) pause();
  }
  ::close(ready[1]);
  char c = 0;
  ASSERT_EQ(::read(ready[0], &c, 1), 1);  // the child holds the lock
  ::close(ready[0]);
  Result<ShardFetch> got = Status(Code::kInternal, "not run");
  std::thread t([&] { got = cache->Get(0); });
  EXPECT_TRUE(WaitFor([&] { return cache->counters().lock_waits == 1; }));
  EXPECT_EQ(counting->gets(), 0u);
  ::kill(holder, SIGKILL);
  int status = 0;
  EXPECT_EQ(waitpid(holder, &status, 0), holder);
  t.join();
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_TRUE(got->from_store);
  EXPECT_EQ(counting->gets(), 1u);
  cache->FlushDiskWrites();
  EXPECT_TRUE(*io::DefaultFileSystem().Exists(cache->FilePath(0)));
}

// Files a cache directory kept for one dataset are not served to a dataset
// regenerated with the same layout (other content hashes).
TEST(LoaderCacheDirTest, ACacheDirectoryNeverServesAReplacedDatasetsShards) {
  auto store = object::MakeMemStore("loader-it-regenerated");
  // The dataset written with `text`, and its manifest with the shards' real
  // sha256 (the loader checks fetched bytes against them).
  auto write = [&](const std::string& text) {
    dataset::Manifest m = testing::WriteDataset(*store, "ds/", dataset::ShardFormat::kTar, {4, 4}, [&](uint64_t i) {
      return std::vector<dataset::Field>{{"txt", Buffer::FromString(text + std::to_string(i))}};
    });
    for (auto& s : m.shards) {
      auto bytes = store->Get("ds/" + s.name);
      ASSERT_TRUE(bytes.ok()) << bytes.status();
      s.sha256 = ToHex(Sha256(bytes->data.data(), bytes->data.size()));
    }
    ASSERT_TRUE(store->Put("ds/manifest.json", Buffer::FromString(dataset::EncodeManifest(m))).ok());
  };
  const std::string dir = *io::MakeTempDir("strata-partition-test-");
  StreamingOptions o;
  o.cache_dir = dir;
  auto drain = [&] {
    auto it = *(*StreamingDataset::Open(store, "ds", o))->Iterate(0, {});
    while (it->NextSample().value()) {
    }
    return it->stats();
  };
  write("sample-");
  EXPECT_EQ(drain().shards_fetched, 2u);
  EXPECT_EQ(drain().shards_from_cache, 2u);  // the same dataset again: from the directory
  write("SAMPLE-");                          // the same layout (names, sizes, counts), other bytes
  Stats replaced = drain();
  EXPECT_EQ(replaced.shards_from_cache, 0u);
  EXPECT_EQ(replaced.shards_fetched, 2u);
  (void)io::RemoveAll(io::DefaultFileSystem(), dir);
  object::DropMemStore("loader-it-regenerated");
}

}  // namespace
}  // namespace strata::loader

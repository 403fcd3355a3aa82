// Integration tests of the disk tier with real temp directories: restart,
// verification, corruption, limits, pinning, full disk, deleted directory,
// locking, and kill -9 during fills (in a loop).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <future>

#include "cache/block_cache.h"
#include "cache/cache_test_util.h"
#include "cache/cached_store.h"
#include "io/fault_file_system.h"
#include "object/mem_store.h"
#include "testing/fork.h"

namespace strata::cache {
namespace {
namespace fs = std::filesystem;
using testing_cache::CountingStore;
using testing_cache::Prefix;
using testing_cache::RandomBytes;
using testing_cache::Range;

constexpr uint64_t kBlock = 64 << 10;
constexpr uint64_t kFileBytes = kBlock + kBlockHeaderSize;

class DiskCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("strata-cache-test-" + std::to_string(getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    mem_ = object::MakeMemStore();
    counting_ = std::make_shared<CountingStore>(mem_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::shared_ptr<CachedStore> Open(CacheOptions o = {}, DiskOpenReport* report = nullptr,
                                    size_t max_parallel_blocks = CachedStoreOptions{}.max_parallel_blocks,
                                    size_t readahead_threads = 0) {
    o.block_size = kBlock;
    o.dir = dir_.string();
    if (o.disk_bytes == (10ull << 30)) o.disk_bytes = 100 * kFileBytes;
    if (o.ram_bytes == (1ull << 30)) o.ram_bytes = 0;  // disk only unless asked
    auto cache = BlockCache::Open(o, report);
    EXPECT_TRUE(cache.ok()) << cache.status();
    if (!cache.ok()) return nullptr;
    CachedStoreOptions so;
    so.readahead_threads = readahead_threads;
    so.fetch_part_size = 0;
    so.max_parallel_blocks = max_parallel_blocks;
    return std::make_shared<CachedStore>(counting_, *cache, so);
  }
  Buffer Add(const std::string& key, size_t size, uint64_t seed) {
    Buffer b = RandomBytes(size, seed);
    EXPECT_TRUE(mem_->Put(key, b).ok());
    return b;
  }
  std::vector<fs::path> BlockFiles() {
    std::vector<fs::path> out;
    if (!fs::exists(dir_ / "blocks")) return out;
    for (auto& e : fs::recursive_directory_iterator(dir_ / "blocks")) {
      if (e.is_regular_file()) out.push_back(e.path());
    }
    return out;
  }

  fs::path dir_;
  object::ObjectStorePtr mem_;
  std::shared_ptr<CountingStore> counting_;
};

TEST_F(DiskCacheTest, RestartKeepsValidBlocksAndDropsDebris) {
  Buffer a = Add("a", 3 * kBlock + 10, 1);
  {
    auto store = Open();
    ASSERT_EQ(store->Get("a")->data, a);
  }
  EXPECT_EQ(BlockFiles().size(), 4u);
  // Debris an interrupted run could leave: a temp file and a torn block.
  std::ofstream(dir_ / "tmp" / "x.1.2.tmp") << "partial";
  fs::create_directories(dir_ / "blocks" / "00");
  std::ofstream(dir_ / "blocks" / "00" / "00000000000000000000000000000000.blk") << "garbage";
  DiskOpenReport report;
  auto store = Open({}, &report);
  EXPECT_EQ(report.valid_blocks, 4u);
  EXPECT_EQ(report.invalid_blocks, 1u);
  EXPECT_EQ(report.temp_files, 1u);
  EXPECT_EQ(BlockFiles().size(), 4u);
  int gets = counting_->gets.load();
  ASSERT_EQ(store->Get("a")->data, a);
  EXPECT_EQ(counting_->gets.load(), gets);  // warm across the restart
  EXPECT_EQ(store->cache().Stats()[CacheCounter::kDiskHits], 4u);
}

// The open scan is timed on the injected clock (a fake one does not move), not on steady_clock.
TEST_F(DiskCacheTest, OpenReportIsTimedOnTheInjectedClock) {
  Buffer a = Add("a", 2 * kBlock, 3);
  { ASSERT_EQ(Open()->Get("a")->data, a); }
  FakeClock clock;
  CacheOptions o;
  o.clock = &clock;
  DiskOpenReport report;
  auto store = Open(o, &report);
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(report.valid_blocks, 2u);
  EXPECT_EQ(report.seconds, 0.0);
  DiskOpenReport real;
  store.reset();
  Open({}, &real);
  EXPECT_GT(real.seconds, 0.0);
}

TEST_F(DiskCacheTest, CorruptBlockIsDroppedAndRefetchedNeverServed) {
  Buffer a = Add("a", kBlock, 1);
  auto store = Open();
  ASSERT_EQ(store->Get("a")->data, a);
  store->cache().Flush();  // the disk write went behind the read
  auto files = BlockFiles();
  ASSERT_EQ(files.size(), 1u);
  {
    std::fstream f(files[0], std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(kBlockHeaderSize + 1000);
    f.put('\xff' ^ a.data()[1000]);
  }
  ASSERT_EQ(store->Get("a")->data, a);
  store->cache().Flush();
  EXPECT_EQ(store->cache().Stats()[CacheCounter::kChecksumFailures], 1u);
  EXPECT_EQ(counting_->gets.load(), 2);
  // Short file.
  ASSERT_EQ(BlockFiles().size(), 1u);
  fs::resize_file(BlockFiles()[0], kBlockHeaderSize + 10);
  ASSERT_EQ(store->Get("a")->data, a);
  store->cache().Flush();
  EXPECT_EQ(store->cache().Stats()[CacheCounter::kChecksumFailures], 2u);
  // Unreadable (removed) file.
  ASSERT_EQ(BlockFiles().size(), 1u);
  fs::remove(BlockFiles()[0]);
  ASSERT_EQ(store->Get("a")->data, a);
  store->cache().Flush();
  EXPECT_EQ(store->cache().Stats()[CacheCounter::kDiskReadErrors], 1u);
  EXPECT_EQ(counting_->gets.load(), 4);
  // verify finds nothing wrong afterwards.
  auto report = store->cache().disk()->Verify(true);
  EXPECT_EQ(report.checked, 1u);
  EXPECT_EQ(report.bad, 0u);
}

TEST_F(DiskCacheTest, EvictionKeepsUnderTheLimitWithWatermarksAndPins) {
  CacheOptions o;
  o.disk_bytes = 10 * kFileBytes;
  o.high_watermark = 0.9;
  o.low_watermark = 0.5;
  o.pinned_prefixes = {"pin/"};
  o.disk_admission = false;  // plain LRU (the admission rule has its own test)
  Add("pin/x", kBlock, 99);
  for (int i = 0; i < 30; ++i) Add("k" + std::to_string(i), kBlock, i);
  auto store = Open(o);
  ASSERT_TRUE(store->Get("pin/x").ok());
  uint64_t max_seen = 0;
  for (int i = 0; i < 30; ++i) {
    ASSERT_EQ(store->Get("k" + std::to_string(i))->data, RandomBytes(kBlock, i));
    store->cache().Flush();
    max_seen = std::max(max_seen, store->cache().disk()->bytes());
    uint64_t on_disk = 0;
    for (auto& p : BlockFiles()) on_disk += fs::file_size(p);
    ASSERT_LE(on_disk, o.disk_bytes);
  }
  EXPECT_LE(max_seen, static_cast<uint64_t>(0.9 * o.disk_bytes));
  auto stats = store->cache().Stats();
  EXPECT_GT(stats[CacheCounter::kDiskEvictions], 0u);
  // The newest blocks survive, the oldest went, the pinned one stayed.
  BlockCache& c = store->cache();
  auto id = [&](const std::string& k) { return BlockId{mem_->Url(), k, mem_->Head(k)->etag, kBlock, 0}; };
  EXPECT_TRUE(c.Contains(id("k29")));
  EXPECT_FALSE(c.Contains(id("k0")));
  EXPECT_TRUE(c.Contains(id("pin/x")));
  EXPECT_GE(c.EvictPrefix("k2"), 1u);  // k2, k20..k29: at least k29 was cached
  EXPECT_FALSE(c.Contains(id("k29")));
  EXPECT_TRUE(c.Contains(id("pin/x")));
}

TEST_F(DiskCacheTest, FullDiskKeepsServingFromTheBackend) {
  io::FaultFileSystem faulty(io::DefaultFileSystem());
  CacheOptions o;
  o.fs = &faulty;
  o.disk_min_free = {};  // the disk fills under the cache: its writes fail (cache_space_test keeps a floor)
  Add("a", 4 * kBlock, 1);
  auto store = Open(o);
  faulty.SetWriteBudget(kFileBytes + kFileBytes / 2);  // room for one block and a half
  for (int round = 0; round < 2; ++round) {
    ASSERT_EQ(store->Get("a")->data, RandomBytes(4 * kBlock, 1));
    store->cache().Flush();
  }
  auto stats = store->cache().Stats();
  EXPECT_EQ(stats[CacheCounter::kDiskWrites], 1u);
  EXPECT_GT(stats[CacheCounter::kDiskWriteErrors], 0u);
  EXPECT_EQ(fs::exists(dir_ / "tmp") ? std::distance(fs::directory_iterator(dir_ / "tmp"), {}) : 0, 0);
  EXPECT_EQ(store->cache().disk()->blocks(), 1u);
  faulty.ClearWriteBudget();
  ASSERT_EQ(store->Get("a")->data, RandomBytes(4 * kBlock, 1));
  store->cache().Flush();
  EXPECT_EQ(store->cache().disk()->blocks(), 4u);
}

TEST_F(DiskCacheTest, DirectoryDeletedUnderneath) {
  Buffer a = Add("a", 2 * kBlock, 1), b = Add("b", kBlock, 2);
  auto store = Open();
  ASSERT_EQ(store->Get("a")->data, a);
  store->cache().Flush();  // no write behind the read races the deletion
  fs::remove_all(dir_);
  ASSERT_EQ(store->Get("a")->data, a);  // refetched
  ASSERT_EQ(store->Get("b")->data, b);  // and the directory works again
  store->cache().Flush();
  EXPECT_TRUE(fs::exists(dir_ / "blocks"));
  EXPECT_GE(BlockFiles().size(), 1u);
}

TEST_F(DiskCacheTest, SecondOpenerIsToldWhoHoldsTheDirectory) {
  auto store = Open();
  CacheOptions o;
  o.dir = dir_.string();
  auto second = BlockCache::Open(o);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), Code::kUnavailable);
  EXPECT_NE(second.status().ToString().find(std::to_string(getpid())), std::string::npos) << second.status();
  o.read_only = true;
  EXPECT_TRUE(BlockCache::Open(o).ok());
}

TEST_F(DiskCacheTest, DemotionFromRamAndPromotionFromDisk) {
  CacheOptions o;
  o.ram_bytes = 2 * kBlock;
  o.write_through = false;
  Buffer a = Add("a", 4 * kBlock, 1);
  // One block filled at a time: they enter RAM in order, so blocks 0 and 1 are the ones
  // demoted (parallel fills finish in any order and may leave block 0 in RAM).
  auto store = Open(o, nullptr, 1);
  ASSERT_EQ(store->Get("a")->data, a);
  store->cache().Flush();
  EXPECT_EQ(store->cache().ram().blocks(), 2u);
  EXPECT_EQ(store->cache().disk()->blocks(), 2u);  // the two evicted from RAM
  ASSERT_EQ(store->Get("a", Range(object::ByteRange::Of(0, 10)))->data, a.Slice(0, 10));
  auto s = store->cache().Stats();
  EXPECT_EQ(s[CacheCounter::kDiskHits], 1u);  // promoted
  EXPECT_EQ(counting_->gets.load(), 4);
}

// After a restart every block is on disk and none in RAM: read-ahead (here
// Prefetch, as the mount's listing-order opens use it) reads disk blocks into
// RAM ahead of their reader, so the reader waits on no disk read or checksum.
TEST_F(DiskCacheTest, ReadaheadReadsDiskBlocksIntoRamAfterARestart) {
  CacheOptions o;
  o.ram_bytes = 16 * kBlock;
  Buffer a = Add("a", 4 * kBlock - 100, 1);
  {
    auto first = Open(o, nullptr, 8, 2);
    ASSERT_EQ(first->Get("a")->data, a);
    first->cache().Flush();
    ASSERT_EQ(first->cache().disk()->blocks(), 4u);  // written through
  }
  auto store = Open(o, nullptr, 8, 2);  // a restart: the disk tier only
  ASSERT_EQ(store->cache().ram().blocks(), 0u);
  auto info = mem_->Head("a");
  ASSERT_TRUE(info.ok());
  const int gets = counting_->gets.load();
  EXPECT_EQ(store->Prefetch("a", *info, 1ull << 30), 4u) << "blocks only on disk are read ahead into RAM";
  store->WaitForReadahead();
  EXPECT_EQ(store->cache().ram().blocks(), 4u);
  EXPECT_EQ(store->Prefetch("a", *info, 1ull << 30), 0u) << "all in RAM now";
  auto stream = store->OpenStream("a", *info);
  ASSERT_TRUE(stream.ok());
  EXPECT_EQ(*(*stream)->Read(0, a.size()), a);
  auto s = store->cache().Stats();
  EXPECT_EQ(s[CacheCounter::kDiskHits], 0u) << "the reader waited on no disk read";
  EXPECT_EQ(s[CacheCounter::kReadaheadHits], 4u);
  EXPECT_EQ(counting_->gets.load(), gets) << "nothing from the backend";
}

TEST_F(DiskCacheTest, ReadaheadWithoutARamTierSkipsBlocksOnDisk) {
  Buffer a = Add("a", 2 * kBlock, 2);
  auto store = Open({}, nullptr, 8, 2);  // disk only
  ASSERT_EQ(store->Get("a")->data, a);
  auto info = mem_->Head("a");
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(store->Prefetch("a", *info, 1ull << 30), 0u) << "no RAM to read them into";
}

// Issue 26, item 2: the disk never throttles a cold read. With the disk's
// writes held at the fault file system's gate (a disk that takes nothing),
// a cold read still completes: four blocks wait in the write-behind queue,
// the rest are not admitted (counted), and what was admitted is byte-exact.
TEST_F(DiskCacheTest, SlowDiskNeverThrottlesAColdRead) {
  io::FaultFileSystem faulty(io::DefaultFileSystem());
  CacheOptions o;
  o.fs = &faulty;
  o.disk_write_queue_bytes = 4 * kFileBytes;
  constexpr int kBlocks = 32;
  const Buffer a = Add("a", kBlocks * kBlock, 5);
  auto store = Open(o);
  faulty.CloseWriteGate();
  auto read = std::async(std::launch::async, [&] { return store->Get("a"); });
  const bool done = read.wait_for(std::chrono::seconds(60)) == std::future_status::ready;
  if (!done) faulty.OpenWriteGate();
  ASSERT_TRUE(done) << "the read waited on the disk";
  auto got = read.get();
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->data, a);
  EXPECT_TRUE(faulty.WaitHeldWrites(1, std::chrono::seconds(10))) << "the writer is held at the gate";
  auto stats = store->cache().Stats();
  EXPECT_EQ(stats[CacheCounter::kDiskWriteDropped], kBlocks - 4u);
  EXPECT_EQ(stats[CacheCounter::kDiskWrites], 0u);
  EXPECT_EQ(counting_->gets.load(), kBlocks);
  faulty.OpenWriteGate();
  store->cache().Flush();
  EXPECT_EQ(store->cache().Stats()[CacheCounter::kDiskWrites], 4u);
  store.reset();
  CacheOptions reopen;
  reopen.block_size = kBlock;
  reopen.dir = dir_.string();
  reopen.ram_bytes = 0;
  auto cache = BlockCache::Open(reopen);
  ASSERT_TRUE(cache.ok()) << cache.status();
  const auto kept = (*cache)->disk()->List();
  ASSERT_EQ(kept.size(), 4u);
  for (const auto& info : kept) {
    auto block = (*cache)->Get(info.id, info.length, []() -> Result<Buffer> { return InternalError("no fetch"); });
    ASSERT_TRUE(block.ok()) << block.status();
    EXPECT_EQ(*block, a.Slice(info.id.offset(), info.length)) << "block " << info.id.index;
  }
}

// A data set larger than the disk tier, read in order once per epoch: with
// plain LRU every block evicts one read sooner in the next epoch (no hit,
// ever; every block written every epoch). The admission rule keeps what
// fitted: later epochs hit it, and nothing more is written.
TEST_F(DiskCacheTest, DataSetLargerThanTheDiskIsNotChurned) {
  constexpr int kObjects = 20, kEpochs = 3;
  for (int i = 0; i < kObjects; ++i) Add("e/" + std::to_string(100 + i), kBlock, i);
  for (bool admission : {false, true}) {
    SCOPED_TRACE(admission ? "admission" : "plain LRU");
    fs::remove_all(dir_);
    counting_->gets = 0;
    CacheOptions o;
    o.disk_bytes = 10 * kFileBytes;
    o.disk_admission = admission;
    auto store = Open(o);
    std::vector<uint64_t> hits;
    for (int epoch = 0; epoch < kEpochs; ++epoch) {
      const uint64_t before = store->cache().Stats()[CacheCounter::kDiskHits];
      for (int i = 0; i < kObjects; ++i) {
        ASSERT_EQ(store->Get("e/" + std::to_string(100 + i))->data, RandomBytes(kBlock, i));
        store->cache().Flush();
      }
      hits.push_back(store->cache().Stats()[CacheCounter::kDiskHits] - before);
    }
    auto s = store->cache().Stats();
    if (!admission) {
      EXPECT_EQ(hits[1] + hits[2], 0u) << "LRU churns";
      EXPECT_EQ(s[CacheCounter::kDiskWrites], uint64_t{kObjects * kEpochs});
      continue;
    }
    EXPECT_EQ(hits[0], 0u);
    EXPECT_EQ(hits[1], 10u) << "what fitted in epoch 1 is read from disk in epoch 2";
    EXPECT_EQ(hits[2], 10u);
    EXPECT_EQ(s[CacheCounter::kDiskWrites], 10u) << "nothing written after the disk filled";
    EXPECT_EQ(s[CacheCounter::kDiskNotAdmitted], uint64_t{kEpochs * (kObjects - 10)});
    EXPECT_EQ(counting_->gets.load(), kObjects + (kEpochs - 1) * (kObjects - 10));
    // A block read more often than the cached ones does get in.
    Add("hot", kBlock, 77);
    for (int i = 0; i < 6; ++i) ASSERT_EQ(store->Get("hot")->data, RandomBytes(kBlock, 77));
    store->cache().Flush();
    EXPECT_TRUE(store->cache().Contains(BlockId{mem_->Url(), "hot", mem_->Head("hot")->etag, kBlock, 0}));
    EXPECT_GE(store->cache().Stats()[CacheCounter::kDiskEvictions], 1u);
  }
}

// A child process fills the cache in a loop and is killed with SIGKILL at a
// random moment; the parent reopens the directory and checks every block it
// keeps against the backend. Repeated many times.
TEST_F(DiskCacheTest, KillNineDuringFillsLeavesAConsistentCache) {
  constexpr int kObjects = 12;
  std::vector<Buffer> data;
  for (int i = 0; i < kObjects; ++i) data.push_back(Add("o" + std::to_string(i), (i % 4 + 1) * kBlock - i * 100, i));
  Random rnd(42);
  uint64_t kept_total = 0;
  for (int iteration = 0; iteration < 40; ++iteration) {
    int pipefd[2];
    ASSERT_EQ(pipe(pipefd), 0);
    pid_t pid = strata::testing::ForkForTest();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      close(pipefd[0]);
      CacheOptions o;
      o.block_size = kBlock;
      o.dir = dir_.string();
      o.ram_bytes = 2 * kBlock;
      o.disk_bytes = 16 * kFileBytes;  // smaller than the data set: evictions happen too
      auto cache = BlockCache::Open(o);
      if (!cache.ok()) _exit(3);
      CachedStoreOptions so;
      so.fetch_part_size = 16 << 10;
      CachedStore store(mem_, *cache, so);
      Random r(iteration);
      for (uint64_t n = 0;; ++n) {
        int i = static_cast<int>(r.Uniform(kObjects));
        if (n % 5 == 0) (*cache)->EvictPrefix("o" + std::to_string(i));
        if (!store.Get("o" + std::to_string(i)).ok()) _exit(4);
        char c = 1;
        if (write(pipefd[1], &c, 1) != 1) _exit(5);
      }
    }
    close(pipefd[1]);
    int want = 1 + static_cast<int>(rnd.Uniform(20));
    char c;
    for (int got = 0; got < want; ++got) ASSERT_EQ(read(pipefd[0], &c, 1), 1) << "child died early";
    usleep(static_cast<useconds_t>(rnd.Uniform(3000)));  // a random point inside the next fill
    kill(pid, SIGKILL);
    int wstatus = 0;
    waitpid(pid, &wstatus, 0);
    close(pipefd[0]);
    ASSERT_TRUE(WIFSIGNALED(wstatus)) << "child exited with " << WEXITSTATUS(wstatus);

    CacheOptions o;
    o.block_size = kBlock;
    o.dir = dir_.string();
    o.ram_bytes = 0;
    o.disk_bytes = 16 * kFileBytes;
    DiskOpenReport report;
    auto cache = BlockCache::Open(o, &report);
    ASSERT_TRUE(cache.ok()) << cache.status();
    EXPECT_EQ(report.invalid_blocks, 0u) << "a renamed block was torn";
    auto verify = (*cache)->disk()->Verify(false);
    ASSERT_EQ(verify.bad, 0u) << verify.bad_paths[0];
    kept_total += report.valid_blocks;
    // Every kept block must equal the backend's bytes: read them with a fetcher that fails.
    for (const auto& info : (*cache)->disk()->List()) {
      auto block = (*cache)->Get(info.id, info.length, []() -> Result<Buffer> { return InternalError("no fetch"); });
      ASSERT_TRUE(block.ok()) << block.status();
      int i = std::stoi(info.id.key.substr(1));
      ASSERT_EQ(*block, data[i].Slice(info.id.offset(), info.length)) << info.id.key << " block " << info.id.index;
    }
    CachedStoreOptions so;
    so.readahead_threads = 0;
    CachedStore store(mem_, *cache, so);
    for (int i = 0; i < kObjects; ++i) ASSERT_EQ(store.Get("o" + std::to_string(i))->data, data[i]);
  }
  EXPECT_GT(kept_total, 0u);
}

}  // namespace
}  // namespace strata::cache

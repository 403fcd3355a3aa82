// The disk tier's free-space floor on a file system of a known size: the
// tier fills what is free above the floor and no more, gives space back when
// other programs fill the disk (on its next write, and when it opens), and
// serves what it cannot keep.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <thread>
#include <vector>

#include "cache/block_cache.h"
#include "cache/cache_test_util.h"
#include "cache/cached_store.h"
#include "cache/disk_tier.h"
#include "object/mem_store.h"
#include "testing/small_disk.h"

namespace strata::cache {
namespace {
namespace fs = std::filesystem;
using testing_cache::RandomBytes;

constexpr uint64_t kBlock = 64 << 10;
constexpr uint64_t kFileBytes = kBlock + kBlockHeaderSize;
// The directory's files besides blocks (LOCK, the metadata journal).
constexpr uint64_t kSlack = 16 << 10;

class CacheSpaceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("strata-cache-space-" + std::to_string(getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    mem_ = object::MakeMemStore();
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::shared_ptr<CachedStore> Open(CacheOptions o) {
    o.block_size = kBlock;
    o.dir = dir_.string();
    o.ram_bytes = 0;
    o.fs = &disk_;
    auto cache = BlockCache::Open(o);
    EXPECT_TRUE(cache.ok()) << cache.status();
    if (!cache.ok()) return nullptr;
    CachedStoreOptions so;
    so.readahead_threads = 0;
    so.fetch_part_size = 0;
    return std::make_shared<CachedStore>(mem_, *cache, so);
  }
  void Add(int n, const std::string& prefix = "k") {
    for (int i = 0; i < n; ++i) ASSERT_TRUE(mem_->Put(prefix + std::to_string(i), RandomBytes(kBlock, i)).ok());
  }
  // Reads object `i` through the cache, checks it and waits for its disk write.
  void Read(CachedStore& store, int i, const std::string& prefix = "k") {
    auto got = store.Get(prefix + std::to_string(i));
    ASSERT_TRUE(got.ok()) << got.status();
    ASSERT_EQ(got->data, RandomBytes(kBlock, i)) << prefix << i;
    store.cache().Flush();
  }
  uint64_t Free() { return disk_.Space(dir_.string())->available; }

  fs::path dir_;
  object::ObjectStorePtr mem_;
  // 40 block files in all; 25% (10 files) is the floor below.
  testing::SmallDisk disk_{fs::temp_directory_path().string() + "/strata-cache-space-" + std::to_string(getpid()) +
                               "-" + ::testing::UnitTest::GetInstance()->current_test_info()->name(),
                           40 * kFileBytes};
};

TEST_F(CacheSpaceTest, FillsTheRoomAboveTheFloorAndGivesItBackWhenOthersFillTheDisk) {
  Add(60);
  CacheOptions o;
  o.disk_bytes = 100 * kFileBytes;  // not what binds: the file system is smaller
  o.disk_min_free = SpaceFloor{.percent = 25};
  o.disk_admission = false;          // plain LRU: every block is written, older ones evicted
  o.disk_floor_check_interval = {};  // the writes alone keep the floor here
  auto store = Open(o);
  ASSERT_TRUE(store);
  for (int i = 0; i < 40; ++i) {
    Read(*store, i);
    ASSERT_GE(Free() + kSlack, 10 * kFileBytes) << "after block " << i;
  }
  CacheStats s = store->cache().Stats();
  EXPECT_EQ(s[CacheCounter::kDiskWrites], 40u);  // each admitted, older blocks evicted for it
  EXPECT_GT(s[CacheCounter::kDiskEvictions], 0u);
  EXPECT_EQ(s[CacheCounter::kDiskLowSpace], 0u);
  EXPECT_GT(store->cache().disk()->bytes(), 20 * kFileBytes);  // the room above the floor is used

  // Another program takes 8 files' worth, most of what was free: the
  // cache, now below the floor, gives that back.
  disk_.others = 8 * kFileBytes;
  ASSERT_LT(Free(), 10 * kFileBytes);
  Read(*store, 40);
  EXPECT_GE(Free() + kSlack, 10 * kFileBytes);
  EXPECT_LE(store->cache().disk()->bytes(), (40 - 8 - 10) * kFileBytes);
  EXPECT_EQ(store->cache().Stats()[CacheCounter::kDiskWrites], 41u);

  // And at the next start, without a write.
  store.reset();
  disk_.others = 15 * kFileBytes;
  ASSERT_LT(Free(), 10 * kFileBytes);
  store = Open(o);
  ASSERT_TRUE(store);
  EXPECT_GE(Free() + kSlack, 10 * kFileBytes);
  EXPECT_LE(store->cache().disk()->bytes(), (40 - 15 - 10) * kFileBytes);
  for (int i = 0; i < 60; ++i) Read(*store, i);  // everything is still served
}

// Writers in parallel (`strata warm` writes each block on the thread that
// fetched it): the floor holds after every write, however they interleave.
// The free space and the tier's index are one snapshot: read apart, a block
// written and indexed between the two counted as room as well (warm on a
// 16 MiB tmpfs once left a block or two less than its floor free).
TEST_F(CacheSpaceTest, ParallelWritersKeepTheFloor) {
  DiskTierOptions o;
  o.dir = dir_.string();
  o.capacity_bytes = 100 * kFileBytes;  // the file system binds, not this
  o.min_free = SpaceFloor{.percent = 25};
  o.floor_check_interval = {};
  o.fs = &disk_;
  CacheMetrics metrics;
  auto tier = DiskTier::Open(o, &metrics);
  ASSERT_TRUE(tier.ok()) << tier.status();
  std::atomic<uint64_t> lowest{UINT64_MAX};
  std::vector<std::thread> writers;
  for (int t = 0; t < 8; ++t) {
    writers.emplace_back([&, t] {
      for (int i = 0; i < 40; ++i) {
        CachedBlock b;
        b.id = BlockId{"mem://", "w" + std::to_string(t) + "-" + std::to_string(i), "e", kBlock, 0};
        b.data = RandomBytes(kBlock, t * 1000 + i);
        b.created_ms = 1;
        (void)(*tier)->Write(HashBlockId(b.id), b, /*pinned=*/false);
        const uint64_t free = Free();
        for (uint64_t low = lowest.load(); free < low && !lowest.compare_exchange_weak(low, free);) {
        }
      }
    });
  }
  for (auto& w : writers) w.join();
  EXPECT_GE(lowest.load() + kSlack, 10 * kFileBytes) << "the floor is 10 files";
  EXPECT_GT((*tier)->bytes(), 20 * kFileBytes);  // and the room above it is used
}

// A cache that only serves hits (a warm dataset) while another program
// fills the disk (a checkpoint being written) gives the space back on its own.
TEST_F(CacheSpaceTest, ACacheThatOnlyServesHitsGivesSpaceBackWhenOthersFillTheDisk) {
  Add(30);
  CacheOptions o;
  o.disk_bytes = 100 * kFileBytes;
  o.disk_min_free = SpaceFloor{.percent = 25};
  o.disk_admission = false;
  o.disk_floor_check_interval = std::chrono::milliseconds(10);
  auto store = Open(o);
  ASSERT_TRUE(store);
  for (int i = 0; i < 25; ++i) Read(*store, i);
  ASSERT_GT(store->cache().disk()->bytes(), 20 * kFileBytes);
  ASSERT_LT(Free(), 22 * kFileBytes);  // so 12 more taken leave less than the floor
  disk_.others = 12 * kFileBytes;      // the cache now holds part of the floor
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (Free() + kSlack < 10 * kFileBytes && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_GE(Free() + kSlack, 10 * kFileBytes) << "no space given back without a write";
  EXPECT_EQ(store->cache().Stats()[CacheCounter::kDiskWrites], 25u);  // nothing was written meanwhile
  EXPECT_LE(store->cache().disk()->bytes(), (40 - 12 - 10) * kFileBytes);
  for (int i = 0; i < 25; ++i) Read(*store, i);  // served still: the evicted blocks from the store
}

TEST_F(CacheSpaceTest, BlocksThatCannotMakeRoomAreServedNotKept) {
  Add(20, "pin/");
  CacheOptions o;
  o.disk_bytes = 100 * kFileBytes;
  o.disk_min_free = SpaceFloor{.bytes = 30 * kFileBytes - kSlack};  // room for 10 (and the directory's other files)
  o.pinned_prefixes = {"pin/"};                                     // never evicted
  auto store = Open(o);
  ASSERT_TRUE(store);
  for (int i = 0; i < 20; ++i) Read(*store, i, "pin/");
  CacheStats s = store->cache().Stats();
  EXPECT_EQ(s[CacheCounter::kDiskWrites], 10u);
  EXPECT_EQ(s[CacheCounter::kDiskLowSpace], 10u);
  EXPECT_GE(Free() + kSlack, 30 * kFileBytes);
  EXPECT_NE(s.ToString().find("disk_low_space 10"), std::string::npos) << s.ToString();
  for (int i = 0; i < 20; ++i) Read(*store, i, "pin/");  // the first ten from disk, the rest from the store
  EXPECT_EQ(store->cache().Stats()[CacheCounter::kDiskHits], 10u);
}

TEST_F(CacheSpaceTest, NoFloorFillsTheFileSystemToTheCapacity) {
  Add(30);
  CacheOptions o;
  o.disk_bytes = 100 * kFileBytes;
  o.disk_min_free = {};
  o.disk_admission = false;
  auto store = Open(o);
  ASSERT_TRUE(store);
  for (int i = 0; i < 30; ++i) Read(*store, i);
  EXPECT_EQ(store->cache().disk()->bytes(), 30 * kFileBytes);
  EXPECT_LT(Free(), 10 * kFileBytes);
}

}  // namespace
}  // namespace strata::cache

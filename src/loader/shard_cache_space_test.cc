// The shard cache's free-space floor on a file system of a known size: the
// directory fills what is free above the floor; when other programs take
// space, a write gives it back (this dataset's own files too) and a shard
// that does not fit is served but not kept, and counted.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "io/durable.h"
#include "loader/shard_cache.h"
#include "object/mem_store.h"
#include "testing/small_disk.h"

namespace strata::loader {
namespace {

constexpr size_t kShards = 20;
constexpr uint64_t kSize = 64 << 10;

Buffer BytesOf(size_t shard) { return Buffer::FromString(std::string(kSize, static_cast<char>('a' + shard))); }

class ShardCacheSpaceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = io::MakeTempDir("strata-shard-space-");
    ASSERT_TRUE(dir.ok()) << dir.status();
    dir_ = *dir;
    store_ = object::MakeMemStore();
    for (size_t k = 0; k < kShards; ++k) {
      keys_.push_back("ds/shard-" + std::to_string(k));
      sizes_.push_back(kSize);
      ASSERT_TRUE(store_->Put(keys_[k], BytesOf(k)).ok());
    }
    disk_ = std::make_unique<testing::SmallDisk>(dir_, 40 * FileBytes());
  }
  void TearDown() override { EXPECT_TRUE(io::RemoveAll(io::DefaultFileSystem(), dir_).ok()); }

  // What one shard's file takes: header (28 bytes + key) + data.
  uint64_t FileBytes() const { return 28 + keys_[0].size() + kSize; }
  uint64_t Free() { return disk_->Space(dir_)->available; }
  // The cache on the small disk: every reuse from disk (no RAM tier), the
  // byte bound not what binds, one admission decision per Get (sync writes).
  ShardCacheOptions Options(SpaceFloor min_free, Duration floor_check_interval) {
    ShardCacheOptions co;
    co.dir = dir_;
    co.fs = disk_.get();
    co.ram_bytes = 0;
    co.disk_bytes = 100 * FileBytes();
    co.min_free = min_free;
    co.async_disk_writes = false;
    co.floor_check_interval = floor_check_interval;
    return co;
  }
  void ReadAll(ShardCache& cache) {
    for (size_t k = 0; k < kShards; ++k) {
      auto got = cache.Get(k);
      ASSERT_TRUE(got.ok()) << got.status();
      ASSERT_EQ(got->data.ToString(), BytesOf(k).ToString()) << k;
    }
  }

  std::string dir_;
  object::ObjectStorePtr store_;
  std::vector<std::string> keys_;
  std::vector<uint64_t> sizes_;
  std::unique_ptr<testing::SmallDisk> disk_;  // 40 shard files in all
};

TEST_F(ShardCacheSpaceTest, KeepsTheFloorAndGivesSpaceBackWhenOthersFillTheDisk) {
  // A 25% floor (10 files); the writes alone keep it here (no background check).
  auto cache = ShardCache::Open(store_, keys_, sizes_, Options(SpaceFloor{.percent = 25}, {}));
  ASSERT_TRUE(cache.ok()) << cache.status();
  ReadAll(**cache);
  EXPECT_EQ((*cache)->counters().disk_writes, kShards);  // 20 fit above the floor
  EXPECT_EQ((*cache)->counters().not_admitted_low_space, 0u);
  EXPECT_GE(Free(), 10 * FileBytes());

  // Another program takes 15 files' worth: 5 are left, the floor is 10.
  disk_->others = 15 * FileBytes();
  (*cache)->Invalidate(0);  // shard 0 is fetched and written again: the next write
  ReadAll(**cache);
  ShardCache::Counters c = (*cache)->counters();
  EXPECT_GE(Free(), 10 * FileBytes());
  EXPECT_GE(c.disk_evictions, 4u);                            // its own shards gave the space back
  EXPECT_EQ(c.not_admitted_low_space, 1 + c.disk_evictions);  // shard 0 and each shard evicted, refetched
  EXPECT_EQ(c.disk_hits, kShards - 1 - c.disk_evictions);
  EXPECT_LE(disk_->DirBytes(), 15 * FileBytes());
  ReadAll(**cache);  // still served, whatever is not on disk from the store
}

// A cache that only serves hits while another program fills the disk (a
// checkpoint written beside a warm dataset) gives the space back on its own.
TEST_F(ShardCacheSpaceTest, ACacheThatOnlyServesHitsGivesSpaceBackWhenOthersFillTheDisk) {
  auto cache =
      ShardCache::Open(store_, keys_, sizes_, Options(SpaceFloor{.percent = 25}, std::chrono::milliseconds(10)));
  ASSERT_TRUE(cache.ok()) << cache.status();
  ReadAll(**cache);
  ASSERT_EQ((*cache)->counters().disk_writes, kShards);
  ASSERT_LT(Free(), 25 * FileBytes());  // so 15 more taken leave less than the floor
  disk_->others = 15 * FileBytes();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (Free() < 10 * FileBytes() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_GE(Free(), 10 * FileBytes()) << "no space given back without a write";
  EXPECT_EQ((*cache)->counters().disk_writes, kShards);  // nothing written meanwhile
  EXPECT_GE((*cache)->counters().disk_evictions, 5u);
  ReadAll(**cache);  // still served
}

TEST_F(ShardCacheSpaceTest, WithoutAFloorTheDirectoryFillsTheFileSystem) {
  disk_->others = 20 * FileBytes();
  auto cache = ShardCache::Open(store_, keys_, sizes_, Options({}, {}));
  ASSERT_TRUE(cache.ok()) << cache.status();
  ReadAll(**cache);
  EXPECT_EQ((*cache)->counters().disk_writes, kShards);
  EXPECT_LT(Free(), FileBytes());
}

}  // namespace
}  // namespace strata::loader

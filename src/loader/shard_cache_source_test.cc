// Where a disk hit is read from: a hit must not be slower than a miss. While
// the disk's reads in flight would keep a hit waiting longer than the store
// takes (a disk not yet measured, busy, counts as slower), it is fetched from
// the store (its file stays, counted); with the store not yet measured (a
// warm start) the disk serves every hit.
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <limits>
#include <string>
#include <vector>

#include "io/durable.h"
#include "io/fault_file_system.h"
#include "loader/loader_test_util.h"
#include "loader/shard_cache.h"
#include "loader/throughput.h"
#include "object/mem_store.h"

namespace strata::loader {
namespace {

using testing::CountingStore;

constexpr size_t kShards = 3;
constexpr uint64_t kSize = 64 << 10;
constexpr auto kDeadline = std::chrono::seconds(60);  // catches a Get stuck behind the disk, never reached otherwise

Buffer BytesOf(size_t shard) {
  std::string s(kSize, '\0');
  for (size_t i = 0; i < s.size(); ++i) s[i] = static_cast<char>(i * 7 + shard * 131 + i / 997);
  return Buffer::FromString(s);
}

// Opens the fault file system's read gate when it leaves scope (declared
// after the caches, so it goes first: nothing waits at the gate forever).
struct OpenReadsOnExit {
  io::FaultFileSystem& fs;
  ~OpenReadsOnExit() { fs.OpenReadGate(); }
};

class ShardCacheSourceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = io::MakeTempDir("strata-shard-source-");
    ASSERT_TRUE(dir.ok()) << dir.status();
    dir_ = *dir;
    mem_ = object::MakeMemStore(testing::UniqueName("shard-source"));
    for (size_t k = 0; k < kShards; ++k) {
      keys_.push_back("ds/shard-" + std::to_string(k));
      sizes_.push_back(kSize);
      ASSERT_TRUE(mem_->Put(keys_[k], BytesOf(k)).ok());
    }
  }
  void TearDown() override {
    fs_.OpenReadGate();
    EXPECT_TRUE(io::RemoveAll(io::DefaultFileSystem(), dir_).ok());
  }

  ShardCacheOptions Options() {
    ShardCacheOptions co;
    co.dir = dir_;
    co.fs = &fs_;
    co.ram_bytes = 0;  // every reuse comes from disk (or the store)
    co.fetch_timeout = std::chrono::milliseconds(0);
    return co;
  }
  // Every shard fetched once (which measures the store) and written to disk.
  void Fill(ShardCache& cache) {
    for (size_t k = 0; k < kShards; ++k) ASSERT_TRUE(cache.Get(k).ok());
    cache.FlushDiskWrites();
    ASSERT_EQ(cache.counters().disk_writes, kShards);
  }

  std::string dir_;
  object::ObjectStorePtr mem_;
  std::vector<std::string> keys_;
  std::vector<uint64_t> sizes_;
  io::FaultFileSystem fs_{io::DefaultFileSystem()};
};

TEST(ThroughputTest, AnIdleSourceStartsAnyReadABusyOneOnlyWithinTheBoundAtItsPace) {
  constexpr double kNoBound = std::numeric_limits<double>::infinity();
  Throughput t;
  EXPECT_EQ(t.BytesPerSecondPerRead(), 0);
  auto first = t.Begin(1000, 0.0);  // idle: starts whatever the bound
  ASSERT_TRUE(first.has_value());
  EXPECT_FALSE(t.Begin(1000, 1e9).has_value()) << "busy, its pace unknown: no finite bound holds";
  auto unbounded = t.Begin(1000, kNoBound);
  ASSERT_TRUE(unbounded.has_value());
  t.End(*unbounded, 1000, 0);  // failed: nothing landed, nothing measured
  EXPECT_EQ(t.BytesPerSecondPerRead(), 0);
  t.End(*first, 1000, 1000);
  EXPECT_GT(t.BytesPerSecondPerRead(), 0);
  auto busy = t.Begin(1000, kNoBound);
  ASSERT_TRUE(busy.has_value());
  EXPECT_FALSE(t.Begin(1000, 0.0).has_value()) << "busy: waiting takes longer than no time";
  EXPECT_TRUE(t.Begin(1000, 1e12).has_value()) << "busy, but far within the bound at any pace";
}

TEST_F(ShardCacheSourceTest, AHitDoesNotQueueBehindABusyDiskSlowerThanTheStore) {
  auto store = std::make_shared<CountingStore>(mem_);
  auto cache = ShardCache::Open(store, keys_, sizes_, Options());
  ASSERT_TRUE(cache.ok()) << cache.status();
  Fill(**cache);
  const uint64_t gets = store->gets();
  fs_.CloseReadGate();  // a disk that takes as long as the test wants to read a file
  OpenReadsOnExit open_reads{fs_};
  auto held = std::async(std::launch::async, [&] { return (*cache)->Get(0); });
  ASSERT_TRUE(fs_.WaitHeldReads(1, kDeadline));

  // Shard 1 is on disk too, but the disk is busy and has not shown it would be sooner than the store.
  auto other = std::async(std::launch::async, [&] { return (*cache)->Get(1); });
  ASSERT_EQ(other.wait_for(kDeadline), std::future_status::ready) << "the hit waited for the busy disk";
  Result<ShardFetch> got = other.get();
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_TRUE(got->from_store);
  EXPECT_EQ(got->data.ToString(), BytesOf(1).ToString());
  EXPECT_EQ(store->gets(), gets + 1);
  ShardCache::Counters c = (*cache)->counters();
  EXPECT_EQ(c.store_instead_of_disk, 1u);
  EXPECT_EQ(c.disk_hits, 0u);

  fs_.OpenReadGate();
  Result<ShardFetch> first = held.get();
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_FALSE(first->from_store);
  EXPECT_EQ(first->data.ToString(), BytesOf(0).ToString());
  // Nothing was rewritten: the file fetched around stays as it was, and an idle disk serves it.
  (*cache)->FlushDiskWrites();
  EXPECT_EQ((*cache)->counters().disk_writes, kShards);
  got = (*cache)->Get(1);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_FALSE(got->from_store);
  EXPECT_EQ(got->data.ToString(), BytesOf(1).ToString());
  c = (*cache)->counters();
  EXPECT_EQ(c.disk_hits, 2u);
  EXPECT_EQ(c.store_instead_of_disk, 1u);
  EXPECT_EQ(store->gets(), gets + 1);
}

// After a restart nothing says the store is faster: hits wait for the disk together.
TEST_F(ShardCacheSourceTest, AWarmStartReadsEveryHitFromDisk) {
  {
    auto cache = ShardCache::Open(std::make_shared<CountingStore>(mem_), keys_, sizes_, Options());
    ASSERT_TRUE(cache.ok()) << cache.status();
    Fill(**cache);
  }
  auto store = std::make_shared<CountingStore>(mem_);
  auto cache = ShardCache::Open(store, keys_, sizes_, Options());
  ASSERT_TRUE(cache.ok()) << cache.status();
  fs_.CloseReadGate();
  OpenReadsOnExit open_reads{fs_};
  auto a = std::async(std::launch::async, [&] { return (*cache)->Get(0); });
  auto b = std::async(std::launch::async, [&] { return (*cache)->Get(1); });
  ASSERT_TRUE(fs_.WaitHeldReads(2, kDeadline)) << "both hits read the disk";
  fs_.OpenReadGate();
  for (auto* f : {&a, &b}) {
    Result<ShardFetch> got = f->get();
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_FALSE(got->from_store);
  }
  EXPECT_EQ(store->gets(), 0u);
  EXPECT_EQ((*cache)->counters().disk_hits, 2u);
  EXPECT_EQ((*cache)->counters().store_instead_of_disk, 0u);
}

}  // namespace
}  // namespace strata::loader

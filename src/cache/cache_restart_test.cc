// Issue 26, item 1: warm means no round trip. What the cache knows of an
// object persists with the disk tier (meta.journal), so a reopened cache
// serves warm objects with no request within the metadata TTL and
// revalidates expired ones with one LIST per directory, not a request per
// object. Real temp directories, a mem:// store behind a request counter,
// the fake clock.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "cache/block_cache.h"
#include "cache/cache_test_util.h"
#include "cache/cached_store.h"
#include "cache/meta_journal.h"
#include "io/file_system.h"
#include "object/mem_store.h"

namespace strata::cache {
namespace {
namespace fs = std::filesystem;
using testing_cache::CountingStore;
using testing_cache::Prefix;
using testing_cache::RandomBytes;

constexpr uint64_t kBlock = 64 << 10;
constexpr auto kTtl = std::chrono::seconds(10);

class RestartTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("strata-restart-test-" + std::to_string(getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    mem_ = object::MakeMemStore();
    counting_ = std::make_shared<CountingStore>(mem_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // A cache with a disk tier only, as after a restart with no RAM yet.
  std::shared_ptr<CachedStore> Open(bool serve_stale = false) {
    CacheOptions o;
    o.block_size = kBlock;
    o.dir = dir_.string();
    o.ram_bytes = 0;
    o.disk_bytes = 1000 * (kBlock + kBlockHeaderSize);
    o.clock = &clock_;
    auto cache = BlockCache::Open(o);
    EXPECT_TRUE(cache.ok()) << cache.status();
    if (!cache.ok()) return nullptr;
    CachedStoreOptions so;
    so.metadata_ttl = kTtl;
    so.readahead_threads = 0;
    so.fetch_part_size = 0;
    so.clock = &clock_;
    so.serve_stale = serve_stale;
    return std::make_shared<CachedStore>(counting_, *cache, so);
  }
  void ResetCounts() {
    counting_->gets = 0;
    counting_->heads = 0;
    counting_->lists = 0;
  }
  int Requests() const { return counting_->gets + counting_->heads + counting_->lists; }
  std::string Key(int i) const { return "data/obj-" + std::to_string(100 + i); }
  // Objects with metadata, which a HEAD or GET carries and a LIST does not.
  std::vector<Buffer> AddObjects(int n) {
    std::vector<Buffer> out;
    for (int i = 0; i < n; ++i) {
      object::PutOptions po;
      po.metadata.content_type = "application/x-test";
      po.metadata.user["n"] = std::to_string(i);
      out.push_back(RandomBytes(2 * kBlock + i, 1 + i));
      EXPECT_TRUE(mem_->Put(Key(i), out.back(), po).ok());
    }
    return out;
  }
  void ExpectAll(CachedStore& store, const std::vector<Buffer>& bodies) {
    for (size_t i = 0; i < bodies.size(); ++i) {
      auto got = store.Get(Key(static_cast<int>(i)));
      ASSERT_TRUE(got.ok()) << got.status();
      EXPECT_EQ(got->data, bodies[i]) << Key(static_cast<int>(i));
      EXPECT_EQ(got->info.metadata.user.at("n"), std::to_string(i)) << "metadata kept across the restart";
      EXPECT_EQ(got->info.metadata.content_type, "application/x-test");
    }
  }

  FakeClock clock_;
  fs::path dir_;
  object::ObjectStorePtr mem_;
  std::shared_ptr<CountingStore> counting_;
};

// The cause of issue 26's ~30 ms per object: a reopened cache knew its blocks
// but not the objects they belong to, so every warm read asked the store
// (a HEAD, one round trip) before touching the disk.
TEST_F(RestartTest, ReopenedCacheServesWarmObjectsWithNoRequestWithinTheTtl) {
  const auto bodies = AddObjects(20);
  {
    auto store = Open();
    ExpectAll(*store, bodies);
  }
  ResetCounts();
  clock_.Advance(std::chrono::seconds(3));  // restarted within the TTL
  auto store = Open();
  ExpectAll(*store, bodies);
  EXPECT_EQ(Requests(), 0) << counting_->heads << " HEADs, " << counting_->gets << " GETs, " << counting_->lists
                           << " LISTs";
  EXPECT_EQ(store->cache().Stats()[CacheCounter::kMisses], 0u);
}

TEST_F(RestartTest, PastTheTtlOneListPerDirectoryRevalidatesEveryObject) {
  auto bodies = AddObjects(20);
  ASSERT_TRUE(mem_->Put("other/a", RandomBytes(100, 7)).ok());
  ASSERT_TRUE(mem_->Put("other/b", RandomBytes(100, 8)).ok());
  {
    auto store = Open();
    ExpectAll(*store, bodies);
    ASSERT_TRUE(store->Get("other/a").ok());
    ASSERT_TRUE(store->Get("other/b").ok());
  }
  ResetCounts();
  clock_.Advance(std::chrono::minutes(5));  // every entry expired
  auto store = Open();
  // Read in an order that is not the listing's: the LIST starts before all of them.
  for (int i : {7, 3, 19, 0, 11}) {
    auto got = store->Get(Key(i));
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(got->data, bodies[i]);
  }
  ExpectAll(*store, bodies);
  EXPECT_EQ(store->Get("other/b")->data, RandomBytes(100, 8));
  EXPECT_EQ(store->Get("other/a")->data, RandomBytes(100, 7));
  EXPECT_EQ(counting_->lists.load(), 2) << "one LIST per directory";
  EXPECT_EQ(counting_->heads.load(), 0);
  EXPECT_EQ(counting_->gets.load(), 0);
  // The gateway's path needs the metadata: the listing confirmed it too.
  auto stream = store->OpenStream(Key(4));
  ASSERT_TRUE(stream.ok());
  EXPECT_EQ((*stream)->info().metadata.user.at("n"), "4");
  EXPECT_EQ(Requests(), 2);
}

TEST_F(RestartTest, ChangesWhileDownAreSeenAfterTheTtl) {
  auto bodies = AddObjects(6);
  {
    auto store = Open();
    ExpectAll(*store, bodies);
  }
  const Buffer v2 = RandomBytes(3 * kBlock, 99);
  ASSERT_TRUE(mem_->Put(Key(2), v2).ok());  // replaced and deleted behind the cache's back
  ASSERT_TRUE(mem_->Delete(Key(4)).ok());
  {
    clock_.Advance(std::chrono::seconds(2));
    auto store = Open();  // within the TTL: the versions it knew, consistently
    EXPECT_EQ(store->Get(Key(2))->data, bodies[2]);
    EXPECT_EQ(store->Get(Key(4))->data, bodies[4]);
  }
  clock_.Advance(kTtl);
  ResetCounts();
  auto store = Open();
  EXPECT_EQ(store->Get(Key(2))->data, v2);
  EXPECT_EQ(store->Get(Key(4)).status().code(), Code::kNotFound);
  EXPECT_EQ(store->Get(Key(5))->data, bodies[5]);
  EXPECT_EQ(counting_->lists.load(), 1);
}

// The cache_bench and demo pattern: a LIST per pass, then a Get per object.
// Cold, the fills' GETs bring each object's metadata (no HEAD per object);
// the next process trusts it.
TEST_F(RestartTest, ListThenGetNeedsNoHeadColdOrWarm) {
  const auto bodies = AddObjects(12);
  {
    auto store = Open();
    ASSERT_EQ(store->List(Prefix("data/"))->objects.size(), bodies.size());
    ExpectAll(*store, bodies);
    EXPECT_EQ(counting_->heads.load(), 0);
    int blocks = 0;
    for (const Buffer& b : bodies) blocks += static_cast<int>((b.size() + kBlock - 1) / kBlock);
    EXPECT_EQ(counting_->gets.load(), blocks) << "one GET per block, nothing else";
  }
  ResetCounts();
  auto store = Open();
  ExpectAll(*store, bodies);
  EXPECT_EQ(Requests(), 0);
}

// A lone expired entry is HEADed (the cheaper request); a window of them is LISTed.
TEST_F(RestartTest, ALoneExpiredEntryIsHeaded) {
  const auto bodies = AddObjects(1);
  {
    auto store = Open();
    ExpectAll(*store, bodies);
  }
  clock_.Advance(std::chrono::minutes(1));
  ResetCounts();
  auto store = Open();
  ExpectAll(*store, bodies);
  EXPECT_EQ(counting_->heads.load(), 1);
  EXPECT_EQ(counting_->lists.load(), 0);
}

TEST_F(RestartTest, WritesThroughTheCacheAreNotServedStaleAfterARestart) {
  const auto bodies = AddObjects(3);
  const Buffer v2 = RandomBytes(kBlock, 42);
  {
    auto store = Open();
    ExpectAll(*store, bodies);
    ASSERT_TRUE(store->Put(Key(1), v2).ok());
    ASSERT_TRUE(store->Delete(Key(2)).ok());
  }
  auto store = Open();
  EXPECT_EQ(store->Get(Key(1))->data, v2);
  EXPECT_EQ(store->Get(Key(2)).status().code(), Code::kNotFound);
  EXPECT_EQ(store->Get(Key(0))->data, bodies[0]);
}

// A torn tail (a crash mid-append) or garbage costs revalidations, never a wrong answer.
TEST_F(RestartTest, DamagedJournalIsCutAtTheDamage) {
  const auto bodies = AddObjects(4);
  {
    auto store = Open();
    ExpectAll(*store, bodies);
  }
  const fs::path journal = dir_ / "meta.journal";
  ASSERT_TRUE(fs::exists(journal));
  const auto size = fs::file_size(journal);
  { std::ofstream(journal, std::ios::app | std::ios::binary) << "\x40\x00\x00\x00torn record"; }
  ResetCounts();
  {
    auto store = Open();
    ExpectAll(*store, bodies);
    EXPECT_EQ(Requests(), 0) << "the records before the damage are kept";
  }
  EXPECT_LE(fs::file_size(journal), size) << "rewritten without the torn tail";
  { std::ofstream(journal, std::ios::trunc | std::ios::binary) << "not a journal at all"; }
  ResetCounts();
  auto store = Open();
  ExpectAll(*store, bodies);
  EXPECT_EQ(counting_->gets.load(), 0) << "the blocks are still good";
  EXPECT_GT(counting_->heads.load(), 0) << "the metadata was lost";
}

TEST(MetaJournal, RecordsRoundTripAndRepeatedValidationsAreNotRewritten) {
  auto dir = fs::temp_directory_path() / ("strata-journal-test-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string path = (dir / "meta.journal").string();
  JournalEntry e;
  e.info.key = "a/b";
  e.info.etag = "etag-1";
  e.info.size = 123;
  e.info.mtime = WallTime(std::chrono::seconds(1700000000));
  e.info.metadata.content_type = "text/plain";
  e.info.part_sizes = {100, 23};
  e.validated_ms = 1000;
  {
    auto j = MetaJournal::Open(io::DefaultFileSystem(), path, false);
    ASSERT_TRUE(j.ok()) << j.status();
    (*j)->Record("mem://x", e, 5000);
    e.validated_ms = 3000;  // confirmed again 2 s later: not worth a record
    (*j)->Record("mem://x", e, 5000);
    EXPECT_EQ((*j)->records_written(), 1u);
    e.validated_ms = 7000;
    (*j)->Record("mem://x", e, 5000);
    EXPECT_EQ((*j)->records_written(), 2u);
    JournalEntry other = e;
    other.info.key = "gone";
    (*j)->Record("mem://x", other);
    (*j)->Forget("mem://x", "gone");
    (*j)->Record("mem://y", e);
    (*j)->ForgetStore("mem://y");
  }
  auto j = MetaJournal::Open(io::DefaultFileSystem(), path, true);
  ASSERT_TRUE(j.ok()) << j.status();
  auto entries = (*j)->Entries("mem://x");
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_EQ(entries[0].info.key, "a/b");
  EXPECT_EQ(entries[0].info.etag, "etag-1");
  EXPECT_EQ(entries[0].info.size, 123u);
  EXPECT_EQ(entries[0].info.mtime, e.info.mtime);
  EXPECT_EQ(entries[0].info.metadata, e.info.metadata);
  EXPECT_EQ(entries[0].info.part_sizes, e.info.part_sizes);
  EXPECT_EQ(entries[0].validated_ms, 7000);
  EXPECT_TRUE((*j)->Entries("mem://y").empty());
  fs::remove_all(dir);
}

}  // namespace
}  // namespace strata::cache

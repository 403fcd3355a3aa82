// The shard cache's disk tier never throttles a read: its files are written
// behind the reader, a shard the disk cannot take in time is not admitted
// (counted), and what it took is byte-exact. A dataset larger than the disk
// bound keeps the shards it cached instead of churning them every epoch.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <future>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "io/durable.h"
#include "io/fault_file_system.h"
#include "io/process.h"
#include "loader/loader_test_util.h"
#include "loader/shard_cache.h"
#include "loader/streaming_dataset.h"
#include "object/mem_store.h"

namespace strata::loader {
namespace {

using testing::CountingStore;

constexpr size_t kShards = 10;
constexpr uint64_t kSize = 64 << 10;
constexpr auto kDeadline = std::chrono::seconds(60);  // catches a read stuck behind the disk, never reached otherwise

Buffer BytesOf(size_t shard) {
  std::string s(kSize, '\0');
  uint64_t x = shard * 0x9e3779b97f4a7c15ull + 1;
  for (char& c : s) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    c = static_cast<char>(x);
  }
  return Buffer::FromString(s);
}

// Gets fail: whatever a cache over it serves came from its disk tier.
class NoGetStore : public CountingStore {
 public:
  using CountingStore::CountingStore;
  using CountingStore::Get;
  Result<object::GetResult> Get(std::string_view key, const object::GetOptions&) override {
    return NotFoundError("no store behind this cache: " + std::string(key));
  }
};

// Lets a stalled disk go when it leaves scope (declared after the caches, so
// it goes first: a cache's destructor waits for its queued writes).
struct ResumeOnExit {
  io::FaultFileSystem& fs;
  ~ResumeOnExit() { fs.OpenWriteGate(); }
};

class ShardCacheWriteBehindTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = io::MakeTempDir("strata-shard-write-behind-");
    ASSERT_TRUE(dir.ok()) << dir.status();
    dir_ = *dir;
    mem_ = object::MakeMemStore(testing::UniqueName("write-behind"));
    store_ = std::make_shared<CountingStore>(mem_);
    for (size_t k = 0; k < kShards; ++k) {
      keys_.push_back("ds/shard-" + std::to_string(k));
      sizes_.push_back(kSize);
      ASSERT_TRUE(mem_->Put(keys_[k], BytesOf(k)).ok());
    }
  }
  void TearDown() override {
    fs_.OpenWriteGate();
    EXPECT_TRUE(io::RemoveAll(io::DefaultFileSystem(), dir_).ok());
  }

  ShardCacheOptions Options(uint64_t disk_bytes, uint64_t write_behind_bytes) {
    ShardCacheOptions co;
    co.dir = dir_;
    co.fs = &fs_;
    co.ram_bytes = 0;  // every reuse comes from disk (or the write queue)
    co.disk_bytes = disk_bytes;
    co.write_behind_bytes = write_behind_bytes;
    co.fetch_timeout = std::chrono::milliseconds(0);
    return co;
  }
  // What one shard's file takes on disk: header (28 bytes + key) + data.
  uint64_t FileBytes(size_t shard) const { return 28 + keys_[shard].size() + kSize; }
  bool OnDisk(const ShardCache& cache, size_t shard) {
    return io::DefaultFileSystem().Exists(cache.FilePath(shard)).value_or(false);
  }

  std::string dir_;
  object::ObjectStorePtr mem_;
  std::shared_ptr<CountingStore> store_;
  std::vector<std::string> keys_;
  std::vector<uint64_t> sizes_;
  io::FaultFileSystem fs_{io::DefaultFileSystem()};
};

TEST_F(ShardCacheWriteBehindTest, AStalledDiskNeitherSlowsAColdReadNorKeepsWrongBytes) {
  auto cache = ShardCache::Open(store_, keys_, sizes_, Options(1 << 30, 2 * kSize));  // two shards queue
  ASSERT_TRUE(cache.ok()) << cache.status();
  fs_.CloseWriteGate();
  ResumeOnExit resume{fs_};
  // The cold read runs on its own thread: one that waited for the disk would never end.
  auto read = std::async(std::launch::async, [&] {
    size_t exact = 0;
    for (size_t k = 0; k < kShards; ++k) {
      auto got = (*cache)->Get(k);
      exact += got.ok() && got->from_store && got->data.ToString() == BytesOf(k).ToString();
    }
    return exact;
  });
  if (read.wait_for(kDeadline) != std::future_status::ready) {
    fs_.OpenWriteGate();  // (lets the stuck read end)
    FAIL() << "a cold read waited for the stalled disk";
  }
  EXPECT_EQ(read.get(), kShards);
  EXPECT_EQ(store_->gets(), kShards);             // one fetch per shard: the store's pace, nothing else
  ASSERT_TRUE(fs_.WaitHeldWrites(1, kDeadline));  // the writer still stuck on the first file
  ShardCache::Counters c = (*cache)->counters();
  EXPECT_EQ(c.not_admitted_busy, kShards - 2);  // the queue held two; the disk took none yet
  EXPECT_EQ(c.disk_writes, 0u);
  // The queued shards are served from memory meanwhile, never refetched.
  auto again = (*cache)->Get(1);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_FALSE(again->from_store);
  EXPECT_EQ(store_->gets(), kShards);

  fs_.OpenWriteGate();
  (*cache)->FlushDiskWrites();
  c = (*cache)->counters();
  EXPECT_EQ(c.disk_writes, 2u);
  EXPECT_EQ(c.not_admitted_busy, kShards - 2);
  std::set<size_t> kept;
  for (size_t k = 0; k < kShards; ++k)
    if (OnDisk(**cache, k)) kept.insert(k);
  EXPECT_EQ(kept, (std::set<size_t>{0, 1}));

  // What the disk took is byte-exact: a cache on the directory with no store behind it serves exactly those.
  auto no_store = std::make_shared<NoGetStore>(mem_);
  auto reopened = ShardCache::Open(no_store, keys_, sizes_, Options(1 << 30, 2 * kSize));
  ASSERT_TRUE(reopened.ok()) << reopened.status();
  for (size_t k = 0; k < kShards; ++k) {
    auto got = (*reopened)->Get(k);
    if (!kept.count(k)) {
      EXPECT_EQ(got.status().code(), Code::kNotFound) << k;
      continue;
    }
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_FALSE(got->from_store);
    EXPECT_TRUE(got->verified);
    EXPECT_EQ(got->data.ToString(), BytesOf(k).ToString()) << k;
  }
  EXPECT_EQ((*reopened)->counters().disk_hits, kept.size());
  EXPECT_EQ((*reopened)->counters().verify_failures, 0u);
}

// A disk too slow for a cold epoch (it takes one shard while the store
// delivers all ten) keeps up with the next one, which fetches again only what
// the first could not admit and admits it: from the third epoch on, every
// shard is read from the disk and none from the store.
TEST_F(ShardCacheWriteBehindTest, WhatAColdEpochCouldNotAdmitTheNextAdmits) {
  auto cache = ShardCache::Open(store_, keys_, sizes_, Options(kShards * FileBytes(0) + 64, kSize));  // one queues
  ASSERT_TRUE(cache.ok()) << cache.status();
  fs_.CloseWriteGate();
  {
    ResumeOnExit resume{fs_};
    auto read = std::async(std::launch::async, [&] {
      for (size_t k = 0; k < kShards; ++k) (void)(*cache)->Get(k);
    });
    if (read.wait_for(kDeadline) != std::future_status::ready) {
      fs_.OpenWriteGate();
      FAIL() << "the cold epoch waited for the stalled disk";
    }
  }
  (*cache)->FlushDiskWrites();
  ASSERT_EQ((*cache)->counters().disk_writes, 1u);
  EXPECT_EQ((*cache)->counters().not_admitted_busy, kShards - 1);
  // Epoch 2: the disk keeps up (each write lands before the next fetch).
  for (size_t k = 0; k < kShards; ++k) {
    auto got = (*cache)->Get(k);
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(got->from_store, k != 0) << k;
    (*cache)->FlushDiskWrites();
  }
  EXPECT_EQ(store_->gets(), 2 * kShards - 1);
  EXPECT_EQ((*cache)->counters().disk_writes, kShards);
  for (int epoch = 3; epoch <= 4; ++epoch) {
    const uint64_t hits = (*cache)->counters().disk_hits;
    for (size_t k = 0; k < kShards; ++k) {
      auto got = (*cache)->Get(k);
      ASSERT_TRUE(got.ok()) << got.status();
      EXPECT_FALSE(got->from_store) << "epoch " << epoch << " shard " << k;
      EXPECT_EQ(got->data.ToString(), BytesOf(k).ToString());
    }
    EXPECT_EQ((*cache)->counters().disk_hits - hits, kShards) << "epoch " << epoch;
  }
  EXPECT_EQ(store_->gets(), 2 * kShards - 1);
  EXPECT_EQ((*cache)->counters().not_admitted_busy, kShards - 1);  // epoch 1's, none since
}

// Whether `dir`'s file system takes O_DIRECT writes (tmpfs before Linux 6.6 does not).
bool TakesDirectWrites(const std::string& dir) {
  const std::string probe = dir + "/direct-probe";
  int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | O_DIRECT, 0644);
  if (fd >= 0) ::close(fd), ::unlink(probe.c_str());
  return fd >= 0;
}

// Pages of `path` in [from, to) that the page cache holds.
size_t ResidentPages(const std::string& path, uint64_t from, uint64_t to) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return SIZE_MAX;
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  void* map = ::mmap(nullptr, to, PROT_READ, MAP_SHARED, fd, 0);
  ::close(fd);
  if (map == MAP_FAILED) return SIZE_MAX;
  std::vector<unsigned char> in((to + page - 1) / page);
  size_t n = ::mincore(map, to, in.data()) == 0 ? 0 : SIZE_MAX;
  for (size_t i = from / page; n != SIZE_MAX && i < to / page; ++i) n += in[i] & 1;
  ::munmap(map, to);
  return n;
}

// What the cache reads of the machine's memory: `available` of 64 GiB.
std::function<std::optional<io::MemoryInfo>()> MemoryOf(uint64_t available) {
  return [available] { return io::MemoryInfo{64ull << 30, available}; };
}
constexpr uint64_t kMemoryShort = 1ull << 30;   // less than a quarter of the machine: short
constexpr uint64_t kMemoryAmple = 60ull << 30;  // a quarter and more to spare: ample

// Whether the real machine could keep a few MiB more in its page cache (else
// the kernel may evict a file whatever the cache asked).
bool RealMemoryAmple() {
  const std::optional<io::MemoryInfo> mem = io::ReadMemoryInfo();
  return mem && mem->available_bytes >= (64ull << 20) + mem->total_bytes / 4;
}

class LargeShardTest : public ShardCacheWriteBehindTest {
 protected:
  static constexpr uint64_t kLarge = (4 << 20) + 100;  // an unaligned tail, written buffered
  static constexpr size_t kPages = (4096 + kLarge + 4095) / 4096;
  void SetUp() override {
    ShardCacheWriteBehindTest::SetUp();
    bytes_.resize(kLarge);
    for (size_t i = 0; i < bytes_.size(); ++i) bytes_[i] = static_cast<char>(i * 131 + i / 4099);
    ASSERT_TRUE(mem_->Put("ds/large", Buffer::FromString(bytes_)).ok());
  }
  ShardCacheOptions LargeOptions(uint64_t available) {
    ShardCacheOptions co = Options(1 << 30, 0);
    co.fs = nullptr;           // the real file system (the fault one has no O_DIRECT)
    co.fetch_concurrency = 4;  // parts land in one page-aligned buffer
    co.memory_info = MemoryOf(available);
    return co;
  }
  // Fetches the shard and writes its file, which it returns the path of.
  std::string Cached(const ShardCacheOptions& co) {
    auto cache = ShardCache::Open(store_, {"ds/large"}, {kLarge}, co);
    EXPECT_TRUE(cache.ok()) << cache.status();
    if (!cache.ok()) return "";
    EXPECT_TRUE((*cache)->Get(0).ok());
    (*cache)->FlushDiskWrites();
    EXPECT_EQ((*cache)->counters().disk_writes, 1u);
    auto st = io::DefaultFileSystem().Stat((*cache)->FilePath(0));
    EXPECT_TRUE(st.ok()) << st.status();
    if (st.ok()) {
      EXPECT_EQ(st->size, 4096 + kLarge);  // the header padded to one block
    }
    return (*cache)->FilePath(0);
  }
  // Reads it back as after a restart (a cache of its own, no store behind it): its counters.
  ShardCache::Counters ReadBack(const ShardCacheOptions& co) {
    auto cache = ShardCache::Open(std::make_shared<NoGetStore>(mem_), {"ds/large"}, {kLarge}, co);
    EXPECT_TRUE(cache.ok()) << cache.status();
    if (!cache.ok()) return {};
    auto got = (*cache)->Get(0);
    EXPECT_TRUE(got.ok()) << got.status();
    if (got.ok()) {
      EXPECT_TRUE(got->verified);
      EXPECT_TRUE(got->data.ToString() == bytes_);
    }
    EXPECT_EQ((*cache)->counters().disk_hits, 1u);
    return (*cache)->counters();
  }
  std::string bytes_;
};

// Where memory is short, a large shard's file goes to the device without
// passing through the page cache (its data starts at a 4 KiB boundary, written
// from the page-aligned fetch buffer), and is read back around it: neither
// evicts what others keep there. Byte-exact after.
TEST_F(LargeShardTest, WhereMemoryIsShortItsFileBypassesThePageCache) {
  if (!TakesDirectWrites(dir_)) GTEST_SKIP() << dir_ << ": the file system takes no O_DIRECT writes";
  const std::string path = Cached(LargeOptions(kMemoryShort));
  EXPECT_EQ(ResidentPages(path, 0, 4096 + kLarge / 4096 * 4096), 0u);  // header and whole blocks: direct
  EXPECT_EQ(ReadBack(LargeOptions(kMemoryShort)).disk_hits_resident, 0u);
  EXPECT_EQ(ResidentPages(path, 0, 4096 + kLarge / 4096 * 4096), 0u);

  // Read where memory is ample, the file stays in the page cache: the next
  // epoch (here a third cache) reads it at memory speed.
  if (!RealMemoryAmple()) GTEST_SKIP() << "memory is short here";
  EXPECT_EQ(ReadBack(LargeOptions(kMemoryAmple)).disk_hits_resident, 0u);
  EXPECT_EQ(ResidentPages(path, 0, kPages * 4096), kPages);
  EXPECT_EQ(ReadBack(LargeOptions(kMemoryAmple)).disk_hits_resident, 1u);
}

// Where memory is ample, the file is written through the page cache and stays
// there: the first epoch after (here a cache of its own, as after a restart)
// reads it at memory speed. Written around the page cache, a hit waited for
// the device and was no sooner than a fetch from the store.
TEST_F(LargeShardTest, WhereMemoryIsAmpleItsFileStaysInThePageCache) {
  if (!RealMemoryAmple()) GTEST_SKIP() << "memory is short here";
  const std::string path = Cached(LargeOptions(kMemoryAmple));
  EXPECT_EQ(ResidentPages(path, 0, kPages * 4096), kPages);
  EXPECT_EQ(ReadBack(LargeOptions(kMemoryAmple)).disk_hits_resident, 1u);
}

// Epoch after epoch in one order, a disk bound of four shards over ten: the
// first four stay and hit every later epoch. Evicting the consumed ones for
// the next (least recently used) would leave none to hit, ever.
TEST_F(ShardCacheWriteBehindTest, ADatasetLargerThanTheDiskKeepsWhatItCached) {
  // A file of another dataset in the directory: it still makes room.
  const std::string foreign = dir_ + "/00000000feedface.shard";
  ASSERT_TRUE(io::WriteFileAtomic(io::DefaultFileSystem(), foreign, std::string(FileBytes(0), 'f')).ok());
  auto cache = ShardCache::Open(store_, keys_, sizes_, Options(4 * FileBytes(0), 0));
  ASSERT_TRUE(cache.ok()) << cache.status();
  for (int epoch = 0; epoch < 3; ++epoch) {
    const uint64_t hits = (*cache)->counters().disk_hits;
    for (size_t k = 0; k < kShards; ++k) {
      auto got = (*cache)->Get(k);
      ASSERT_TRUE(got.ok()) << got.status();
      EXPECT_EQ(got->data.ToString(), BytesOf(k).ToString());
      (*cache)->FlushDiskWrites();  // one admission decision at a time
      (*cache)->Release(k);         // consumed (what eviction used to take first)
    }
    EXPECT_EQ((*cache)->counters().disk_hits - hits, epoch == 0 ? 0u : 4u) << "epoch " << epoch;
  }
  ShardCache::Counters c = (*cache)->counters();
  EXPECT_FALSE(io::DefaultFileSystem().Exists(foreign).value_or(true));
  EXPECT_EQ(c.disk_evictions, 1u);  // the foreign file, and none of ours
  EXPECT_EQ(c.disk_writes, 4u);
  EXPECT_EQ(c.not_admitted_no_reuse, 6u + 6u + 6u);
  for (size_t k = 0; k < kShards; ++k) EXPECT_EQ(OnDisk(**cache, k), k < 4) << k;
}

// A dataset that fits is admitted whole, however its shards were consumed.
TEST_F(ShardCacheWriteBehindTest, ADatasetThatFitsIsAdmittedWhole) {
  auto cache = ShardCache::Open(store_, keys_, sizes_, Options(kShards * FileBytes(0) + 64, 0));
  ASSERT_TRUE(cache.ok()) << cache.status();
  for (size_t k = 0; k < kShards; ++k) {
    ASSERT_TRUE((*cache)->Get(k).ok());
    (*cache)->Release(k);
  }
  (*cache)->FlushDiskWrites();
  for (size_t k = 0; k < kShards; ++k) EXPECT_TRUE(OnDisk(**cache, k)) << k;
  EXPECT_EQ((*cache)->counters().not_admitted_no_reuse, 0u);
  EXPECT_EQ((*cache)->counters().not_admitted_busy, 0u);
}

// Through the loader: an epoch over a stalled disk ends, and its Stats count what was not admitted.
TEST_F(ShardCacheWriteBehindTest, AnEpochOverAStalledDiskEndsAndCountsTheShardsNotAdmitted) {
  auto data = object::MakeMemStore(testing::UniqueName("write-behind-ds"));
  const std::vector<uint64_t> counts(8, 4);
  dataset::Manifest m = testing::WriteDataset(*data, "ds/", dataset::ShardFormat::kIndexed, counts, [](uint64_t i) {
    return std::vector<dataset::Field>{{"bin", Buffer::FromString(std::string(16 << 10, char('a' + i % 26)))}};
  });
  uint64_t largest = 0;
  for (const auto& s : m.shards) largest = std::max(largest, s.size);
  StreamingOptions o;
  o.cache_dir = dir_ + "/loader";
  o.fs = &fs_;
  o.cache_write_behind_bytes = 2 * largest;
  o.batch_size = 4;
  auto ds = StreamingDataset::Open(data, "ds/", o);
  ASSERT_TRUE(ds.ok()) << ds.status();
  fs_.CloseWriteGate();
  ResumeOnExit resume{fs_};
  auto it = (*ds)->Iterate(0, (*ds)->MakeState(0, 0));
  ASSERT_TRUE(it.ok()) << it.status();
  auto read = std::async(std::launch::async, [&] {
    uint64_t n = 0;
    Status s = testing::NextUntilError(**it, &n);
    return s.ok() ? n : 0;
  });
  if (read.wait_for(kDeadline) != std::future_status::ready) {
    fs_.OpenWriteGate();  // (lets the stuck epoch end)
    FAIL() << "the epoch waited for the stalled disk";
  }
  EXPECT_EQ(read.get(), 32u);
  Stats s = (*it)->stats();
  EXPECT_EQ(s.shards_fetched, 8u);
  EXPECT_EQ(s.cache_not_admitted_busy, 6u);
  EXPECT_EQ(s.cache_not_admitted_no_reuse, 0u);
}

}  // namespace
}  // namespace strata::loader

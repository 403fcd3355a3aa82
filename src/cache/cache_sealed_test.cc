// The disk tier encrypted at rest (--cache-encryption-key-file), with real
// temp directories: no plaintext byte of a block lands in the directory,
// blocks read back exact across a restart, a wrong key or no key is a clear
// error at open (never wrong bytes), a clear directory is not silently mixed
// with sealed blocks, and an altered sealed block is a miss (refetched).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "cache/block_cache.h"
#include "cache/block_sealer.h"
#include "cache/cache_test_util.h"
#include "cache/cached_store.h"
#include "object/mem_store.h"

namespace strata::cache {
namespace {
namespace fs = std::filesystem;
using testing_cache::CountingStore;

constexpr uint64_t kBlock = 64 << 10;
constexpr char kMarker[] = "PLAINTEXT-MARKER-7f3a";

class SealedCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("strata-sealed-test-" + std::to_string(getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    mem_ = object::MakeMemStore();
    counting_ = std::make_shared<CountingStore>(mem_);
    // An object whose every block holds the marker many times.
    std::string data;
    while (data.size() < 3 * kBlock + 100) data += std::string(kMarker) + " " + std::to_string(data.size()) + "\n";
    data_ = Buffer::FromString(data);
    ASSERT_TRUE(mem_->Put("obj", data_).ok());
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string KeyFile(const std::string& name, const std::string& bytes, mode_t mode = 0600) {
    const std::string p = (dir_ / name).string();
    std::ofstream(p, std::ios::binary | std::ios::trunc) << bytes;
    EXPECT_EQ(::chmod(p.c_str(), mode), 0);
    return p;
  }
  std::shared_ptr<const BlockSealer> Sealer(const std::string& key_bytes) {
    auto s = BlockSealer::FromKeyFile(KeyFile("key-" + std::to_string(key_bytes[0]), key_bytes));
    EXPECT_TRUE(s.ok()) << s.status();
    return s.ok() ? *s : nullptr;
  }
  Result<std::shared_ptr<CachedStore>> Open(std::shared_ptr<const BlockSealer> sealer, bool read_only = false) {
    CacheOptions o;
    o.block_size = kBlock;
    o.dir = (dir_ / "cache").string();
    o.disk_bytes = 100 * (kBlock + kBlockHeaderSize + BlockSealer::kOverhead);
    o.ram_bytes = 0;  // every read goes to the disk tier
    o.read_only = read_only;
    o.sealer = std::move(sealer);
    STRATA_ASSIGN_OR_RETURN(auto cache, BlockCache::Open(o));
    CachedStoreOptions so;
    so.readahead_threads = 0;
    so.fetch_part_size = 0;
    return std::make_shared<CachedStore>(counting_, cache, so);
  }
  // Every byte of every file under the cache directory.
  std::string AllBytes() {
    std::string all;
    for (auto& e : fs::recursive_directory_iterator(dir_ / "cache")) {
      if (!e.is_regular_file()) continue;
      std::ifstream in(e.path(), std::ios::binary);
      all.append(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
    return all;
  }
  // Flips the byte `at` past the header of block file `f` and fixes the
  // file's unkeyed XXH3 (as someone with write access could): only the GCM
  // tag can tell. Returns the block's index.
  uint64_t AlterSealedByte(const fs::path& f, uint64_t at) {
    std::fstream io(f, std::ios::in | std::ios::out | std::ios::binary);
    io.seekg(static_cast<std::streamoff>(kBlockHeaderSize + at));
    char c = 0;
    io.get(c);
    io.seekp(static_cast<std::streamoff>(kBlockHeaderSize + at));
    io.put(static_cast<char>(c ^ 0x01));
    io.close();
    std::ifstream in(f, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    auto h = DecodeBlockHeader(reinterpret_cast<const uint8_t*>(bytes.data()), kBlockHeaderSize);
    EXPECT_TRUE(h.ok()) << h.status();
    if (!h.ok()) return UINT64_MAX;
    h->data_hash = XxHash3(bytes.data() + kBlockHeaderSize, bytes.size() - kBlockHeaderSize);
    std::string page(kBlockHeaderSize, '\0');
    EXPECT_TRUE(EncodeBlockHeader(*h, reinterpret_cast<uint8_t*>(page.data())).ok());
    std::fstream out(f, std::ios::in | std::ios::out | std::ios::binary);
    out.write(page.data(), static_cast<std::streamsize>(page.size()));
    return h->id.index;
  }
  std::vector<fs::path> BlockFiles() {
    std::vector<fs::path> out;
    for (auto& e : fs::recursive_directory_iterator(dir_ / "cache" / "blocks")) {
      if (e.is_regular_file()) out.push_back(e.path());
    }
    return out;
  }

  fs::path dir_;
  object::ObjectStorePtr mem_;
  std::shared_ptr<CountingStore> counting_;
  Buffer data_;
};

const std::string kKeyA(32, 'A'), kKeyB(32, 'B');

TEST_F(SealedCacheTest, NoPlaintextOnDiskAndExactBytesAcrossARestart) {
  {
    auto store = Open(Sealer(kKeyA));
    ASSERT_TRUE(store.ok()) << store.status();
    ASSERT_EQ((*store)->Get("obj")->data, data_);
  }
  ASSERT_EQ(BlockFiles().size(), 4u);
  const std::string all = AllBytes();
  EXPECT_GT(all.size(), data_.size());
  EXPECT_EQ(all.find(kMarker), std::string::npos) << "a plaintext marker reached the cache directory";
  EXPECT_EQ(all.find(kKeyA), std::string::npos) << "the key reached the cache directory";
  // Reopened with its key: a warm, exact read (no refetch).
  auto store = Open(Sealer(kKeyA));
  ASSERT_TRUE(store.ok()) << store.status();
  const int gets = counting_->gets.load();
  ASSERT_EQ((*store)->Get("obj")->data, data_);
  EXPECT_EQ(counting_->gets.load(), gets);
  EXPECT_EQ((*store)->cache().Stats()[CacheCounter::kDiskHits], 4u);
  // `strata cache verify` checks the sealed bytes' checksums without the key.
  auto report = (*store)->cache().disk()->Verify(false);
  EXPECT_EQ(report.ok, 4u);
}

TEST_F(SealedCacheTest, WrongKeyOrNoKeyIsAClearErrorAtOpen) {
  {
    auto store = Open(Sealer(kKeyA));
    ASSERT_TRUE(store.ok());
    ASSERT_EQ((*store)->Get("obj")->data, data_);
  }
  auto wrong = Open(Sealer(kKeyB));
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.status().code(), Code::kPermissionDenied);
  EXPECT_NE(wrong.status().message().find("another key"), std::string::npos) << wrong.status();
  auto none = Open(nullptr);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), Code::kInvalidArgument);
  EXPECT_NE(none.status().message().find("--cache-encryption-key-file"), std::string::npos) << none.status();
  // Inspection needs no key: headers are in clear; data is not handed out
  // (a read through it goes to the backend, never returns sealed bytes).
  auto inspect = Open(nullptr, /*read_only=*/true);
  ASSERT_TRUE(inspect.ok()) << inspect.status();
  EXPECT_EQ((*inspect)->cache().disk()->List().size(), 4u);
  const int gets = counting_->gets.load();
  ASSERT_EQ((*inspect)->Get("obj")->data, data_);
  EXPECT_GT(counting_->gets.load(), gets);
}

TEST_F(SealedCacheTest, ClearDirectoryIsNotMixedWithSealedBlocks) {
  {
    auto clear = Open(nullptr);
    ASSERT_TRUE(clear.ok());
    ASSERT_EQ((*clear)->Get("obj")->data, data_);
  }
  auto sealed = Open(Sealer(kKeyA));
  ASSERT_FALSE(sealed.ok());
  EXPECT_EQ(sealed.status().code(), Code::kInvalidArgument);
  EXPECT_NE(sealed.status().message().find("unencrypted"), std::string::npos) << sealed.status();
  EXPECT_EQ(BlockFiles().size(), 4u) << "nothing is deleted to make room for encryption";
}

TEST_F(SealedCacheTest, AlteredSealedBlockIsAMissNeverWrongBytes) {
  auto store = Open(Sealer(kKeyA));
  ASSERT_TRUE(store.ok());
  ASSERT_EQ((*store)->Get("obj")->data, data_);
  (*store)->cache().Flush();  // the disk writes behind the read land
  ASSERT_EQ(BlockFiles().size(), 4u);
  const int gets = counting_->gets.load();
  for (const auto& f : BlockFiles()) AlterSealedByte(f, 100);
  // Block by block, so each altered block is met by its own read (a whole-object
  // read may refetch the rest at the first failure).
  for (uint64_t off = 0; off < data_.size(); off += kBlock) {
    const uint64_t n = std::min<uint64_t>(kBlock, data_.size() - off);
    object::GetOptions range;
    range.range = object::ByteRange::Of(off, n);
    auto got = (*store)->Get("obj", range);
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_TRUE(got->data == data_.Slice(off, n)) << "block at " << off << ": other bytes than the bucket's";
  }
  EXPECT_EQ(counting_->gets.load(), gets + 4) << "each altered block was refetched";
  EXPECT_EQ((*store)->cache().Stats()[CacheCounter::kChecksumFailures], 4u);
}

// Blocks of several buffered read steps, or of many O_DIRECT parts in
// flight, are opened as their bytes land: exact from disk both ways. A block
// altered past its first part is a miss (refetched) between good blocks,
// which still open from disk.
TEST_F(SealedCacheTest, LargeBlocksOpenAsTheyLandBufferedAndDirect) {
  constexpr uint64_t kLarge = 1 << 20;
  std::string bytes(3 * kLarge + 12345, '\0');
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>((i * 2654435761u) >> 13);
  const Buffer big = Buffer::FromString(bytes);
  ASSERT_TRUE(mem_->Put("big", big).ok());
  auto open = [&](bool direct) -> std::shared_ptr<CachedStore> {
    CacheOptions o;
    o.block_size = kLarge;
    o.dir = (dir_ / "cache").string();
    o.disk_bytes = 10 * (kLarge + kBlockHeaderSize + BlockSealer::kOverhead);
    o.ram_bytes = 0;
    o.direct_io = direct;
    o.disk_read_part_bytes = 64 << 10;  // 16 parts per block
    o.sealer = Sealer(kKeyA);
    auto cache = BlockCache::Open(o);
    EXPECT_TRUE(cache.ok()) << cache.status();
    if (!cache.ok()) return nullptr;
    CachedStoreOptions so;
    so.readahead_threads = 0;
    so.fetch_part_size = 0;
    return std::make_shared<CachedStore>(counting_, *cache, so);
  };
  {
    auto fill = open(false);
    ASSERT_TRUE(fill);
    ASSERT_TRUE(fill->Get("big")->data == big);
    fill->cache().Flush();
  }
  const int gets = counting_->gets.load();
  for (bool direct : {false, true}) {
    auto store = open(direct);
    ASSERT_TRUE(store);
    auto got = store->Get("big");
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_TRUE(got->data == big) << (direct ? "O_DIRECT" : "buffered");
    EXPECT_EQ(store->cache().Stats()[CacheCounter::kDiskHits], 4u) << (direct ? "O_DIRECT" : "buffered");
  }
  EXPECT_EQ(counting_->gets.load(), gets) << "every block came from disk";
  // Block 1: read after a good block and before another.
  fs::path second;
  for (const auto& f : BlockFiles()) {
    std::ifstream in(f, std::ios::binary);
    std::string page(kBlockHeaderSize, '\0');
    in.read(page.data(), static_cast<std::streamsize>(page.size()));
    auto h = DecodeBlockHeader(reinterpret_cast<const uint8_t*>(page.data()), page.size());
    if (h.ok() && h->id.index == 1) second = f;
  }
  ASSERT_FALSE(second.empty());
  ASSERT_EQ(AlterSealedByte(second, 700 << 10), 1u);
  auto store = open(true);
  ASSERT_TRUE(store);
  for (uint64_t index = 0; index < 4; ++index) {
    const uint64_t off = index * kLarge, n = std::min<uint64_t>(kLarge, big.size() - off);
    object::GetOptions range;
    range.range = object::ByteRange::Of(off, n);
    auto got = store->Get("big", range);
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_TRUE(got->data == big.Slice(off, n)) << "block " << index;
  }
  EXPECT_EQ(counting_->gets.load(), gets + 1) << "only the altered block was refetched";
  EXPECT_EQ(store->cache().Stats()[CacheCounter::kChecksumFailures], 1u);
  EXPECT_EQ(store->cache().Stats()[CacheCounter::kDiskHits], 3u);
}

TEST_F(SealedCacheTest, KeyFilesMustBePrivateAnd32Bytes) {
  EXPECT_EQ(BlockSealer::FromKeyFile(KeyFile("loose", kKeyA, 0644)).status().code(), Code::kPermissionDenied);
  auto short_key = BlockSealer::FromKeyFile(KeyFile("short", kKeyA.substr(1)));
  EXPECT_EQ(short_key.status().code(), Code::kInvalidArgument);
  EXPECT_NE(short_key.status().message().find("exactly 32 bytes"), std::string::npos) << short_key.status();
  EXPECT_EQ(BlockSealer::FromKeyFile(KeyFile("long", kKeyA + "\n")).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(BlockSealer::FromKeyFile((dir_ / "missing").string()).status().code(), Code::kNotFound);
  EXPECT_TRUE(BlockSealer::FromKeyFile(KeyFile("ok", kKeyA, 0400)).ok());
}

}  // namespace
}  // namespace strata::cache

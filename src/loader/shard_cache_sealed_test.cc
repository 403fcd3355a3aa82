// The loader's shard files encrypted at rest (ShardCacheOptions::sealer):
// no plaintext byte lands in the directory, a reopen loads the file (no
// refetch) and gets the exact bytes, a wrong key is refused at open, and an
// altered file is a miss.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "base/coding.h"
#include "base/hash.h"
#include "cache/block_sealer.h"
#include "io/durable.h"
#include "loader/shard_cache.h"
#include "object/mem_store.h"

namespace strata::loader {
namespace {

constexpr char kMarker[] = "PLAINTEXT-SHARD-MARKER";

class ShardCacheSealedTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = io::MakeTempDir("strata-shard-sealed-");
    ASSERT_TRUE(dir.ok()) << dir.status();
    dir_ = *dir;
    store_ = object::MakeMemStore();
    std::string data;
    while (data.size() < 100000) data += std::string(kMarker) + std::to_string(data.size());
    data_ = data;
    ASSERT_TRUE(store_->Put(key_, Buffer::FromString(data_)).ok());
  }
  void TearDown() override { EXPECT_TRUE(io::RemoveAll(io::DefaultFileSystem(), dir_).ok()); }

  Result<std::shared_ptr<ShardCache>> Open(char key_fill) {
    ShardCacheOptions co;
    co.dir = dir_ + "/shards";
    co.content_id = "content-1";
    co.disk_bytes = 1 << 20;
    AesKey key;
    key.fill(static_cast<uint8_t>(key_fill));
    co.sealer = cache::BlockSealer::FromKey(key);
    return ShardCache::Open(store_, {key_}, {data_.size()}, co);
  }
  std::string FileBytes(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  }

  std::string dir_, data_;
  std::string key_ = "ds/shard-0";
  object::ObjectStorePtr store_;
};

TEST_F(ShardCacheSealedTest, SealedOnDiskExactWhenLoaded) {
  std::string path;
  {
    auto cache = Open('a');
    ASSERT_TRUE(cache.ok()) << cache.status();
    auto got = (*cache)->Get(0);
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(got->data.ToString(), data_);
    path = (*cache)->FilePath(0);
  }
  const std::string file = FileBytes(path);
  ASSERT_GT(file.size(), data_.size());
  EXPECT_EQ(file.find(kMarker), std::string::npos) << "a plaintext marker reached the shard file";
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir_)) {
    if (e.is_regular_file()) {
      EXPECT_EQ(FileBytes(e.path().string()).find(kMarker), std::string::npos) << e.path();
    }
  }
  auto cache = Open('a');
  ASSERT_TRUE(cache.ok()) << cache.status();
  auto got = (*cache)->Get(0);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_FALSE(got->from_store) << "the sealed file was not loaded";
  EXPECT_TRUE(got->verified);
  EXPECT_EQ(got->data.ToString(), data_);
}

TEST_F(ShardCacheSealedTest, WrongKeyRefusedAtOpenAlteredFileIsAMiss) {
  std::string path;
  {
    auto cache = Open('a');
    ASSERT_TRUE(cache.ok());
    ASSERT_TRUE((*cache)->Get(0).ok());
    path = (*cache)->FilePath(0);
  }
  auto wrong = Open('b');
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.status().code(), Code::kPermissionDenied) << wrong.status();
  // One ciphertext byte flipped and the file's unkeyed XXH3 fixed (as anyone
  // who can write the directory could): only the GCM tag tells, and the
  // shard is refetched, never served.
  std::string file = FileBytes(path);
  file[file.size() - 40] ^= 0x01;
  const size_t body = 28 + key_.size();
  EncodeFixed64(file.data() + 16, XxHash3(file.data() + body, file.size() - body));
  std::ofstream(path, std::ios::binary | std::ios::trunc) << file;
  auto cache = Open('a');
  ASSERT_TRUE(cache.ok());
  auto got = (*cache)->Get(0);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_TRUE(got->from_store);
  EXPECT_EQ(got->data.ToString(), data_);
  EXPECT_EQ((*cache)->counters().verify_failures, 1u);
}

}  // namespace
}  // namespace strata::loader

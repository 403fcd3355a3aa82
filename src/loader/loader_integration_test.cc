// Integration: a dataset packed with dataset::Pack into a file:// store
// behind cloud emulation, streamed through a disk cache directory smaller
// than the dataset. Every sample arrives each epoch, the directory stays
// within its bound (eviction works), a later epoch reuses what survived,
// and a cached file altered on disk is refetched, never served.
#include <gtest/gtest.h>

#include <set>

#include "dataset/pack.h"
#include "io/durable.h"
#include "io/file_system.h"
#include "loader/streaming_dataset.h"
#include "object/cloud_store.h"
#include "object/mem_store.h"
#include "object/store_url.h"

namespace strata::loader {
namespace {

class LoaderIntegrationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = *MakeTempDir("strata-loader-it-");
    auto src = MakeMemStore("loader-it-src");
    for (int i = 0; i < kSamples; ++i) {
      char name[32];
      snprintf(name, sizeof name, "%05d.bin", i);
      ASSERT_TRUE(
          src->Put(name, Buffer::FromString(std::string(kBytes, static_cast<char>('a' + i % 26)) + std::to_string(i)))
              .ok());
    }
    auto dst = *OpenStore("file://" + root_ + "/bucket");
    dataset::PackOptions po;
    po.format = dataset::ShardFormat::kTar;
    po.shard_size = 24 << 10;
    auto packed = dataset::Pack(*src, "", *dst, "data/", po);
    ASSERT_TRUE(packed.ok()) << packed.status().ToString();
    shards_ = packed->manifest.shards.size();
    ASSERT_GE(shards_, 10u);
    shard_bytes_ = packed->manifest.shards[0].size;
    CloudProfile cloud;
    cloud.first_byte = std::chrono::milliseconds(2);
    cloud.bytes_per_second_per_connection = 200e6;
    store_ = EmulateCloud(dst, cloud);
    DropMemStore("loader-it-src");
  }
  void TearDown() override { (void)RemoveAll(DefaultFileSystem(), root_); }

  uint64_t CacheDirBytes(size_t* files) {
    uint64_t n = 0;
    *files = 0;
    for (const auto& e : *DefaultFileSystem().ListDir(root_ + "/cache")) {
      if (e.name.ends_with(".shard")) n += e.size, ++*files;
    }
    return n;
  }

  static constexpr int kSamples = 300;
  static constexpr int kBytes = 1000;
  std::string root_;
  ObjectStorePtr store_;
  size_t shards_ = 0;
  uint64_t shard_bytes_ = 0;
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
      size_t files = 0;
      EXPECT_LE(CacheDirBytes(&files), o.cache_limit_bytes);
      EXPECT_LE(files, 4u);
    }
    ASSERT_EQ(seen.size(), static_cast<size_t>(kSamples));
    for (int i = 0; i < kSamples; ++i) EXPECT_EQ(seen.count(i), 1u);
    // Both workers read every shard (window shuffle deals samples of all shards to both).
    EXPECT_EQ(total.shards_fetched + total.shards_from_cache, 2 * shards_);
    EXPECT_GT(total.shards_fetched, shards_);  // the small cache had to evict and refetch
    if (epoch == 1) {
      EXPECT_GT(total.shards_from_cache, 0u);
    }
  }

  // Alter every cached file on disk: each is detected and refetched.
  for (const auto& e : *DefaultFileSystem().ListDir(o.cache_dir)) {
    std::string path = o.cache_dir + "/" + e.name;
    std::string bytes = *ReadFileToString(DefaultFileSystem(), path, 1 << 30);
    bytes[bytes.size() - 3] ^= 0x55;
    ASSERT_TRUE(WriteFileAtomic(DefaultFileSystem(), path, bytes).ok());
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

}  // namespace
}  // namespace strata::loader

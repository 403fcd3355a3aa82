// Integration: the loader over s3:// against a real S3 server on 127.0.0.1
// (s3rver, started and stopped by PID through testing/s3_server.h). A dataset
// packed into the bucket with dataset::Pack is streamed by two ranks of two
// workers through a shared cache directory: every sample arrives exactly
// once with its exact bytes, shards come from the server in several ranged
// parts (shards larger than the 1 MiB part minimum), each fetched once.
// Shard sets without an index (WebDataset tars, reference TFRecords) named by
// a brace pattern stream byte-exact from the server too.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <map>
#include <set>

#include "dataset/pack.h"
#include "io/durable.h"
#include "io/file_system.h"
#include "loader/shard_set_test_util.h"
#include "loader/streaming_dataset.h"
#include "object/mem_store.h"
#include "object/store_url.h"
#include "testing/s3_server.h"

namespace strata::loader {
namespace {

constexpr int kSamples = 40;
constexpr size_t kBytes = 256 << 10;

std::string SampleBytes(int i) {
  std::string s(kBytes, '\0');
  for (size_t j = 0; j < kBytes; ++j) s[j] = static_cast<char>((i * 31 + j * 7 + j / 251) % 251);
  return s;
}

TEST(LoaderS3Test, StreamsAPackedDatasetFromARealS3Server) {
  auto server = strata::testing::S3TestServer::Start(strata::testing::S3TestServer::Kind::kS3rver);
  if (!server.ok())
    server = strata::testing::S3TestServer::Start(
        strata::testing::S3TestServer::Kind::kS3rver);  // a loaded machine can be slow once
  ASSERT_TRUE(server.ok()) << server.status();
  // OpenStore(url) takes credentials from the environment, as a training job would.
  ASSERT_EQ(setenv("AWS_ACCESS_KEY_ID", (*server)->access_key().c_str(), 1), 0);
  ASSERT_EQ(setenv("AWS_SECRET_ACCESS_KEY", (*server)->secret_key().c_str(), 1), 0);
  const std::string url = (*server)->StoreUrl("train");

  auto src = object::MakeMemStore("loader-s3-src");
  for (int i = 0; i < kSamples; ++i) {
    char name[32];
    snprintf(name, sizeof name, "%05d.bin", i);
    ASSERT_TRUE(src->Put(name, Buffer::FromString(SampleBytes(i))).ok());
  }
  auto bucket = object::OpenStore(url);
  ASSERT_TRUE(bucket.ok()) << bucket.status();
  dataset::PackOptions po;
  po.shard_size = 10 * kBytes;  // ~2.5 MiB shards: several 1 MiB ranged parts each
  auto packed = dataset::Pack(*src, "", **bucket, "", po);
  object::DropMemStore("loader-s3-src");
  ASSERT_TRUE(packed.ok()) << packed.status();
  const size_t shards = packed->manifest.shards.size();
  ASSERT_GE(shards, 3u);

  const std::string cache = *io::MakeTempDir("strata-loader-s3-");
  std::map<uint64_t, int> seen;
  Stats total;
  for (size_t rank = 0; rank < 2; ++rank) {
    StreamingOptions o;
    o.world_size = 2, o.rank = rank, o.num_workers = 2, o.batch_size = 4, o.shuffle_window = 2, o.seed = 3;
    o.cache_dir = cache;
    o.fetch_concurrency = 4;
    // One epoch's fetches, summed over its iterators: a worker's head of epoch 1 would fetch,
    // counted by no iterator, a shard a later iterator of epoch 0 then finds in the cache.
    o.prefetch_next_epoch = false;
    auto ds = StreamingDataset::Open(url, o);
    ASSERT_TRUE(ds.ok()) << ds.status();
    for (size_t w = 0; w < 2; ++w) {
      auto it = *(*ds)->Iterate(w, (*ds)->MakeState(0, 0));
      while (true) {
        auto s = it->NextSample();
        ASSERT_TRUE(s.ok()) << s.status();
        if (!*s) break;
        int i = std::stoi((*s)->key);
        EXPECT_EQ((*s)->fields.at("bin").bytes.ToString(), SampleBytes(i)) << (*s)->key;
        ++seen[static_cast<uint64_t>(i)];
      }
      Stats st = it->stats();
      total.shards_fetched += st.shards_fetched;
      total.shards_from_cache += st.shards_from_cache;
    }
  }
  ASSERT_EQ(seen.size(), static_cast<size_t>(kSamples));
  for (const auto& [i, n] : seen) EXPECT_EQ(n, 1) << i;  // 40 = 5 global batches of 8: no padding
  // The ranks share the directory (and, in one process, the cache): each shard
  // came from the server once.
  EXPECT_EQ(total.shards_fetched, shards);
  EXPECT_GT(total.shards_from_cache, 0u);

  (void)io::RemoveAll(io::DefaultFileSystem(), cache);
  const std::vector<pid_t> pids = (*server)->pids();
  EXPECT_FALSE(pids.empty());
  EXPECT_TRUE((*server)->Stop().ok());
  for (pid_t pid : pids) EXPECT_TRUE(strata::testing::ProcessGone(pid));
}

TEST(LoaderS3Test, UnindexedTarAndTfRecordShardsByBracePattern) {
  using namespace testing::shard_sets;  // NOLINT
  auto server = strata::testing::S3TestServer::Start(strata::testing::S3TestServer::Kind::kS3rver);
  if (!server.ok()) server = strata::testing::S3TestServer::Start(strata::testing::S3TestServer::Kind::kS3rver);
  ASSERT_TRUE(server.ok()) << server.status();
  ASSERT_EQ(setenv("AWS_ACCESS_KEY_ID", (*server)->access_key().c_str(), 1), 0);
  ASSERT_EQ(setenv("AWS_SECRET_ACCESS_KEY", (*server)->secret_key().c_str(), 1), 0);
  const std::string url = (*server)->StoreUrl("wds");
  auto bucket = object::OpenStore(url);
  ASSERT_TRUE(bucket.ok()) << bucket.status();
  WriteTarShards(**bucket, "laion/", {6, 3, 8, 5});
  WriteTfRecordShards(**bucket, "tfr/", {4, 7, 2});
  // s3://wds?endpoint=... -> s3://wds/laion/train-{000000..000003}.tar?endpoint=...
  const size_t q = url.find('?');
  const std::string root = url.substr(0, q), query = q == std::string::npos ? "" : url.substr(q);
  struct Case {
    std::string url;
    uint64_t samples;
  };
  for (const Case& c :
       {Case{root + "/laion/train-{000000..000003}.tar" + query, 22}, Case{root + "/tfr" + query, 13}}) {
    for (Shuffle sh : {Shuffle::kNone, Shuffle::kWindow}) {
      StreamingOptions o;
      o.shuffle = sh, o.shuffle_window = 2, o.num_workers = 2, o.batch_size = 3, o.share_cache = false;
      auto ds = StreamingDataset::Open(c.url, o);
      ASSERT_TRUE(ds.ok()) << c.url << ": " << ds.status();
      ASSERT_EQ((*ds)->size(), c.samples) << c.url;
      std::map<std::string, int> seen;
      std::vector<uint64_t> order;
      for (size_t w = 0; w < 2; ++w) {
        auto it = *(*ds)->Iterate(w, (*ds)->MakeState(0, 0));
        while (true) {
          auto s = it->NextSample();
          ASSERT_TRUE(s.ok()) << s.status();
          if (!*s) break;
          uint64_t i = std::stoull((*s)->key.substr((*s)->key.rfind('/') + 1));
          EXPECT_EQ((*s)->fields.at("bin").bytes.ToString(), Payload(i)) << (*s)->key;
          ++seen[(*s)->key];
        }
      }
      EXPECT_EQ(seen.size(), c.samples);
      for (const auto& [k, n] : seen) EXPECT_EQ(n, 1) << k;
    }
  }
  EXPECT_TRUE((*server)->Stop().ok());
}

}  // namespace
}  // namespace strata::loader

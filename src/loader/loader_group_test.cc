// Integration: three StreamingDatasets, each its own cache group member
// (static:// list of three peer endpoints on 127.0.0.1, each with its own
// cache directory), stream one dataset at once over one counting store.
// Every member sees every sample byte-exact, and the store sees each shard
// byte fetched once: the other two members got it from its owner.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <mutex>
#include <thread>

#include "loader/loader_group_test_util.h"
#include "loader/loader_test_util.h"
#include "loader/streaming_dataset.h"
#include "object/mem_store.h"
#include "testing/background_process.h"
#include "testing/counting_bucket.h"

namespace strata::loader {
namespace {

namespace fs = std::filesystem;
using testing::WriteDataset;

constexpr char kSecret[] = "loader-group-test-secret-0123456789";
constexpr size_t kShards = 6;
constexpr uint64_t kPerShard = 10;
std::string SampleBytes(uint64_t i) { return testing::GroupSampleBytes(i); }

using strata::testing::CountingBucket;

class LoaderGroupTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("strata-loader-group-" + std::to_string(getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    name_ = testing::UniqueName("loader-group");
    bucket_ = std::make_shared<CountingBucket>(object::MakeMemStore(name_));
    manifest_ = WriteDataset(*bucket_, "train/", dataset::ShardFormat::kTar, std::vector<uint64_t>(kShards, kPerShard),
                             [](uint64_t i) {
                               return std::vector<dataset::Field>{{"bin", Buffer::FromString(SampleBytes(i))}};
                             });
    bucket_->Reset();
  }
  void TearDown() override {
    object::DropMemStore(name_);
    fs::remove_all(dir_);
  }

  fs::path dir_;
  std::string name_;
  std::shared_ptr<CountingBucket> bucket_;
  dataset::Manifest manifest_;
};

TEST_F(LoaderGroupTest, ThreeMembersStreamTheDatasetAndTheBucketSendsEachShardByteOnce) {
  constexpr int kMembers = 3;
  const auto [peers, group] = strata::testing::MakeStaticGroup(kMembers);
  // Every member joins before any reads: a member reading before the others
  // listen would find their endpoints refused and read the bucket itself.
  std::vector<std::shared_ptr<StreamingDataset>> members;
  for (int i = 0; i < kMembers; ++i) {
    StreamingOptions o;
    o.cache_dir = (dir_ / ("cache" + std::to_string(i))).string();
    o.share_cache = false;  // three nodes, not three ranks of one
    o.shuffle = Shuffle::kShards;
    o.seed = static_cast<uint64_t>(i);  // each reads the shards in another order
    o.cache_group = group;
    o.peer_listen = peers[i];
    o.group_secret = kSecret;
    o.group_deadline = std::chrono::seconds(20);  // a loaded machine must not turn a peer ask into a bucket read
    auto ds = StreamingDataset::Open(bucket_, "train/", o);
    ASSERT_TRUE(ds.ok()) << ds.status();
    members.push_back(*ds);
  }
  std::vector<Status> errors(kMembers);
  std::vector<std::map<uint64_t, int>> seen(kMembers);
  std::vector<std::thread> readers;
  for (int m = 0; m < kMembers; ++m) {
    readers.emplace_back([&, m] {
      auto it = members[m]->Iterate(0, members[m]->MakeState(0, 0));
      if (!it.ok()) {
        errors[m] = it.status();
        return;
      }
      for (;;) {
        auto s = (*it)->NextSample();
        if (!s.ok()) {
          errors[m] = s.status();
          return;
        }
        if (!*s) return;
        const Value& v = (*s)->fields.at("bin");
        if (v.bytes.view() != SampleBytes((*s)->index)) {
          errors[m] = CorruptionError("sample " + std::to_string((*s)->index) + " differs");
          return;
        }
        ++seen[m][(*s)->index];
      }
    });
  }
  for (auto& t : readers) t.join();
  for (int m = 0; m < kMembers; ++m) {
    ASSERT_TRUE(errors[m].ok()) << "member " << m << ": " << errors[m];
    ASSERT_EQ(seen[m].size(), kShards * kPerShard) << "member " << m;
    for (auto& [index, n] : seen[m]) EXPECT_EQ(n, 1) << "member " << m << " sample " << index;
  }
  // At the bucket: every shard's bytes once, each ranged GET once.
  std::map<std::string, uint64_t> bytes_by_key;
  uint64_t gets = 0, bytes = 0, total = 0;
  for (auto& [at, count] : bucket_->Snapshot()) {
    if (!at.first.ends_with(".tar")) continue;
    EXPECT_EQ(count.first, 1) << at.first << " at " << at.second << " was fetched " << count.first << " times";
    bytes_by_key[at.first] += count.second;
    gets += count.first;
    bytes += count.second;
  }
  for (const auto& shard : manifest_.shards) {
    EXPECT_EQ(bytes_by_key["train/" + shard.name], shard.size) << shard.name;
    total += shard.size;
  }
  EXPECT_EQ(bytes, total);
  std::cout << "[figures] " << kMembers << " members streamed " << total / 1048576.0 << " MiB each ("
            << manifest_.shards.size() << " shards); at the bucket " << gets << " GETs of shard bytes, "
            << bytes / 1048576.0 << " MiB" << std::endl;
  members.clear();  // leave the group (after every member is done reading)
}

TEST_F(LoaderGroupTest, BadGroupOptionsFailAtOpen) {
  StreamingOptions o;
  o.cache_group = "static://";
  o.group_secret = kSecret;
  auto ds = StreamingDataset::Open(bucket_, "train/", o);
  ASSERT_FALSE(ds.ok());
  EXPECT_EQ(ds.status().code(), Code::kInvalidArgument) << ds.status();
  o.cache_group = "static://127.0.0.1:" + std::to_string(strata::testing::FreeLoopbackPort());
  o.peer_listen = "127.0.0.1:0";  // a static list needs a fixed port
  ds = StreamingDataset::Open(bucket_, "train/", o);
  ASSERT_FALSE(ds.ok());
  EXPECT_EQ(ds.status().code(), Code::kInvalidArgument) << ds.status();
}

}  // namespace
}  // namespace strata::loader

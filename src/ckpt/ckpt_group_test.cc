// Integration: three nodes restore one checkpoint from a bucket through a
// cache group (static:// list of three peer endpoints on 127.0.0.1, each node
// with its own cache directory): every node pulls and loads it with every
// byte verified, and the bucket sends each file's bytes once (the other two
// nodes got each block from its owner). The group is composed by the front
// end, as `strata ckpt pull --cache-group` and Python do: a StoreLocation over
// group::JoinGroupStore.
#include <gtest/gtest.h>

#include <map>
#include <mutex>
#include <thread>

#include "ckpt/reader.h"
#include "ckpt/test_fixture.h"
#include "ckpt/test_util.h"
#include "ckpt/writer.h"
#include "group/group_store.h"
#include "object/mem_store.h"
#include "object/store_wrapper.h"
#include "testing/background_process.h"
#include "testing/counting_bucket.h"

namespace strata::ckpt {
namespace {

constexpr char kSecret[] = "ckpt-group-test-secret-0123456789";

using strata::testing::CountingBucket;

using CkptGroupTest = testing::TempDirTest<>;

TEST_F(CkptGroupTest, ThreeNodesRestoreOneCheckpointAndTheBucketSendsEachByteOnce) {
  const std::string name = "ckpt-group-" + std::to_string(getpid());
  auto bucket = std::make_shared<CountingBucket>(object::MakeMemStore(name));
  const testing::OwnedState state = testing::MakeState(1, 0, 8);  // ~16 MiB in 4 MiB shards
  {
    WriterOptions o;
    o.dir = io::JoinPath(dir_, "saved");
    o.remote = bucket;
    o.shard_bytes = 4 << 20;
    auto w = CheckpointWriter::Open(o);
    ASSERT_TRUE(w.ok()) << w.status();
    auto h = (*w)->Save(1, state.views);
    ASSERT_TRUE(h.ok()) << h.status();
    ASSERT_TRUE(h->WaitUploaded().ok()) << h->WaitUploaded();
  }
  bucket->Reset();

  constexpr int kNodes = 3;
  const auto [peers, group] = strata::testing::MakeStaticGroup(kNodes);
  // Every node joins before any reads (a node reading before the others
  // listen would find them refused and read the bucket itself).
  std::vector<std::shared_ptr<cache::CachedStore>> stores;
  for (int i = 0; i < kNodes; ++i) {
    group::GroupStoreOptions go;
    go.url = group;
    go.listen = peers[i];
    go.secret = kSecret;
    go.deadline = std::chrono::seconds(20);  // a loaded machine must not turn a peer ask into a bucket read
    go.cache_dir = io::JoinPath(dir_, "cache" + std::to_string(i));
    auto store = group::JoinGroupStore(bucket, go);
    ASSERT_TRUE(store.ok()) << store.status();
    stores.push_back(*store);
  }
  std::vector<std::string> errors(kNodes);
  std::vector<std::thread> nodes;
  for (int i = 0; i < kNodes; ++i) {
    nodes.emplace_back([&, i] {
      auto from = StoreLocation(stores[i], 1 << 20, 4);
      auto to = OpenLocalLocation(io::DefaultFileSystem(), io::JoinPath(dir_, "pulled" + std::to_string(i)));
      if (!to.ok()) {
        errors[i] = to.status().ToString();
        return;
      }
      if (Status st = Pull(*from, 1, **to); !st.ok()) {
        errors[i] = "pull: " + st.ToString();
        return;
      }
      if (Status st = Verify(**to, 1, VerifyLevel::kFull).ToStatus(); !st.ok()) {
        errors[i] = "verify: " + st.ToString();
        return;
      }
      auto loaded = Load(*from, 1);  // again through the group: every block is cached by now
      if (!loaded.ok()) {
        errors[i] = "load: " + loaded.status().ToString();
        return;
      }
      errors[i] = testing::Compare(*loaded, state);
    });
  }
  for (auto& t : nodes) t.join();
  for (int i = 0; i < kNodes; ++i) EXPECT_EQ(errors[i], "") << "node " << i;

  const auto fetched = bucket->Snapshot();
  auto info = OpenCheckpoint(*StoreLocation(bucket), 1);  // read directly: after the snapshot
  ASSERT_TRUE(info.ok()) << info.status();
  std::map<std::string, uint64_t> bytes_by_key;
  uint64_t gets = 0, bytes = 0;
  for (auto& [at, count] : fetched) {
    EXPECT_EQ(count.first, 1) << at.first << " at " << at.second << " was fetched " << count.first << " times";
    bytes_by_key[at.first] += count.second;
    gets += count.first;
    bytes += count.second;
  }
  uint64_t shard_bytes = 0;
  ASSERT_GE(info->ranks[0].shards.size(), 3u);
  for (const auto& shard : info->ranks[0].shards) {
    EXPECT_EQ(bytes_by_key[StepDirName(1) + "/" + shard.file], shard.size) << shard.file;
    shard_bytes += shard.size;
  }
  std::cout << "[figures] " << kNodes << " nodes restored a " << shard_bytes / 1048576.0 << " MiB checkpoint ("
            << info->ranks[0].shards.size() << " shards); at the bucket " << gets << " GETs, " << bytes / 1048576.0
            << " MiB (manifests and markers included)" << std::endl;
  stores.clear();
  object::DropMemStore(name);
}

}  // namespace
}  // namespace strata::ckpt

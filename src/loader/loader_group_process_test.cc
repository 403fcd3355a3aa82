// Integration: three processes (loader_group_child), each a StreamingDataset
// in one static:// cache group with its own cache directory and peer
// endpoint on 127.0.0.1, stream one packed dataset from a Ceph RGW bucket
// behind an nginx proxy that logs every request. Every node checks every
// sample's bytes; the bucket, counted at nginx, sends each shard byte once.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "loader/loader_group_test_util.h"
#include "loader/loader_test_util.h"
#include "object/store_url.h"
#include "testing/background_process.h"
#include "testing/s3_server.h"

namespace strata::loader {
namespace {

namespace fs = std::filesystem;

constexpr char kSecret[] = "loader-group-process-secret-0123456789";
constexpr int kNodes = 3;
constexpr size_t kShards = 6;
constexpr uint64_t kPerShard = 10;

using Fetched = strata::testing::CloudProxy::Fetched;

TEST(LoaderGroupProcessTest, ThreeProcessesStreamFromRgwAndNginxSeesEachShardByteOnce) {
  const char* bin = std::getenv("STRATA_BINARY_DIR");
  ASSERT_NE(bin, nullptr) << "run under ctest";
  const std::string child = std::string(bin) + "/src/loader/loader_group_child";
  const fs::path dir = fs::temp_directory_path() / ("strata-loader-group-proc-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "sync");
  std::ofstream(dir / "secret") << kSecret << "\n";
  fs::permissions(dir / "secret", fs::perms::owner_read | fs::perms::owner_write);  // a secret file must be private

  auto backend = strata::testing::StartProxiedRgw({.ttfb_ms = 0, .rate = "0", .access_log = true});
  ASSERT_TRUE(backend.ok()) << backend.status();
  ASSERT_TRUE(backend->ExportCredentials().ok());
  const auto& rgw = backend->rgw;
  const auto& proxy = backend->proxy;
  auto bucket = object::OpenStore(rgw->StoreUrl());  // written directly, not through the proxy
  ASSERT_TRUE(bucket.ok()) << bucket.status();
  const dataset::Manifest manifest = testing::WriteDataset(
      **bucket, "train/", dataset::ShardFormat::kTar, std::vector<uint64_t>(kShards, kPerShard), [](uint64_t i) {
        return std::vector<dataset::Field>{{"bin", Buffer::FromString(testing::GroupSampleBytes(i))}};
      });

  const auto [peers, group] = strata::testing::MakeStaticGroup(kNodes);
  const std::string url = backend->StoreUrl("train/");
  std::vector<std::unique_ptr<strata::testing::BackgroundProcess>> nodes;
  for (int i = 0; i < kNodes; ++i) {
    auto p = strata::testing::BackgroundProcess::Start(
        {child, url, group, peers[i], (dir / "secret").string(), (dir / ("cache" + std::to_string(i))).string(),
         (dir / "sync").string(), std::to_string(i), std::to_string(kNodes)},
        (dir / ("node" + std::to_string(i) + ".log")).string(), rgw->ClientEnv());
    ASSERT_TRUE(p.ok()) << p.status();
    nodes.push_back(std::move(*p));
  }
  for (int i = 0; i < kNodes; ++i) {
    int code = -1;
    ASSERT_TRUE(nodes[i]->WaitExit(std::chrono::seconds(240), &code)) << "node " << i << " hangs: " << nodes[i]->Log();
    EXPECT_EQ(code, 0) << "node " << i << ": " << nodes[i]->Log();
    EXPECT_NE(nodes[i]->Log().find("streamed " + std::to_string(kShards * kPerShard) + " samples"), std::string::npos)
        << nodes[i]->Log();
  }
  auto gets = proxy->GetsFromAccessLog(rgw->bucket(), "train/");
  uint64_t total = 0, bytes = 0;
  int shard_gets = 0;
  for (const auto& shard : manifest.shards) {
    const Fetched& f = gets["train/" + shard.name];
    EXPECT_EQ(f.bytes, shard.size) << shard.name << ": bytes the bucket sent";
    total += shard.size;
    bytes += f.bytes;
    shard_gets += f.gets;
  }
  EXPECT_EQ(bytes, total);
  std::cout << "[figures] " << kNodes << " loader processes streamed " << total / 1048576.0 << " MiB each ("
            << manifest.shards.size() << " shards); nginx saw " << shard_gets << " GETs of shard bytes, "
            << bytes / 1048576.0 << " MiB (without the group: " << kNodes * total / 1048576.0 << " MiB)" << std::endl;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace strata::loader

// Integration: three processes (ckpt_group_child), each a member of one
// static:// cache group with its own cache directory and peer endpoint on
// 127.0.0.1, pull one checkpoint from a Ceph RGW bucket behind an nginx proxy
// that logs every request. Every node's copy verifies and loads byte-exact;
// the bucket, counted at nginx, sends each shard byte once.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "ckpt/reader.h"
#include "ckpt/test_util.h"
#include "ckpt/writer.h"
#include "object/store_url.h"
#include "testing/background_process.h"
#include "testing/s3_server.h"

namespace strata::ckpt {
namespace {

namespace fs = std::filesystem;

constexpr char kSecret[] = "ckpt-group-process-secret-0123456789";
constexpr int kNodes = 3;

TEST(CkptGroupProcessTest, ThreeNodesPullFromRgwAndNginxSeesEachShardByteOnce) {
  const char* bin = std::getenv("STRATA_BINARY_DIR");
  ASSERT_NE(bin, nullptr) << "run under ctest";
  const std::string child = std::string(bin) + "/src/ckpt/ckpt_group_child";
  const fs::path dir = fs::temp_directory_path() / ("strata-ckpt-group-proc-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "sync");
  std::ofstream(dir / "secret") << kSecret << "\n";
  fs::permissions(dir / "secret", fs::perms::owner_read | fs::perms::owner_write);  // a secret file must be private

  auto backend = strata::testing::StartProxiedRgw({.ttfb_ms = 0, .rate = "0", .access_log = true});
  ASSERT_TRUE(backend.ok()) << backend.status();
  ASSERT_TRUE(backend->ExportCredentials().ok());
  const auto& rgw = backend->rgw;
  const auto& proxy = backend->proxy;
  auto bucket = object::OpenStore(rgw->StoreUrl("ckpt/"));  // written directly, not through the proxy
  ASSERT_TRUE(bucket.ok()) << bucket.status();
  const testing::OwnedState state = testing::MakeState(1, 0, 8);  // ~15 MiB in 4 MiB shards
  {
    WriterOptions o;
    o.dir = (dir / "saved").string();
    o.remote = *bucket;
    o.shard_bytes = 4 << 20;
    o.upload_part_size = 5 << 20;
    auto w = CheckpointWriter::Open(o);
    ASSERT_TRUE(w.ok()) << w.status();
    auto h = (*w)->Save(1, state.views);
    ASSERT_TRUE(h.ok()) << h.status();
    ASSERT_TRUE(h->WaitUploaded().ok()) << h->WaitUploaded();
  }
  auto info = OpenCheckpoint(*StoreLocation(*bucket), 1);
  ASSERT_TRUE(info.ok()) << info.status();

  const auto [peers, group] = strata::testing::MakeStaticGroup(kNodes);
  const std::string url = backend->StoreUrl("ckpt/");
  std::vector<std::unique_ptr<strata::testing::BackgroundProcess>> nodes;
  for (int i = 0; i < kNodes; ++i) {
    const std::string n = std::to_string(i);
    auto p = strata::testing::BackgroundProcess::Start(
        {child, url, group, peers[i], (dir / "secret").string(), (dir / ("cache" + n)).string(),
         (dir / "sync").string(), n, std::to_string(kNodes), "1", (dir / ("pulled" + n)).string()},
        (dir / ("node" + n + ".log")).string(), rgw->ClientEnv());
    ASSERT_TRUE(p.ok()) << p.status();
    nodes.push_back(std::move(*p));
  }
  for (int i = 0; i < kNodes; ++i) {
    int code = -1;
    ASSERT_TRUE(nodes[i]->WaitExit(std::chrono::seconds(240), &code)) << "node " << i << " hangs: " << nodes[i]->Log();
    EXPECT_EQ(code, 0) << "node " << i << ": " << nodes[i]->Log();
    auto local = OpenLocation((dir / ("pulled" + std::to_string(i))).string());
    ASSERT_TRUE(local.ok()) << local.status();
    auto loaded = Load(**local, 1);
    ASSERT_TRUE(loaded.ok()) << "node " << i << ": " << loaded.status();
    EXPECT_EQ(testing::Compare(*loaded, state), "") << "node " << i;
  }
  auto gets = proxy->GetsFromAccessLog(rgw->bucket(), "ckpt/" + StepDirName(1) + "/");
  uint64_t total = 0, bytes = 0;
  int shard_gets = 0;
  for (const auto& shard : info->ranks[0].shards) {
    const auto& f = gets["ckpt/" + StepDirName(1) + "/" + shard.file];
    EXPECT_EQ(f.bytes, shard.size) << shard.file << ": bytes the bucket sent";
    total += shard.size;
    bytes += f.bytes;
    shard_gets += f.gets;
  }
  EXPECT_EQ(bytes, total);
  std::cout << "[figures] " << kNodes << " nodes pulled a " << total / 1048576.0 << " MiB checkpoint ("
            << info->ranks[0].shards.size() << " shards); nginx saw " << shard_gets << " GETs of shard bytes, "
            << bytes / 1048576.0 << " MiB (without the group: " << kNodes * total / 1048576.0 << " MiB)" << std::endl;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace strata::ckpt

// Checkpoints tiered to REAL S3 servers on 127.0.0.1 (s3rver and a one-node
// Ceph RGW, started by testing/s3_server.h): multipart shard uploads, the
// verified load and pull back, and a resumed upload that skips the shards it
// already stored (the journal's ETags must match what the server reports).
#include <gtest/gtest.h>

#include <filesystem>
#include <set>

#include "ckpt/reader.h"
#include "ckpt/recording_store.h"
#include "ckpt/test_fixture.h"
#include "ckpt/test_util.h"
#include "ckpt/writer.h"
#include "io/durable.h"
#include "object/s3_config.h"
#include "object/s3_store.h"
#include "testing/s3_server.h"

namespace strata::ckpt {
namespace {

class CkptS3Test : public testing::TempDirTest<::testing::TestWithParam<strata::testing::S3TestServer::Kind>> {
 protected:
  void SetUp() override {
    TempDirTest::SetUp();
    auto server = strata::testing::S3TestServer::Start(GetParam());
    if (!server.ok())
      server = strata::testing::S3TestServer::Start(GetParam());  // a loaded 2-core machine can miss the deadline
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(*server);
  }

  std::unique_ptr<strata::testing::S3TestServer> server_;
};

TEST_P(CkptS3Test, TiersLoadsPullsAndResumesAgainstARealServer) {
  auto env = object::ConfigEnv::FromMaps(
      {{"AWS_ACCESS_KEY_ID", server_->access_key()}, {"AWS_SECRET_ACCESS_KEY", server_->secret_key()}}, {});
  auto config = object::S3ConfigFromUrl(server_->StoreUrl("run1"), env);
  ASSERT_TRUE(config.ok()) << config.status();
  auto s3 = object::OpenS3Store(*config);
  ASSERT_TRUE(s3.ok()) << s3.status();
  auto recorder = std::make_shared<testing::RecordingStore>(*s3);
  WriterOptions o;
  o.dir = io::JoinPath(dir_, "local");
  o.remote = recorder;
  o.shard_bytes = 8 << 20;
  o.upload_part_size = 5 << 20;  // S3's minimum: the 16 MiB shard goes up in parts
  const testing::OwnedState state = testing::MakeState(1, 0, 16);
  {
    auto w = std::move(CheckpointWriter::Open(o)).value();
    auto h = w->Save(1, state.views);
    ASSERT_TRUE(h.ok()) << h.status();
    ASSERT_TRUE(h->WaitUploaded().ok()) << h->WaitUploaded();
  }
  auto remote = StoreLocation(*s3, 5 << 20, 8);
  auto latest = Latest(*remote, VerifyLevel::kFull);
  ASSERT_TRUE(latest.ok()) << latest.status();
  EXPECT_EQ(latest->step, 1);
  auto loaded = Load(*remote, 1);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(testing::Compare(*loaded, state), "");
  auto pulled = std::move(OpenLocalLocation(io::DefaultFileSystem(), io::JoinPath(dir_, "pulled"))).value();
  ASSERT_TRUE(Pull(*remote, 1, *pulled).ok());
  EXPECT_TRUE(Verify(*pulled, 1, VerifyLevel::kFull).ok());

  // As if the process died before the remote markers: a new writer resumes,
  // re-uploading the markers only (its journal's ETags match the store's).
  for (const auto& name : {std::string(kCommitFile), std::string(kManifestFile), RankCommitName(0)}) {
    ASSERT_TRUE(remote->Remove(1, name).ok()) << name;
  }
  recorder->TakeEvents();
  {
    auto w = std::move(CheckpointWriter::Open(o)).value();
    ASSERT_TRUE(w->WaitForUploads().ok());
  }
  std::set<std::string> written;
  for (const auto& e : recorder->TakeEvents()) written.insert(e.key);
  for (const auto& shard : latest->ranks[0].shards) {
    EXPECT_FALSE(written.count(StepDirName(1) + "/" + shard.file)) << shard.file << " was uploaded again";
  }
  EXPECT_TRUE(written.count(StepDirName(1) + "/" + std::string(kCommitFile)));
  EXPECT_TRUE(Verify(*remote, 1, VerifyLevel::kFull).ok());
}

INSTANTIATE_TEST_SUITE_P(S3, CkptS3Test,
                         ::testing::Values(strata::testing::S3TestServer::Kind::kS3rver,
                                           strata::testing::S3TestServer::Kind::kRgw),
                         [](const auto& info) { return std::string(strata::testing::KindName(info.param)); });

}  // namespace
}  // namespace strata::ckpt

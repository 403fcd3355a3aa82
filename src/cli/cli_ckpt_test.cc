// Integration tests of `strata ckpt ls|show|verify|pull|gc`: checkpoints are
// written by the library's CheckpointWriter, then the built binary is run on
// them and its output, exit codes and the files it leaves are checked.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ckpt/reader.h"
#include "ckpt/test_fixture.h"
#include "ckpt/test_util.h"
#include "ckpt/writer.h"
#include "io/durable.h"
#include "testing/background_process.h"
#include "testing/strata_binary.h"

namespace strata::ckpt {
namespace {

namespace fs = std::filesystem;
using strata::testing::CliRun;
using testing::FlipByte;

class CkptCliTest : public strata::testing::StrataBinaryTest {
 protected:
  CliRun Strata(const std::vector<std::string>& args) { return RunStrata(args, std::chrono::minutes(2)); }
  std::string Dir(const std::string& rel) { return (dir_ / rel).string(); }

  void SaveSteps(const std::string& rel, const std::vector<int64_t>& steps) {
    WriterOptions o;
    o.dir = Dir(rel);
    o.shard_bytes = 1 << 20;
    auto w = CheckpointWriter::Open(o);
    ASSERT_TRUE(w.ok()) << w.status();
    for (int64_t step : steps) {
      auto h = (*w)->Save(step, testing::MakeState(step).views);
      ASSERT_TRUE(h.ok() && h->Wait().ok()) << step;
    }
  }
  std::string ShardPath(const std::string& rel, int64_t step, int shard) {
    return Dir(rel + "/" + StepDirName(step) + "/" + ShardFileName(0, shard));
  }
  // The first tensor of shard `shard`, as the manifest records it.
  TensorEntry TensorIn(const std::string& rel, int64_t step, uint32_t shard) {
    auto loc = OpenLocation(Dir(rel));
    auto info = loc.ok() ? OpenCheckpoint(**loc, step) : Result<CheckpointInfo>(loc.status());
    EXPECT_TRUE(info.ok()) << info.status();
    for (const auto& t : info->ranks[0].tensors) {
      if (t.shard == shard && t.size > 64) return t;
    }
    ADD_FAILURE() << "no tensor in shard " << shard;
    return {};
  }
  // Step 2 truncated (corrupt even to the quick check), step 4 never committed.
  void MakeDamagedSet() {
    SaveSteps("ckpt", {1, 2, 3});
    fs::resize_file(ShardPath("ckpt", 2, 1), 100);
    fs::create_directories(Dir("ckpt/" + StepDirName(4)));
    ASSERT_TRUE(
        io::WriteFileAtomic(io::DefaultFileSystem(), ShardPath("ckpt", 4, 0), std::string_view("partial")).ok());
  }
};

TEST_F(CkptCliTest, LsListsCommittedOnesAndAllAddsTornAndCorrupt) {
  MakeDamagedSet();
  CliRun ls = Strata({"ckpt", "ls", Dir("ckpt")});
  ASSERT_EQ(ls.code, 0) << ls.err;
  EXPECT_NE(ls.out.find(StepDirName(1) + "   committed"), std::string::npos) << ls.out;
  EXPECT_NE(ls.out.find(StepDirName(3) + "   committed"), std::string::npos) << ls.out;
  EXPECT_EQ(ls.out.find(StepDirName(2)), std::string::npos) << ls.out;
  EXPECT_EQ(ls.out.find(StepDirName(4)), std::string::npos) << ls.out;

  CliRun all = Strata({"ckpt", "ls", "--all", Dir("ckpt")});
  ASSERT_EQ(all.code, 0) << all.err;
  EXPECT_NE(all.out.find(StepDirName(2) + "   corrupt"), std::string::npos) << all.out;
  EXPECT_NE(all.out.find(StepDirName(4) + "   torn"), std::string::npos) << all.out;
  EXPECT_NE(all.out.find(StepDirName(3) + "   committed"), std::string::npos) << all.out;

  EXPECT_EQ(Strata({"ckpt", "ls", Dir("missing")}).code, 3);
}

TEST_F(CkptCliTest, ShowJsonPrintsTheManifests) {
  SaveSteps("ckpt", {5, 6});
  CliRun show = Strata({"ckpt", "show", Dir("ckpt"), "5", "--json"});
  ASSERT_EQ(show.code, 0) << show.err;
  auto j = nlohmann::json::parse(show.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << show.out;
  EXPECT_EQ(j["step"], 5);
  EXPECT_EQ(j["world_size"], 1);
  auto info = OpenCheckpoint(**OpenLocation(Dir("ckpt")), 5);
  ASSERT_TRUE(info.ok()) << info.status();
  const auto& rank = j["ranks_detail"][0];
  ASSERT_EQ(rank["shards"].size(), info->ranks[0].shards.size());
  EXPECT_EQ(rank["shards"][0]["sha256"], info->ranks[0].shards[0].sha256);
  EXPECT_EQ(rank["tensors"][0]["name"], "model.embed.weight");
  EXPECT_EQ(rank["tensors"].size(), info->ranks[0].tensors.size());

  // "latest" is the newest whose every byte verifies: step 6 damaged -> 5.
  FlipByte(ShardPath("ckpt", 6, 0), TensorIn("ckpt", 6, 0).offset + 7);
  CliRun latest = Strata({"ckpt", "show", Dir("ckpt"), "latest", "--json"});
  ASSERT_EQ(latest.code, 0) << latest.err;
  EXPECT_EQ(nlohmann::json::parse(latest.out, nullptr, false)["step"], 5) << latest.out;

  // A step past int64 is a malformed STEP, not the largest step "not found".
  for (const std::string step : {"99999999999999999999", "5x", "-1"}) {
    CliRun bad = Strata({"ckpt", "show", Dir("ckpt"), step});
    EXPECT_EQ(bad.code, 2) << step << ": " << bad.err;
    EXPECT_NE(bad.err.find("STEP must be a number"), std::string::npos) << step << ": " << bad.err;
  }
}

TEST_F(CkptCliTest, VerifyExitCodesNameTheShardAndTensor) {
  MakeDamagedSet();
  CliRun ok = Strata({"ckpt", "verify", Dir("ckpt"), "1"});
  EXPECT_EQ(ok.code, 0) << ok.out << ok.err;
  EXPECT_NE(ok.out.find(StepDirName(1) + ": OK (every byte)"), std::string::npos) << ok.out;

  const TensorEntry t = TensorIn("ckpt", 3, 1);
  FlipByte(ShardPath("ckpt", 3, 1), t.offset + 11);
  CliRun bad = Strata({"ckpt", "verify", Dir("ckpt"), "3"});
  EXPECT_EQ(bad.code, 5) << bad.out << bad.err;
  EXPECT_NE(bad.out.find("CORRUPT"), std::string::npos) << bad.out;
  EXPECT_NE(bad.out.find(ShardFileName(0, 1) + " tensor '" + t.name + "'"), std::string::npos) << bad.out;
  // The quick check cannot see a flipped byte.
  EXPECT_EQ(Strata({"ckpt", "verify", "--quick", Dir("ckpt"), "3"}).code, 0);

  CliRun torn = Strata({"ckpt", "verify", Dir("ckpt"), "4"});
  EXPECT_EQ(torn.code, 3) << torn.out << torn.err;
  EXPECT_NE(torn.out.find("NOT COMMITTED"), std::string::npos) << torn.out;

  CliRun every = Strata({"ckpt", "verify", Dir("ckpt"), "all"});
  EXPECT_EQ(every.code, 5) << every.out;                                 // corruption outranks "not committed"
  EXPECT_EQ(Strata({"ckpt", "verify", Dir("ckpt"), "latest"}).code, 0);  // step 1, the newest good one
  EXPECT_EQ(Strata({"ckpt", "verify", Dir("ckpt"), "x"}).code, 2);
}

TEST_F(CkptCliTest, PullCopiesVerifiedAndRefusesADamagedSource) {
  SaveSteps("ckpt", {1, 2});
  const std::string bucket = "file://" + Dir("bucket");
  fs::create_directories(Dir("bucket"));
  CliRun up = Strata({"ckpt", "pull", Dir("ckpt"), bucket, "1"});
  ASSERT_EQ(up.code, 0) << up.err;
  EXPECT_NE(up.out.find("pulled " + StepDirName(1)), std::string::npos) << up.out;
  EXPECT_EQ(Strata({"ckpt", "verify", bucket, "1"}).code, 0);
  EXPECT_NE(Strata({"ckpt", "pull", Dir("ckpt"), bucket, "1"}).code, 0);  // already there

  CliRun down = Strata({"ckpt", "pull", bucket, Dir("restored"), "latest"});
  ASSERT_EQ(down.code, 0) << down.err;
  auto loaded = Load(**OpenLocation(Dir("restored")), 1);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(testing::Compare(*loaded, testing::MakeState(1)), "");

  const TensorEntry t = TensorIn("ckpt", 2, 0);
  FlipByte(ShardPath("ckpt", 2, 0), t.offset + 3);
  CliRun refused = Strata({"ckpt", "pull", Dir("ckpt"), bucket, "2"});
  EXPECT_EQ(refused.code, 5) << refused.out << refused.err;
  EXPECT_NE(refused.err.find(t.name), std::string::npos) << refused.err;
  CliRun listed = Strata({"ckpt", "ls", "--all", bucket});
  EXPECT_EQ(listed.out.find(StepDirName(2)), std::string::npos) << "left in the bucket:\n" << listed.out;

  // "latest" skips the damaged step 2 and pulls step 1.
  CliRun latest = Strata({"ckpt", "pull", Dir("ckpt"), Dir("fresh"), "latest"});
  ASSERT_EQ(latest.code, 0) << latest.err;
  EXPECT_NE(latest.err.find("skipping " + StepDirName(2)), std::string::npos) << latest.err;
  EXPECT_NE(latest.out.find("pulled " + StepDirName(1)), std::string::npos) << latest.out;
}

// `ckpt pull --cache-group`: the source read through this process's member of a
// (one-member) static group, verified as without one; the flags are checked.
TEST_F(CkptCliTest, PullThroughACacheGroup) {
  SaveSteps("ckpt", {1});
  const std::string bucket = "file://" + Dir("bucket");
  fs::create_directories(Dir("bucket"));
  ASSERT_EQ(Strata({"ckpt", "pull", Dir("ckpt"), bucket, "1"}).code, 0);
  const std::string peer = "127.0.0.1:" + std::to_string(strata::testing::FreeLoopbackPort());
  const strata::testing::EnvOverrides env = {{"STRATA_GROUP_SECRET", "cli-ckpt-group-secret-0123456789"}};
  CliRun down = RunStrata({"ckpt", "pull", bucket, Dir("restored"), "latest", "--cache-group", "static://" + peer,
                           "--peer-listen", peer, "--cache-dir", Dir("group-cache")},
                          std::chrono::minutes(2), env);
  ASSERT_EQ(down.code, 0) << down.out << down.err;
  EXPECT_NE(down.out.find("pulled " + StepDirName(1)), std::string::npos) << down.out;
  auto loaded = Load(**OpenLocation(Dir("restored")), 1);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(testing::Compare(*loaded, testing::MakeState(1)), "");
  // A local directory is not read through a group; a group needs its secret.
  EXPECT_NE(RunStrata({"ckpt", "pull", Dir("ckpt"), Dir("other"), "1", "--cache-group", "static://" + peer,
                       "--peer-listen", peer},
                      std::chrono::minutes(1), env)
                .code,
            0);
  CliRun no_secret =
      RunStrata({"ckpt", "pull", bucket, Dir("other"), "1", "--cache-group", "static://" + peer, "--peer-listen", peer},
                std::chrono::minutes(1), {{"STRATA_GROUP_SECRET", ""}});
  EXPECT_NE(no_secret.code, 0);
  EXPECT_NE(no_secret.err.find("STRATA_GROUP_SECRET"), std::string::npos) << no_secret.err;
}

TEST_F(CkptCliTest, GcDryRunThenDeleteKeepingTheNewestVerified) {
  SaveSteps("ckpt", {1, 2, 3});
  CliRun dry = Strata({"ckpt", "gc", Dir("ckpt"), "--keep", "1", "--dry-run"});
  ASSERT_EQ(dry.code, 0) << dry.err;
  EXPECT_NE(dry.out.find("would delete " + StepDirName(1)), std::string::npos) << dry.out;
  EXPECT_NE(dry.out.find("would delete " + StepDirName(2)), std::string::npos) << dry.out;
  for (int s : {1, 2, 3}) EXPECT_TRUE(fs::exists(Dir("ckpt/" + StepDirName(s)))) << s;

  CliRun gc = Strata({"ckpt", "gc", Dir("ckpt"), "--keep", "1"});
  ASSERT_EQ(gc.code, 0) << gc.err;
  EXPECT_NE(gc.out.find("deleted " + StepDirName(2)), std::string::npos) << gc.out;
  EXPECT_FALSE(fs::exists(Dir("ckpt/" + StepDirName(1))));
  EXPECT_FALSE(fs::exists(Dir("ckpt/" + StepDirName(2))));
  EXPECT_TRUE(fs::exists(Dir("ckpt/" + StepDirName(3))));

  // A byte-corrupt newest: the older, good one is kept.
  SaveSteps("other", {1, 2});
  FlipByte(ShardPath("other", 2, 0), TensorIn("other", 2, 0).offset + 9);
  CliRun kept = Strata({"ckpt", "gc", Dir("other"), "--keep", "1"});
  ASSERT_EQ(kept.code, 0) << kept.err;
  EXPECT_NE(kept.out.find("nothing to delete"), std::string::npos) << kept.out;
  EXPECT_TRUE(fs::exists(Dir("other/" + StepDirName(1))));
  EXPECT_EQ(Strata({"ckpt", "gc", Dir("ckpt"), "--keep", "0"}).code, 2);
}

}  // namespace
}  // namespace strata::ckpt

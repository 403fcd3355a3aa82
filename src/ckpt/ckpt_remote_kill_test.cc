// Kill loop through the store (issue 15, item 3): a process (ckpt_kill_child)
// saves checkpoints with a remote tier on Ceph RGW (each uploaded, in
// multipart for its large shards, and committed in the bucket before the
// next; retention on both tiers) and is SIGKILLed at random moments: during
// start-up and resume, local persist, upload, the store-side commit and
// retention. After every kill the newest checkpoint in the bucket is
// complete and byte-exact and never older than before, and a new writer on
// the same dir resumes: every shard the killed one's upload journal records
// (and the bucket holds with that ETag) is not sent again, and afterwards the
// bucket's newest is the local newest. 10 kills; 100 with STRATA_STRESS=1.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <thread>

#include "ckpt/kill_loop_util.h"
#include "ckpt/reader.h"
#include "ckpt/recording_store.h"
#include "ckpt/writer.h"
#include "object/store_url.h"
#include "testing/background_process.h"
#include "testing/s3_server.h"

namespace strata::ckpt {
namespace {

namespace fs = std::filesystem;

bool Stress() {
  const char* s = std::getenv("STRATA_STRESS");
  return s && std::string(s) != "0" && *s;
}

int64_t NewestStep(Location& loc) {
  auto steps = loc.ListSteps();
  return steps.ok() && !steps->empty() ? *std::max_element(steps->begin(), steps->end()) : -1;
}

// The newest checkpoint in `remote` loads byte-exact, passes kFull, and is not
// older than *last (updated). Returns its bytes (0: none yet).
uint64_t CheckNewest(Location& remote, int64_t* last, const std::string& when) {
  auto latest = Latest(remote, VerifyLevel::kQuick);
  if (!latest.ok()) {
    EXPECT_EQ(latest.status().code(), Code::kNotFound) << when << ": " << latest.status();
    EXPECT_EQ(*last, -1) << when << ": a committed checkpoint disappeared from the bucket: " << latest.status();
    return 0;
  }
  EXPECT_GE(latest->step, *last) << when << ": the bucket's newest went backwards";
  *last = std::max(*last, latest->step);
  auto loaded = Load(remote, latest->step);
  if (!loaded.ok()) {
    ADD_FAILURE() << when << ": step " << latest->step << ": " << loaded.status();
    return 0;
  }
  EXPECT_EQ(testing::Compare(*loaded, testing::KillLoopState(latest->step)), "") << when << " step " << latest->step;
  EXPECT_EQ(loaded->metadata, "{\"step\":" + std::to_string(latest->step) + "}") << when;
  VerifyReport full = Verify(remote, latest->step, VerifyLevel::kFull);
  EXPECT_TRUE(full.ok()) << when << ": " << full.ToString();
  return latest->TotalBytes();
}

// Bucket keys of shards of uploads a killed writer left unfinished (the step
// not committed in the bucket) that its upload journal records and the bucket
// holds with the recorded ETag: a resume must not send them again.
std::set<std::string> JournaledShards(Location& local, Location& remote, object::ObjectStore& bucket) {
  std::set<std::string> keys;
  auto steps = local.ListSteps();
  if (!steps.ok()) return keys;
  for (int64_t step : *steps) {
    if (OpenCheckpoint(remote, step).ok()) continue;  // uploaded: a resume does not look at its shards
    // The journal's name: WriterImpl's UploadJournalName(0).
    auto text = local.ReadSmall(step, ".upload-" + RankManifestName(0), 1 << 20);
    if (!text.ok()) continue;
    auto j = nlohmann::json::parse(*text, nullptr, false);
    if (!j.is_object() || !j.contains("etags") || !j["etags"].is_object()) continue;
    for (auto it = j["etags"].begin(); it != j["etags"].end(); ++it) {
      const std::string key = StepDirName(step) + "/" + it.key();
      auto head = bucket.Head(key);
      if (it->is_string() && head.ok() && head->etag == it->get<std::string>()) keys.insert(key);
    }
  }
  return keys;
}

TEST(CkptRemoteKill, NewestInTheBucketSurvivesEverySigkillAndResumeSkipsVerifiedShards) {
  const char* bin = std::getenv("STRATA_BINARY_DIR");
  ASSERT_NE(bin, nullptr) << "run under ctest";
  const std::string child = std::string(bin) + "/src/ckpt/ckpt_kill_child";
  const int kills = Stress() ? 100 : 10;
  const fs::path dir = fs::temp_directory_path() / ("strata-ckpt-remote-kill-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  auto rgw = strata::testing::S3TestServer::Start(strata::testing::S3TestServer::Kind::kRgw);
  if (!rgw.ok()) rgw = strata::testing::S3TestServer::Start(strata::testing::S3TestServer::Kind::kRgw);
  ASSERT_TRUE(rgw.ok()) << rgw.status();
  ASSERT_EQ(setenv("AWS_ACCESS_KEY_ID", (*rgw)->access_key().c_str(), 1), 0);
  ASSERT_EQ(setenv("AWS_SECRET_ACCESS_KEY", (*rgw)->secret_key().c_str(), 1), 0);
  const std::string url = (*rgw)->StoreUrl("kill");
  auto bucket = object::OpenStore(url);
  ASSERT_TRUE(bucket.ok()) << bucket.status();
  auto remote = StoreLocation(*bucket, 5 << 20, 8);
  const std::string local_dir = (dir / "local").string();
  fs::create_directories(local_dir);
  auto local = std::move(OpenLocalLocation(io::DefaultFileSystem(), local_dir)).value();

  std::mt19937 rng(20261126);
  int64_t last_remote = -1, first_remote = -1;
  int advanced = 0, pending_at_kill = 0, uploads_by_children = 0, resumes_with_journal = 0;
  uint64_t bytes_verified = 0, journaled = 0, resent = 0, resumed_shards = 0;
  const auto start = std::chrono::steady_clock::now();
  int i = 0;
  for (; i < kills; ++i) {
    const std::string when = "kill " + std::to_string(i);
    const int64_t first = std::max(NewestStep(*local), NewestStep(*remote)) + 1;
    auto p = strata::testing::BackgroundProcess::Start({child, local_dir, url, std::to_string(first)},
                                                       (dir / "child.log").string(), (*rgw)->ClientEnv());
    ASSERT_TRUE(p.ok()) << p.status();
    // The point of this test is a kill at an arbitrary moment: wait a random time.
    std::this_thread::sleep_for(std::chrono::milliseconds(100 + rng() % 2500));
    int code = 0;
    ASSERT_FALSE((*p)->Exited(&code)) << when << ": the child ended on its own (" << code << "): " << (*p)->Log();
    ASSERT_EQ(::kill((*p)->pid(), SIGKILL), 0);
    ASSERT_TRUE((*p)->WaitExit(std::chrono::seconds(30), &code));
    EXPECT_EQ(code, 128 + SIGKILL) << (*p)->Log();
    for (size_t at = 0; (at = (*p)->Log().find("uploaded ", at)) != std::string::npos; ++at) ++uploads_by_children;

    const int64_t before = last_remote;
    bytes_verified += CheckNewest(*remote, &last_remote, when);
    if (first_remote < 0) first_remote = last_remote;
    if (last_remote > before) ++advanced;
    auto local_latest = Latest(*local, VerifyLevel::kQuick);
    if (local_latest.ok() && local_latest->step > last_remote) ++pending_at_kill;  // committed, not yet in the bucket

    // The next run resumes, recording what it sends.
    const std::set<std::string> verified = JournaledShards(*local, *remote, **bucket);
    resumes_with_journal += !verified.empty();
    journaled += verified.size();
    auto recorder = std::make_shared<testing::RecordingStore>(*bucket);
    {
      WriterOptions o = testing::KillLoopWriterOptions(local_dir);
      o.remote = recorder;
      auto w = CheckpointWriter::Open(o);
      ASSERT_TRUE(w.ok()) << when << ": " << w.status();
      Status up = (*w)->WaitForUploads();
      ASSERT_TRUE(up.ok()) << when << ": " << up;
    }
    for (const auto& e : recorder->TakeEvents()) {
      if (e.op != "create" || e.key.find(".safetensors") == std::string::npos) continue;
      ++resumed_shards;
      if (verified.count(e.key)) {
        ++resent;
        ADD_FAILURE() << when << ": the resume sent " << e.key << " again, journaled and in the bucket already";
      }
    }
    // Resumed: the bucket's newest is the local newest, complete and byte-exact.
    bytes_verified += CheckNewest(*remote, &last_remote, when + ", resumed");
    local_latest = Latest(*local, VerifyLevel::kQuick);
    if (local_latest.ok()) {
      EXPECT_EQ(last_remote, local_latest->step) << when << ": the resume left the newest local checkpoint behind";
    } else {  // killed before its first local commit
      EXPECT_EQ(local_latest.status().code(), Code::kNotFound) << when << ": " << local_latest.status();
      EXPECT_EQ(last_remote, -1) << when;
    }
    if (HasFailure()) break;
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::cout << "remote kill loop: kills " << i << " in " << seconds << " s, bucket's newest advanced after " << advanced
            << " (steps " << first_remote << ".." << last_remote << ", " << uploads_by_children
            << " uploads committed by the children), kills with a committed checkpoint not yet in the bucket "
            << pending_at_kill << ", resumes of a half-done upload " << resumes_with_journal
            << ", its journaled shards in the bucket " << journaled << " (re-sent " << resent
            << "), shards the resumes sent " << resumed_shards << ", bytes verified " << bytes_verified
            << ", data lost 0, wrong bytes 0\n";
  EXPECT_EQ(i, kills);
  EXPECT_EQ(resent, 0u);
  EXPECT_GT(advanced, 0);
  if (Stress()) {
    EXPECT_GT(resumes_with_journal, 0) << "no kill landed mid-upload: the resume check saw nothing to skip";
  }
  EXPECT_TRUE((*rgw)->Stop().ok());
  fs::remove_all(dir);
}

}  // namespace
}  // namespace strata::ckpt

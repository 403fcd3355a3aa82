// Retention, Latest() and the writer's remote tier under store faults (issue
// 15): a step is deleted as torn only when its marker or manifest is really
// missing or wrong; a 503, throttling, a reset or a truncated body keeps it.
#include <gtest/gtest.h>

#include <algorithm>
#include <iostream>

#include "ckpt/commit.h"
#include "ckpt/reader.h"
#include "ckpt/test_fixture.h"
#include "ckpt/test_util.h"
#include "ckpt/writer.h"
#include "object/fault_store.h"
#include "object/mem_store.h"

namespace strata::ckpt {
namespace {

using testing::Compare;
using testing::MakeState;
using testing::RemoteWriterOptions;
using testing::TempDirTest;

std::string Key(int64_t step, std::string_view name) { return StepDirName(step) + "/" + std::string(name); }

class RetentionFaultTest : public TempDirTest<> {
 protected:
  void SetUp() override {
    TempDirTest::SetUp();
    inner_ = object::MakeMemStore("", {.min_part_size = 1 << 20});
    fault_ = std::make_shared<object::FaultStore>(inner_, object::FaultConfig{});
  }
  WriterOptions Options() { return RemoteWriterOptions(dir_, fault_); }
  // Committed checkpoints `steps` in the store (uploaded by a writer, no faults).
  void SaveRemote(std::initializer_list<int64_t> steps, int keep_remote = 0) {
    WriterOptions o = Options();
    o.keep_remote = keep_remote;
    auto w = std::move(CheckpointWriter::Open(o)).value();
    for (int64_t step : steps) {
      auto state = MakeState(step);
      auto h = w->Save(step, state.views);
      ASSERT_TRUE(h.ok()) << h.status();
      ASSERT_TRUE(h->WaitUploaded().ok()) << h->WaitUploaded();
    }
  }  // closing joins the upload thread: its retention pass is over
  std::vector<int64_t> RemoteSteps() { return *StoreLocation(inner_)->ListSteps(); }

  std::shared_ptr<object::ObjectStore> inner_;
  std::shared_ptr<object::FaultStore> fault_;
};

// Scripted: one step answers 503 on every read, another is throttled; the
// torn one (marker removed) is deleted, the unreadable ones are kept.
TEST_F(RetentionFaultTest, TransientErrorsKeepCommittedStepsAndTornOnesStillGo) {
  SaveRemote({1, 2, 3, 4, 5});
  ASSERT_TRUE(inner_->Delete(Key(3, kCommitFile)).ok());  // torn: marker definitely absent
  fault_->FailKey(StepDirName(2) + "/", UnavailableError("injected 503"), -1, object::FaultOp::kGet);
  fault_->FailKey(Key(4, kManifestFile), Status(Code::kThrottled, "SlowDown"), -1, object::FaultOp::kGet);
  auto loc = StoreLocation(fault_);
  // What `strata ckpt gc --keep 3` runs.
  auto deleted = RetainNewest(*loc, 3);
  ASSERT_TRUE(deleted.ok()) << deleted.status();
  EXPECT_EQ(*deleted, (std::vector<int64_t>{3}));
  EXPECT_EQ(RemoteSteps(), (std::vector<int64_t>{1, 2, 4, 5}));
  EXPECT_GT(fault_->counters().scripted, 0u);
  EXPECT_EQ(OpenCheckpoint(*loc, 2).status().code(), Code::kUnavailable);
  EXPECT_EQ(OpenCheckpoint(*loc, 4).status().code(), Code::kThrottled);

  // The newest is unreadable: Latest() says so instead of loading an older one.
  fault_->FailKey(StepDirName(5) + "/", UnavailableError("injected 503"), -1, object::FaultOp::kGet);
  auto latest = Latest(*loc, VerifyLevel::kQuick);
  EXPECT_EQ(latest.status().code(), Code::kUnavailable) << latest.status();
  EXPECT_TRUE(latest.status().retryable());
  // Healed: everything is back, nothing lost.
  fault_->ClearRules();
  latest = Latest(*loc);
  ASSERT_TRUE(latest.ok()) << latest.status();
  EXPECT_EQ(latest->step, 5);
  for (int64_t step : {1, 2, 4, 5}) EXPECT_EQ(Compare(*Load(*loc, step), MakeState(step)), "") << step;
}

// Seeded random faults (5xx, throttling, resets, truncated bodies) over many
// passes: no committed step is ever deleted, and the torn one is eventually.
TEST_F(RetentionFaultTest, RandomStoreFaultsNeverDeleteACommittedStep) {
  SaveRemote({10, 20, 30, 40});
  ASSERT_TRUE(inner_->Delete(Key(20, kCommitFile)).ok());
  fault_->SetConfig({.seed = 15, .error_rate = 0.1, .throttle_rate = 0.05, .reset_rate = 0.05, .truncate_rate = 0.1});
  auto loc = StoreLocation(fault_);
  int passes = 0, failed_passes = 0;
  bool torn_gone = false;
  for (; passes < 60; ++passes) {
    auto deleted = RetainNewest(*loc, /*keep=*/3);
    if (!deleted.ok()) {
      ++failed_passes;  // the listing itself failed: nothing done
      continue;
    }
    for (int64_t s : *deleted) ASSERT_EQ(s, 20) << "pass " << passes << " deleted committed step " << s;
    torn_gone |= !deleted->empty();
    auto steps = RemoteSteps();
    ASSERT_EQ(std::count(steps.begin(), steps.end(), 10) + std::count(steps.begin(), steps.end(), 30) +
                  std::count(steps.begin(), steps.end(), 40),
              3)
        << "pass " << passes;
  }
  const object::StoreFaultCounters c = fault_->counters();
  std::cout << "retention under store faults: " << passes << " passes (" << failed_passes << " failed to list), "
            << c.requests << " requests, " << c.injected() << " faults injected (" << c.errors << " 5xx, "
            << c.throttles << " throttled, " << c.resets << " resets, " << c.truncations
            << " truncated), committed steps lost: 0\n";
  EXPECT_GT(c.injected(), 20u);
  EXPECT_TRUE(torn_gone);
  fault_->SetConfig({});
  EXPECT_EQ(RemoteSteps(), (std::vector<int64_t>{10, 30, 40}));
  for (int64_t step : {10, 30, 40}) EXPECT_EQ(Compare(*Load(*loc, step), MakeState(step)), "") << step;
}

// The writer's own remote retention pass: a committed step it cannot read
// while uploading a newer one stays in the bucket.
TEST_F(RetentionFaultTest, WriterRemoteRetentionKeepsAStepItCannotRead) {
  SaveRemote({10, 20, 30});
  fault_->FailKey(StepDirName(20) + "/", UnavailableError("injected 503"), -1, object::FaultOp::kGet);
  SaveRemote({40}, /*keep_remote=*/3);  // 10, 30, 40 valid: nothing to delete; 20 unknown
  EXPECT_EQ(RemoteSteps(), (std::vector<int64_t>{10, 20, 30, 40}));
  fault_->ClearRules();
  SaveRemote({50}, /*keep_remote=*/3);  // all readable: the oldest two go
  EXPECT_EQ(RemoteSteps(), (std::vector<int64_t>{30, 40, 50}));
}

// A lagging replica answers for committed steps with another attempt's rank
// manifest (each step was saved again after a partial upload, as by a job
// restarted on a fresh node): that proves nothing about them. Before the
// store location compared an answer's ETag with the listing, it was
// Corruption: retention deleted step 2 as torn, Latest() fell back to step 1
// and a pull of step 3 reported damage.
TEST_F(RetentionFaultTest, AnOutOfDateReplicaNeverMakesACommittedStepTorn) {
  SaveRemote({1, 2, 3});
  auto other = object::MakeMemStore("", {.min_part_size = 1 << 20});
  {
    WriterOptions o = Options();
    o.dir = io::JoinPath(dir_, "other-node");
    o.remote = other;
    auto w = std::move(CheckpointWriter::Open(o)).value();
    for (int64_t step : {2, 3}) {
      auto state = MakeState(1000 + step);
      auto h = w->Save(step, state.views);
      ASSERT_TRUE(h.ok()) << h.status();
      ASSERT_TRUE(h->WaitUploaded().ok()) << h->WaitUploaded();
    }
  }
  // The replica's version of `step`'s rank manifest: the other attempt's.
  auto stale = [&](int64_t step) {
    const std::string key = Key(step, RankManifestName(0));
    auto current = inner_->Get(key);
    auto old = other->Get(key);
    ASSERT_TRUE(current.ok() && old.ok());
    ASSERT_NE(current->data.ToString(), old->data.ToString());
    ASSERT_TRUE(inner_->Put(key, old->data).ok());
    ASSERT_TRUE(fault_->KeepVersion(key).ok());
    ASSERT_TRUE(inner_->Put(key, current->data).ok());
  };
  stale(2);
  fault_->SetConfig({.stale_rate = 1.0});  // every read of such a key: the replica's version
  auto loc = StoreLocation(fault_);
  auto open = OpenCheckpoint(*loc, 2);
  EXPECT_EQ(open.status().code(), Code::kUnavailable) << open.status();
  EXPECT_NE(open.status().message().find("out-of-date replica"), std::string::npos) << open.status();
  // Step 2 is older than the valid step 3: taken as torn, it was deleted.
  auto deleted = RetainNewest(*loc, 3);
  ASSERT_TRUE(deleted.ok()) << deleted.status();
  EXPECT_TRUE(deleted->empty());
  EXPECT_EQ(RemoteSteps(), (std::vector<int64_t>{1, 2, 3}));
  stale(3);
  auto latest = Latest(*loc, VerifyLevel::kQuick);
  EXPECT_EQ(latest.status().code(), Code::kUnavailable)
      << (latest.ok() ? "loaded step " + std::to_string(latest->step) : latest.status().ToString());
  auto dst = std::move(OpenLocalLocation(io::DefaultFileSystem(), io::JoinPath(dir_, "pulled"))).value();
  Status pulled = Pull(*loc, 3, *dst);
  EXPECT_EQ(pulled.code(), Code::kUnavailable) << pulled;
  EXPECT_FALSE(OpenCheckpoint(*dst, 3).ok());
  EXPECT_GT(fault_->counters().stale, 0u);
  // The replica catches up: every step is there, byte-exact.
  fault_->SetConfig({});
  latest = Latest(*loc);
  ASSERT_TRUE(latest.ok()) << latest.status();
  EXPECT_EQ(latest->step, 3);
  for (int64_t step : {1, 2, 3}) EXPECT_EQ(Compare(*Load(*loc, step), MakeState(step)), "") << step;
}

// Issue 15, item 4: upload and pull under seeded store faults (5xx,
// throttling, resets, truncated bodies, lost replies). Each operation either
// succeeds byte-exact or fails with a clear error leaving nothing committed;
// the figures are printed.
TEST_F(RetentionFaultTest, UploadAndPullUnderStoreFaultsAreByteExactOrFailCleanly) {
  fault_->SetConfig({.seed = 4,
                     .error_rate = 0.01,
                     .throttle_rate = 0.01,
                     .reset_rate = 0.01,
                     .truncate_rate = 0.02,
                     .lost_reply_rate = 0.01});
  int uploads_ok = 0, uploads_failed = 0;
  {
    auto w = std::move(CheckpointWriter::Open(Options())).value();
    for (int64_t step = 1; step <= 6; ++step) {
      auto state = MakeState(step);
      auto h = w->Save(step, state.views);
      ASSERT_TRUE(h.ok()) << h.status();
      ASSERT_TRUE(h->Wait().ok()) << h->Wait();  // the local commit never depends on the store
      Status up = h->WaitUploaded();
      ++(up.ok() ? uploads_ok : uploads_failed);
      if (up.ok()) {
        EXPECT_TRUE(Verify(*StoreLocation(inner_), step, VerifyLevel::kFull).ok()) << step;
      } else {
        EXPECT_FALSE(up.message().empty());
      }
    }
  }
  const object::StoreFaultCounters during_upload = fault_->counters();
  // Healed: a new writer resumes what failed; everything in the bucket is byte-exact.
  fault_->SetConfig({});
  {
    auto w = std::move(CheckpointWriter::Open(Options())).value();
    ASSERT_TRUE(w->WaitForUploads().ok());
  }
  // (Resuming covers the steps newer than the newest in the bucket.)
  auto remote = StoreLocation(inner_);
  auto latest = Latest(*remote, VerifyLevel::kFull);
  ASSERT_TRUE(latest.ok()) << latest.status();
  EXPECT_EQ(latest->step, 6);
  for (int64_t step : *remote->ListSteps()) {
    if (!OpenCheckpoint(*remote, step).ok()) continue;  // a failed upload's leftovers: never committed
    EXPECT_EQ(Compare(*Load(*remote, step), MakeState(step)), "") << step;
  }

  fault_->SetConfig({.seed = 5, .error_rate = 0.02, .throttle_rate = 0.02, .reset_rate = 0.02, .truncate_rate = 0.04});
  auto faulty = StoreLocation(fault_);
  int pulls_ok = 0, pulls_failed = 0;
  for (int i = 0; i < 20; ++i) {
    auto dst =
        std::move(OpenLocalLocation(io::DefaultFileSystem(), io::JoinPath(dir_, "pull-" + std::to_string(i)))).value();
    Status st = Pull(*faulty, 6, *dst);
    if (st.ok()) {
      ++pulls_ok;
      EXPECT_TRUE(Verify(*dst, 6, VerifyLevel::kFull).ok());
      EXPECT_EQ(Compare(*Load(*dst, 6), MakeState(6)), "");
    } else {
      ++pulls_failed;
      EXPECT_NE(st.code(), Code::kCorruption) << st;  // a transfer fault is never reported as damage
      EXPECT_FALSE(OpenCheckpoint(*dst, 6).ok()) << "a failed pull left a committed copy";
    }
  }
  const object::StoreFaultCounters total = fault_->counters();
  std::cout << "uploads under store faults: " << uploads_ok << " ok, " << uploads_failed << " failed cleanly ("
            << during_upload.injected() << " faults in " << during_upload.requests
            << " requests), every committed one byte-exact after resuming\n"
            << "pulls under store faults: " << pulls_ok << " ok (byte-exact), " << pulls_failed << " failed cleanly ("
            << total.injected() - during_upload.injected() << " faults in " << total.requests - during_upload.requests
            << " requests); wrong bytes served: 0\n";
  EXPECT_GT(total.injected(), during_upload.injected());
  EXPECT_EQ(pulls_ok + pulls_failed, 20);
}

}  // namespace
}  // namespace strata::ckpt

// Issue 31, the writer's side of the uploader's rules, on mem:// behind a
// gate that holds uploads while closed: the newest committed step goes
// first, one keep_remote would delete at once is never sent (its handle
// says so), a restarted writer keeps that order, the upload backlog is
// bounded with each policy (wait, skip, error), and the lag, backlog and
// counters show in tier_stats() and the strata_ckpt_* metrics.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <thread>

#include "base/metrics.h"
#include "ckpt/reader.h"
#include "ckpt/recording_store.h"
#include "ckpt/test_fixture.h"
#include "ckpt/test_util.h"
#include "ckpt/writer.h"
#include "object/mem_store.h"

namespace strata::ckpt {
namespace {

using testing::GatedStore;
using testing::MakeState;
using testing::OwnedState;
using testing::RecordingStore;
using testing::TempDirTest;

// Waits (with a deadline, not a fixed sleep) until `done` holds.
bool Eventually(const std::function<bool()>& done) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (std::chrono::steady_clock::now() < deadline) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return done();
}

class TieringOrderTest : public TempDirTest<> {
 protected:
  void SetUp() override {
    TempDirTest::SetUp();
    inner_ = object::MakeMemStore("", {.min_part_size = 1 << 20});
    recorder_ = std::make_shared<RecordingStore>(inner_);
    gate_ = std::make_shared<GatedStore>(recorder_);
  }
  WriterOptions Options() {
    WriterOptions o;
    o.dir = io::JoinPath(dir_, "local");
    o.shard_bytes = 1 << 20;
    o.remote = gate_;
    o.upload_part_size = 1 << 20;
    return o;
  }
  std::vector<int64_t> LocalSteps() {
    return *std::move(OpenLocalLocation(io::DefaultFileSystem(), io::JoinPath(dir_, "local"))).value()->ListSteps();
  }
  std::vector<int64_t> RemoteSteps() { return *StoreLocation(inner_)->ListSteps(); }
  // Steps in the order their COMMITTED marker appeared in the store.
  std::vector<int64_t> CommitOrder(const std::vector<RecordingStore::Event>& events) {
    std::vector<int64_t> order;
    for (const auto& e : events) {
      const auto slash = e.key.find('/');
      if (e.op == "object" && e.key.substr(slash + 1) == kCommitFile) {
        order.push_back(*ParseStepDirName(e.key.substr(0, slash)));
      }
    }
    return order;
  }
  // Whether any object of `step` was ever begun in the store.
  bool Touched(const std::vector<RecordingStore::Event>& events, int64_t step) {
    return std::any_of(events.begin(), events.end(),
                       [&](const auto& e) { return e.key.rfind(StepDirName(step) + "/", 0) == 0; });
  }
  SaveHandle Save(CheckpointWriter& w, int64_t step) {
    auto h = w.Save(step, MakeState(step).views);
    EXPECT_TRUE(h.ok()) << h.status();
    EXPECT_TRUE(h->Wait().ok());
    return *h;
  }

  std::shared_ptr<object::ObjectStore> inner_;
  std::shared_ptr<RecordingStore> recorder_;
  std::shared_ptr<GatedStore> gate_;
};

// Saves pile up behind an upload the bucket is slow to take. Once it lands,
// the newest goes next; 2, which keep_remote = 2 would delete as soon as 3
// and 4 land, is never sent, and once the bucket is past it keep_local applies.
TEST_F(TieringOrderTest, TheNewestGoesFirstAndASupersededStepIsNeverSent) {
  WriterOptions o = Options();
  o.keep_remote = 2;
  o.keep_local = 1;
  o.backlog = {0, 0};  // no bound: the saves never wait here
  auto w = std::move(CheckpointWriter::Open(o)).value();
  gate_->Close();
  SaveHandle h1 = Save(*w, 1);
  ASSERT_TRUE(gate_->WaitForHeld());  // 1 is uploading, held
  SaveHandle h2 = Save(*w, 2);
  Save(*w, 3);
  Save(*w, 4);
  Status st2 = h2.WaitUploaded();  // answered at once, not after the others
  EXPECT_EQ(st2.code(), Code::kCancelled) << st2;
  EXPECT_NE(st2.message().find("superseded"), std::string::npos) << st2;
  TierStats t = w->tier_stats();
  EXPECT_EQ(t.uploading, 1);
  EXPECT_EQ(t.superseded, 1u);
  EXPECT_EQ(t.pending_steps, 4u) << "1 uploading, 3 and 4 queued, 2 passed over while the bucket is behind it";
  EXPECT_EQ(LocalSteps(), (std::vector<int64_t>{1, 2, 3, 4})) << "the backlog stays beyond keep_local";

  gate_->Open();
  ASSERT_TRUE(w->WaitForUploads().ok());
  EXPECT_TRUE(h1.WaitUploaded().ok());
  w.reset();
  const auto events = recorder_->TakeEvents();
  EXPECT_EQ(CommitOrder(events), (std::vector<int64_t>{1, 4, 3}));
  EXPECT_FALSE(Touched(events, 2));
  EXPECT_EQ(RemoteSteps(), (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(LocalSteps(), (std::vector<int64_t>{4}));
  auto remote = StoreLocation(inner_);
  for (int64_t s : {3, 4}) EXPECT_EQ(testing::Compare(*Load(*remote, s), MakeState(s)), "") << s;
}

// Five steps committed while the bucket was unreachable (a writer without a
// remote): the writer opened next sends the newest first, and with
// keep_remote = 2 only the two newest, never the three it would delete.
TEST_F(TieringOrderTest, ARestartedWriterSendsTheNewestFirstAndSkipsWhatKeepRemoteWouldDelete) {
  {
    WriterOptions offline = Options();
    offline.remote = nullptr;
    auto w = std::move(CheckpointWriter::Open(offline)).value();
    for (int64_t s = 1; s <= 5; ++s) Save(*w, s);
  }
  WriterOptions o = Options();
  o.keep_remote = 2;
  {
    auto w = std::move(CheckpointWriter::Open(o)).value();
    ASSERT_TRUE(w->WaitForUploads().ok());
    const TierStats t = w->tier_stats();
    EXPECT_EQ(t.newest_remote, 5);
    EXPECT_EQ(t.superseded, 3u);
    EXPECT_EQ(t.lag_steps, 0);
  }
  const auto events = recorder_->TakeEvents();
  EXPECT_EQ(CommitOrder(events), (std::vector<int64_t>{5, 4}));
  for (int64_t s : {1, 2, 3}) EXPECT_FALSE(Touched(events, s)) << s;

  // Keeping everything: all of them, still newest first.
  WriterOptions all = Options();
  all.dir = io::JoinPath(dir_, "all");
  all.remote = recorder_;
  {
    WriterOptions offline = all;
    offline.remote = nullptr;
    auto w = std::move(CheckpointWriter::Open(offline)).value();
    for (int64_t s = 11; s <= 14; ++s) Save(*w, s);
  }
  all.backlog = {0, 0};
  { ASSERT_TRUE(std::move(CheckpointWriter::Open(all)).value()->WaitForUploads().ok()); }
  EXPECT_EQ(CommitOrder(recorder_->TakeEvents()), (std::vector<int64_t>{14, 13, 12, 11}));
}

// Backlog bound 1 while an upload is held: "skip" saves locally only.
TEST_F(TieringOrderTest, SkipKeepsASaveBeyondTheBacklogLocalOnly) {
  WriterOptions o = Options();
  o.backlog = {1, 0};
  o.backlog_policy = BacklogPolicy::kSkip;
  auto w = std::move(CheckpointWriter::Open(o)).value();
  gate_->Close();
  SaveHandle h1 = Save(*w, 1);
  ASSERT_TRUE(gate_->WaitForHeld());
  SaveHandle h2 = Save(*w, 2);
  EXPECT_FALSE(h2.stats().tiered);
  Status st = h2.WaitUploaded();
  EXPECT_EQ(st.code(), Code::kCancelled) << st;
  EXPECT_NE(st.message().find("skip"), std::string::npos) << st;
  EXPECT_EQ(w->tier_stats().not_tiered, 1u);
  gate_->Open();
  ASSERT_TRUE(w->WaitForUploads().ok());
  EXPECT_TRUE(h1.WaitUploaded().ok());
  w.reset();
  EXPECT_FALSE(Touched(recorder_->TakeEvents(), 2));
  EXPECT_EQ(LocalSteps(), (std::vector<int64_t>{1, 2}));
}

// "error": the save fails with Throttled and nothing of it exists; the same
// step saves once the upload landed. The bound in bytes works the same way.
TEST_F(TieringOrderTest, ErrorRefusesASaveBeyondTheBacklogAndSavesNothing) {
  const uint64_t state_bytes = [] {
    uint64_t n = 0;
    for (const auto& v : MakeState(1).views) n += v.size;
    return n;
  }();
  for (const BacklogLimit limit : {BacklogLimit{1, 0}, BacklogLimit{0, state_bytes * 3 / 2}}) {
    SCOPED_TRACE(limit.bytes ? "bytes" : "steps");
    WriterOptions o = Options();
    o.dir = io::JoinPath(dir_, limit.bytes ? "bytes" : "steps");
    o.backlog = limit;
    o.backlog_policy = BacklogPolicy::kError;
    auto w = std::move(CheckpointWriter::Open(o)).value();
    const int64_t first = limit.bytes ? 101 : 1;  // steps of their own in the one bucket
    gate_->Close();
    Save(*w, first);
    ASSERT_TRUE(gate_->WaitForHeld());
    auto refused = w->Save(first + 1, MakeState(first + 1).views);
    ASSERT_FALSE(refused.ok());
    EXPECT_EQ(refused.status().code(), Code::kThrottled) << refused.status();
    EXPECT_TRUE(refused.status().retryable());
    EXPECT_EQ(w->tier_stats().rejected, 1u);
    EXPECT_FALSE(std::filesystem::exists(io::JoinPath(o.dir, StepDirName(first + 1))));
    gate_->Open();
    ASSERT_TRUE(w->WaitForUploads().ok());
    SaveHandle h2 = Save(*w, first + 1);  // room again: the same step
    EXPECT_TRUE(h2.WaitUploaded().ok());
  }
}

// "wait": the save blocks (shown by tier_stats().waiting_saves) until the
// upload lands, then goes ahead; the time it waited is in its stats.
TEST_F(TieringOrderTest, WaitBlocksASaveUntilTheUploadLands) {
  WriterOptions o = Options();
  o.backlog = {1, 0};
  auto w = std::move(CheckpointWriter::Open(o)).value();
  gate_->Close();
  Save(*w, 1);
  ASSERT_TRUE(gate_->WaitForHeld());
  std::atomic<bool> saved{false};
  Result<SaveHandle> h2 = InvalidArgumentError("not yet");
  std::thread saver([&] {
    h2 = w->Save(2, MakeState(2).views);
    saved = true;
  });
  ASSERT_TRUE(Eventually([&] { return w->tier_stats().waiting_saves == 1; }));
  EXPECT_FALSE(saved) << "the save went ahead with the backlog full";
  gate_->Open();
  saver.join();
  ASSERT_TRUE(h2.ok()) << h2.status();
  EXPECT_TRUE(h2->WaitUploaded().ok());
  EXPECT_GT(h2->stats().backlog_wait, Duration{0});
  const TierStats t = w->tier_stats();
  EXPECT_EQ(t.waiting_saves, 0u);
  EXPECT_GT(t.backlog_wait, Duration{0});
  EXPECT_EQ(t.uploaded, 2u);
}

// The lag in steps, checkpoints and time (a fake clock), the backlog, and the
// same as metrics labelled with the writer's dir and rank.
TEST_F(TieringOrderTest, LagAndBacklogInStatsAndMetrics) {
  FakeClock clock;
  WriterOptions o = Options();
  o.clock = &clock;
  o.backlog = {0, 0};
  auto w = std::move(CheckpointWriter::Open(o)).value();
  gate_->Close();
  SaveHandle h1 = Save(*w, 10);
  ASSERT_TRUE(gate_->WaitForHeld());
  clock.Advance(std::chrono::seconds(3));
  Save(*w, 20);
  clock.Advance(std::chrono::seconds(2));
  // A save's Wait() returns at its local commit; the writer queues its upload
  // just after (a slow machine, or ASan, shows the gap).
  ASSERT_TRUE(Eventually([&] { return w->tier_stats().newest_local == 20; }));
  TierStats t = w->tier_stats();
  EXPECT_EQ(t.newest_local, 20);
  EXPECT_EQ(t.newest_remote, -1);
  EXPECT_EQ(t.lag_steps, 21);
  EXPECT_EQ(t.lag_checkpoints, 2u);
  EXPECT_EQ(t.lag, std::chrono::seconds(5));
  EXPECT_EQ(t.pending_steps, 2u);
  EXPECT_EQ(t.pending_bytes, 2 * h1.stats().bytes);
  EXPECT_EQ(t.uploading, 10);
  const std::string labels = "{dir=\"" + o.dir + "\",rank=\"0\"}";
  std::string text = MetricsRegistry::Global().RenderPrometheus();
  EXPECT_NE(text.find("strata_ckpt_upload_lag_steps" + labels + " 21\n"), std::string::npos) << text;
  EXPECT_NE(text.find("strata_ckpt_upload_lag_milliseconds" + labels + " 5000\n"), std::string::npos);
  EXPECT_NE(text.find("strata_ckpt_upload_pending_steps" + labels + " 2\n"), std::string::npos);

  gate_->Open();
  ASSERT_TRUE(w->WaitForUploads().ok());
  t = w->tier_stats();
  EXPECT_EQ(t.newest_remote, 20);
  EXPECT_EQ(t.lag_steps, 0);
  EXPECT_EQ(t.lag, Duration{0});
  EXPECT_EQ(t.pending_steps, 0u);
  EXPECT_EQ(t.uploaded, 2u);
  text = MetricsRegistry::Global().RenderPrometheus();
  EXPECT_NE(text.find("strata_ckpt_upload_lag_steps" + labels + " 0\n"), std::string::npos) << text;
  EXPECT_NE(text.find("strata_ckpt_uploads_total" + labels + " 2\n"), std::string::npos) << text;
  EXPECT_NE(text.find("strata_ckpt_upload_behind_since_seconds" + labels + " 0\n"), std::string::npos);
}

}  // namespace
}  // namespace strata::ckpt

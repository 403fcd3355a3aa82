// The uploader's rules on their own (no disk, no store; a fake clock): newest
// first, superseded steps dropped (never the one in flight), the backlog bound
// a save is admitted against, and the lag.
#include "ckpt/upload_queue.h"

#include <gtest/gtest.h>

#include <chrono>
#include <vector>

namespace strata::ckpt {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

std::vector<int64_t> Steps(const std::vector<UploadQueue::Entry>& entries) {
  std::vector<int64_t> steps;
  for (const auto& e : entries) steps.push_back(e.step);
  return steps;
}

int64_t Take(UploadQueue& q) {
  auto e = q.Next();
  return e ? e->step : -1;
}

constexpr BacklogLimit kNoLimit{0, 0};

// Steps committed while the bucket was busy go up newest first, one at a
// time, whatever order they were queued in (a restart queues old ones too).
TEST(UploadQueue, HandsOutTheNewestFirstAndOneAtATime) {
  UploadQueue q(/*keep_remote=*/0, kNoLimit);  // keep everything: nothing is superseded
  for (int64_t s : {5, 3, 7, 4}) EXPECT_TRUE(q.Enqueue({s, 10, nullptr}).empty());
  EXPECT_EQ(Take(q), 7);
  EXPECT_EQ(q.uploading(), 7);
  EXPECT_EQ(Take(q), -1) << "a second step handed out while one is in flight";
  EXPECT_TRUE(q.Finish(7, true).empty());
  EXPECT_TRUE(q.Enqueue({8, 10, nullptr}).empty());  // committed meanwhile: before the older ones
  EXPECT_EQ(Take(q), 8);
  q.Finish(8, true);
  std::vector<int64_t> order;
  for (int64_t s; (s = Take(q)) >= 0; q.Finish(s, true)) order.push_back(s);
  EXPECT_EQ(order, (std::vector<int64_t>{5, 4, 3}));
  EXPECT_TRUE(q.Idle());
  EXPECT_EQ(q.Stats(WallTime{}).uploaded, 5u);
}

// keep_remote = 2: a queued step with two newer ones queued, uploading or in
// the bucket would be deleted as soon as they land, so it is dropped; the
// step in flight is never dropped (else under fast saves nothing would land).
TEST(UploadQueue, DropsWhatKeepRemoteWouldDeleteButNeverTheUploadInFlight) {
  UploadQueue q(/*keep_remote=*/2, kNoLimit);
  EXPECT_TRUE(q.Enqueue({10, 1, nullptr}).empty());
  EXPECT_TRUE(q.Enqueue({11, 1, nullptr}).empty());
  EXPECT_EQ(Steps(q.Enqueue({12, 1, nullptr})), (std::vector<int64_t>{10}));
  EXPECT_FALSE(q.Superseded(11));
  EXPECT_EQ(Take(q), 12);
  EXPECT_EQ(Steps(q.Enqueue({13, 1, nullptr})), (std::vector<int64_t>{11}));  // 12 (in flight) and 13 are newer
  EXPECT_EQ(q.Pending(), (std::set<int64_t>{12, 13}));
  EXPECT_EQ(Steps(q.Enqueue({14, 1, nullptr})), std::vector<int64_t>{})
      << "13 has one newer step; 12 is in flight and stays";
  EXPECT_EQ(Steps(q.Enqueue({15, 1, nullptr})), (std::vector<int64_t>{13}));
  EXPECT_TRUE(q.Superseded(12));  // would go at once, but its upload continues
  EXPECT_EQ(q.uploading(), 12);
  q.Finish(12, true);
  EXPECT_EQ(Take(q), 15);
  EXPECT_EQ(q.Stats(WallTime{}).superseded, 3u);
}

// What the bucket already holds counts the same: a step older than
// keep_remote steps there is not uploaded (a restart finds such ones).
TEST(UploadQueue, StepsInTheBucketSupersedeOlderQueuedOnes) {
  UploadQueue q(/*keep_remote=*/2, kNoLimit);
  EXPECT_TRUE(q.Enqueue({3, 1, nullptr}).empty());
  EXPECT_TRUE(q.NoteRemote(4).empty());
  EXPECT_EQ(Steps(q.NoteRemote(6)), (std::vector<int64_t>{3}));
  EXPECT_TRUE(q.Enqueue({5, 1, nullptr}).empty()) << "5 would stay in the bucket: 6 is the only newer one";
  EXPECT_TRUE(q.NoteRemote(2).empty());  // older than both: changes nothing
  EXPECT_EQ(Take(q), 5);
}

// keep_remote = 0 keeps everything in the bucket: nothing is ever superseded.
TEST(UploadQueue, KeepingEverythingSupersedesNothing) {
  UploadQueue q(/*keep_remote=*/0, kNoLimit);
  for (int64_t s = 0; s < 50; ++s) EXPECT_TRUE(q.Enqueue({s, 1, nullptr}).empty());
  for (int64_t s = 100; s < 110; ++s) EXPECT_TRUE(q.NoteRemote(s).empty());
  EXPECT_EQ(q.Pending().size(), 50u);
}

// The backlog bound in steps: the step in flight, saves still persisting and
// queued steps count; queued ones the new save would supersede do not; one
// save always fits.
TEST(UploadQueue, AdmitsASaveOnlyWithinTheStepBound) {
  UploadQueue q(/*keep_remote=*/0, BacklogLimit{2, 0});
  EXPECT_TRUE(q.Fits(1, 1 << 20));
  q.Reserve(1, 1 << 20);
  EXPECT_TRUE(q.Fits(2, 1 << 20));
  q.Reserve(2, 1 << 20);
  EXPECT_FALSE(q.Fits(3, 1 << 20)) << "1 and 2 are persisting";
  q.Unreserve(2);  // its persist failed
  EXPECT_TRUE(q.Fits(3, 1 << 20));
  q.Enqueue({1, 1 << 20, nullptr});  // committed: queued now, still in the backlog
  EXPECT_FALSE(q.Reserved(1));
  EXPECT_EQ(Take(q), 1);
  EXPECT_TRUE(q.Fits(3, 1 << 20));
  q.Reserve(3, 1 << 20);
  q.Enqueue({3, 1 << 20, nullptr});
  EXPECT_FALSE(q.Fits(4, 1 << 20)) << "1 uploading, 3 queued";
  q.Finish(1, true);
  EXPECT_TRUE(q.Fits(4, 1 << 20));

  UploadQueue keep1(/*keep_remote=*/1, BacklogLimit{2, 0});
  keep1.Enqueue({1, 1, nullptr});
  EXPECT_EQ(Take(keep1), 1);
  keep1.Enqueue({2, 1, nullptr});
  EXPECT_TRUE(keep1.Fits(3, 1)) << "3 supersedes the queued 2: the backlog would be 1 (in flight) and 3";
  keep1.Reserve(3, 1);
  EXPECT_EQ(Steps(keep1.Enqueue({3, 1, nullptr})), (std::vector<int64_t>{2}));
}

TEST(UploadQueue, AdmitsASaveOnlyWithinTheByteBound) {
  UploadQueue q(/*keep_remote=*/0, BacklogLimit{0, 100});
  EXPECT_TRUE(q.Fits(1, 1000)) << "a single save always fits, however large";
  q.Enqueue({1, 60, nullptr});
  EXPECT_TRUE(q.Fits(2, 40));
  EXPECT_FALSE(q.Fits(2, 41));
  EXPECT_TRUE(q.HasRoomFor(40));
  EXPECT_FALSE(q.HasRoomFor(41));
  const TierStats t = q.Stats(WallTime{});
  EXPECT_EQ(t.pending_steps, 1u);
  EXPECT_EQ(t.pending_bytes, 60u);
}

// An admitted save newer than everything queued is what the uploader waits
// for; an older reservation (a restart's queue is older than any save) is not.
TEST(UploadQueue, ReportsSavesNewerThanTheQueue) {
  UploadQueue q(/*keep_remote=*/3, kNoLimit);
  q.Enqueue({7, 1, nullptr});
  q.Reserve(9, 1);
  EXPECT_EQ(q.NewerThanQueued(), (std::set<int64_t>{9}));
  q.Enqueue({9, 1, nullptr});
  EXPECT_TRUE(q.NewerThanQueued().empty());
  EXPECT_EQ(Take(q), 9);
}

// A failed upload leaves the bucket as it was: counted, and no longer newer
// than anything (an older step then stays queued).
TEST(UploadQueue, AFailedUploadSupersedesNothing) {
  UploadQueue q(/*keep_remote=*/2, kNoLimit);
  q.Enqueue({4, 1, nullptr});
  EXPECT_EQ(Take(q), 4);
  EXPECT_TRUE(q.Enqueue({3, 1, nullptr}).empty());  // older, found later (e.g. unreadable at first)
  EXPECT_TRUE(q.Finish(4, false).empty());
  EXPECT_TRUE(q.Enqueue({5, 1, nullptr}).empty()) << "3 has one newer step left: 5";
  EXPECT_EQ(Take(q), 5);
  const TierStats t = q.Stats(WallTime{});
  EXPECT_EQ(t.failed, 1u);
  EXPECT_EQ(t.uploaded, 0u);
  EXPECT_EQ(t.newest_remote, -1);
  EXPECT_EQ(q.Pending(), (std::set<int64_t>{3, 5}));
}

// The lag: how far (in steps and checkpoints) and since when the bucket is
// behind what is committed locally, tiered or not.
TEST(UploadQueue, LagInStepsCheckpointsAndTime) {
  FakeClock clock;
  UploadQueue q(/*keep_remote=*/3, kNoLimit);
  EXPECT_EQ(q.Stats(clock.WallNow()).lag_steps, 0);
  q.NoteLocalCommit(100, clock.WallNow());
  clock.Advance(seconds(2));
  q.NoteLocalCommit(200, clock.WallNow());
  clock.Advance(seconds(3));
  TierStats t = q.Stats(clock.WallNow());
  EXPECT_EQ(t.newest_local, 200);
  EXPECT_EQ(t.newest_remote, -1);
  EXPECT_EQ(t.lag_steps, 201);  // the bucket holding none counts as step -1
  EXPECT_EQ(t.lag_checkpoints, 2u);
  EXPECT_EQ(t.lag, seconds(5));
  q.NoteRemote(100);
  t = q.Stats(clock.WallNow());
  EXPECT_EQ(t.lag_steps, 100);
  EXPECT_EQ(t.lag_checkpoints, 1u);
  EXPECT_EQ(t.lag, seconds(3)) << "since step 200 was committed";
  clock.Advance(milliseconds(500));
  EXPECT_EQ(q.Stats(clock.WallNow()).lag, milliseconds(3500));
  q.NoteRemote(200);
  t = q.Stats(clock.WallNow());
  EXPECT_EQ(t.lag_steps, 0);
  EXPECT_EQ(t.lag_checkpoints, 0u);
  EXPECT_EQ(t.lag, seconds(0));
  q.NoteLocalCommit(150, clock.WallNow());  // older than the bucket's newest: not behind
  EXPECT_EQ(q.Stats(clock.WallNow()).lag_checkpoints, 0u);
}

}  // namespace
}  // namespace strata::ckpt

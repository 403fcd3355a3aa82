// The uploader's rules on their own (no disk, no store; a fake clock): newest
// first, superseded steps dropped (never the one in flight), the backlog bound
// a save is admitted against, and the lag.
#include "ckpt/upload_queue.h"

#include <gtest/gtest.h>

#include <chrono>
#include <iterator>
#include <memory>
#include <random>
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
  // Dropped, but the bucket is behind on them until a newer one lands: still the backlog's.
  EXPECT_EQ(q.Pending(), (std::set<int64_t>{10, 11, 12, 13}));
  EXPECT_EQ(Steps(q.Enqueue({14, 1, nullptr})), std::vector<int64_t>{})
      << "13 has one newer step; 12 is in flight and stays";
  EXPECT_EQ(Steps(q.Enqueue({15, 1, nullptr})), (std::vector<int64_t>{13}));
  EXPECT_TRUE(q.Superseded(12));  // would go at once, but its upload continues
  EXPECT_EQ(q.uploading(), 12);
  q.Finish(12, true);
  EXPECT_EQ(q.Pending(), (std::set<int64_t>{13, 14, 15})) << "12 landed: the bucket is past 10 and 11";
  EXPECT_EQ(Take(q), 15);
  q.Finish(15, true);
  EXPECT_EQ(q.Pending(), (std::set<int64_t>{14}));
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

  // A queued step the new save supersedes leaves the backlog only once the bucket is past it.
  UploadQueue keep1(/*keep_remote=*/1, BacklogLimit{2, 0});
  keep1.Enqueue({1, 1, nullptr});
  EXPECT_EQ(Take(keep1), 1);
  keep1.Enqueue({2, 1, nullptr});
  EXPECT_FALSE(keep1.Fits(3, 1)) << "1 uploading, 2 queued (superseded by 3, but the bucket is behind on it)";
  keep1.Finish(1, true);
  EXPECT_TRUE(keep1.Fits(3, 1));
  keep1.Reserve(3, 1);
  EXPECT_EQ(Steps(keep1.Enqueue({3, 1, nullptr})), (std::vector<int64_t>{2}));
  EXPECT_EQ(keep1.Pending(), (std::set<int64_t>{2, 3}));
  EXPECT_FALSE(keep1.Fits(4, 1));
  EXPECT_EQ(Take(keep1), 3);
  keep1.Finish(3, true);
  EXPECT_TRUE(keep1.Fits(4, 1));
  EXPECT_TRUE(keep1.Pending().empty());
}

// Unset, the bound is what the bucket keeps anyway (keep_remote), or 2 when it keeps everything.
TEST(UploadQueue, TheDefaultBoundIsKeepRemote) {
  EXPECT_EQ(BacklogLimit{}.Steps(3), 3u);
  EXPECT_EQ(BacklogLimit{}.Steps(0), 2u);
  EXPECT_EQ((BacklogLimit{5, 0}.Steps(3)), 5u);
  UploadQueue q(/*keep_remote=*/3, BacklogLimit{});
  for (int64_t s = 1; s <= 2; ++s) q.Enqueue({s, 1, nullptr});
  EXPECT_EQ(Take(q), 2);
  EXPECT_TRUE(q.Fits(3, 1));
  q.Reserve(3, 1);
  EXPECT_FALSE(q.Fits(4, 1)) << "1, 2 (uploading), 3 and 4: one more than keep_remote";
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

  // What a failed upload superseded stops holding saves back (it may never land).
  UploadQueue keep1(/*keep_remote=*/1, kNoLimit);
  keep1.Enqueue({4, 1, nullptr});
  EXPECT_EQ(Take(keep1), 4);
  keep1.Enqueue({5, 1, nullptr});
  EXPECT_EQ(Steps(keep1.Enqueue({6, 1, nullptr})), (std::vector<int64_t>{5}));
  EXPECT_EQ(keep1.Pending(), (std::set<int64_t>{4, 5, 6}));
  keep1.Finish(4, false);
  EXPECT_EQ(keep1.Pending(), (std::set<int64_t>{6}));
}

// A restart finds three steps the bucket lacks: the save after it waits for
// one upload (the bucket must not fall further behind), and the upload it
// waits for is the newest, not a new one each time.
TEST(UploadQueue, AfterARestartTheNextSaveWaitsForTheNewestToLand) {
  UploadQueue q(/*keep_remote=*/3, BacklogLimit{});
  q.NoteRemote(10);
  for (int64_t s : {13, 12, 11}) q.Enqueue({s, 1, nullptr});  // as Open walks them
  EXPECT_EQ(Take(q), 13);
  EXPECT_FALSE(q.Fits(14, 1));
  q.Finish(13, true);
  EXPECT_TRUE(q.Fits(14, 1)) << "11 is superseded by 12, 13 and 14, and older than the bucket's newest";
}

// The invariants under a seeded random schedule of saves, upload starts and
// ends (one in 20 failing), and restarts that rebuild the queue from what the
// local directory and the bucket hold, as Open does: the bucket's newest is
// never more than the bound behind the newest saved, except after a failed
// upload until a step saved since lands (a failed step does not hold saves
// back: it may never land), and the local directory holds at most keep_local + the bound.
TEST(UploadQueue, SeededSchedulesKeepTheBucketWithinTheBound) {
  constexpr int kKeepLocal = 2;
  for (int keep_remote : {1, 2, 3, 5}) {
    for (size_t bound : {size_t{1}, size_t{2}, size_t{3}, size_t{4}}) {
      std::mt19937 rng(1000 * keep_remote + bound);
      std::set<int64_t> local, bucket;
      auto q = std::make_unique<UploadQueue>(keep_remote, BacklogLimit{bound, 0});
      int64_t next = 0;
      int64_t excused_until = -1;  // after a failed upload: until the bucket's newest reaches this
      auto retain = [&] {
        const std::set<int64_t> keep = q->Pending();
        int kept = 0;
        for (auto it = local.rbegin(); it != local.rend();) {
          if (kept++ < kKeepLocal || keep.count(*it)) {
            ++it;
          } else {
            it = std::make_reverse_iterator(local.erase(std::next(it).base()));
          }
        }
        while (bucket.size() > static_cast<size_t>(keep_remote)) bucket.erase(bucket.begin());
      };
      for (int tick = 0; tick < 3000; ++tick) {
        const int action = static_cast<int>(rng() % 10);
        if (action < 5) {  // a save
          if (!q->Fits(next, 1)) continue;
          q->Reserve(next, 1);
          local.insert(next);
          q->NoteLocalCommit(next, WallTime{});
          q->Enqueue({next++, 1, nullptr});
        } else if (action < 7) {
          q->Next();
        } else if (action < 9) {
          if (auto s = q->uploading()) {
            const bool ok = rng() % 20 != 0;
            if (ok) bucket.insert(*s);
            q->Finish(*s, ok);
            if (!ok) excused_until = next;
          }
        } else {  // a restart: the queue as Open rebuilds it
          q = std::make_unique<UploadQueue>(keep_remote, BacklogLimit{bound, 0});
          std::set<int64_t> all = local;
          all.insert(bucket.begin(), bucket.end());
          size_t newer = 0;
          for (auto it = all.rbegin(); it != all.rend(); ++it) {
            if (bucket.count(*it)) {
              q->NoteRemote(*it);
              ++newer;
            } else if (newer >= static_cast<size_t>(keep_remote)) {
              q->NoteSuperseded(*it, 1);
            } else if (q->HasRoomFor(1)) {
              q->Enqueue({*it, 1, nullptr});
              ++newer;
            }
          }
        }
        retain();
        const int64_t newest_remote = bucket.empty() ? -1 : *bucket.rbegin();
        if (!local.empty() && newest_remote >= excused_until) {
          ASSERT_LE(*local.rbegin() - newest_remote, static_cast<int64_t>(bound))
              << "keep_remote " << keep_remote << ", bound " << bound << ", tick " << tick;
        }
        ASSERT_LE(local.size(), kKeepLocal + bound) << "keep_remote " << keep_remote << ", tick " << tick;
      }
      EXPECT_GT(next, 100) << "the schedule saved little: keep_remote " << keep_remote << ", bound " << bound;
    }
  }
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

// Unit tests for the AU arithmetic of `strata bench train` (SummarizeEpoch):
// timelines with known step times give known AU, DLIO AU and rates.
#include "cli/bench_train_engine.h"

#include <gtest/gtest.h>

namespace strata::cli::train {
namespace {

using std::chrono::milliseconds;

// A rank whose steps end at `ends` (ms after t0), each with `compute_ms`
// measured and a batch of 8 samples of 4096 bytes.
RankTimeline Rank(TimePoint t0, std::vector<int> ends, int compute_ms) {
  RankTimeline r;
  r.start = t0;
  r.realtime = true;
  for (int e : ends) {
    r.step_end.push_back(t0 + milliseconds(e));
    r.compute.push_back(milliseconds(compute_ms));
    r.batches.push_back({8, 8 * 4096});
  }
  return r;
}

TEST(SummarizeEpochTest, AuFromKnownStepTimes) {
  const TimePoint t0{};
  // First step 100 ms (start-up, excluded), then 3 steps of 20 ms each, for
  // 10 ms of nominal compute: the accelerators are busy half the window.
  auto res =
      SummarizeEpoch(1, milliseconds(10), {Rank(t0, {100, 120, 140, 160}, 12), Rank(t0, {100, 120, 140, 160}, 12)});
  ASSERT_TRUE(res.ok()) << res.status();
  EXPECT_EQ(res->accelerators, 2u);
  EXPECT_EQ(res->epoch, 2u);
  EXPECT_EQ(res->steps, 4u);
  EXPECT_EQ(res->samples, 64u);
  EXPECT_NEAR(res->au, 6 * 0.010 / (2 * 0.060), 1e-12);         // 0.5
  EXPECT_NEAR(res->au_dlio, 6 * 0.012 / (2 * 0.060), 1e-12);    // measured sleeps: 0.6
  EXPECT_NEAR(res->samples_per_s, 48 / 0.060, 1e-9);            // 6 batches of 8 in 60 ms
  EXPECT_NEAR(res->mib_per_s, 800.0 * 4096 / (1 << 20), 1e-9);  // 3.125
  EXPECT_NEAR(res->measured_s, 0.060, 1e-12);
  EXPECT_NEAR(res->first_step_s, 0.100, 1e-12);
  EXPECT_NEAR(res->wall_s, 0.160, 1e-12);
  EXPECT_TRUE(res->realtime_accelerators);

  // Steps exactly as long as the compute: AU 1.
  auto full = SummarizeEpoch(0, milliseconds(20), {Rank(t0, {50, 70, 90}, 20)});
  ASSERT_TRUE(full.ok());
  EXPECT_NEAR(full->au, 1.0, 1e-12);
}

TEST(SummarizeEpochTest, ARankWithFewerStepsCountsOnlyItsSteps) {
  const TimePoint t0{};
  auto slow = Rank(t0, {100, 120, 140}, 10);
  slow.realtime = false;
  auto res = SummarizeEpoch(0, milliseconds(10), {Rank(t0, {100, 120, 140, 160}, 10), slow});
  ASSERT_TRUE(res.ok()) << res.status();
  EXPECT_NEAR(res->au, (3 + 2) * 0.010 / (2 * 0.060), 1e-12);  // 5 steps after the first, window to the last end
  EXPECT_FALSE(res->realtime_accelerators);
}

TEST(SummarizeEpochTest, TooFewStepsOrInconsistentTimelinesAreRefused) {
  const TimePoint t0{};
  EXPECT_EQ(SummarizeEpoch(0, milliseconds(10), {Rank(t0, {100}, 10)}).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(SummarizeEpoch(0, milliseconds(10), {}).status().code(), Code::kInvalidArgument);
  auto bad = Rank(t0, {100, 120}, 10);
  bad.compute.pop_back();
  EXPECT_EQ(SummarizeEpoch(0, milliseconds(10), {bad}).status().code(), Code::kInvalidArgument);
}

}  // namespace
}  // namespace strata::cli::train

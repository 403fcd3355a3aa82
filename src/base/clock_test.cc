#include "base/clock.h"

#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <thread>

namespace strata {
namespace {

using namespace std::chrono_literals;

// Waits (in real time, bounded) for a condition another thread will make true.
bool WaitFor(const std::function<bool()>& cond, std::chrono::seconds deadline = 10s) {
  auto end = std::chrono::steady_clock::now() + deadline;
  while (!cond()) {
    if (std::chrono::steady_clock::now() > end) return false;
    std::this_thread::yield();
  }
  return true;
}

TEST(RealClockTest, MonotonicAndSleepZeroReturns) {
  Clock& c = RealClock();
  TimePoint a = c.Now();
  c.SleepFor(Duration(0));
  c.SleepFor(Duration(-5));
  EXPECT_GE(c.Now(), a);
  EXPECT_GT(c.WallNow().time_since_epoch().count(), 0);
  EXPECT_EQ(&RealClock(), &c);
}

TEST(FakeClockTest, AdvanceMovesBothClocks) {
  FakeClock c;
  TimePoint t0 = c.Now();
  WallTime w0 = c.WallNow();
  c.Advance(1500ms);
  EXPECT_EQ(c.Now() - t0, Duration(1500ms));
  EXPECT_EQ(c.WallNow() - w0, std::chrono::duration_cast<std::chrono::system_clock::duration>(1500ms));
  FakeClock other;
  EXPECT_EQ(other.Now(), t0);  // reproducible start
}

TEST(FakeClockTest, AdvanceWakesSleeperOnlyWhenDue) {
  FakeClock c;
  std::atomic<bool> woke{false};
  TimePoint start = c.Now();
  std::thread sleeper([&] {
    c.SleepFor(5s);
    woke = true;
  });
  ASSERT_TRUE(WaitFor([&] { return c.Sleepers() == 1; }));
  c.Advance(4s);
  // Still blocked: the sleeper count only drops once its wait returns.
  EXPECT_EQ(c.Sleepers(), 1);
  EXPECT_FALSE(woke.load());
  c.Advance(1s);
  ASSERT_TRUE(WaitFor([&] { return woke.load(); }));
  sleeper.join();
  EXPECT_EQ(c.Sleepers(), 0);
  EXPECT_EQ(c.Now() - start, Duration(5s));
  EXPECT_EQ(c.TotalSlept(), Duration(5s));
}

TEST(FakeClockTest, OneAdvanceWakesSeveralSleepers) {
  FakeClock c;
  std::atomic<int> done{0};
  std::thread a([&] {
    c.SleepFor(1s);
    ++done;
  });
  std::thread b([&] {
    c.SleepFor(2s);
    ++done;
  });
  ASSERT_TRUE(WaitFor([&] { return c.Sleepers() == 2; }));
  c.Advance(10s);
  a.join();
  b.join();
  EXPECT_EQ(done.load(), 2);
  EXPECT_EQ(c.TotalSlept(), Duration(3s));
}

TEST(FakeClockTest, SleepUntilPastReturnsAtOnce) {
  FakeClock c;
  c.SleepUntil(c.Now() - 1s);
  c.SleepUntil(c.Now());
  EXPECT_EQ(c.TotalSlept(), Duration(0));
}

TEST(FakeClockTest, NonPositiveSleepDoesNotBlockOrCount) {
  FakeClock c;
  c.SleepFor(Duration(0));
  c.SleepFor(-3s);
  EXPECT_EQ(c.TotalSlept(), Duration(0));
  EXPECT_EQ(c.Sleepers(), 0);
}

TEST(FakeClockTest, AutoAdvanceReturnsImmediatelyAndMovesTime) {
  FakeClock c(/*auto_advance=*/true);
  TimePoint t0 = c.Now();
  c.SleepFor(100ms);
  c.SleepFor(250ms);
  c.SleepUntil(t0 + 1s);  // 650ms more
  EXPECT_EQ(c.Now() - t0, Duration(1s));
  EXPECT_EQ(c.TotalSlept(), Duration(1s));
  EXPECT_EQ(c.Sleepers(), 0);
}

TEST(ClockTest, SecondsHelper) {
  EXPECT_DOUBLE_EQ(Seconds(1500ms), 1.5);
  EXPECT_DOUBLE_EQ(Seconds(Duration(0)), 0.0);
}

}  // namespace
}  // namespace strata

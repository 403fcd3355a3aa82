#include "base/elastic_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <stdexcept>
#include <thread>

namespace strata {
namespace {

using namespace std::chrono_literals;

// Waits (with a deadline) until `pred` holds; false if it never did.
template <typename Pred>
bool WaitUntil(Pred pred, std::chrono::milliseconds deadline = 10s) {
  const auto end = std::chrono::steady_clock::now() + deadline;
  while (!pred()) {
    if (std::chrono::steady_clock::now() > end) return false;
    std::this_thread::sleep_for(1ms);
  }
  return true;
}

// 64 tasks that each block until all 64 have started can only finish if the
// pool runs them at once: a fixed pool of 16 would hold 48 of them in its
// queue and the first 16 would never see the rest.
TEST(ElasticThreadPoolTest, GrowsToRunBlockingTasksTogether) {
  constexpr int kTasks = 64;
  std::mutex mu;
  std::condition_variable cv;
  int started = 0;
  std::atomic<int> finished{0};
  std::atomic<int> timed_out{0};
  {
    ElasticThreadPool pool(256, 5s, "test-elastic");
    for (int i = 0; i < kTasks; ++i) {
      pool.Submit([&] {
        std::unique_lock lock(mu);
        ++started;
        cv.notify_all();
        if (!cv.wait_for(lock, 10s, [&] { return started == kTasks; })) ++timed_out;
        ++finished;
      });
    }
    ASSERT_TRUE(WaitUntil([&] { return finished.load() == kTasks; }));
    EXPECT_GE(pool.threads(), static_cast<size_t>(kTasks));
  }
  EXPECT_EQ(timed_out.load(), 0);
}

TEST(ElasticThreadPoolTest, NeverExceedsItsMaximumAndQueuesTheRest) {
  std::atomic<int> running{0}, peak{0}, done{0};
  std::atomic<bool> release{false};
  ElasticThreadPool pool(4, 5s);
  for (int i = 0; i < 12; ++i) {
    pool.Submit([&] {
      const int now = ++running;
      int seen = peak.load();
      while (now > seen && !peak.compare_exchange_weak(seen, now)) {
      }
      while (!release.load()) std::this_thread::sleep_for(1ms);
      --running;
      ++done;
    });
  }
  ASSERT_TRUE(WaitUntil([&] { return running.load() == 4; }));
  EXPECT_EQ(pool.threads(), 4u);
  release = true;
  ASSERT_TRUE(WaitUntil([&] { return done.load() == 12; }));
  EXPECT_EQ(peak.load(), 4);
}

TEST(ElasticThreadPoolTest, IdleThreadsExitAndNewWorkStartsNewOnes) {
  ElasticThreadPool pool(8, 50ms);
  std::atomic<int> done{0};
  for (int i = 0; i < 4; ++i) pool.Submit([&] { ++done; });
  ASSERT_TRUE(WaitUntil([&] { return done.load() == 4; }));
  ASSERT_TRUE(WaitUntil([&] { return pool.threads() == 0; })) << pool.threads() << " threads still alive";
  pool.Submit([&] { ++done; });
  ASSERT_TRUE(WaitUntil([&] { return done.load() == 5; }));
}

TEST(ElasticThreadPoolTest, DestructorRunsWhatIsQueuedAndSurvivesThrowingTasks) {
  std::atomic<int> done{0};
  {
    ElasticThreadPool pool(1, 5s);
    pool.Submit([] { throw std::runtime_error("a task that throws"); });
    for (int i = 0; i < 20; ++i) pool.Submit([&] { ++done; });
  }
  EXPECT_EQ(done.load(), 20);
}

}  // namespace
}  // namespace strata

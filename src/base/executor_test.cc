#include "base/executor.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <new>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

namespace strata {
namespace {

using namespace std::chrono_literals;

// A latch tests use to hold tasks until the test releases them.
class Gate {
 public:
  void Open() {
    std::lock_guard lock(mu_);
    open_ = true;
    cv_.notify_all();
  }
  void Pass() {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return open_; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = false;
};

TEST(ThreadPoolTest, RunsAllTasksAndDrainsOnDestruction) {
  std::atomic<int> ran{0};
  {
    ThreadPool pool(2, "test-pool");
    EXPECT_EQ(pool.size(), 2u);
    for (int i = 0; i < 100; ++i) pool.Submit([&] { ++ran; });
  }  // destructor drains the queue
  EXPECT_EQ(ran.load(), 100);
}

TEST(ThreadPoolTest, ZeroThreadsMeansOne) {
  ThreadPool pool(0);
  EXPECT_EQ(pool.size(), 1u);
}

TEST(ThreadPoolTest, QueueDepthCountsWaitingTasks) {
  Gate gate;  // declared first, destroyed last: the task may still be leaving Pass() when the test ends
  std::atomic<bool> started{false};
  ThreadPool pool(1);
  pool.Submit([&] {
    started = true;
    gate.Pass();
  });
  auto deadline = std::chrono::steady_clock::now() + 10s;
  while (!started && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
  ASSERT_TRUE(started);
  pool.Submit([] {});
  pool.Submit([] {});
  EXPECT_EQ(pool.QueueDepth(), 2u);
  gate.Open();
}

TEST(ThreadPoolTest, UsesSeveralThreads) {
  ThreadPool pool(3);
  std::mutex mu;
  std::set<std::thread::id> ids;
  Gate gate;
  std::atomic<int> arrived{0};
  TaskGroup group(pool);
  // Three tasks that all block until every one has started: only possible on 3 threads.
  for (int i = 0; i < 3; ++i) {
    group.Run([&] {
      {
        std::lock_guard lock(mu);
        ids.insert(std::this_thread::get_id());
      }
      if (++arrived == 3) gate.Open();
      gate.Pass();
    });
  }
  group.Wait();
  EXPECT_EQ(ids.size(), 3u);
}

TEST(TaskGroupTest, WaitBlocksUntilAllDone) {
  ThreadPool pool(2);
  std::atomic<int> done{0};
  TaskGroup group(pool);
  for (int i = 0; i < 50; ++i) {
    group.Run([&] {
      std::this_thread::yield();
      ++done;
    });
  }
  group.Wait();
  EXPECT_EQ(done.load(), 50);
  group.Wait();  // idempotent when nothing is pending
}

TEST(TaskGroupTest, WorksInlineAndWhenEmpty) {
  InlineExecutor inline_exec;
  int n = 0;
  {
    TaskGroup group(inline_exec);
    group.Wait();
    group.Run([&] { ++n; });
    EXPECT_EQ(n, 1);  // inline: already ran
  }
  EXPECT_EQ(n, 1);
}

TEST(TaskGroupTest, DestructorWaits) {
  ThreadPool pool(2);
  std::atomic<int> done{0};
  {
    TaskGroup group(pool);
    for (int i = 0; i < 20; ++i) group.Run([&] { ++done; });
  }
  EXPECT_EQ(done.load(), 20);
}

TEST(ParallelForTest, VisitsEveryIndexOnce) {
  for (size_t parallelism : {0, 1, 2, 4, 64}) {
    std::vector<std::atomic<int>> hits(37);
    ParallelFor(hits.size(), parallelism, [&](size_t i) { ++hits[i]; });
    for (size_t i = 0; i < hits.size(); ++i) EXPECT_EQ(hits[i].load(), 1) << "i=" << i << " p=" << parallelism;
  }
  bool called = false;
  ParallelFor(0, 4, [&](size_t) { called = true; });
  EXPECT_FALSE(called);
}

TEST(ParallelForTest, NeverExceedsParallelismAndReachesIt) {
  constexpr size_t kParallelism = 3;
  std::atomic<int> running{0};
  std::atomic<int> max_running{0};
  std::mutex mu;
  std::condition_variable cv;
  int waiting = 0;
  ParallelFor(30, kParallelism, [&](size_t i) {
    int now = ++running;
    int prev = max_running.load();
    while (now > prev && !max_running.compare_exchange_weak(prev, now)) {
    }
    if (i < kParallelism) {
      // The first wave waits for each other (bounded), proving that the bound is reached.
      std::unique_lock lock(mu);
      ++waiting;
      cv.notify_all();
      cv.wait_for(lock, 10s, [&] { return waiting >= static_cast<int>(kParallelism); });
    }
    --running;
  });
  EXPECT_LE(max_running.load(), static_cast<int>(kParallelism));
  EXPECT_EQ(max_running.load(), static_cast<int>(kParallelism));
}

TEST(ParallelForTest, SerialWhenParallelismIsOne) {
  std::thread::id caller = std::this_thread::get_id();
  std::vector<size_t> order;
  ParallelFor(5, 1, [&](size_t i) {
    EXPECT_EQ(std::this_thread::get_id(), caller);
    order.push_back(i);
  });
  EXPECT_EQ(order, (std::vector<size_t>{0, 1, 2, 3, 4}));
}

TEST(SequencerTest, StepsRunInIndexOrderWhateverTheWorkersTimes) {
  Sequencer seq;
  std::vector<size_t> order;
  ParallelFor(64, 4, [&](size_t i) {
    if (i % 3 == 0) std::this_thread::yield();  // workers reach their step in any order
    EXPECT_TRUE(seq.RunInOrder(i, [&] { order.push_back(i); }));
  });
  ASSERT_EQ(order.size(), 64u);
  for (size_t i = 0; i < order.size(); ++i) EXPECT_EQ(order[i], i);
}

TEST(SequencerTest, CancelReleasesEveryWaiter) {
  Sequencer seq;
  std::atomic<int> released{0};
  // Index 0 fails before its step: without Cancel the others would wait forever.
  ParallelFor(8, 8, [&](size_t i) {
    if (i == 0) return seq.Cancel();
    if (!seq.RunInOrder(i, [] {})) ++released;
  });
  EXPECT_EQ(released.load(), 7);
  EXPECT_FALSE(seq.RunInOrder(0, [] { ADD_FAILURE() << "ran after Cancel"; }));
}

// An exception escaping a task fails that task only: its waiter sees Internal,
// the process goes on and the pool keeps running other tasks.
TEST(ThreadPoolTest, ATaskThatThrowsFailsOnlyItself) {
  ThreadPool pool(1, "test-pool");
  std::mutex mu;
  std::condition_variable cv;
  std::vector<Status> results;
  auto done = [&](Status st) {
    std::lock_guard lock(mu);
    results.push_back(std::move(st));
    cv.notify_all();
  };
  SubmitWithStatus(
      pool, []() -> Status { throw std::runtime_error("bad input"); }, done);
  pool.Submit([] { throw 42; });  // not even a std::exception, and nobody waits
  SubmitWithStatus(
      pool, [] { return Status::Ok(); }, done);
  {
    std::unique_lock lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, 10s, [&] { return results.size() == 2; }));
  }
  EXPECT_EQ(results[0].code(), Code::kInternal);
  EXPECT_NE(results[0].message().find("bad input"), std::string::npos) << results[0];
  EXPECT_TRUE(results[1].ok()) << results[1];  // the same (only) thread ran it afterwards

  TaskGroup group(pool);
  std::atomic<int> ran{0};
  group.Run([] { throw std::bad_alloc(); });
  for (int i = 0; i < 4; ++i) group.Run([&] { ++ran; });
  group.Wait();  // returns: the throwing task counts as done
  EXPECT_EQ(ran.load(), 4);
  EXPECT_EQ(group.status().code(), Code::kInternal);
}

TEST(ParallelForTest, AnExceptionReachesTheCallerNotTerminate) {
  std::atomic<int> ran{0};
  bool caught = false;
  try {
    ParallelFor(16, 4, [&](size_t i) {
      if (i == 3) throw std::runtime_error("worker 3");
      ++ran;
    });
  } catch (const std::runtime_error& e) {
    caught = std::string(e.what()) == "worker 3";
  }
  EXPECT_TRUE(caught);
  EXPECT_LE(ran.load(), 15);
  Status st = RunGuarded("parallel", [] { ParallelFor(4, 4, [](size_t) { throw std::logic_error("x"); }); });
  EXPECT_EQ(st.code(), Code::kInternal);
  EXPECT_NE(st.message().find("parallel"), std::string::npos) << st;
}

}  // namespace
}  // namespace strata

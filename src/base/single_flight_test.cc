#include "base/single_flight.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace strata {
namespace {

// Polls `pred` until it holds or a 10 s deadline passes.
template <typename Pred>
bool WaitUntil(Pred pred) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!pred()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::yield();
  }
  return true;
}

// A gate the leader's function blocks on until the test opens it.
struct Gate {
  std::mutex mu;
  std::condition_variable cv;
  bool open = false;
  void Wait() {
    std::unique_lock lock(mu);
    cv.wait(lock, [&] { return open; });
  }
  void Open() {
    std::lock_guard lock(mu);
    open = true;
    cv.notify_all();
  }
};

TEST(SingleFlight, ConcurrentCallersShareOneCall) {
  SingleFlight<std::string, int> flights;
  Gate gate;
  std::atomic<int> calls{0};
  constexpr int kCallers = 6;
  std::vector<int> got(kCallers);
  std::vector<char> shared(kCallers);
  std::thread leader([&] {
    bool s = true;
    got[0] = flights.Do(
        "k",
        [&] {
          ++calls;
          gate.Wait();
          return 42;
        },
        &s);
    shared[0] = s;
  });
  ASSERT_TRUE(WaitUntil([&] { return flights.InFlight("k"); }));
  std::vector<std::thread> waiters;
  for (int i = 1; i < kCallers; ++i) {
    waiters.emplace_back([&, i] {
      bool s = false;
      got[i] = flights.Do(
          "k", [&] { return ++calls, -1; }, &s);
      shared[i] = s;
    });
  }
  ASSERT_TRUE(WaitUntil([&] { return flights.Waiters("k") == kCallers - 1; }));
  EXPECT_EQ(flights.Joins(), uint64_t{kCallers - 1});  // counted before the call lands
  gate.Open();
  leader.join();
  for (auto& t : waiters) t.join();
  EXPECT_EQ(calls.load(), 1);
  EXPECT_FALSE(shared[0]);
  for (int i = 0; i < kCallers; ++i) EXPECT_EQ(got[i], 42) << i;
  for (int i = 1; i < kCallers; ++i) EXPECT_TRUE(shared[i]) << i;
  EXPECT_FALSE(flights.InFlight("k"));
}

TEST(SingleFlight, KeysFlyIndependentlyAndLandedCallsAreNotReused) {
  SingleFlight<int, int> flights;
  int calls = 0;
  EXPECT_EQ(flights.Do(1, [&] { return ++calls; }), 1);
  EXPECT_EQ(flights.Do(1, [&] { return ++calls; }), 2);  // the first landed: a new call
  EXPECT_EQ(flights.Do(2, [&] { return ++calls; }), 3);
  EXPECT_EQ(flights.Joins(), 0u);
}

TEST(SingleFlight, LingerKeepsTheFlightOpenWithItsResult) {
  SingleFlight<int, std::string> flights;
  Gate linger_gate;
  std::atomic<bool> lingering{false};
  std::thread leader([&] {
    flights.Do(
        7, [] { return std::string("bytes"); }, nullptr,
        [&](const std::string& landed) {
          EXPECT_EQ(landed, "bytes");
          lingering = true;
          linger_gate.Wait();
        });
  });
  ASSERT_TRUE(WaitUntil([&] { return lingering.load(); }));
  // Arriving while the leader lingers: the landed result, no call of its own.
  bool shared = false;
  EXPECT_EQ(flights.Do(
                7, [] { return std::string("again"); }, &shared),
            "bytes");
  EXPECT_TRUE(shared);
  EXPECT_TRUE(flights.InFlight(7));
  linger_gate.Open();
  leader.join();
  EXPECT_FALSE(flights.InFlight(7));
}

TEST(SingleFlight, ForgetClosesALingeringFlightButNotARunningOne) {
  SingleFlight<int, int> flights;
  Gate run_gate, linger_gate;
  std::atomic<bool> running{false}, lingering{false};
  std::thread leader([&] {
    flights.Do(
        1,
        [&] {
          running = true;
          run_gate.Wait();
          return 1;
        },
        nullptr,
        [&](const int&) {
          lingering = true;
          linger_gate.Wait();
        });
  });
  ASSERT_TRUE(WaitUntil([&] { return running.load(); }));
  flights.Forget(1);  // still running: kept
  EXPECT_TRUE(flights.InFlight(1));
  run_gate.Open();
  ASSERT_TRUE(WaitUntil([&] { return lingering.load(); }));
  flights.Forget(1);
  EXPECT_FALSE(flights.InFlight(1));
  bool shared = true;
  EXPECT_EQ(flights.Do(
                1, [] { return 2; }, &shared),
            2);  // a fresh call, not the forgotten result
  EXPECT_FALSE(shared);
  linger_gate.Open();
  leader.join();
}

// A leader whose function throws (bad_alloc, a bug) passes the exception to
// its own caller only: its waiters call again instead of waiting forever, and
// the key is free for later callers. A linger that throws closes the flight too.
TEST(SingleFlight, ALeaderThatThrowsLeavesNoFlightBehind) {
  SingleFlight<std::string, int> flights;
  Gate gate;
  std::atomic<int> calls{0};
  std::thread leader([&] {
    EXPECT_THROW(flights.Do("k",
                            [&]() -> int {
                              ++calls;
                              gate.Wait();
                              throw std::runtime_error("leader");
                            }),
                 std::runtime_error);
  });
  ASSERT_TRUE(WaitUntil([&] { return flights.InFlight("k"); }));
  int waiter_got = 0;
  std::thread waiter([&] { waiter_got = flights.Do("k", [&] { return ++calls, 7; }); });
  ASSERT_TRUE(WaitUntil([&] { return flights.Waiters("k") == 1; }));
  gate.Open();
  leader.join();
  waiter.join();
  EXPECT_EQ(waiter_got, 7);  // it ran the call itself
  EXPECT_EQ(calls.load(), 2);
  EXPECT_FALSE(flights.InFlight("k"));
  EXPECT_THROW(flights.Do(
                   "k", [] { return 1; }, nullptr, [](const int&) { throw std::logic_error("linger"); }),
               std::logic_error);
  EXPECT_FALSE(flights.InFlight("k"));  // not lingering for ever with its result
  EXPECT_EQ(flights.Do("k", [] { return 2; }), 2);
}

// DoAsync's callers wait for the call only until its deadline; the call goes
// on, and a caller arriving later joins it instead of starting another.
TEST(SingleFlight, AsyncCallersStopWaitingAtTheCallsDeadline) {
  SingleFlight<std::string, int> flights;
  Gate gate;
  std::atomic<int> calls{0};
  std::vector<std::thread> threads;
  auto spawn = [&](std::function<void()> task) { threads.emplace_back(std::move(task)); };
  auto slow = [&] {
    ++calls;
    gate.Wait();
    return 5;
  };
  constexpr auto kTimeout = std::chrono::seconds(1);
  bool shared = true;
  EXPECT_EQ(flights.DoAsync("k", slow, spawn, kTimeout, &shared), std::nullopt);
  EXPECT_FALSE(shared) << "this caller started the call";
  EXPECT_TRUE(flights.InFlight("k")) << "the call goes on";
  // Past the call's deadline (its start + timeout): a new caller joins it and returns at once.
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(flights.DoAsync("k", slow, spawn, kTimeout, &shared), std::nullopt);
  EXPECT_LT(std::chrono::steady_clock::now() - start, kTimeout * 0.8) << "the deadline runs from the call's start";
  EXPECT_TRUE(shared);
  EXPECT_EQ(flights.Joins(), 1u);
  gate.Open();
  for (auto& t : threads) t.join();
  threads.clear();
  EXPECT_FALSE(flights.InFlight("k")) << "not kept";
  EXPECT_EQ(flights.DoAsync(
                "k", [] { return 6; }, spawn, std::chrono::hours(1)),
            6);
  for (auto& t : threads) t.join();
  EXPECT_EQ(calls.load(), 1);
}

// A kept result (a failure remembered for a backoff) answers later callers at
// once, without a call, until ForgetIf says it is stale.
TEST(SingleFlight, AKeptResultAnswersUntilForgotten) {
  SingleFlight<std::string, int> flights;
  std::vector<std::thread> threads;
  auto spawn = [&](std::function<void()> task) { threads.emplace_back(std::move(task)); };
  auto keep_negative = [](const int& v) { return v < 0; };
  EXPECT_EQ(flights.DoAsync(
                "k", [] { return -1; }, spawn, std::chrono::hours(1), nullptr, keep_negative),
            -1);
  for (auto& t : threads) t.join();
  threads.clear();
  EXPECT_TRUE(flights.InFlight("k")) << "kept";
  bool shared = false;
  EXPECT_EQ(flights.DoAsync(
                "k", [] { return 7; }, spawn, std::chrono::hours(1), &shared),
            -1);
  EXPECT_TRUE(shared);
  EXPECT_TRUE(threads.empty()) << "no call started";
  EXPECT_EQ(flights.Do("k", [] { return 8; }), -1) << "Do takes it too";
  flights.ForgetIf("k", [](const int&) { return false; });
  EXPECT_TRUE(flights.InFlight("k")) << "not stale yet";
  flights.ForgetIf("k", [](const int& v) { return v == -1; });
  EXPECT_FALSE(flights.InFlight("k"));
  EXPECT_EQ(flights.DoAsync(
                "k", [] { return 9; }, spawn, std::chrono::hours(1), nullptr, keep_negative),
            9);
  for (auto& t : threads) t.join();
  EXPECT_FALSE(flights.InFlight("k")) << "a result the predicate does not keep goes";
}

}  // namespace
}  // namespace strata

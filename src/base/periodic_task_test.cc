#include "base/periodic_task.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>

namespace strata {
namespace {

// Waits (up to a deadline) until `n` reaches `want`.
bool Reaches(const std::atomic<int>& n, int want) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (n.load() < want && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return n.load() >= want;
}

TEST(PeriodicTask, TicksEveryInterval) {
  std::atomic<int> ticks{0};
  PeriodicTask task("test-tick", std::chrono::milliseconds(1), [&] { ++ticks; });
  EXPECT_TRUE(Reaches(ticks, 3));
}

TEST(PeriodicTask, ATickThatThrowsDoesNotStopTheNext) {
  std::atomic<int> ticks{0};
  PeriodicTask task("test-throw", std::chrono::milliseconds(1), [&] {
    ++ticks;
    throw std::runtime_error("tick failed");
  });
  EXPECT_TRUE(Reaches(ticks, 3));
}

TEST(PeriodicTask, DestructionDoesNotWaitForTheInterval) {
  const auto start = std::chrono::steady_clock::now();
  {
    PeriodicTask task("test-long", std::chrono::hours(1), [] {});
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::minutes(1));
}

}  // namespace
}  // namespace strata

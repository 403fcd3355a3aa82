#include "base/buffer_pool.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "base/buffer.h"

namespace strata {
namespace {

constexpr size_t kMiB = 1 << 20;

// Each test starts from an empty pool with a known bound.
class BufferPoolTest : public ::testing::Test {
 protected:
  void SetUp() override {
    saved_limit_ = GetBufferPoolStats().idle_limit;  // 0 under ASan: later tests keep it so
    SetBufferPoolIdleLimit(0);
    SetBufferPoolIdleLimit(64 * kMiB);
  }
  void TearDown() override {
    SetBufferPoolIdleLimit(0);
    SetBufferPoolIdleLimit(saved_limit_);
  }
  uint64_t saved_limit_ = 0;
};

TEST_F(BufferPoolTest, ReleasedBlockIsReusedForTheSameSizeClass) {
  const uint8_t* first;
  {
    MutableBuffer m(kMiB);
    std::memset(m.data(), 7, m.size());
    first = m.data();
    EXPECT_EQ(reinterpret_cast<uintptr_t>(first) % 4096, 0u);
  }
  EXPECT_GE(GetBufferPoolStats().idle_bytes, kMiB);
  auto before = GetBufferPoolStats();
  MutableBuffer again(kMiB - 1000);  // rounds up to the same size class
  EXPECT_EQ(again.data(), first);
  EXPECT_EQ(again.size(), kMiB - 1000);
  auto after = GetBufferPoolStats();
  EXPECT_EQ(after.hits, before.hits + 1);
  EXPECT_EQ(after.misses, before.misses);
}

TEST_F(BufferPoolTest, ExactFitRoundsToAPageAndIsReused) {
  const size_t size = 4 * kMiB + 4096;  // a cache block and its header page
  size_t capacity = 0;
  void* block = BufferPoolAcquire(size, &capacity, BufferFit::kExact);
  EXPECT_EQ(capacity, size);  // a size class would hold 4.5 MiB
  BufferPoolRelease(block, capacity);
  auto before = GetBufferPoolStats();
  const uint8_t* first = static_cast<uint8_t*>(block);
  {
    std::shared_ptr<uint8_t> again = BufferPoolAllocate(size - 100, BufferFit::kExact);
    EXPECT_EQ(again.get(), first);
    EXPECT_EQ(GetBufferPoolStats().hits, before.hits + 1);
  }
  EXPECT_EQ(GetBufferPoolStats().idle_bytes, size);  // given back when its owner let go
  std::shared_ptr<uint8_t> small = BufferPoolAllocate(100);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(small.get()) % 4096, 0u);  // aligned below the pool's minimum too
  EXPECT_EQ(BufferPoolAllocate(0), nullptr);
}

TEST_F(BufferPoolTest, BlockStaysOutOfThePoolWhileASliceHoldsIt) {
  MutableBuffer m(2 * kMiB);
  std::memset(m.data(), 'x', m.size());
  const uint8_t* block = m.data();
  Buffer slice = std::move(m).Freeze().Slice(10, 20);
  MutableBuffer other(2 * kMiB);  // the frozen buffer is gone, its slice is not
  EXPECT_NE(other.data(), block);
  std::memset(other.data(), 'y', other.size());
  EXPECT_EQ(slice.ToString(), std::string(20, 'x'));
}

TEST_F(BufferPoolTest, IdleBytesStayWithinTheBoundAndTheNewestAreKept) {
  SetBufferPoolIdleLimit(4 * kMiB);
  std::vector<MutableBuffer> held;
  for (int i = 0; i < 8; ++i) held.emplace_back(kMiB);
  const uint8_t* last = held.back().data();
  held.clear();  // released front to back: the last one released is the newest
  EXPECT_LE(GetBufferPoolStats().idle_bytes, 4 * kMiB);
  EXPECT_EQ(GetBufferPoolStats().idle_bytes, 4 * kMiB);
  MutableBuffer reused(kMiB);
  EXPECT_EQ(reused.data(), last);
}

// A block larger than the bound is kept while a reservation covers it, and
// trimmed back to the bound when the reservation ends; reuse off stays off.
TEST_F(BufferPoolTest, ReservationKeepsBlocksBeyondTheBoundWhileItLives) {
  SetBufferPoolIdleLimit(4 * kMiB);
  {
    BufferPoolReservation reserve(8 * kMiB);
    EXPECT_EQ(GetBufferPoolStats().idle_limit, 12 * kMiB);
    const uint8_t* first;
    {
      MutableBuffer big(10 * kMiB);
      first = big.data();
    }
    EXPECT_GE(GetBufferPoolStats().idle_bytes, 10 * kMiB);
    MutableBuffer again(10 * kMiB);
    EXPECT_EQ(again.data(), first);
  }
  EXPECT_EQ(GetBufferPoolStats().idle_limit, 4 * kMiB);
  EXPECT_LE(GetBufferPoolStats().idle_bytes, 4 * kMiB);
  SetBufferPoolIdleLimit(0);
  BufferPoolReservation reserve(8 * kMiB);
  { MutableBuffer m(kMiB); }
  EXPECT_EQ(GetBufferPoolStats().idle_bytes, 0u);
}

TEST_F(BufferPoolTest, ZeroLimitKeepsNothing) {
  SetBufferPoolIdleLimit(0);
  { MutableBuffer m(kMiB); }
  EXPECT_EQ(GetBufferPoolStats().idle_bytes, 0u);
  auto before = GetBufferPoolStats();
  MutableBuffer m(kMiB);
  EXPECT_EQ(GetBufferPoolStats().misses, before.misses + 1);
}

TEST_F(BufferPoolTest, SmallBuffersBypassThePool) {
  auto before = GetBufferPoolStats();
  { MutableBuffer m(kBufferPoolMinBlock - 1); }
  auto after = GetBufferPoolStats();
  EXPECT_EQ(after.hits + after.misses, before.hits + before.misses);
  EXPECT_EQ(after.idle_bytes, before.idle_bytes);
}

// A fork while other threads use the pool: the child can still allocate
// (its copy of the pool's lock is not left held), and it starts without the
// parent's idle blocks.
TEST_F(BufferPoolTest, ForkedChildCanAllocateWhileParentThreadsChurn) {
  { MutableBuffer idle(4 * kMiB); }
  ASSERT_GE(GetBufferPoolStats().idle_bytes, 4 * kMiB);
  std::atomic<bool> stop{false};
  std::vector<std::thread> churn;
  for (int t = 0; t < 2; ++t) {
    churn.emplace_back([&] {
      while (!stop.load()) MutableBuffer m(kMiB);
    });
  }
  std::vector<pid_t> children;
  for (int i = 0; i < 100; ++i) {
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      if (GetBufferPoolStats().idle_bytes != 0) _exit(2);
      MutableBuffer m(kMiB);
      m.data()[0] = 1;
      _exit(m.data()[0] == 1 ? 0 : 1);
    }
    children.push_back(pid);
  }
  stop = true;
  for (auto& t : churn) t.join();
  // Every child gets until the deadline; one still running then is hung.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  int hung = 0;
  for (pid_t pid : children) {
    int status = 0;
    pid_t got = 0;
    while ((got = ::waitpid(pid, &status, WNOHANG)) == 0 && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::yield();
    }
    if (got == 0) {
      ++hung;
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      continue;
    }
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child " << pid;
  }
  EXPECT_EQ(hung, 0) << "children hung allocating after fork";
}

}  // namespace
}  // namespace strata

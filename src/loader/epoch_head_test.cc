// EpochHead alone: what is fetched ahead is handed to the iterator of its
// epoch and worker, what is still on its way is awaited by it; whatever nobody
// takes (not wanted, dropped by the iterator, replaced by a newer epoch's
// head, asked for by another epoch's iterator) is released to the cache,
// counted; a failed or throwing fetch is forgotten.
#include "loader/epoch_head.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <functional>
#include <future>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "loader/internal.h"
#include "loader/loader_test_util.h"
#include "object/mem_store.h"

namespace strata::loader {
namespace {

using testing::WaitFor;

class EpochHeadTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ShardCacheOptions o;
    o.ram_bytes = 0;
    auto c = ShardCache::Open(object::MakeMemStore(), std::vector<std::string>(8, "k"), std::vector<uint64_t>(8, 1), o);
    ASSERT_TRUE(c.ok()) << c.status();
    cache_ = std::move(*c);
  }

  // Shard k parsed as k samples; shard 6 fails, shard 7 throws, shard 5 waits until Open().
  EpochHead::Fetch FakeFetch() {
    return [this](size_t shard) -> Result<ParsedFetch> {
      if (shard == 5) {
        std::unique_lock lock(mu_);
        cv_.wait(lock, [&] { return open_; });
      }
      if (shard == 6) return UnavailableError("down");
      if (shard == 7) throw std::runtime_error("a bug");
      auto p = std::make_shared<ParsedShard>();
      p->samples.resize(shard);
      return ParsedFetch{p, true, true};
    };
  }
  void Open() {
    {
      std::lock_guard lock(mu_);
      open_ = true;
    }
    cv_.notify_all();
  }

  std::shared_ptr<ShardCache> cache_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = false;
};

TEST_F(EpochHeadTest, TheIteratorOfItsEpochTakesWhatLandedAndAwaitsWhatIsOnItsWay) {
  EpochHead head(*cache_, FakeFetch(), 4);
  for (size_t shard : {1, 2, 3, 5, 6, 7}) head.Start(1, 0, shard);
  head.Start(1, 0, 2);  // already there: not fetched twice
  EXPECT_EQ(head.counters().started, 6u);
  ASSERT_TRUE(WaitFor([&] { return head.counters().landed == 3 && head.counters().failed == 2; }));
  const EpochHead::Taken other = head.Take(1, 1, {1, 2, 3});  // another worker's iterator
  EXPECT_TRUE(other.ready.empty() && other.pending.empty());
  EpochHead::Taken got = head.Take(1, 0, {1, 2, 5, 6});
  ASSERT_EQ(got.ready.size(), 2u);  // 1 and 2; 6 failed: the iterator fetches it itself
  for (const auto& [shard, parsed] : got.ready) EXPECT_EQ(parsed->samples.size(), shard);
  EXPECT_EQ(got.pending, std::set<size_t>{5});  // still in the store
  EXPECT_EQ(head.counters().released, 1u);      // 3: not wanted
  auto five = std::async(std::launch::async, [&] { return head.Await(1, 0, 5); });
  Open();
  const auto parsed = five.get();
  ASSERT_NE(parsed, nullptr);
  EXPECT_EQ(parsed->samples.size(), 5u);
  EXPECT_EQ(head.counters().taken, 3u);
  EXPECT_EQ(head.Await(1, 0, 5), nullptr);  // once
  EXPECT_TRUE(head.Take(1, 0, {1, 2, 3, 5}).ready.empty());
}

TEST_F(EpochHeadTest, WhatTheIteratorWillNotAwaitIsReleasedWhenItLands) {
  EpochHead head(*cache_, FakeFetch(), 2);
  head.Start(1, 0, 5);
  EpochHead::Taken got = head.Take(1, 0, {5});
  EXPECT_EQ(got.pending, std::set<size_t>{5});
  head.Drop(1, 0);  // the iterator ended before its fetch of 5 ran
  Open();
  ASSERT_TRUE(WaitFor([&] { return head.counters().released == 1; }));
  EXPECT_EQ(head.counters().taken, 0u);
  EXPECT_EQ(head.Await(1, 0, 5), nullptr);
}

TEST_F(EpochHeadTest, ANewerEpochOrAnotherEpochsIteratorReleasesWhatNobodyTook) {
  Open();
  {
    EpochHead head(*cache_, FakeFetch(), 2);
    head.Start(1, 0, 1);
    head.Start(1, 0, 2);
    ASSERT_TRUE(WaitFor([&] { return head.counters().landed == 2; }));
    head.Start(2, 0, 3);  // epoch 1's head is stale now
    EXPECT_EQ(head.counters().released, 2u);
    ASSERT_TRUE(WaitFor([&] { return head.counters().landed == 3; }));
    const EpochHead::Taken fifth = head.Take(5, 0, {1, 2, 3});  // an iterator of epoch 5
    EXPECT_TRUE(fifth.ready.empty() && fifth.pending.empty());
    EXPECT_EQ(head.counters().released, 3u);
    head.Start(6, 0, 4);
    ASSERT_TRUE(WaitFor([&] { return head.counters().landed == 4; }));
  }  // the dataset goes with epoch 6's head untaken: released (ASan/TSan watch this path)
}

}  // namespace
}  // namespace strata::loader

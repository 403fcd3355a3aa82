// The AU engine over strata's real loader and an in-memory store, with short
// real compute sleeps: the measured window opens before any byte reaches the
// loaders (their counters are zero there, and everything the epoch consumed
// was fetched inside the window), and a sweep checks each epoch against the
// run rules.
#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>

#include "object/mem_store.h"
#include "train/engine.h"
#include "train/generate.h"
#include "train/report.h"

namespace strata::train {
namespace {

// Holds every Get until Open(): the test decides when bytes may flow.
class GateStore : public object::StoreWrapper {
 public:
  using StoreWrapper::Get;
  using StoreWrapper::StoreWrapper;
  Result<object::GetResult> Get(std::string_view key, const object::GetOptions& options) override {
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] { return open_; });
    }
    return base_->Get(key, options);
  }
  void Open() {
    {
      std::lock_guard lock(mu_);
      open_ = true;
    }
    cv_.notify_all();
  }
  void Close() {
    std::lock_guard lock(mu_);
    open_ = false;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = true;
};

// Opens the gate once every rank has asked for its first batch, so each
// rank's counters are taken at the window's start with nothing fetched.
class OpenOnFirstNext : public RankSource {
 public:
  OpenOnFirstNext(std::unique_ptr<RankSource> inner, std::shared_ptr<GateStore> gate,
                  std::shared_ptr<std::atomic<int>> waiting)
      : inner_(std::move(inner)), gate_(std::move(gate)), waiting_(std::move(waiting)) {}
  Result<std::optional<BatchInfo>> Next() override {
    if (first_ && waiting_->fetch_sub(1) == 1) gate_->Open();
    first_ = false;
    return inner_->Next();
  }
  nlohmann::json Stats() const override { return inner_->Stats(); }

 private:
  std::unique_ptr<RankSource> inner_;
  std::shared_ptr<GateStore> gate_;
  std::shared_ptr<std::atomic<int>> waiting_;
  bool first_ = true;
};

class WindowTest : public ::testing::Test {
 protected:
  void SetUp() override {
    GenerateOptions g;
    g.samples = 64;
    g.record_size = 1024;
    g.samples_per_file = 8;
    g.write_files = false;
    ASSERT_TRUE(Generate(*mem_, "au/", g).ok());
    base_.batch_size = 4;
    base_.prefetch_bytes = 16 << 10;
    base_.ram_cache_bytes = 16 << 10;
  }
  std::shared_ptr<object::ObjectStore> mem_ = object::MakeMemStore("window");
  loader::StreamingOptions base_;
};

TEST_F(WindowTest, OpensWithEmptyQueuesAndFetchesEverythingInside) {
  auto gate = std::make_shared<GateStore>(mem_);
  const size_t world = 2;
  auto prepared = LoaderPrepare(gate, "au/shards/", base_, "")(world);  // reads the index: gate open
  ASSERT_TRUE(prepared.ok()) << prepared.status();
  gate->Close();
  auto waiting = std::make_shared<std::atomic<int>>(int(world));
  RankSourceFactory factory = [&](size_t rank, uint64_t epoch) -> Result<std::unique_ptr<RankSource>> {
    STRATA_ASSIGN_OR_RETURN(auto inner, prepared->factory(rank, epoch));
    return std::unique_ptr<RankSource>(std::make_unique<OpenOnFirstNext>(std::move(inner), gate, waiting));
  };
  const uint64_t before = prepared->store_bytes();
  auto r = RunEpoch(world, 0, std::chrono::milliseconds(1), factory);
  ASSERT_TRUE(r.ok()) << r.status();
  const uint64_t fetched = prepared->store_bytes() - before;

  ASSERT_EQ(r->open_stats.size(), world);
  for (const auto& s : r->open_stats) {
    SCOPED_TRACE(s.dump());
    EXPECT_EQ(s["queue_depth"], 0);
    EXPECT_EQ(s["batches"], 0);
    EXPECT_EQ(s["samples"], 0);
    EXPECT_EQ(s["bytes"], 0);
    EXPECT_EQ(s["shards_fetched"], 0);
    EXPECT_EQ(s["shards_from_cache"], 0);
  }
  EXPECT_EQ(r->samples, 64u);
  EXPECT_EQ(r->bytes, 64u * 1024);
  EXPECT_GE(fetched, r->bytes);  // every consumed byte came from the store after the clock started
  EXPECT_GT(r->first_batch_s, 0.0);
  EXPECT_LE(r->first_batch_s, r->measured_s);
  const nlohmann::json j = r->ToJson();
  EXPECT_EQ(j["sources_at_window_start"].size(), world);
}

// A sweep checks each epoch: the whole dataset is 64 KiB, and the loaders
// may hold 2 x (16 KiB + 4 KiB) + 16 KiB = 56 KiB: cold, it fits in memory.
TEST_F(WindowTest, SweepMarksAColdEpochThatFitsInMemoryNotValid) {
  SweepOptions so;
  so.counts = {2};
  so.epochs = 2;
  so.compute = std::chrono::milliseconds(1);
  so.threshold = 0.01;  // every AU passes: only the rules decide
  so.samples = 64;
  so.batch = 4;
  so.rules.min_steps = 1;
  so.rules.min_seconds = 0;
  auto results = Sweep(so, LoaderPrepare(mem_, "au/shards/", base_, ""), nullptr);
  ASSERT_TRUE(results.ok()) << results.status();
  ASSERT_EQ(results->size(), 2u);
  const EpochResult& cold = (*results)[0];
  EXPECT_TRUE(cold.cold);
  // The batch's bytes are the shards' (framing included): a little over 4 KiB.
  EXPECT_GE(cold.memory_bytes, 2u * (20 << 10) + (16 << 10));
  EXPECT_LT(cold.memory_bytes, 2u * (21 << 10) + (16 << 10));
  EXPECT_TRUE(cold.store_counted);
  EXPECT_GE(cold.store_bytes, cold.bytes);
  EXPECT_FALSE(cold.rules.valid);
  EXPECT_NE(cold.rules.Summary().find("fits in memory"), std::string::npos) << cold.rules.Summary();
  EXPECT_EQ(LargestPassing(*results, 1, so.threshold), 0u);
  // A warm epoch reads through the loaders' cache by design: no memory rule.
  const EpochResult& warm = (*results)[1];
  EXPECT_FALSE(warm.cold);
  EXPECT_TRUE(warm.rules.valid) << warm.rules.Summary();
  EXPECT_EQ(LargestPassing(*results, 2, so.threshold), 2u);
}

}  // namespace
}  // namespace strata::train

// The order's streams (plan.h EpochOrder): a StreamingDataLoader's workers
// each take a run of the shards, so a worker reads about 1/num_workers of
// them (not every shard of every window), while the order stays a pure
// function and a resume with any worker count gives exactly the rest.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <numeric>
#include <set>
#include <tuple>

#include "loader/loader_test_util.h"
#include "loader/plan.h"
#include "loader/streaming_dataset.h"
#include "object/mem_store.h"

namespace strata::loader {
namespace {

using dataset::ShardFormat;
using testing::CountingStore;
using testing::TextFields;
using testing::UniqueName;
using testing::WriteDataset;

std::set<size_t> ShardsOf(const std::vector<uint64_t>& order, const std::vector<PositionRange>& batches,
                          const std::vector<uint64_t>& first) {
  std::set<size_t> out;
  for (const auto& b : batches) {
    for (uint64_t p = b.begin; p < b.end; ++p) {
      const uint64_t index = order[OrderSlot(p, order.size())];
      out.insert(std::upper_bound(first.begin(), first.end(), index) - first.begin() - 1);
    }
  }
  return out;
}

TEST(WorkerStreamsTest, EveryStreamCountIsAPermutationAndOneStreamIsTheClassicOrder) {
  for (auto shuffle : {Shuffle::kNone, Shuffle::kShards, Shuffle::kWindow}) {
    for (const std::vector<uint64_t>& counts :
         {std::vector<uint64_t>{}, {1}, {7}, {5, 9, 3}, {10, 10, 10, 10, 10, 10, 10, 10, 10, 10, 10}, {1, 30, 2, 17}}) {
      OrderSpec spec{shuffle, 5, 3};
      const uint64_t total = std::accumulate(counts.begin(), counts.end(), uint64_t{0});
      const auto classic = EpochOrder(counts, spec, "fp", 2);
      for (size_t streams = 1; streams <= 5; ++streams) {
        for (uint64_t chunk : {1, 2, 4, 7}) {
          SCOPED_TRACE(::testing::Message() << "shuffle " << static_cast<int>(shuffle) << " total " << total
                                            << " streams " << streams << " chunk " << chunk);
          const auto order = EpochOrder(counts, spec, "fp", 2, streams, chunk);
          EXPECT_EQ(order, EpochOrder(counts, spec, "fp", 2, streams, chunk));  // pure
          std::vector<uint64_t> sorted = order, all(total);
          std::sort(sorted.begin(), sorted.end());
          std::iota(all.begin(), all.end(), 0);
          EXPECT_EQ(sorted, all);
          if (streams == 1 || shuffle == Shuffle::kNone) {
            EXPECT_EQ(order, classic);
          }
        }
      }
    }
  }
}

// 16 shards of 40 samples, batch 4: with 4 streams and 4 workers each worker's
// batches fall in at most 4 + 2 shards (its run, two split at run ends), for
// every rank; with one stream each worker touches nearly every shard.
TEST(WorkerStreamsTest, EachWorkerReadsOnlyItsRunOfShards) {
  const std::vector<uint64_t> counts(16, 40);
  std::vector<uint64_t> first(counts.size() + 1, 0);
  for (size_t k = 0; k < counts.size(); ++k) first[k + 1] = first[k] + counts[k];
  const uint64_t total = first.back();
  for (size_t world : {1, 2}) {
    for (size_t workers : {2, 4}) {
      SCOPED_TRACE(::testing::Message() << "world " << world << " workers " << workers);
      OrderSpec spec{Shuffle::kWindow, 9, 8};
      const auto streamed = EpochOrder(counts, spec, "fp", 0, workers, 4 * world);
      const auto classic = EpochOrder(counts, spec, "fp", 0);
      for (size_t rank = 0; rank < world; ++rank) {
        PartitionSpec p{total, world, rank, workers, 4, false, true};
        size_t sum = 0;
        for (size_t w = 0; w < workers; ++w) {
          const auto batches = WorkerBatches(p, 0, w);
          const size_t mine = ShardsOf(streamed, batches, first).size();
          EXPECT_LE(mine, 16 / workers + 2) << "worker " << w;
          EXPECT_GT(ShardsOf(classic, batches, first).size(), 12u) << "the classic order's deal reads every shard";
          sum += mine;
        }
        EXPECT_LE(sum, 16 + 2 * (workers - 1));
      }
    }
  }
}

// With several streams each run has at least two windows: 16 shards of 40
// and a window of 8 dealt to 2 streams give each windows of 4 shards (a window
// of 8 was each run's every shard: the whole dataset fetched before the first
// batch); 64 shards keep windows of 8; one stream is the classic order.
TEST(WorkerStreamsTest, EachStreamHasAtLeastTwoWindows) {
  const OrderSpec spec{Shuffle::kWindow, 9, 8};
  // (17, 2): 17 x 40 = 680 samples, runs of 340 (8 shards and half of the 9th): windows of 4.
  for (auto [shards, streams, expect] :
       {std::tuple<size_t, size_t, size_t>{16, 2, 4}, {16, 4, 2}, {64, 2, 8}, {16, 1, 8}, {64, 4, 8}, {17, 2, 4}}) {
    SCOPED_TRACE(::testing::Message() << shards << " shards, streams " << streams);
    const std::vector<uint64_t> counts(shards, 40);
    std::vector<uint64_t> first(counts.size() + 1, 0);
    for (size_t k = 0; k < counts.size(); ++k) first[k + 1] = first[k] + counts[k];
    const uint64_t chunk = 4;
    const auto order = EpochOrder(counts, spec, "fp", 0, streams, chunk);
    // Stream 0's first window: its first expect x 40 samples, every streams-th chunk of the order.
    std::set<size_t> seen;
    for (uint64_t c = 0; c < expect * 40 / chunk; ++c) {
      for (uint64_t p = c * streams * chunk; p < (c * streams + 1) * chunk; ++p) {
        seen.insert(std::upper_bound(first.begin(), first.end(), order[p]) - first.begin() - 1);
      }
    }
    EXPECT_EQ(seen.size(), expect);
  }
}

struct Fixture {
  std::string name = UniqueName("worker-streams-test");
  object::ObjectStorePtr store = object::MakeMemStore(name);
  explicit Fixture(std::vector<uint64_t> counts) { WriteDataset(*store, "ds/", ShardFormat::kTar, counts, TextFields); }
  ~Fixture() { object::DropMemStore(name); }
};

// What a DataLoader yields: its workers' batches taken in turn, skipping those that ended.
std::vector<uint64_t> RoundRobin(std::vector<std::unique_ptr<Iterator>>& its) {
  std::vector<uint64_t> out;
  std::vector<bool> done(its.size(), false);
  for (size_t live = its.size(), w = 0; live > 0; w = (w + 1) % its.size()) {
    if (done[w]) continue;
    auto b = its[w]->NextBatch();
    EXPECT_TRUE(b.ok()) << b.status();
    if (!b.ok() || !*b) {
      done[w] = true, --live;
      continue;
    }
    out.insert(out.end(), (*b)->indices.begin(), (*b)->indices.end());
  }
  return out;
}

// Real iterators, each worker with a cache of its own over a counting store:
// the GETs of each worker are about its share of the shards, and the workers'
// batches taken in turn are the epoch order of 4 streams.
TEST(WorkerStreamsTest, WorkersGetOnlyTheirShardsFromTheStore) {
  Fixture f(std::vector<uint64_t>(16, 40));  // 640 samples, one GET per (small) shard
  const size_t workers = 4;
  std::vector<std::shared_ptr<CountingStore>> stores;
  std::vector<std::shared_ptr<StreamingDataset>> datasets;
  std::vector<std::unique_ptr<Iterator>> its;
  std::vector<uint64_t> before;
  for (size_t w = 0; w < workers; ++w) {
    StreamingOptions o;
    o.num_workers = workers, o.batch_size = 4, o.seed = 3, o.share_cache = false;
    o.prefetch_next_epoch = false;  // one epoch's GETs: none of the next's
    stores.push_back(std::make_shared<CountingStore>(f.store));
    datasets.push_back(*StreamingDataset::Open(stores.back(), "ds", o));
    before.push_back(stores.back()->gets());
    its.push_back(*datasets.back()->Iterate(w, datasets.back()->MakeState(0, 0, workers)));
  }
  const auto got = RoundRobin(its);
  EXPECT_EQ(got, datasets[0]->EpochOrder(0, workers));
  uint64_t gets = 0;
  for (size_t w = 0; w < workers; ++w) {
    const uint64_t mine = stores[w]->gets() - before[w];
    EXPECT_LE(mine, 16 / workers + 2) << "worker " << w << " read shards of other workers";
    EXPECT_EQ(its[w]->stats().shards_fetched, mine);
    gets += mine;
  }
  EXPECT_LE(gets, 16u + 2 * (workers - 1));
}

// Stopped after k batches of 4 workers' order, resumed with 1-5 workers: the
// rest of the same order (the state keeps its streams), nothing repeated or skipped.
TEST(WorkerStreamsTest, ResumeWithAnotherWorkerCountKeepsTheEpochsOrder) {
  Fixture f({40, 33, 40, 17, 40, 40, 5, 40});
  StreamingOptions base;
  base.batch_size = 3, base.seed = 5, base.shuffle_window = 2;
  const auto order = (*StreamingDataset::Open(f.store, "ds", base))->EpochOrder(1, 4);
  for (uint64_t consumed : {0, 3, 30, 120, 255}) {
    const State saved = *State::FromJson(
        (*StreamingDataset::Open(f.store, "ds", base))->MakeState(1, consumed, 4).ToJson());  // through JSON
    ASSERT_EQ(saved.streams, 4u);
    for (size_t workers = 1; workers <= 5; ++workers) {
      SCOPED_TRACE(::testing::Message() << "consumed " << consumed << " workers " << workers);
      StreamingOptions o = base;
      o.num_workers = workers;
      auto ds = *StreamingDataset::Open(f.store, "ds", o);
      std::vector<std::unique_ptr<Iterator>> its;
      for (size_t w = 0; w < workers; ++w) its.push_back(*ds->Iterate(w, saved));
      EXPECT_EQ(RoundRobin(its), std::vector<uint64_t>(order.begin() + consumed, order.end()));
    }
  }
}

// A DataLoader worker's handle opened with same_index_as (its parent's) asks
// the store nothing at open, and is the same dataset: size, fingerprint,
// order and samples. Another dataset's handle is refused.
TEST(WorkerStreamsTest, AHandleOpenedLikeAnotherAsksTheStoreNothing) {
  Fixture f({40, 33, 40, 17});
  StreamingOptions base;
  base.batch_size = 4, base.seed = 5, base.shuffle_window = 2;
  auto counting = std::make_shared<CountingStore>(f.store);
  auto parent = *StreamingDataset::Open(counting, "ds", base);
  StreamingOptions o = base;
  o.num_workers = 2;
  o.same_index_as = parent;
  const uint64_t before = counting->gets();
  auto worker = StreamingDataset::Open(counting, "ds", o);
  ASSERT_TRUE(worker.ok()) << worker.status();
  EXPECT_EQ(counting->gets(), before) << "the worker's open went to the store";
  EXPECT_EQ((*worker)->size(), parent->size());
  EXPECT_EQ((*worker)->fingerprint(), parent->fingerprint());
  EXPECT_EQ((*worker)->options().same_index_as, nullptr) << "the other handle is not kept";
  std::vector<std::unique_ptr<Iterator>> its;
  for (size_t w = 0; w < 2; ++w) its.push_back(*(*worker)->Iterate(w, parent->MakeState(0, 0, 2)));
  EXPECT_EQ(RoundRobin(its), parent->EpochOrder(0, 2));
  EXPECT_EQ((*(*worker)->Get(57)).key, (*parent->Get(57)).key);

  Fixture other({5, 5});
  auto stranger = *StreamingDataset::Open(other.store, "ds", base);
  StreamingOptions wrong = base;
  wrong.same_index_as = stranger;
  EXPECT_EQ(StreamingDataset::Open(counting, "ds", wrong).status().code(), Code::kInvalidArgument);
}

TEST(WorkerStreamsTest, StatesWithoutStreamsAreOneStreamAndBadStreamsAreRefused) {
  auto old = State::FromJson(R"({"version":1,"epoch":2,"samples_consumed":5,"fingerprint":"ab"})");
  ASSERT_TRUE(old.ok()) << old.status();
  EXPECT_EQ(old->streams, 1u);
  for (const char* bad : {"0", "-1", "\"4\"", "4097"}) {
    auto s = State::FromJson(
        std::string(R"({"version":1,"epoch":2,"samples_consumed":5,"fingerprint":"ab","streams":)") + bad + "}");
    EXPECT_EQ(s.status().code(), Code::kInvalidArgument) << bad;
  }
  Fixture f({4, 4});
  auto ds = *StreamingDataset::Open(f.store, "ds", StreamingOptions{});
  EXPECT_EQ(ds->Iterate(0, ds->MakeState(0, 0, 0)).status().code(), Code::kInvalidArgument);
  // Version 1's order of several streams had a window per stream: not resumed as this order.
  auto v1 = State::FromJson(R"({"version":1,"epoch":2,"samples_consumed":5,"fingerprint":"ab","streams":2})");
  EXPECT_EQ(v1.status().code(), Code::kInvalidArgument);
  EXPECT_NE(v1.status().message().find("earlier strata"), std::string::npos) << v1.status();
  EXPECT_TRUE(State::FromJson(R"({"version":1,"epoch":2,"samples_consumed":5,"fingerprint":"ab","streams":1})").ok());
}

}  // namespace
}  // namespace strata::loader

// PrefetchSizer (demand-sized prefetch, fake clock) and the pipeline's use
// of it: a batch of 7 large samples is fetched at once, and whole batches
// ahead are prefetched before the consumer asks.
#include "loader/prefetch.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <thread>

#include "loader/loader_test_util.h"
#include "loader/streaming_dataset.h"
#include "object/mem_store.h"

namespace strata::loader {
namespace {

using namespace std::chrono_literals;
using testing::CountingStore;
using testing::UniqueName;
using testing::WaitFor;
using testing::WriteDataset;

constexpr uint64_t kMB = 1000 * 1000;

PrefetchLimits Limits(uint64_t budget, size_t connections = 1000) {
  PrefetchLimits l;
  l.budget_bytes = budget;
  l.max_connections = connections;
  l.headroom = 1.0;  // exact Little's law, so the tests can state the numbers
  l.horizon = 4s;
  return l;
}

// The consumer takes `bytes` every `period`, waiting `waited` of it for the loader.
void Consume(PrefetchSizer& s, FakeClock& clock, int takes, uint64_t bytes, Duration period, Duration waited = 0s) {
  for (int i = 0; i < takes; ++i) {
    clock.Advance(period);
    s.OnConsumed(bytes, waited);
  }
}

TEST(PrefetchSizerTest, NothingMeasuredFillsTheBudget) {
  FakeClock clock;
  PrefetchSizer s(Limits(500 * kMB, 64), clock);
  EXPECT_LT(s.DemandBytesPerSecond(), 0);
  EXPECT_LT(s.RequestSeconds(kMB), 0);
  EXPECT_EQ(s.InflightBytes(10 * kMB), 500 * kMB);
  EXPECT_EQ(s.Connections(10 * kMB), 64u);
}

TEST(PrefetchSizerTest, BytesInFlightFollowTheDemand) {
  FakeClock clock;
  PrefetchSizer s(Limits(10'000 * kMB), clock);
  // Requests of 10 MB on one connection take 0.5 s.
  for (int i = 0; i < 8; ++i) s.OnFetched(10 * kMB, 1, 500ms);
  EXPECT_NEAR(s.RequestSeconds(10 * kMB), 0.5, 1e-9);
  // 10 MB every 100 ms: 100 MB/s, so 100 MB/s x 0.5 s = 50 MB in flight (5 requests).
  Consume(s, clock, 50, 10 * kMB, 100ms);
  EXPECT_NEAR(s.DemandBytesPerSecond(), 100e6, 1e3);
  EXPECT_NEAR(double(s.InflightBytes(10 * kMB)), 50e6, 1e3);
  EXPECT_EQ(s.Connections(10 * kMB), 5u);
  const uint64_t slow = s.InflightBytes(10 * kMB);
  // Four times faster: after a few horizons the in-flight bytes are four times more.
  Consume(s, clock, 800, 10 * kMB, 25ms);
  EXPECT_NEAR(s.DemandBytesPerSecond(), 400e6, 400e6 * 0.05);
  EXPECT_NEAR(double(s.InflightBytes(10 * kMB)), 4.0 * double(slow), 4.0 * double(slow) * 0.05);
  EXPECT_EQ(s.Connections(10 * kMB), 20u);
  // And back down when the consumer slows.
  Consume(s, clock, 200, 10 * kMB, 200ms);
  EXPECT_NEAR(double(s.InflightBytes(10 * kMB)), 25e6, 25e6 * 0.1);
}

// Time the consumer spent waiting for the loader is starvation, not pace.
TEST(PrefetchSizerTest, WaitingForTheLoaderIsNotDemand) {
  FakeClock clock;
  PrefetchSizer s(Limits(10'000 * kMB), clock);
  Consume(s, clock, 20, 10 * kMB, 1s, 900ms);  // takes 1/s, but works only 0.1 s of each
  EXPECT_NEAR(s.DemandBytesPerSecond(), 100e6, 1e3);
}

TEST(PrefetchSizerTest, BoundedByTheBudgetAndTheConnections) {
  FakeClock clock;
  PrefetchSizer s(Limits(200 * kMB, 8), clock);
  for (int i = 0; i < 8; ++i) s.OnFetched(10 * kMB, 1, 500ms);
  Consume(s, clock, 50, 100 * kMB, 10ms);  // 10 GB/s: 5 GB wanted in flight
  EXPECT_EQ(s.InflightBytes(10 * kMB), 200 * kMB);
  EXPECT_EQ(s.WindowBytes(10 * kMB, 30 * kMB), 200 * kMB);
  EXPECT_EQ(s.Connections(10 * kMB), 8u);
}

TEST(PrefetchSizerTest, AlwaysAtLeastTheFloorOfWholeBatches) {
  FakeClock clock;
  PrefetchSizer s(Limits(100 * kMB), clock);
  for (int i = 0; i < 8; ++i) s.OnFetched(10 * kMB, 1, 100ms);
  Consume(s, clock, 50, 1 * kMB, 1s);              // 1 MB/s: 0.1 MB in flight would do
  EXPECT_EQ(s.InflightBytes(10 * kMB), 10 * kMB);  // (one request at least)
  EXPECT_EQ(s.Connections(10 * kMB), 1u);
  // The floor (prefetch_batches x batch bytes) wins over both the demand and the budget.
  EXPECT_EQ(s.WindowBytes(10 * kMB, 30 * kMB), 40 * kMB);
  EXPECT_EQ(s.WindowBytes(10 * kMB, 700 * kMB), 700 * kMB);
}

// A floor above the budget (two batches of 7 x 140 MiB against 1 GiB) is
// admitted ahead anyway, so the requests in flight may cover it when the
// demand wants them: else connections sit idle below the budget's cap.
TEST(PrefetchSizerTest, AFloorAboveTheBudgetAlsoBoundsTheRequestsInFlight) {
  FakeClock clock;
  PrefetchSizer s(Limits(100 * kMB, 1000), clock);
  for (int i = 0; i < 8; ++i) s.OnFetched(10 * kMB, 1, 500ms);
  Consume(s, clock, 50, 100 * kMB, 100ms);          // 1 GB/s x 0.5 s: 500 MB wanted in flight
  EXPECT_EQ(s.InflightBytes(10 * kMB), 100 * kMB);  // no floor: the budget
  EXPECT_EQ(s.Connections(10 * kMB), 10u);
  EXPECT_EQ(s.InflightBytes(10 * kMB, 300 * kMB), 300 * kMB);  // the floor's bytes
  EXPECT_EQ(s.Connections(10 * kMB, 300 * kMB), 30u);
  EXPECT_EQ(s.Connections(10 * kMB, 900 * kMB), 50u);  // never beyond what the demand wants
  EXPECT_EQ(s.Connections(10 * kMB, 50 * kMB), 10u);   // a floor below the budget changes nothing
}

// The defaults (StreamingOptions{}) let the sizer keep what one unet3d
// accelerator needs in flight from a bucket like `strata bench train`'s
// emulated one: 7 samples of 139.8 MiB per 323 ms step (3.18 GB/s), each
// shard as 16 ranges taking 30 ms + 8.7 MiB at 25 MB/s. Little's law wants
// 138 requests (207 with the headroom); a cap of 128 left the accelerator
// waiting on every miss.
TEST(PrefetchSizerTest, TheDefaultsKeepAUnet3dAcceleratorFedFromACloudBucket) {
  const StreamingOptions defaults;
  PrefetchLimits l;
  l.budget_bytes = PrefetchBudgetBytes(defaults);
  l.max_connections = defaults.max_connections;
  FakeClock clock;
  PrefetchSizer s(l, clock);
  constexpr uint64_t kSample = 146'590'106;  // 139.8 MiB
  constexpr uint64_t kPart = kSample / 16;
  const Duration request = std::chrono::duration_cast<Duration>(30ms + std::chrono::duration<double>(kPart / 25e6));
  for (int i = 0; i < 32; ++i) s.OnFetched(kPart, 1, request);
  Consume(s, clock, 50, 7 * kSample, 323ms);
  const double demand = 7.0 * kSample / 0.323;
  const double little = demand * std::chrono::duration<double>(request).count() / kPart;
  ASSERT_GT(little, 130);                                         // (the figures above)
  const size_t connections = s.Connections(kPart, 14 * kSample);  // the floor: two batches ahead
  EXPECT_GE(connections, static_cast<size_t>(std::ceil(little)));
  EXPECT_NEAR(double(connections), std::ceil(little * l.headroom), 0.03 * little * l.headroom);  // not capped
}

// Requests of different sizes separate the first byte from the bandwidth.
TEST(PrefetchSizerTest, MeasuresFirstByteAndBandwidthPerConnection) {
  FakeClock clock;
  PrefetchSizer s(Limits(10'000 * kMB), clock);
  for (int i = 0; i < 10; ++i) {
    s.OnFetched(1 * kMB, 1, 30ms + 40ms);    // 30 ms + 1 MB at 25 MB/s
    s.OnFetched(40 * kMB, 4, 30ms + 400ms);  // 4 connections of 10 MB each
  }
  EXPECT_NEAR(s.FirstByteSeconds(), 0.030, 1e-6);
  EXPECT_NEAR(s.ConnectionBytesPerSecond(), 25e6, 1e3);
  EXPECT_NEAR(s.RequestSeconds(5 * kMB), 0.230, 1e-6);
}

// Holds every ranged read of a shard until Open(), counting those waiting.
class GateStore : public CountingStore {
 public:
  explicit GateStore(object::ObjectStorePtr inner) : CountingStore(std::move(inner)) {}
  Result<object::GetResult> Get(std::string_view key, const object::GetOptions& options) override {
    if (key.starts_with("ds/shard-")) {
      std::unique_lock lock(mu_);
      ++blocked_, ++shard_gets_;
      cv_.wait(lock, [&] { return open_; });
      --blocked_;
    }
    return CountingStore::Get(key, options);
  }
  void Open() {
    {
      std::lock_guard lock(mu_);
      open_ = true;
    }
    cv_.notify_all();
  }
  size_t blocked() const {
    std::lock_guard lock(mu_);
    return blocked_;
  }
  size_t shard_gets() const {
    std::lock_guard lock(mu_);
    return shard_gets_;
  }

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = false;
  size_t blocked_ = 0, shard_gets_ = 0;
};

// unet3d's shape: `sample`-byte samples (140 MiB), one per shard, batches of
// 7, in `shards` shards under ds/ of mem store `name`. Every shard is the same object bytes
// (the mem store shares them), so the test holds one sample's memory.
constexpr uint64_t kSample = 140ull << 20;
void WriteUnet3dShape(const std::string& name, size_t shards, uint64_t sample = kSample) {
  auto mem = object::MakeMemStore(name);
  std::string big(sample, 'u');
  dataset::Manifest one = WriteDataset(*mem, "tmp/", dataset::ShardFormat::kIndexed, {1}, [&](uint64_t) {
    return std::vector<dataset::Field>{{"npz", Buffer::FromString(std::move(big))}};
  });
  Buffer shard = mem->Get("tmp/" + one.shards[0].name)->data;
  dataset::Manifest m = one;
  m.shards.clear();
  for (size_t k = 0; k < shards; ++k) {
    dataset::ShardEntry e = one.shards[0];
    e.name = "shard-" + std::to_string(10000 + k) + std::string(dataset::ShardExtension(m.format));
    ASSERT_TRUE(mem->Put("ds/" + e.name, shard).ok());
    m.shards.push_back(e);
  }
  ASSERT_TRUE(mem->Put("ds/" + std::string(dataset::kIndexName), Buffer::FromString(dataset::EncodeIndex(m))).ok());
}

// prefetch_batches = 8 batches far beyond the budget (unet3d's 980 MiB
// batches against 1 GiB; here scaled by 1/10): two whole batches are fetched
// ahead (and the third once the decoders claim the first two), not the whole
// dataset at the start of the epoch; the rest follows as the consumer takes
// batches.
TEST(PrefetchPipelineTest, LargeBatchesBeyondTheBudgetKeepTwoAhead) {
  constexpr size_t kShards = 35;  // 5 batches
  const std::string name = UniqueName("prefetch-test");
  constexpr uint64_t kSmall = kSample / 10;
  WriteUnet3dShape(name, kShards, kSmall);
  auto gate = std::make_shared<GateStore>(object::MakeMemStore(name));
  StreamingOptions o;
  o.shuffle = Shuffle::kNone, o.batch_size = 7, o.prefetch_batches = 8;
  o.prefetch_bytes = (1ull << 30) / 10;  // one batch fits, two do not
  o.prefetch_next_epoch = false;         // one epoch's GETs: none of the next's
  o.ram_cache_bytes = 0;
  o.min_part_bytes = kSmall * 2;
  o.decode[std::string("npz")] = Decode::kRaw;
  auto ds = StreamingDataset::Open(gate, "ds", o);
  ASSERT_TRUE(ds.ok()) << ds.status();
  auto it = *(*ds)->Iterate(0, {});
  ASSERT_TRUE(WaitFor([&] { return gate->blocked() >= 14; })) << gate->blocked();
  gate->Open();
  // Two batches decoded and queued, the third's shards fetched: then nothing more until the consumer moves.
  ASSERT_TRUE(WaitFor([&] { return it->stats().queue_depth == 2 && it->stats().shards_fetched == 21; }))
      << it->stats().queue_depth << " " << it->stats().shards_fetched;
  EXPECT_EQ(gate->shard_gets(), 21u);
  uint64_t n = 0;
  while (true) {
    auto b = it->NextBatch();
    ASSERT_TRUE(b.ok()) << b.status();
    if (!*b) break;
    n += (*b)->indices.size();
  }
  EXPECT_EQ(n, kShards);
  EXPECT_EQ(gate->shard_gets(), kShards);
  it.reset();
  object::DropMemStore(name);
}

TEST(PrefetchPipelineTest, BatchesOfSevenLargeSamplesArePrefetchedWhole) {
  constexpr size_t kShards = 14;
  const std::string name = UniqueName("prefetch-test");
  WriteUnet3dShape(name, kShards);
  auto gate = std::make_shared<GateStore>(object::MakeMemStore(name));
  StreamingOptions o;
  o.shuffle = Shuffle::kNone, o.batch_size = 7, o.prefetch_batches = 2;
  o.ram_cache_bytes = 0;           // nothing kept by the cache: what is prefetched is the iterator's
  o.min_part_bytes = kSample * 2;  // one zero-copy read per shard (ranged parts: MultiPartTest)
  o.decode[std::string("npz")] = Decode::kRaw;
  auto ds = StreamingDataset::Open(gate, "ds", o);
  ASSERT_TRUE(ds.ok()) << ds.status();
  auto it = *(*ds)->Iterate(0, {});
  // The first batch's 7 shards are requested together (a count of 4 shards ahead never held one batch).
  ASSERT_TRUE(WaitFor([&] { return gate->blocked() >= 7; })) << gate->blocked();
  gate->Open();
  // Both batches (prefetch_batches = 2) land before the consumer asks for anything.
  ASSERT_TRUE(WaitFor([&] { return it->stats().shards_fetched == kShards; })) << it->stats().shards_fetched;
  EXPECT_EQ(it->stats().samples, 0u);
  uint64_t n = 0;
  while (true) {
    auto s = it->NextSample();
    ASSERT_TRUE(s.ok()) << s.status();
    if (!*s) break;
    const Buffer& b = (*s)->fields.at("npz").bytes;
    ASSERT_EQ(b.size(), kSample);
    EXPECT_EQ(b.data()[0], 'u');
    EXPECT_EQ(b.data()[kSample - 1], 'u');
    ++n;
  }
  EXPECT_EQ(n, kShards);
  it.reset();
  object::DropMemStore(name);
}

// Counts each shard's GETs.
class ShardGetCounter : public CountingStore {
 public:
  explicit ShardGetCounter(object::ObjectStorePtr inner) : CountingStore(std::move(inner)) {}
  Result<object::GetResult> Get(std::string_view key, const object::GetOptions& options) override {
    if (key.starts_with("ds/shard-")) {
      std::lock_guard lock(mu_);
      ++gets_[std::string(key)];
    }
    return CountingStore::Get(key, options);
  }
  size_t Of(const std::string& key) const {
    std::lock_guard lock(mu_);
    auto it = gets_.find(key);
    return it == gets_.end() ? 0 : it->second;
  }
  size_t Total() const {
    std::lock_guard lock(mu_);
    size_t n = 0;
    for (const auto& [_, c] : gets_) n += c;
    return n;
  }

 private:
  mutable std::mutex mu_;
  std::map<std::string, size_t> gets_;
};

// Reads the iterator to its end: the samples' indices in order.
std::vector<uint64_t> Drain(Iterator& it) {
  std::vector<uint64_t> out;
  while (true) {
    auto s = it.NextSample();
    EXPECT_TRUE(s.ok()) << s.status();
    if (!s.ok() || !*s) return out;
    out.push_back((*s)->index);
  }
}

// An epoch's first batches wait for nothing: once every shard of epoch 0 is
// fetched, the first shards of epoch 1 are fetched (as many as epoch 0 held
// ahead at its start: two batches here), and epoch 1's iterator takes them
// instead of fetching them again. The order is the one without it; an
// iterator for another epoch does not use (and releases) what was fetched.
TEST(PrefetchPipelineTest, TheNextEpochsFirstShardsAreFetchedWhileThisOneEnds) {
  constexpr size_t kShards = 12;
  constexpr uint64_t kSmall = 64 << 10;
  const std::string name = UniqueName("prefetch-test");
  WriteUnet3dShape(name, kShards, kSmall);
  auto store = std::make_shared<ShardGetCounter>(object::MakeMemStore(name));
  StreamingOptions o;
  o.shuffle = Shuffle::kShards, o.batch_size = 2, o.prefetch_batches = 2;
  o.ram_cache_bytes = 0;          // the cache keeps nothing: a shard read again comes from the store or the head
  o.prefetch_bytes = 3 * kSmall;  // below two batches: the floor of two batches is the head's bound
  o.decode[std::string("npz")] = Decode::kRaw;
  // A shard an epoch's last batch still holds may reach the next epoch's head
  // without a GET (the cache shares it): a seed whose epochs 1 and 2 do not
  // start with what epochs 0 and 1 end with keeps the GET counts exact.
  auto disjoint = [](const std::vector<uint64_t>& ending, const std::vector<uint64_t>& starting) {
    for (size_t k = 0; k < 4; ++k) {
      if (std::find(ending.end() - 2, ending.end(), starting[k]) != ending.end()) return false;
    }
    return true;
  };
  Result<std::shared_ptr<StreamingDataset>> ds = InternalError("no seed");
  for (o.seed = 1; o.seed < 100; ++o.seed) {
    ds = StreamingDataset::Open(store, "ds", o);
    ASSERT_TRUE(ds.ok()) << ds.status();
    if (disjoint((*ds)->EpochOrder(0), (*ds)->EpochOrder(1)) && disjoint((*ds)->EpochOrder(1), (*ds)->EpochOrder(2))) {
      break;
    }
  }
  ASSERT_LT(o.seed, 100u);
  auto key = [&](uint64_t sample) { return "ds/" + (*ds)->index().shards[sample].name; };  // one sample per shard
  const std::vector<uint64_t> order1 = (*ds)->EpochOrder(1);

  auto it = *(*ds)->Iterate(0, (*ds)->MakeState(0, 0));
  EXPECT_EQ(Drain(*it), (*ds)->EpochOrder(0));
  // Epoch 1's first two batches (4 shards) are fetched ahead, and no more.
  ASSERT_TRUE(WaitFor([&] { return store->Total() == kShards + 4; })) << store->Total();
  for (size_t k = 0; k < 4; ++k) EXPECT_EQ(store->Of(key(order1[k])), 2u) << k;
  it.reset();
  EXPECT_EQ(store->Total(), kShards + 4);

  it = *(*ds)->Iterate(0, (*ds)->MakeState(1, 0));
  EXPECT_EQ(Drain(*it), order1);
  EXPECT_EQ(it->stats().shards_from_previous_epoch, 4u);
  EXPECT_EQ(it->stats().shards_fetched, kShards - 4);
  // Each shard once per epoch, and epoch 2's first four once more (its head).
  ASSERT_TRUE(WaitFor([&] { return store->Total() == 2 * kShards + 4; })) << store->Total();
  const std::vector<uint64_t> order2 = (*ds)->EpochOrder(2);
  for (size_t k = 0; k < kShards; ++k) EXPECT_EQ(store->Of(key(order2[k])), k < 4 ? 3u : 2u) << k;
  it.reset();

  // Epoch 5 instead of 2: nothing taken, every shard fetched, in epoch 5's order.
  it = *(*ds)->Iterate(0, (*ds)->MakeState(5, 0));
  EXPECT_EQ(Drain(*it), (*ds)->EpochOrder(5));
  EXPECT_EQ(it->stats().shards_from_previous_epoch, 0u);
  EXPECT_EQ(it->stats().shards_fetched + it->stats().shards_from_cache, kShards);  // (or joined a head's fetch)
  it.reset();
  ds->reset();  // releases epoch 6's head (its fetches finish first)

  // Off: every epoch fetches its own shards, and no more.
  auto plain_store = std::make_shared<ShardGetCounter>(object::MakeMemStore(name));
  o.prefetch_next_epoch = false;
  auto plain = StreamingDataset::Open(plain_store, "ds", o);
  ASSERT_TRUE(plain.ok()) << plain.status();
  for (uint64_t e = 0; e < 2; ++e) {
    auto p = *(*plain)->Iterate(0, (*plain)->MakeState(e, 0));
    EXPECT_EQ(Drain(*p), (*plain)->EpochOrder(e));
    EXPECT_EQ(p->stats().shards_from_previous_epoch, 0u);
  }
  EXPECT_EQ(plain_store->Total(), 2 * kShards);
  object::DropMemStore(name);
}

}  // namespace
}  // namespace strata::loader

// Unit tests: ragged .npy batches keep each row's layout; random access and
// iteration decode TFRecord samples alike; retries back off; multi-part
// shard fetches, and a shard replaced between its parts (never mixed bytes).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "base/clock.h"
#include "loader/decode.h"
#include "loader/loader_test_util.h"
#include "loader/shard_cache.h"
#include "loader/streaming_dataset.h"
#include "object/fault_store.h"
#include "object/mem_store.h"

namespace strata::loader {
namespace {

using dataset::ShardFormat;
using testing::NextUntilError;
using testing::Npy;
using testing::TextFields;
using testing::UniqueName;
using testing::WriteDataset;

// ---- ragged .npy columns --------------------------------------------------------

// Sample i's array: <i4 of shape (i+1,) for even i, <f8 of shape (2, i) in
// Fortran order for odd i; bytes are i repeated.
std::vector<dataset::Field> RaggedFields(uint64_t i) {
  bool even = i % 2 == 0;
  std::string shape = even ? "(" + std::to_string(i + 1) + ",)" : "(2, " + std::to_string(i) + ")";
  size_t bytes = even ? 4 * (i + 1) : 8 * 2 * i;
  return {{"x.npy", Buffer::FromString(Npy(even ? "<i4" : "<f8", shape, std::string(bytes, char(i)), !even))}};
}

TEST(RaggedTest, BatchesOfDifferingArraysKeepEachRowsDtypeAndShape) {
  std::string name = UniqueName("decode-fetch-test");
  auto store = object::MakeMemStore(name);
  WriteDataset(*store, "", ShardFormat::kTar, {5, 3}, RaggedFields);
  StreamingOptions o;
  o.shuffle = Shuffle::kNone, o.batch_size = 4;
  auto ds = *StreamingDataset::Open(store, "", o);
  auto it = *ds->Iterate(0, {});
  uint64_t rows = 0;
  while (auto b = it->NextBatch().value()) {
    const Column& c = b->columns.at("x.npy");
    EXPECT_EQ(c.kind, Decode::kNpy);
    EXPECT_TRUE(c.dtype.empty());
    ASSERT_EQ(c.rows.size(), b->indices.size());
    ASSERT_EQ(c.offsets.size(), b->indices.size() + 1);
    for (size_t r = 0; r < c.rows.size(); ++r, ++rows) {
      uint64_t i = b->indices[r];
      SCOPED_TRACE(i);
      bool even = i % 2 == 0;
      EXPECT_EQ(c.rows[r].dtype, even ? "<i4" : "<f8");
      const std::vector<int64_t> shape =
          even ? std::vector<int64_t>{int64_t(i) + 1} : std::vector<int64_t>{2, int64_t(i)};
      EXPECT_EQ(c.rows[r].shape, shape);
      EXPECT_EQ(c.rows[r].fortran_order, !even);
      std::string_view data = c.data.view().substr(c.offsets[r], c.offsets[r + 1] - c.offsets[r]);
      EXPECT_EQ(data, std::string(even ? 4 * (i + 1) : 16 * i, char(i)));
    }
  }
  EXPECT_EQ(rows, 8u);
  object::DropMemStore(name);
}

TEST(RaggedTest, UniformArraysStayOneBlockWithoutRows) {
  std::vector<DecodedSample> samples(3);
  for (uint64_t i = 0; i < 3; ++i) {
    samples[i].index = i;
    Value v;
    v.kind = Decode::kNpy, v.dtype = "<f4", v.shape = {2}, v.bytes = Buffer::FromString(std::string(8, char(i)));
    samples[i].fields.emplace("a.npy", v);
  }
  Batch b = Collate(samples, 0, 0);
  const Column& c = b.columns.at("a.npy");
  EXPECT_TRUE(c.rows.empty());
  EXPECT_TRUE(c.offsets.empty());
  EXPECT_EQ(c.dtype, "<f4");
  EXPECT_EQ(c.data.size(), 24u);
  // One dtype differs: ragged, and every row says its own.
  samples[1].fields.at("a.npy").dtype = "<i4";
  Batch r = Collate(samples, 0, 0);
  const Column& rc = r.columns.at("a.npy");
  ASSERT_EQ(rc.rows.size(), 3u);
  EXPECT_EQ(rc.rows[0].dtype, "<f4");
  EXPECT_EQ(rc.rows[1].dtype, "<i4");
  EXPECT_EQ(rc.rows[2].shape, std::vector<int64_t>{2});
}

// batch_views: each row is the sample's own buffer (same bytes, same memory:
// no copy), offsets as if concatenated; JSON columns are still one buffer.
TEST(CollateViewsTest, RowsViewTheSamplesBuffersWithoutCopying) {
  std::vector<DecodedSample> samples(3);
  for (uint64_t i = 0; i < 3; ++i) {
    samples[i].index = i;
    Value raw;
    raw.bytes = Buffer::FromString(std::string(10 + i, char('a' + i)));
    samples[i].fields.emplace("bin", raw);
    Value js;
    js.kind = Decode::kJson, js.json = "{\"i\":" + std::to_string(i) + "}";
    samples[i].fields.emplace("meta.json", js);
  }
  Batch copy = Collate(samples, 0, 0);
  Batch view = Collate(samples, 0, 0, /*views=*/true);
  const Column& c = copy.columns.at("bin");
  const Column& v = view.columns.at("bin");
  EXPECT_TRUE(c.views.empty());
  EXPECT_EQ(v.data.size(), 0u);
  ASSERT_EQ(v.views.size(), 3u);
  EXPECT_EQ(v.offsets, c.offsets);
  EXPECT_EQ(v.size(), c.size());
  EXPECT_EQ(v.size(), 33u);
  for (size_t r = 0; r < 3; ++r) {
    EXPECT_EQ(v.views[r].data(), samples[r].fields.at("bin").bytes.data()) << r;  // the same memory
    EXPECT_EQ(v.views[r].view(), c.data.view().substr(c.offsets[r], c.offsets[r + 1] - c.offsets[r])) << r;
  }
  const Column& j = view.columns.at("meta.json");
  EXPECT_TRUE(j.views.empty());
  EXPECT_EQ(j.data.view(), copy.columns.at("meta.json").data.view());
}

// ---- TFRecord random access agrees with iteration ------------------------------

TEST(TfRecordGetTest, RandomAccessDecodesLikeIteration) {
  std::string name = UniqueName("decode-fetch-test");
  auto store = object::MakeMemStore(name);
  WriteDataset(*store, "", ShardFormat::kTfRecord, {3, 2}, [](uint64_t i) {
    return std::vector<dataset::Field>{{"cls", Buffer::FromString(std::to_string(i * 7))},
                                       {"score", Buffer::FromString(std::to_string(i) + ".5")},
                                       {"img", Buffer::FromString("bytes" + std::to_string(i))}};
  });
  StreamingOptions o;
  o.shuffle = Shuffle::kNone;
  auto ds = *StreamingDataset::Open(store, "", o);
  auto it = *ds->Iterate(0, {});
  uint64_t n = 0;
  while (auto s = it->NextSample().value()) {
    auto got = ds->Get(s->index);
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(got->key, s->key);
    ASSERT_EQ(got->fields.size(), s->fields.size());
    for (const auto& [field, v] : s->fields) {
      SCOPED_TRACE(field);
      const Value& g = got->fields.at(field);
      EXPECT_EQ(g.kind, v.kind);
      EXPECT_EQ(g.json, v.json);
      if (v.kind == Decode::kRaw) {
        EXPECT_EQ(g.bytes.ToString(), v.bytes.ToString());
      }
    }
    EXPECT_EQ(s->fields.at("cls").kind, Decode::kExample);  // the numeric feature as protobuf JSON
    ++n;
  }
  EXPECT_EQ(n, 5u);
  EXPECT_EQ(ds->Get(5).status().code(), Code::kInvalidArgument);
  object::DropMemStore(name);
}

// ---- retry backoff --------------------------------------------------------------

TEST(BackoffTest, RetriesWaitExponentiallyWithJitter) {
  std::string name = UniqueName("decode-fetch-test");
  auto store = object::MakeMemStore(name);
  WriteDataset(*store, "ds/", ShardFormat::kTar, {4, 4}, TextFields);
  auto faults = std::make_shared<object::FaultStore>(store, object::FaultConfig{});
  faults->FailKey("ds/shard-00001.tar", UnavailableError("down"), -1, object::FaultOp::kGet);
  FakeClock clock(/*auto_advance=*/true);
  StreamingOptions o;
  o.shuffle = Shuffle::kNone, o.retries = 3, o.retry_backoff = std::chrono::milliseconds(100), o.clock = &clock;
  auto it = *(*StreamingDataset::Open(faults, "ds", o))->Iterate(0, {});
  Status err = NextUntilError(*it);
  EXPECT_EQ(err.code(), Code::kUnavailable);
  EXPECT_EQ(it->stats().shard_fetch_retries, 3u);
  // Waits of 100, 200 and 400 ms, each jittered down to no less than half.
  auto slept = clock.TotalSlept();
  EXPECT_GE(slept, std::chrono::milliseconds(350));
  EXPECT_LE(slept, std::chrono::milliseconds(700));
  EXPECT_NE(slept, std::chrono::milliseconds(700));  // jittered
  object::DropMemStore(name);
}

// A backing-off fetch does not hold up the iterator's destruction.
TEST(BackoffTest, DestroyingTheIteratorCutsTheWaitShort) {
  std::string name = UniqueName("decode-fetch-test");
  auto store = object::MakeMemStore(name);
  WriteDataset(*store, "ds/", ShardFormat::kTar, {4}, TextFields);
  auto faults = std::make_shared<object::FaultStore>(store, object::FaultConfig{});
  faults->FailKey("ds/shard-00000.tar", UnavailableError("down"), -1, object::FaultOp::kGet);
  StreamingOptions o;
  o.retries = 5, o.retry_backoff = std::chrono::seconds(60);  // capped at 2 s: each wait >= 1 s
  auto ds = *StreamingDataset::Open(faults, "ds", o);
  const uint64_t opened = faults->counters().requests;
  auto it = *ds->Iterate(0, {});
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (faults->counters().requests == opened && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::yield();
  }
  ASSERT_GT(faults->counters().requests, opened);  // the first attempt failed: now backing off
  auto t0 = std::chrono::steady_clock::now();
  it.reset();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(900));
  EXPECT_EQ(faults->counters().requests, opened + 1);  // no retry ran
  object::DropMemStore(name);
}

// ---- multi-part fetches ------------------------------------------------------------

// Counts GETs; optionally replaces `key` with `replacement` right after the
// first part (offset 0) was read, holding the other parts until then.
class ReplacingStore : public testing::CountingStore {
 public:
  ReplacingStore(object::ObjectStorePtr inner, std::string key = "", Buffer replacement = {})
      : CountingStore(std::move(inner)), key_(std::move(key)), replacement_(std::move(replacement)) {}
  Result<object::GetResult> Get(std::string_view key, const object::GetOptions& options) override {
    const bool target = !key_.empty() && key == key_ && options.range;
    if (target && options.range->offset > 0) {
      std::unique_lock lock(mu_);
      cv_.wait_for(lock, std::chrono::seconds(20), [&] { return replaced_; });
    }
    auto got = CountingStore::Get(key, options);
    if (target && options.range->offset == 0) {
      std::lock_guard lock(mu_);
      if (!replaced_) {
        EXPECT_TRUE(base().Put(key_, replacement_).ok());
        replaced_ = true;
        cv_.notify_all();
      }
    }
    return got;
  }

 private:
  const std::string key_;
  const Buffer replacement_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool replaced_ = false;
};

struct BigShards {
  std::string name = UniqueName("decode-fetch-test");
  object::ObjectStorePtr store = object::MakeMemStore(name);
  std::vector<std::string> keys;
  std::vector<uint64_t> sizes;
  // Shards of `per_shard` samples of `bytes` bytes, each byte `fill`.
  BigShards(size_t shards, uint64_t per_shard, size_t bytes, char fill) {
    auto index =
        WriteDataset(*store, "ds/", ShardFormat::kTar, std::vector<uint64_t>(shards, per_shard), [&](uint64_t) {
          return std::vector<dataset::Field>{{"bin", Buffer::FromString(std::string(bytes, fill))}};
        });
    for (const auto& s : index.shards) keys.push_back("ds/" + s.name), sizes.push_back(s.size);
  }
  ~BigShards() { object::DropMemStore(name); }
};

TEST(MultiPartTest, AShardIsFetchedInRangedPartsAndReassembledExactly) {
  BigShards f(1, 40, 700, 'q');
  auto counting = std::make_shared<ReplacingStore>(f.store);
  ShardCacheOptions co;
  co.fetch_concurrency = 4;
  co.min_part_size = 4096;  // ~40 KiB shard: 4 parts
  auto cache = *ShardCache::Open(counting, f.keys, f.sizes, co);
  auto got = cache->Get(0);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(counting->gets(), 4u);
  EXPECT_EQ(got->data.ToString(), f.store->Get(f.keys[0])->data.ToString());
  EXPECT_EQ(cache->counters().fetches, 1u);
}

// The object is replaced (same size, other bytes) between the fetch's parts:
// the fetch fails with a retryable error naming the shard, caches nothing, and
// the next fetch returns the new object whole.
TEST(MultiPartTest, AShardReplacedBetweenPartsIsNeverMixed) {
  BigShards f(1, 40, 700, 'o');
  BigShards newer(1, 40, 700, 'n');
  Buffer replacement = newer.store->Get(newer.keys[0])->data;
  ASSERT_EQ(replacement.size(), f.sizes[0]);
  auto store = std::make_shared<ReplacingStore>(f.store, f.keys[0], replacement);
  ShardCacheOptions co;
  co.fetch_concurrency = 4;
  co.min_part_size = 4096;
  auto cache = *ShardCache::Open(store, f.keys, f.sizes, co);
  auto first = cache->Get(0);
  ASSERT_FALSE(first.ok());
  EXPECT_EQ(first.status().code(), Code::kUnavailable);
  EXPECT_NE(first.status().message().find(f.keys[0]), std::string::npos) << first.status();
  EXPECT_NE(first.status().message().find("changed"), std::string::npos) << first.status();
  auto second = cache->Get(0);
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_TRUE(second->from_store);
  EXPECT_EQ(second->data.ToString(), replacement.ToString());
}

// Through the loader (shards of ~3 MiB: 3 parts at a 1 MiB minimum): the
// iterator retries the changed shard and yields only whole new samples.
TEST(MultiPartTest, TheLoaderRetriesAShardReplacedMidFetch) {
  BigShards f(2, 3, 1 << 20, 'o');
  BigShards newer(2, 3, 1 << 20, 'n');
  auto store = std::make_shared<ReplacingStore>(f.store, f.keys[1], newer.store->Get(newer.keys[1])->data);
  StreamingOptions o;
  o.shuffle = Shuffle::kNone, o.fetch_concurrency = 4, o.retry_backoff = std::chrono::milliseconds(1);
  o.min_part_bytes = 1 << 20;
  auto it = *(*StreamingDataset::Open(store, "ds", o))->Iterate(0, {});
  uint64_t n = 0;
  while (true) {
    auto s = it->NextSample();
    ASSERT_TRUE(s.ok()) << s.status();
    if (!*s) break;
    const std::string bytes = (*s)->fields.at("bin").bytes.ToString();
    EXPECT_EQ(bytes, std::string(1 << 20, (*s)->index < 3 ? 'o' : 'n')) << (*s)->index;
    ++n;
  }
  EXPECT_EQ(n, 6u);
  EXPECT_EQ(it->stats().shard_fetch_retries, 1u);
  EXPECT_GE(store->gets(), 2u * 3u + 3u);  // both shards in 3 parts, the changed one twice
}

}  // namespace
}  // namespace strata::loader

// Unit tests for the loader: mem stores only, no sleeps.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <numeric>
#include <set>
#include <stdexcept>
#include <thread>

#include "loader/decode.h"
#include "loader/loader_test_util.h"
#include "loader/plan.h"
#include "loader/shard_cache.h"
#include "loader/streaming_dataset.h"
#include "object/fault_store.h"
#include "object/mem_store.h"
#include "object/store_wrapper.h"

namespace strata::loader {
namespace {

using dataset::ShardFormat;
using testing::CountingStore;
using testing::NextUntilError;
using testing::Npy;
using testing::TextFields;
using testing::UniqueName;
using testing::WaitFor;
using testing::WriteDataset;

// ---- plan: order and partition ------------------------------------------------

TEST(PlanTest, SplitMixIsFixed) {
  // Pinned values: the order must not change across machines or releases.
  SplitMix64 r(0);
  EXPECT_EQ(r.Next(), 0xe220a8397b1dcdafull);
  std::vector<uint64_t> v(10);
  std::iota(v.begin(), v.end(), 0);
  SeededShuffle(v, 42);
  std::vector<uint64_t> again(10);
  std::iota(again.begin(), again.end(), 0);
  SeededShuffle(again, 42);
  EXPECT_EQ(v, again);
  EXPECT_NE(v, std::vector<uint64_t>({0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
  SplitMix64 b(7);
  for (int i = 0; i < 1000; ++i) EXPECT_LT(b.Below(3), 3u);
}

// Every (world, workers, batch, consumed, drop_last) for small epochs: the
// deal covers the remainder exactly once, and the first g global batches of
// all ranks are exactly the next g*batch*world positions (so a state of
// samples_consumed is a clean prefix).
TEST(PlanTest, PartitionExhaustive) {
  for (uint64_t total : {0, 1, 7, 13, 24}) {
    for (size_t world = 1; world <= 3; ++world) {
      for (size_t workers = 1; workers <= 4; ++workers) {
        for (size_t batch = 1; batch <= 5; ++batch) {
          for (uint64_t consumed = 0; consumed <= total; ++consumed) {
            for (bool drop : {false, true}) {
              std::vector<int> seen(total, 0);
              uint64_t dropped_partial = 0;
              for (size_t rank = 0; rank < world; ++rank) {
                PartitionSpec p{total, world, rank, workers, batch, drop};
                uint64_t n = 0;
                for (size_t w = 0; w < workers; ++w) {
                  for (auto r : WorkerBatches(p, consumed, w)) {
                    EXPECT_LE(r.size(), batch);
                    for (uint64_t i = r.begin; i < r.end; ++i) ++seen[i], ++n;
                  }
                }
                EXPECT_EQ(n, RankSampleCount(p, consumed));
                // Rank batches in order, dealt round-robin: batch b is worker b % workers's (b / workers)-th.
                auto rb = RankBatches(p, consumed);
                for (size_t b = 0; b < rb.size(); ++b) {
                  auto wb = WorkerBatches(p, consumed, b % workers);
                  ASSERT_GT(wb.size(), b / workers);
                  EXPECT_EQ(wb[b / workers].begin, rb[b].begin);
                  if (b + 1 < rb.size()) {
                    EXPECT_EQ(rb[b].size(), batch);  // only the last may be partial
                  }
                }
              }
              uint64_t g = batch * world, remain = total - consumed, tail = remain % g;
              for (uint64_t i = 0; i < consumed; ++i) EXPECT_EQ(seen[i], 0);
              for (uint64_t i = consumed; i < total; ++i) {
                if (seen[i] == 0) ++dropped_partial;
                EXPECT_LE(seen[i], 1);
              }
              if (!drop) {
                EXPECT_EQ(dropped_partial, 0u) << total << " " << world << " " << workers << " " << batch;
              } else {
                EXPECT_EQ(dropped_partial, tail % batch);  // only the one partial batch
              }
              // Prefix property over whole global batches.
              for (uint64_t gb = 0; gb <= remain / g; ++gb) {
                std::set<uint64_t> covered;
                for (size_t rank = 0; rank < world; ++rank) {
                  auto rb = RankBatches({total, world, rank, workers, batch, drop}, consumed);
                  for (size_t b = 0; b < std::min<size_t>(gb, rb.size()); ++b) {
                    for (uint64_t i = rb[b].begin; i < rb[b].end; ++i) covered.insert(i);
                  }
                }
                ASSERT_EQ(covered.size(), gb * g);
                if (!covered.empty()) {
                  EXPECT_EQ(*covered.begin(), consumed);
                }
              }
            }
          }
        }
      }
    }
  }
}

TEST(PlanTest, OrdersArePermutationsAndDiffer) {
  dataset::Manifest m;
  std::vector<uint64_t> counts = {5, 3, 8, 1, 6, 4, 7, 2, 9};
  for (size_t k = 0; k < counts.size(); ++k) m.shards.push_back({"s" + std::to_string(k), 100, counts[k], "", "", ""});
  uint64_t n = std::accumulate(counts.begin(), counts.end(), uint64_t{0});
  for (Shuffle sh : {Shuffle::kNone, Shuffle::kShards, Shuffle::kWindow}) {
    OrderSpec spec{sh, 1, 3};
    std::string fp = Fingerprint(m, spec);
    auto o0 = EpochOrder(counts, spec, fp, 0);
    auto sorted = o0;
    std::sort(sorted.begin(), sorted.end());
    std::vector<uint64_t> ident(n);
    std::iota(ident.begin(), ident.end(), 0);
    EXPECT_EQ(sorted, ident);
    EXPECT_EQ(o0, EpochOrder(counts, spec, fp, 0));  // pure
    if (sh == Shuffle::kNone) {
      EXPECT_EQ(o0, ident);
    } else {
      EXPECT_NE(o0, EpochOrder(counts, spec, fp, 1));  // another epoch
      OrderSpec other = spec;
      other.seed = 2;
      EXPECT_NE(o0, EpochOrder(counts, other, Fingerprint(m, other), 0));  // another seed
    }
  }
  OrderSpec a{Shuffle::kWindow, 1, 3}, b{Shuffle::kWindow, 1, 4};
  EXPECT_NE(Fingerprint(m, a), Fingerprint(m, b));
}

TEST(PlanTest, WindowShuffleStaysInsideTheWindow) {
  std::vector<uint64_t> counts(10, 6);
  dataset::Manifest m;
  for (size_t k = 0; k < counts.size(); ++k) m.shards.push_back({"s" + std::to_string(k), 10, 6, "", "", ""});
  OrderSpec spec{Shuffle::kWindow, 9, 4};
  std::string fp = Fingerprint(m, spec);
  auto shards = ShardOrder(counts.size(), spec, fp, 3);
  auto order = EpochOrder(counts, spec, fp, 3);
  // Window w spans shards shards[4w..4w+3]; its samples occupy exactly its positions.
  uint64_t pos = 0;
  bool mixed = false;
  for (size_t w = 0; w < shards.size(); w += 4) {
    std::set<uint64_t> in_window;
    for (size_t k = w; k < std::min<size_t>(w + 4, shards.size()); ++k) {
      for (uint64_t j = 0; j < 6; ++j) in_window.insert(shards[k] * 6 + j);
    }
    std::set<uint64_t> got(order.begin() + pos, order.begin() + pos + in_window.size());
    EXPECT_EQ(got, in_window);
    for (uint64_t i = pos; i + 1 < pos + in_window.size(); ++i) mixed |= order[i] / 6 != order[i + 1] / 6;
    pos += in_window.size();
  }
  EXPECT_TRUE(mixed);  // samples of different shards interleave within a window
}

// ---- the streaming dataset over a mem store ------------------------------------

struct Fixture {
  std::string name = UniqueName("loader-test");
  object::ObjectStorePtr store = object::MakeMemStore(name);
  dataset::Manifest index;
  uint64_t total = 0;
  explicit Fixture(std::vector<uint64_t> counts, ShardFormat format = ShardFormat::kTar) {
    index = WriteDataset(*store, "ds/", format, counts, TextFields);
    total = std::accumulate(counts.begin(), counts.end(), uint64_t{0});
  }
  ~Fixture() { object::DropMemStore(name); }
  std::shared_ptr<StreamingDataset> Open(StreamingOptions o, object::ObjectStorePtr s = nullptr) {
    auto ds = StreamingDataset::Open(s ? s : store, "ds", o);
    EXPECT_TRUE(ds.ok()) << ds.status().ToString();
    return ds.ok() ? *ds : nullptr;
  }
};

std::vector<uint64_t> Drain(Iterator& it, Stats* stats = nullptr) {
  std::vector<uint64_t> out;
  while (true) {
    auto s = it.NextSample();
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    if (!s.ok() || !*s) break;
    EXPECT_EQ((*s)->fields.at("txt").bytes.ToString(), "sample-" + std::to_string((*s)->index));
    out.push_back((*s)->index);
  }
  if (stats) *stats = it.stats();
  return out;
}

TEST(StreamingTest, EverySampleOnceAcrossRanksAndWorkersInPlannedOrder) {
  Fixture f({7, 5, 9, 3, 8, 6});
  for (Shuffle sh : {Shuffle::kNone, Shuffle::kShards, Shuffle::kWindow}) {
    std::multiset<uint64_t> all;
    for (size_t rank = 0; rank < 2; ++rank) {
      StreamingOptions o;
      o.shuffle = sh, o.shuffle_window = 2, o.seed = 5, o.world_size = 2, o.rank = rank, o.num_workers = 3,
      o.batch_size = 4, o.even_batches = false;
      auto ds = f.Open(o);
      auto order = ds->EpochOrder(0);
      uint64_t rank_total = 0;
      for (size_t w = 0; w < 3; ++w) {
        auto it = *ds->Iterate(w, ds->MakeState(0, 0));
        auto got = Drain(*it);
        rank_total += got.size();
        std::vector<uint64_t> want;
        for (auto r : WorkerBatches({f.total, 2, rank, 3, 4, false}, 0, w)) {
          for (uint64_t p = r.begin; p < r.end; ++p) want.push_back(order[p]);
        }
        EXPECT_EQ(got, want);
        all.insert(got.begin(), got.end());
      }
      EXPECT_EQ(rank_total, ds->RankSize(rank));
    }
    ASSERT_EQ(all.size(), f.total);
    for (uint64_t i = 0; i < f.total; ++i) EXPECT_EQ(all.count(i), 1u);
  }
}

TEST(StreamingTest, DeterministicAndSeedOrEpochChangesOrder) {
  Fixture f({10, 10, 10, 10});
  StreamingOptions o;
  o.seed = 3, o.shuffle_window = 2;
  auto a = Drain(**f.Open(o)->Iterate(0, {0, 0, ""}));
  auto b = Drain(**f.Open(o)->Iterate(0, {0, 0, ""}));
  EXPECT_EQ(a, b);
  EXPECT_NE(a, Drain(**f.Open(o)->Iterate(0, {1, 0, ""})));
  o.seed = 4;
  EXPECT_NE(a, Drain(**f.Open(o)->Iterate(0, {0, 0, ""})));
}

// Consume part of an epoch the way torch's DataLoader does (batches
// round-robin over workers, ranks in lockstep), save the state, and resume
// with other numbers of workers and ranks: the union is the epoch, once.
TEST(StreamingTest, ResumeWithOtherWorkersAndWorldSize) {
  Fixture f({6, 9, 4, 7, 5});
  struct Config {
    size_t world, workers;
  };
  for (Config before : {Config{1, 2}, Config{2, 3}, Config{3, 1}}) {
    for (Config after : {Config{1, 3}, Config{2, 2}, Config{3, 4}}) {
      for (uint64_t global_batches : {0, 1, 2}) {
        const size_t batch = 3;
        std::multiset<uint64_t> seen;
        uint64_t consumed = 0;
        std::string state_json;
        for (size_t rank = 0; rank < before.world; ++rank) {
          StreamingOptions o;
          o.world_size = before.world, o.rank = rank, o.num_workers = before.workers, o.batch_size = batch;
          o.even_batches = false;  // exactly once (even_batches pads: EvenBatchesResume)
          auto ds = f.Open(o);
          std::vector<std::unique_ptr<Iterator>> its;
          for (size_t w = 0; w < before.workers; ++w) its.push_back(*ds->Iterate(w, ds->MakeState(0, 0)));
          for (uint64_t b = 0; b < global_batches; ++b) {
            auto got = its[b % before.workers]->NextBatch();
            ASSERT_TRUE(got.ok());
            if (!*got) continue;
            for (uint64_t i : (*got)->indices) seen.insert(i);
          }
          consumed = std::min<uint64_t>(f.total, global_batches * batch * before.world);
          state_json = ds->MakeState(0, consumed).ToJson();
        }
        auto state = State::FromJson(state_json);
        ASSERT_TRUE(state.ok());
        for (size_t rank = 0; rank < after.world; ++rank) {
          StreamingOptions o;
          o.world_size = after.world, o.rank = rank, o.num_workers = after.workers, o.batch_size = batch;
          o.even_batches = false;
          auto ds = f.Open(o);
          for (size_t w = 0; w < after.workers; ++w) {
            for (uint64_t i : Drain(**ds->Iterate(w, *state))) seen.insert(i);
          }
        }
        ASSERT_EQ(seen.size(), f.total);
        for (uint64_t i = 0; i < f.total; ++i) EXPECT_EQ(seen.count(i), 1u) << i;
      }
    }
  }
}

TEST(StreamingTest, StateJsonAndForeignStateRefused) {
  Fixture f({4, 4});
  Fixture g({4, 5});
  StreamingOptions o;
  auto ds = f.Open(o);
  State s = ds->MakeState(2, 3);
  auto back = State::FromJson(s.ToJson());
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->epoch, 2u);
  EXPECT_EQ(back->samples_consumed, 3u);
  EXPECT_EQ(back->fingerprint, ds->fingerprint());
  EXPECT_EQ(State::FromJson("{").status().code(), Code::kInvalidArgument);
  EXPECT_EQ(State::FromJson(R"({"version":1,"epoch":-1,"samples_consumed":0,"fingerprint":"ab"})").status().code(),
            Code::kInvalidArgument);
  // A saved state without a fingerprint could resume any dataset: refused, saying why.
  auto unnamed = State::FromJson(R"({"version":1,"epoch":0,"samples_consumed":0,"fingerprint":""})");
  EXPECT_EQ(unnamed.status().code(), Code::kInvalidArgument);
  EXPECT_NE(unnamed.status().message().find("non-empty fingerprint"), std::string::npos) << unnamed.status();

  auto other = g.Open(o);
  auto refused = other->Iterate(0, s);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), Code::kInvalidArgument);
  EXPECT_NE(refused.status().message().find(ds->fingerprint()), std::string::npos);
  o.seed = 99;  // same dataset, another order
  EXPECT_EQ(f.Open(o)->Iterate(0, s).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(ds->Iterate(0, ds->MakeState(0, 100)).status().code(), Code::kInvalidArgument);
}

TEST(StreamingTest, MissingShardIsRetriedThenNamed) {
  Fixture f({5, 5, 5});
  auto faults = std::make_shared<object::FaultStore>(f.store, object::FaultConfig{});
  StreamingOptions o;
  o.shuffle = Shuffle::kNone, o.retries = 2;
  const std::string key = "ds/shard-00001.tar";
  faults->FailKey(key, NotFoundError("gone"), -1, object::FaultOp::kGet);
  auto it = *f.Open(o, faults)->Iterate(0, {});
  uint64_t good = 0;
  Status err = NextUntilError(*it, &good);
  EXPECT_EQ(err.code(), Code::kNotFound);
  EXPECT_NE(err.message().find(key), std::string::npos) << err.ToString();
  EXPECT_EQ(good, 5u);  // the first shard, then the error
  EXPECT_EQ(it->stats().shard_fetch_retries, 2u);
  EXPECT_FALSE(it->NextSample().ok());  // stays failed
}

// A store that throws (a bug, bad_alloc) while a shard is fetched fails that
// shard's batch with Internal naming it, on the fetch pool's thread, instead
// of ending the process or hanging the iterator; the shard is not left stuck
// in flight, so a later iterator fetches it once the store behaves.
class ThrowingStore : public object::StoreWrapper {
 public:
  using object::StoreWrapper::Get;
  using object::StoreWrapper::StoreWrapper;
  std::atomic<bool> throwing{true};
  Result<object::GetResult> Get(std::string_view key, const object::GetOptions& options) override {
    if (throwing && key == "ds/shard-00001.tar") throw std::runtime_error("store bug");
    return object::StoreWrapper::Get(key, options);
  }
};

TEST(StreamingTest, AStoreThatThrowsFailsTheShardNotTheProcess) {
  Fixture f({5, 5, 5});
  auto throwing = std::make_shared<ThrowingStore>(f.store);
  StreamingOptions o;
  o.shuffle = Shuffle::kNone, o.retries = 1;
  auto ds = f.Open(o, throwing);
  auto it = *ds->Iterate(0, {});
  uint64_t good = 0;
  Status err = NextUntilError(*it, &good);
  EXPECT_EQ(err.code(), Code::kInternal) << err;
  EXPECT_NE(err.message().find("ds/shard-00001.tar"), std::string::npos) << err;
  EXPECT_EQ(good, 5u);
  it.reset();
  throwing->throwing = false;
  auto again = *ds->Iterate(0, {});
  EXPECT_EQ(Drain(*again).size(), 15u);
}

TEST(StreamingTest, TransientFailureRetriedAndSkipCorruptCounts) {
  Fixture f({5, 5, 5});
  auto faults = std::make_shared<object::FaultStore>(f.store, object::FaultConfig{});
  StreamingOptions o;
  o.shuffle = Shuffle::kNone;
  faults->FailKey("ds/shard-00002.tar", UnavailableError("blip"), 1, object::FaultOp::kGet);
  auto it = *f.Open(o, faults)->Iterate(0, {});
  Stats st;
  EXPECT_EQ(Drain(*it, &st).size(), 15u);
  EXPECT_EQ(st.shard_fetch_retries, 1u);
  // Datasets of the same data share a cache: drop this one's, which holds the good bytes.
  it.reset();

  // Corrupt bytes (same size, so only parsing can tell) with skip_corrupt.
  auto bad = f.store->Get("ds/shard-00001.tar");
  std::string junk(bad->data.size(), 'x');
  ASSERT_TRUE(f.store->Put("ds/shard-00001.tar", Buffer::FromString(junk)).ok());
  o.skip_corrupt = true;
  auto it2 = *f.Open(o)->Iterate(0, {});
  auto got = Drain(*it2, &st);
  EXPECT_EQ(st.shards_skipped, 1u);
  EXPECT_EQ(got.size(), 10u);
  for (uint64_t i : got) EXPECT_TRUE(i < 5 || i >= 10) << i;

  o.skip_corrupt = false;
  auto it3 = *f.Open(o)->Iterate(0, {});
  Status err = NextUntilError(*it3);
  EXPECT_EQ(err.code(), Code::kCorruption);
  EXPECT_NE(err.message().find("ds/shard-00001.tar"), std::string::npos) << err.ToString();
}

TEST(DecodeTest, NpyParsesAndRejects) {
  std::string data(24, '\x01');
  auto a = ParseNpy(Buffer::FromString(Npy("<f4", "(2, 3)", data)), "x");
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(a->dtype, "<f4");
  EXPECT_EQ(a->shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(a->data.size(), 24u);
  EXPECT_TRUE(ParseNpy(Buffer::FromString(Npy("<i8", "()", std::string(8, 0))), "x").ok());
  EXPECT_TRUE(ParseNpy(Buffer::FromString(Npy("|u1", "(0, 5)", "")), "x").ok());
  for (std::string bad : {Npy("<f4", "(2, 3)", data.substr(1)), Npy("<f4", "(2, 3", data), Npy("<q4", "(6,)", data),
                          Npy("<f4", "(99999999999999999, 99999999999)", data), std::string("\x93NUMPY\x09\x00", 8),
                          Npy("<f4", "(2, 3)", data).substr(0, 11), std::string("PK\x03\x04")}) {
    auto r = ParseNpy(Buffer::FromString(bad), "sample 'k' field 'x.npy'");
    EXPECT_EQ(r.status().code(), Code::kCorruption) << r.status().ToString();
  }
  EXPECT_EQ(ParseNpy(Buffer::FromString(Npy("|O", "(1,)", std::string(8, 0))), "x").status().code(),
            Code::kNotSupported);
}

TEST(DecodeTest, NpyIsZeroCopyJsonValidatedExampleRendered) {
  std::string name = UniqueName("loader-test");
  auto store = object::MakeMemStore(name);
  WriteDataset(*store, "", ShardFormat::kTar, {3}, [](uint64_t i) {
    std::string d(16, static_cast<char>(i));
    return std::vector<dataset::Field>{{"x.npy", Buffer::FromString(Npy("<i4", "(4,)", d))},
                                       {"meta.json", Buffer::FromString("{\"i\": " + std::to_string(i * 10) + "}")},
                                       {"bin", Buffer::FromString("raw")}};
  });
  StreamingOptions o;
  o.shuffle = Shuffle::kNone, o.batch_size = 3;
  auto ds = *StreamingDataset::Open(store, "", o);
  auto shard = *store->Get("shard-00000.tar");
  auto it = *ds->Iterate(0, {});
  auto s = **it->NextSample();
  const Value& x = s.fields.at("x.npy");
  EXPECT_EQ(x.kind, Decode::kNpy);
  EXPECT_EQ(x.dtype, "<i4");
  EXPECT_GE(x.bytes.data(), shard.data.data());
  EXPECT_LE(x.bytes.data() + x.bytes.size(), shard.data.data() + shard.data.size());  // a slice of the shard
  EXPECT_EQ(s.fields.at("meta.json").kind, Decode::kJson);
  EXPECT_EQ(s.fields.at("meta.json").json, "{\"i\": 0}");
  EXPECT_EQ(s.fields.at("bin").kind, Decode::kRaw);

  auto batch = **ds->Iterate(0, {}).value()->NextBatch();
  EXPECT_EQ(batch.indices, (std::vector<uint64_t>{0, 1, 2}));
  const Column& col = batch.columns.at("x.npy");
  EXPECT_TRUE(col.offsets.empty());  // fixed-size: [3 x 16]
  EXPECT_EQ(col.data.size(), 48u);
  EXPECT_EQ(col.shape, (std::vector<int64_t>{4}));
  EXPECT_EQ(col.data.data()[16], 1);
  const Column& meta = batch.columns.at("meta.json");
  EXPECT_EQ(meta.offsets.size(), 4u);
  EXPECT_EQ(meta.data.ToString(), "{\"i\": 0}{\"i\": 10}{\"i\": 20}");
  // batch_views: the same rows, each viewing the shard's bytes (no copy per batch).
  o.batch_views = true;
  auto viewing = *StreamingDataset::Open(store, "", o);
  auto vb = **viewing->Iterate(0, {}).value()->NextBatch();
  const Column& vx = vb.columns.at("x.npy");
  EXPECT_EQ(vx.data.size(), 0u);
  ASSERT_EQ(vx.views.size(), 3u);
  EXPECT_EQ(vx.size(), 48u);
  EXPECT_EQ(vx.shape, (std::vector<int64_t>{4}));
  for (size_t r = 0; r < 3; ++r) {
    EXPECT_EQ(vx.views[r].view(), col.data.view().substr(16 * r, 16)) << r;
    EXPECT_GE(vx.views[r].data(), shard.data.data()) << r;
    EXPECT_LE(vx.views[r].data() + 16, shard.data.data() + shard.data.size()) << r;
  }
  EXPECT_EQ(vb.columns.at("meta.json").data.ToString(), meta.data.ToString());

  // Bad JSON names the sample and field.
  auto bad = DecodeField("s1", "meta.json", Buffer::FromString("{nope"), Decode::kJson, nullptr);
  EXPECT_EQ(bad.status().code(), Code::kCorruption);
  EXPECT_NE(bad.status().message().find("sample 's1' field 'meta.json'"), std::string::npos);

  dataset::Example ex;
  ex["label"] = dataset::Feature::Int64s({7});
  ex["img"] = dataset::Feature::Bytes({Buffer::FromString("ab")});
  auto v = DecodeField("s", "e", Buffer::FromString(dataset::EncodeExample(ex)), Decode::kExample, nullptr);
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(
      v->json,
      R"({"features":{"feature":{"img":{"bytesList":{"value":["YWI="]}},"label":{"int64List":{"value":["7"]}}}}})");

  // A feature name that is not UTF-8 is a corrupt Example, not a crash (found by fuzz_npy).
  dataset::Example bad_name;
  bad_name["\x88x"] = dataset::Feature::Int64s({1});
  auto nv = DecodeField("s2", "e", Buffer::FromString(dataset::EncodeExample(bad_name)), Decode::kExample, nullptr);
  EXPECT_EQ(nv.status().code(), Code::kCorruption);
  EXPECT_NE(nv.status().ToString().find("not valid UTF-8"), std::string::npos) << nv.status();
  object::DropMemStore(name);
}

TEST(DecodeTest, TfRecordNumericFeaturesBecomeExampleJson) {
  std::string name = UniqueName("loader-test");
  auto store = object::MakeMemStore(name);
  WriteDataset(*store, "", ShardFormat::kTfRecord, {2, 2}, [](uint64_t i) {
    return std::vector<dataset::Field>{{"cls", Buffer::FromString(std::to_string(i))},
                                       {"img", Buffer::FromString("bytes" + std::to_string(i))}};
  });
  StreamingOptions o;
  o.shuffle = Shuffle::kNone;
  auto it = *(*StreamingDataset::Open(store, "", o))->Iterate(0, {});
  for (uint64_t i = 0; i < 4; ++i) {
    auto s = **it->NextSample();
    EXPECT_EQ(s.index, i);
    EXPECT_EQ(s.fields.at("cls").kind, Decode::kExample);
    EXPECT_EQ(s.fields.at("cls").json, R"({"int64List":{"value":[")" + std::to_string(i) + R"("]}})");
    EXPECT_EQ(s.fields.at("img").kind, Decode::kRaw);
    EXPECT_EQ(s.fields.at("img").bytes.ToString(), "bytes" + std::to_string(i));
  }
  object::DropMemStore(name);
}

TEST(PipelineTest, PrefetchQueueIsBounded) {
  Fixture f(std::vector<uint64_t>(6, 10));
  StreamingOptions o;
  o.batch_size = 2, o.prefetch_batches = 3, o.decode_threads = 2;
  auto it = *f.Open(o)->Iterate(0, {});
  ASSERT_TRUE(WaitFor([&] { return it->stats().queue_depth == 3; }));
  uint64_t n = 0;
  while (true) {
    EXPECT_LE(it->stats().queue_depth, 3u);
    auto b = it->NextBatch();
    ASSERT_TRUE(b.ok());
    if (!*b) break;
    n += (*b)->indices.size();
  }
  EXPECT_EQ(n, 60u);
  Stats st = it->stats();
  EXPECT_EQ(st.samples, 60u);
  EXPECT_EQ(st.batches, 30u);
  EXPECT_EQ(st.shards_fetched + st.shards_from_cache, 6u);
  EXPECT_GT(st.bytes, 0u);
}

TEST(PipelineTest, DestroyingMidEpochStopsBackgroundWork) {
  Fixture f(std::vector<uint64_t>(40, 5));
  auto counting = std::make_shared<CountingStore>(f.store);
  StreamingOptions o;
  o.batch_size = 1, o.prefetch_shards = 2, o.ram_cache_bytes = 0;
  auto ds = f.Open(o, counting);
  {
    auto it = *ds->Iterate(0, {});
    ASSERT_TRUE(it->NextSample().ok());
  }
  uint64_t after = counting->gets();
  EXPECT_LT(after, 20u);  // far from the 40 shards of the epoch
  auto again = *ds->Iterate(0, {});
  ASSERT_TRUE(again->NextSample().ok());
  EXPECT_GT(counting->gets(), after);  // the store still works; nothing else was running
}

// A store whose Gets of shards block until Open(): to hold a fetch in flight without sleeping.
class GateStore : public CountingStore {
 public:
  explicit GateStore(object::ObjectStorePtr inner) : CountingStore(std::move(inner)) {}
  Result<object::GetResult> Get(std::string_view key, const object::GetOptions& options) override {
    if (key.starts_with("ds/shard-")) {
      std::unique_lock lock(gate_mu_);
      ++blocked_;
      gate_cv_.wait(lock, [&] { return open_; });
      --blocked_;
    }
    return CountingStore::Get(key, options);
  }
  void Open() {
    {
      std::lock_guard lock(gate_mu_);
      open_ = true;
    }
    gate_cv_.notify_all();
  }
  size_t blocked() const {
    std::lock_guard lock(gate_mu_);
    return blocked_;
  }

 private:
  mutable std::mutex gate_mu_;
  std::condition_variable gate_cv_;
  bool open_ = false;
  size_t blocked_ = 0;
};

// Several workers of one rank iterated at once over one dataset (one shared
// shard cache, too small for the epoch): each gets exactly its planned part,
// while another thread reads stats.
TEST(PipelineTest, ConcurrentIteratorsOverOneCache) {
  Fixture f({7, 5, 9, 3, 8, 6, 4, 7});
  StreamingOptions o;
  o.num_workers = 4, o.batch_size = 3, o.shuffle_window = 3, o.seed = 11, o.decode_threads = 2;
  o.prefetch_shards = 1, o.prefetch_batches = 2;
  o.ram_cache_bytes = 2 * f.index.shards[0].size;  // evictions while others read
  auto ds = f.Open(o);
  auto order = ds->EpochOrder(0);
  std::vector<std::vector<uint64_t>> got(o.num_workers);
  std::vector<std::unique_ptr<Iterator>> its;
  for (size_t w = 0; w < o.num_workers; ++w) its.push_back(*ds->Iterate(w, ds->MakeState(0, 0)));
  std::atomic<bool> done{false};
  std::thread poller([&] {
    while (!done) {
      for (auto& it : its) (void)it->stats();
      std::this_thread::yield();
    }
  });
  std::vector<std::thread> workers;
  for (size_t w = 0; w < o.num_workers; ++w) {
    workers.emplace_back([&, w] {
      // Mix the two ways of consuming: samples first, then batches.
      for (int i = 0; i < 2; ++i) {
        auto s = its[w]->NextSample();
        ASSERT_TRUE(s.ok() && *s);
        got[w].push_back((*s)->index);
      }
      while (true) {
        auto b = its[w]->NextBatch();
        ASSERT_TRUE(b.ok()) << b.status().ToString();
        if (!*b) break;
        got[w].insert(got[w].end(), (*b)->indices.begin(), (*b)->indices.end());
      }
    });
  }
  for (auto& t : workers) t.join();
  done = true;
  poller.join();
  for (size_t w = 0; w < o.num_workers; ++w) {
    std::vector<uint64_t> want;
    for (auto r : WorkerBatches({f.total, 1, 0, o.num_workers, o.batch_size, false}, 0, w)) {
      for (uint64_t p = r.begin; p < r.end; ++p) want.push_back(order[p]);
    }
    EXPECT_EQ(got[w], want) << "worker " << w;
  }
}

size_t ThreadCount() {
  size_t n = 0;
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/task")) n += e.is_directory();
  return n;
}

// Iterators destroyed at every point of an epoch (background fetches and
// decodes in flight, a failed shard on the way) stop cleanly: their threads
// are gone, nothing reaches the store afterwards, their stats counted what
// the consumer got, and the failed shard is named once the consumer reaches it.
TEST(PipelineTest, DestroyedAtAnyPoint) {
  Fixture f(std::vector<uint64_t>(12, 3));
  auto faults = std::make_shared<object::FaultStore>(f.store, object::FaultConfig{});
  faults->FailKey("ds/shard-00007.tar", UnavailableError("down"), -1, object::FaultOp::kGet);
  StreamingOptions o;
  o.batch_size = 2, o.decode_threads = 3, o.prefetch_shards = 3, o.prefetch_batches = 2, o.retries = 0;
  o.ram_cache_bytes = 3 * f.index.shards[0].size;
  // The iterator's own work only: the next epoch's head is the dataset's and outlives it by design
  // (TheNextEpochsFirstShardsAreFetchedWhileThisOneEnds).
  o.prefetch_next_epoch = false;
  auto ds = f.Open(o, faults);
  const size_t idle = ThreadCount();
  for (uint64_t consume = 0; consume <= f.total; consume += 5) {
    SCOPED_TRACE(consume);
    uint64_t got = 0;
    Status err;
    {
      auto it = *ds->Iterate(0, {});
      EXPECT_GT(ThreadCount(), idle);  // its pipeline runs
      for (uint64_t i = 0; i < consume; ++i) {
        auto s = it->NextSample();
        if (!s.ok()) {
          err = s.status();
          break;
        }
        ASSERT_TRUE(*s);
        ++got;
      }
      Stats st = it->stats();
      EXPECT_GE(st.samples, got);  // whole batches are counted as they are handed over
      EXPECT_LT(st.samples, got + o.batch_size);
      EXPECT_LE(st.queue_depth, o.prefetch_batches);
    }
    const uint64_t requests = faults->counters().requests;  // destroyed: its fetches are over
    EXPECT_TRUE(WaitFor([&] { return ThreadCount() == idle; })) << ThreadCount() << " threads, " << idle << " before";
    if (!err.ok()) {
      EXPECT_NE(err.message().find("ds/shard-00007.tar"), std::string::npos) << err;
    }
    if (consume == f.total) {
      EXPECT_FALSE(err.ok()) << "the epoch includes the failing shard";
    }
    EXPECT_EQ(faults->counters().requests, requests);
  }
}

// The destructor of an iterator whose fetch is stuck in the store returns
// once the store answers, and nothing runs afterwards.
TEST(PipelineTest, DestroyedWhileAFetchIsInTheStore) {
  Fixture f({5, 5, 5});
  auto gate = std::make_shared<GateStore>(f.store);
  StreamingOptions o;
  o.fetch_concurrency = 1;
  auto ds = f.Open(o, gate);
  const uint64_t opened = gate->gets();  // index.json, manifest.json
  auto it = *ds->Iterate(0, {});
  ASSERT_TRUE(WaitFor([&] { return gate->blocked() >= 1; }));
  std::thread destroyer([&] { it.reset(); });
  gate->Open();
  destroyer.join();
  uint64_t gets = gate->gets();
  EXPECT_LE(gets, opened + 3u);  // at most the epoch's 3 shards (already claimed)
  auto again = *ds->Iterate(0, {});
  ASSERT_TRUE(again->NextSample().ok());
}

// Gets of one shard that arrive while it is being fetched share that fetch,
// even when the RAM tier cannot keep the shard.
TEST(CacheTest, ConcurrentGetsOfOneShardShareOneFetch) {
  Fixture f({20});
  auto gate = std::make_shared<GateStore>(f.store);
  ShardCacheOptions co;
  co.ram_bytes = 0;
  co.fetch_concurrency = 1;  // one ranged GET per fetch
  auto cache = *ShardCache::Open(gate, {"ds/shard-00000.tar"}, {f.index.shards[0].size}, co);
  constexpr int kCallers = 4;
  std::vector<Status> status(kCallers);
  std::vector<ShardFetch> got(kCallers);
  std::vector<std::thread> callers;
  for (int i = 0; i < kCallers; ++i) {
    callers.emplace_back([&, i] {
      auto r = cache->Get(0);
      if (r.ok()) got[i] = std::move(*r);
      status[i] = r.status();
    });
  }
  ASSERT_TRUE(WaitFor([&] { return gate->blocked() == 1 && cache->counters().flight_joins == kCallers - 1; }));
  gate->Open();
  for (auto& t : callers) t.join();
  EXPECT_EQ(gate->gets(), 1u);  // (ShardCache reads nothing else)
  int from_store = 0;
  for (int i = 0; i < kCallers; ++i) {
    ASSERT_TRUE(status[i].ok()) << status[i].ToString();
    EXPECT_EQ(got[i].data.size(), f.index.shards[0].size);
    EXPECT_EQ(got[i].data.data(), got[0].data.data());  // the same bytes, not copies
    from_store += got[i].from_store;
  }
  EXPECT_EQ(from_store, 1);
  EXPECT_EQ(cache->counters().fetches, 1u);
  // Done and not kept: the next Get fetches again.
  ASSERT_TRUE(cache->Get(0).ok());
  EXPECT_EQ(gate->gets(), 2u);
}

// Invalidate drops the RAM copy: the next Get goes back to the store.
TEST(CacheTest, InvalidateForcesARefetch) {
  Fixture f({5, 5});
  auto counting = std::make_shared<CountingStore>(f.store);
  auto cache = *ShardCache::Open(counting, {"ds/shard-00000.tar", "ds/shard-00001.tar"},
                                 {f.index.shards[0].size, f.index.shards[1].size}, ShardCacheOptions{});
  ASSERT_TRUE(cache->Get(1).value().from_store);
  EXPECT_FALSE(cache->Get(1).value().from_store);  // RAM
  EXPECT_EQ(counting->gets(), 1u);
  cache->Invalidate(1);
  cache->Invalidate(7);  // no such shard: ignored
  EXPECT_TRUE(cache->Get(1).value().from_store);
  EXPECT_EQ(counting->gets(), 2u);
  EXPECT_EQ(cache->Get(7).status().code(), Code::kInvalidArgument);
}

TEST(CacheTest, DiskCacheLimitTooSmallForWindowIsRefused) {
  Fixture f({10, 10, 10, 10});
  StreamingOptions o;
  o.cache_dir = "/nonexistent-never-created";
  o.cache_limit_bytes = f.index.shards[0].size;  // one shard, window of 4
  o.shuffle_window = 4;
  auto ds = StreamingDataset::Open(f.store, "ds", o);
  ASSERT_FALSE(ds.ok());
  EXPECT_EQ(ds.status().code(), Code::kInvalidArgument);
  EXPECT_NE(ds.status().message().find(std::to_string(o.cache_limit_bytes)), std::string::npos);
}

}  // namespace
}  // namespace strata::loader

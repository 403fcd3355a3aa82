// Unit tests for equal batch counts across ranks (even_batches) and for the
// resume identity (fingerprint with content hashes, saved states without one).
#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <numeric>
#include <set>

#include "dataset/manifest.h"
#include "loader/loader_test_util.h"
#include "loader/plan.h"
#include "loader/streaming_dataset.h"
#include "object/mem_store.h"

namespace strata::loader {
namespace {

using dataset::ShardFormat;
using testing::TextFields;
using testing::UniqueName;
using testing::WriteDataset;

// For many (total, world, batch, workers, consumed): every rank gets the same
// number of batches (DDP's allreduce would hang otherwise). Without drop_last
// every remaining position is dealt once plus fewer than `world` padding
// positions, which repeat the epoch's start; with drop_last exactly the whole
// global batches are dealt. All batches but a rank's last are full.
TEST(EvenBatchesTest, EveryRankGetsTheSameNumberOfBatches) {
  uint64_t padded_cases = 0;
  for (uint64_t total : {0, 1, 2, 5, 7, 13, 24, 31, 100}) {
    for (size_t world = 1; world <= 5; ++world) {
      for (size_t batch = 1; batch <= 6; ++batch) {
        for (size_t workers : {1, 3}) {
          for (uint64_t consumed : {uint64_t{0}, total / 3, total / 2, total}) {
            for (bool drop : {false, true}) {
              SCOPED_TRACE(::testing::Message()
                           << "total " << total << " world " << world << " batch " << batch << " workers " << workers
                           << " consumed " << consumed << " drop " << drop);
              std::map<uint64_t, int> seen;  // position -> times dealt
              std::set<size_t> batch_counts;
              for (size_t rank = 0; rank < world; ++rank) {
                PartitionSpec p{total, world, rank, workers, batch, drop, /*even_batches=*/true};
                auto rb = RankBatches(p, consumed);
                batch_counts.insert(rb.size());
                size_t worker_total = 0;
                for (size_t w = 0; w < workers; ++w) worker_total += WorkerBatches(p, consumed, w).size();
                EXPECT_EQ(worker_total, rb.size());
                for (size_t b = 0; b < rb.size(); ++b) {
                  EXPECT_GT(rb[b].size(), 0u);
                  if (b + 1 < rb.size()) {
                    EXPECT_EQ(rb[b].size(), batch);
                  }
                  for (uint64_t i = rb[b].begin; i < rb[b].end; ++i) ++seen[i];
                }
              }
              EXPECT_EQ(batch_counts.size(), 1u);
              const uint64_t g = batch * world, remain = total - consumed;
              const uint64_t whole = consumed + remain / g * g;
              for (uint64_t i = consumed; i < whole; ++i) EXPECT_EQ(seen[i], 1) << i;
              uint64_t padding = 0;
              for (const auto& [pos, n] : seen) {
                EXPECT_EQ(n, 1) << pos;
                EXPECT_GE(pos, consumed);
                if (pos >= total) {
                  ++padding;
                  EXPECT_LT(OrderSlot(pos, total), world) << "padding repeats the epoch's start";
                }
              }
              if (drop || remain % g == 0) {
                EXPECT_EQ(seen.size(), whole - consumed);
              } else {
                for (uint64_t i = whole; i < total; ++i) EXPECT_EQ(seen[i], 1) << i;
                EXPECT_LT(padding, world);
                padded_cases += padding > 0;
              }
            }
          }
        }
      }
    }
  }
  EXPECT_GT(padded_cases, 100u);  // the grid exercises padding
}

// The same equal counts through real iterators: ranks x workers over a mem
// store; padded samples are the epoch order's first ones, so their content
// is real data; the prefix property of a resume still holds.
struct Fixture {
  std::string name = UniqueName("partition-test");
  object::ObjectStorePtr store = object::MakeMemStore(name);
  uint64_t total = 0;
  explicit Fixture(std::vector<uint64_t> counts) {
    WriteDataset(*store, "ds/", ShardFormat::kTar, counts, TextFields);
    total = std::accumulate(counts.begin(), counts.end(), uint64_t{0});
  }
  ~Fixture() { object::DropMemStore(name); }
};

TEST(EvenBatchesTest, IteratorsOfEveryRankYieldEqualBatchCounts) {
  Fixture f({6, 9, 4, 7, 5});  // 31 samples
  for (size_t world : {2, 3, 4}) {
    for (uint64_t consumed : {0, 8}) {
      std::multiset<uint64_t> seen;
      std::set<uint64_t> batch_counts;
      std::shared_ptr<StreamingDataset> ds;
      for (size_t rank = 0; rank < world; ++rank) {
        StreamingOptions o;
        o.world_size = world, o.rank = rank, o.num_workers = 2, o.batch_size = 3, o.seed = 4;
        ds = *StreamingDataset::Open(f.store, "ds", o);
        uint64_t batches = 0, samples = 0;
        for (size_t w = 0; w < 2; ++w) {
          auto it = *ds->Iterate(w, ds->MakeState(1, consumed));
          while (true) {
            auto b = it->NextBatch();
            ASSERT_TRUE(b.ok()) << b.status();
            if (!*b) break;
            ++batches;
            for (size_t i = 0; i < (*b)->indices.size(); ++i) {
              seen.insert((*b)->indices[i]);
              ++samples;
            }
          }
        }
        if (consumed == 0) {
          EXPECT_EQ(samples, ds->RankSize(rank));
          EXPECT_EQ(ds->RankSize(rank), ds->RankSize(0));  // padding included: equal everywhere
        }
        batch_counts.insert(batches);
      }
      EXPECT_EQ(batch_counts.size(), 1u) << "world " << world;
      auto order = ds->EpochOrder(1);
      for (uint64_t p = consumed; p < f.total; ++p) EXPECT_GE(seen.count(order[p]), 1u) << p;
      uint64_t extra = seen.size() - (f.total - consumed);
      EXPECT_LT(extra, world);
      for (uint64_t j = 0; j < extra; ++j) {
        EXPECT_GE(seen.count(order[j]), 1u) << "padding is the epoch's start";
      }
    }
  }
}

// drop_last with even_batches drops the partial global batch for every rank.
TEST(EvenBatchesTest, DropLastDropsThePartialGlobalBatchEverywhere) {
  Fixture f({6, 9, 4, 7, 5});  // 31 samples; world 2 x batch 4: 3 whole global batches (24)
  std::multiset<uint64_t> seen;
  for (size_t rank = 0; rank < 2; ++rank) {
    StreamingOptions o;
    o.world_size = 2, o.rank = rank, o.batch_size = 4, o.drop_last = true;
    auto ds = *StreamingDataset::Open(f.store, "ds", o);
    EXPECT_EQ(ds->RankSize(rank), 12u);
    auto it = *ds->Iterate(0, ds->MakeState(0, 0));
    uint64_t batches = 0;
    while (auto b = it->NextBatch().value()) {
      EXPECT_EQ(b->indices.size(), 4u);
      seen.insert(b->indices.begin(), b->indices.end());
      ++batches;
    }
    EXPECT_EQ(batches, 3u);
  }
  EXPECT_EQ(seen.size(), 24u);
  EXPECT_EQ(std::set<uint64_t>(seen.begin(), seen.end()).size(), 24u);
}

// ---- resume identity ------------------------------------------------------------

// Writes manifest.json beside index.json with each shard's sha256 (as strata
// pack does), `salt` standing in for the bytes' hash.
void WriteManifest(object::ObjectStore& store, dataset::Manifest m, const std::string& salt) {
  for (auto& s : m.shards) {
    s.sha256 = std::string(64, '0');
    for (size_t i = 0; i < salt.size() && i < 64; ++i) s.sha256[i] = salt[i];
  }
  ASSERT_TRUE(store.Put("ds/manifest.json", Buffer::FromString(dataset::EncodeManifest(m))).ok());
}

TEST(FingerprintTest, ContentHashesFromTheManifestTellRegeneratedDatasetsApart) {
  Fixture f({4, 4, 4});
  auto index = dataset::ParseManifest(f.store->Get("ds/index.json")->data.view(), "index.json");
  ASSERT_TRUE(index.ok());
  auto open = [&] { return *StreamingDataset::Open(f.store, "ds", StreamingOptions{}); };
  const std::string no_hashes = open()->fingerprint();

  WriteManifest(*f.store, *index, "aa");
  auto original = open();
  EXPECT_NE(original->fingerprint(), no_hashes);  // the hashes count
  State saved = original->MakeState(0, 4);
  ASSERT_TRUE(original->Iterate(0, saved).ok());

  // Regenerated: same names, sizes and counts, other bytes.
  WriteManifest(*f.store, *index, "bb");
  auto regenerated = open();
  EXPECT_NE(regenerated->fingerprint(), original->fingerprint());
  auto refused = regenerated->Iterate(0, *State::FromJson(saved.ToJson()));
  EXPECT_EQ(refused.status().code(), Code::kInvalidArgument);
  EXPECT_NE(refused.status().message().find(saved.fingerprint), std::string::npos) << refused.status();

  // A manifest listing other shards than the index is a broken dataset, said so.
  dataset::Manifest other = *index;
  other.shards[1].size += 1;
  WriteManifest(*f.store, other, "cc");
  auto broken = StreamingDataset::Open(f.store, "ds", StreamingOptions{});
  EXPECT_EQ(broken.status().code(), Code::kCorruption);
  EXPECT_NE(broken.status().message().find("manifest.json"), std::string::npos) << broken.status();
}

}  // namespace
}  // namespace strata::loader

// Unit tests (part of loader_test) for the cache shared by the datasets of a
// process: ranks run as threads fetch and parse each shard once. Mem stores
// only, no sleeps.
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <numeric>
#include <thread>

#include "base/hash.h"
#include "io/durable.h"
#include "loader/internal.h"
#include "loader/loader_test_util.h"
#include "loader/shard_cache.h"
#include "loader/streaming_dataset.h"
#include "object/mem_store.h"

namespace strata::loader {
namespace {

using testing::CountingStore;
using testing::TextFields;
using testing::WriteDataset;

struct SharedFixture {
  std::string name;
  object::ObjectStorePtr store;
  dataset::Manifest index;
  uint64_t total = 0;
  std::vector<std::string> keys;
  std::vector<uint64_t> sizes;
  explicit SharedFixture(std::vector<uint64_t> counts) {
    static std::atomic<int> n{0};
    name = "shared-cache-test-" + std::to_string(n++);
    store = object::MakeMemStore(name);
    index = WriteDataset(*store, "ds/", dataset::ShardFormat::kTar, counts, TextFields);
    total = std::accumulate(counts.begin(), counts.end(), uint64_t{0});
    for (const auto& s : index.shards) keys.push_back("ds/" + s.name), sizes.push_back(s.size);
  }
  ~SharedFixture() { object::DropMemStore(name); }
};

// Drains (rank, worker) iterators of `ranks` concurrently over one epoch;
// returns every sample index seen and the iterators' summed stats.
std::vector<uint64_t> RunEpoch(const std::vector<std::shared_ptr<StreamingDataset>>& ranks, uint64_t epoch,
                               Stats* sum) {
  const size_t workers = ranks[0]->options().num_workers;
  std::vector<std::vector<uint64_t>> got(ranks.size() * workers);
  std::vector<Stats> stats(got.size());
  std::vector<std::thread> threads;
  for (size_t r = 0; r < ranks.size(); ++r) {
    for (size_t w = 0; w < workers; ++w) {
      threads.emplace_back([&, r, w] {
        auto it = ranks[r]->Iterate(w, ranks[r]->MakeState(epoch, 0));
        ASSERT_TRUE(it.ok()) << it.status().ToString();
        while (true) {
          auto s = (*it)->NextSample();
          ASSERT_TRUE(s.ok()) << s.status().ToString();
          if (!*s) break;
          EXPECT_EQ((*s)->fields.at("txt").bytes.ToString(), "sample-" + std::to_string((*s)->index));
          got[r * workers + w].push_back((*s)->index);
        }
        stats[r * workers + w] = (*it)->stats();
      });
    }
  }
  for (auto& t : threads) t.join();
  std::vector<uint64_t> all;
  *sum = Stats{};
  for (size_t i = 0; i < got.size(); ++i) {
    all.insert(all.end(), got[i].begin(), got[i].end());
    sum->shards_fetched += stats[i].shards_fetched;
    sum->shards_from_cache += stats[i].shards_from_cache;
    sum->shards_parsed += stats[i].shards_parsed;
  }
  std::sort(all.begin(), all.end());
  return all;
}

std::vector<std::shared_ptr<StreamingDataset>> OpenRanks(const SharedFixture& f, object::ObjectStorePtr store,
                                                         size_t world, bool share, bool next_epoch_heads = false) {
  std::vector<std::shared_ptr<StreamingDataset>> ranks;
  for (size_t r = 0; r < world; ++r) {
    StreamingOptions o;
    o.world_size = world, o.rank = r, o.num_workers = 2, o.batch_size = 2, o.shuffle_window = 4, o.seed = 9;
    o.share_cache = share;
    o.even_batches = false;  // every sample exactly once (no padding)
    // The tests sum the iterators' fetches and parses: a worker's head of the next epoch
    // would fetch and parse, counted by no iterator, a shard another rank has yet to ask for.
    o.prefetch_next_epoch = next_epoch_heads;
    auto ds = StreamingDataset::Open(store, "ds", o);
    EXPECT_TRUE(ds.ok()) << ds.status().ToString();
    ranks.push_back(*ds);
  }
  return ranks;
}

// Three ranks (two workers each) in one process, each with its own
// StreamingDataset, read concurrently: every shard is fetched once and parsed
// once in the cold epoch, and the warm epoch fetches and parses nothing.
TEST(SharedCacheTest, RanksInOneProcessFetchAndParseEachShardOnce) {
  SharedFixture f({7, 5, 9, 3, 8, 6, 4, 7});
  const uint64_t shards = f.keys.size();
  auto counting = std::make_shared<CountingStore>(f.store);
  auto ranks = OpenRanks(f, counting, 3, /*share=*/true);
  const uint64_t opened = counting->gets();  // each Open read the index
  std::vector<uint64_t> every(f.total);
  std::iota(every.begin(), every.end(), 0);
  Stats s;
  EXPECT_EQ(RunEpoch(ranks, 0, &s), every);
  EXPECT_EQ(counting->gets() - opened, shards);  // one GET per shard (each is one part)
  EXPECT_EQ(s.shards_fetched, shards);
  EXPECT_EQ(s.shards_parsed, shards);
  EXPECT_GT(s.shards_from_cache, 0u);  // the other iterators shared them

  EXPECT_EQ(RunEpoch(ranks, 1, &s), every);
  EXPECT_EQ(counting->gets() - opened, shards);  // warm: nothing fetched
  EXPECT_EQ(s.shards_fetched, 0u);
  EXPECT_EQ(s.shards_parsed, 0u);
}

// With each worker fetching its next epoch's head while its epoch ends (the
// default), a head may fetch a shard another rank has yet to ask for: the
// shared cache still takes each shard from the store once, over both epochs.
TEST(SharedCacheTest, NextEpochHeadsStillFetchEachShardOnce) {
  SharedFixture f({7, 5, 9, 3, 8, 6, 4, 7});
  const uint64_t shards = f.keys.size();
  auto counting = std::make_shared<CountingStore>(f.store);
  auto ranks = OpenRanks(f, counting, 3, /*share=*/true, /*next_epoch_heads=*/true);
  const uint64_t opened = counting->gets();
  std::vector<uint64_t> every(f.total);
  std::iota(every.begin(), every.end(), 0);
  Stats s;
  EXPECT_EQ(RunEpoch(ranks, 0, &s), every);
  EXPECT_EQ(RunEpoch(ranks, 1, &s), every);
  EXPECT_EQ(counting->gets() - opened, shards);
}

// The same ranks with share_cache off: each fetches and parses on its own
// (what the sharing above saves).
TEST(SharedCacheTest, UnsharedRanksEachFetch) {
  SharedFixture f({7, 5, 9, 3, 8, 6, 4, 7});
  const uint64_t shards = f.keys.size();
  auto counting = std::make_shared<CountingStore>(f.store);
  auto ranks = OpenRanks(f, counting, 3, /*share=*/false);
  const uint64_t opened = counting->gets();
  Stats s;
  EXPECT_EQ(RunEpoch(ranks, 0, &s).size(), f.total);
  EXPECT_GT(counting->gets() - opened, shards);
  EXPECT_GT(s.shards_parsed, shards);
}

TEST(SharedCacheTest, OneCachePerIdentityWithTheLargestBounds) {
  SharedFixture f({3, 3});
  ShardCacheOptions small, large;
  small.ram_bytes = 1 << 20, small.disk_bytes = 1 << 20;
  large.ram_bytes = 4 << 20, large.disk_bytes = 2 << 20;
  auto a = *ShardCache::OpenShared("id", f.store, f.keys, f.sizes, small);
  auto b = *ShardCache::OpenShared("id", f.store, f.keys, f.sizes, large);
  auto other = *ShardCache::OpenShared("other-id", f.store, f.keys, f.sizes, small);
  EXPECT_EQ(a.get(), b.get());
  EXPECT_NE(a.get(), other.get());
  EXPECT_EQ(a->ram_bytes(), 4u << 20);
  EXPECT_EQ(a->disk_bytes(), 2u << 20);
  auto c = *ShardCache::OpenShared("id", f.store, f.keys, f.sizes, small);  // never lowered
  EXPECT_EQ(c->ram_bytes(), 4u << 20);
  // Another index under an identity already taken: a cache of its own, not the wrong shards.
  auto mismatched = *ShardCache::OpenShared("id", f.store, {f.keys[0]}, {f.sizes[0]}, small);
  EXPECT_NE(mismatched.get(), a.get());
  ASSERT_TRUE(a->Get(0).ok());
  EXPECT_EQ(a->counters().fetches, 1u);
  // Once its last user is gone the identity opens a new, empty cache.
  a.reset(), b.reset(), c.reset();
  auto fresh = *ShardCache::OpenShared("id", f.store, f.keys, f.sizes, small);
  EXPECT_EQ(fresh->counters().fetches, 0u);
  EXPECT_EQ(fresh->ram_bytes(), 1u << 20);
}

ShardParser CountingParser(std::atomic<int>& calls, uint64_t extra = 0) {
  return [&calls, extra](const Buffer& bytes, bool) -> Result<ParsedValue> {
    ++calls;
    auto p = std::make_shared<ParsedShard>();
    p->bytes = bytes;
    return ParsedValue{std::move(p), extra};
  };
}

// Concurrent GetParsed calls of one shard share one fetch and one parse.
TEST(SharedCacheTest, ConcurrentGetParsedParsesOnce) {
  SharedFixture f({20});
  auto counting = std::make_shared<CountingStore>(f.store);
  auto cache = *ShardCache::Open(counting, f.keys, f.sizes, ShardCacheOptions{});
  std::atomic<int> calls{0};
  ShardParser parse = CountingParser(calls);
  constexpr int kCallers = 4;
  // (Status and value kept apart: a vector of Result copies trips GCC's -Wmaybe-uninitialized at -O1.)
  std::vector<Status> status(kCallers);
  std::vector<ParsedFetch> got(kCallers);
  std::vector<std::thread> callers;
  for (int i = 0; i < kCallers; ++i) {
    callers.emplace_back([&, i] {
      auto r = cache->GetParsed(0, parse);
      if (r.ok()) got[i] = std::move(*r);
      status[i] = r.status();
    });
  }
  for (auto& t : callers) t.join();
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(counting->gets(), 1u);
  int here = 0, from_store = 0;
  for (int i = 0; i < kCallers; ++i) {
    ASSERT_TRUE(status[i].ok()) << status[i].ToString();
    EXPECT_EQ(got[i].parsed.get(), got[0].parsed.get());
    here += got[i].parsed_here, from_store += got[i].from_store;
  }
  EXPECT_EQ(here, 1);
  EXPECT_EQ(from_store, 1);
  auto c = cache->counters();
  EXPECT_EQ(c.parses, 1u);
  EXPECT_EQ(c.parse_hits, kCallers - 1u);
}

// Bytes that fail to parse are dropped: the next call refetches them.
TEST(SharedCacheTest, ParseFailureInvalidates) {
  SharedFixture f({5});
  auto counting = std::make_shared<CountingStore>(f.store);
  auto cache = *ShardCache::Open(counting, f.keys, f.sizes, ShardCacheOptions{});
  int calls = 0;
  ShardParser flaky = [&](const Buffer& bytes, bool) -> Result<ParsedValue> {
    if (++calls == 1) return CorruptionError("bad bytes");
    auto p = std::make_shared<ParsedShard>();
    p->bytes = bytes;
    return ParsedValue{std::move(p), 0};
  };
  EXPECT_EQ(cache->GetParsed(0, flaky).status().code(), Code::kCorruption);
  auto again = cache->GetParsed(0, flaky);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_TRUE(again->from_store);
  EXPECT_EQ(counting->gets(), 2u);
  EXPECT_EQ(cache->GetParsed(7, flaky).status().code(), Code::kInvalidArgument);
}

// A shard one user (rank) released but another still reads is not the first
// evicted; the parsed form's extra bytes count towards the RAM bound.
TEST(SharedCacheTest, ReleasedByAllUsersIsEvictedFirst) {
  SharedFixture f({4, 4, 4});
  ASSERT_EQ(f.sizes[0], f.sizes[1]);
  ASSERT_EQ(f.sizes[0], f.sizes[2]);
  auto counting = std::make_shared<CountingStore>(f.store);
  ShardCacheOptions co;
  const uint64_t extra = 100;
  co.ram_bytes = 2 * (f.sizes[0] + extra) + extra / 2;  // two parsed shards, not three
  auto cache = *ShardCache::Open(counting, f.keys, f.sizes, co);
  std::atomic<int> calls{0};
  ShardParser parse = CountingParser(calls, extra);
  ASSERT_TRUE(cache->GetParsed(0, parse).ok());  // two users of shard 0
  ASSERT_TRUE(cache->GetParsed(0, parse).ok());
  ASSERT_TRUE(cache->GetParsed(1, parse).ok());
  EXPECT_EQ(cache->counters().ram_bytes, 2 * (f.sizes[0] + extra));
  cache->Release(1);                             // shard 1: no user left
  cache->Release(0);                             // shard 0: one user left
  ASSERT_TRUE(cache->GetParsed(2, parse).ok());  // evicts one: shard 1
  EXPECT_EQ(counting->gets(), 3u);
  EXPECT_FALSE(cache->GetParsed(0, parse)->parsed_here);  // still parsed in RAM
  EXPECT_EQ(counting->gets(), 3u);
  EXPECT_TRUE(cache->GetParsed(1, parse)->from_store);
  EXPECT_EQ(calls, 4);
}

// The parser is told the bytes were verified only when the disk tier checked
// its hash on load: bytes from the store (and RAM copies of them) must be
// checked by the format, so every byte is verified exactly once.
TEST(SharedCacheTest, ParserSkipsChecksumsOnlyForHashCheckedDiskCopies) {
  SharedFixture f({5, 5});
  const std::string dir = *io::MakeTempDir("strata-shared-cache-");
  ShardCacheOptions co;
  co.dir = dir;
  std::vector<int> seen;  // -1: unverified, 1: verified
  ShardParser parse = [&](const Buffer& bytes, bool verified) -> Result<ParsedValue> {
    seen.push_back(verified ? 1 : -1);
    auto p = std::make_shared<ParsedShard>();
    p->bytes = bytes;
    return ParsedValue{std::move(p), 0};
  };
  {
    auto cache = *ShardCache::Open(f.store, f.keys, f.sizes, co);
    ASSERT_TRUE(cache->GetParsed(0, parse).ok());  // from the store, written to disk
    EXPECT_TRUE(cache->Get(1).ok());               // raw bytes from the store kept in RAM
    ASSERT_TRUE(cache->GetParsed(1, parse).ok());  // parsed from that unverified RAM copy
  }
  co.ram_bytes = 0;  // nothing in RAM: the second cache loads the files
  auto cache = *ShardCache::Open(f.store, f.keys, f.sizes, co);
  auto got = cache->GetParsed(0, parse);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_FALSE(got->from_store);
  EXPECT_EQ(cache->counters().disk_hits, 1u);
  EXPECT_EQ(seen, (std::vector<int>{-1, -1, 1}));
  EXPECT_TRUE(io::RemoveAll(io::DefaultFileSystem(), dir).ok());
}

// Bytes from the store that fail the format's checks never reach the disk
// tier: another process would load that copy as hash-verified and skip them.
TEST(SharedCacheTest, BytesFailingTheParserAreNeverWrittenToDisk) {
  SharedFixture f({5, 5});
  const std::string dir = *io::MakeTempDir("strata-shared-cache-");
  ShardCacheOptions co;
  co.dir = dir;
  bool corrupt = true;  // the first fetch fails its checks, as a record with a bad CRC would
  int parses = 0, disk_copies_while_checking = 0;
  ShardParser parse = [&](const Buffer& bytes, bool verified) -> Result<ParsedValue> {
    ++parses;
    if (corrupt && !verified) {
      for (const auto& e : std::filesystem::directory_iterator(dir))
        disk_copies_while_checking += e.path().extension() == ".shard";
      return CorruptionError("record CRC mismatch");
    }
    auto p = std::make_shared<ParsedShard>();
    p->bytes = bytes;
    return ParsedValue{std::move(p), 0};
  };
  {
    auto cache = *ShardCache::Open(f.store, f.keys, f.sizes, co);
    auto bad = cache->GetParsed(0, parse);
    EXPECT_EQ(bad.status().code(), Code::kCorruption);
    EXPECT_EQ(parses, 1) << "the store's bytes are parsed once";
    EXPECT_EQ(disk_copies_while_checking, 0) << "a copy was on disk, loadable as verified, before its checks ran";
  }
  co.ram_bytes = 0;
  auto cache = *ShardCache::Open(f.store, f.keys, f.sizes, co);
  corrupt = false;
  auto got = cache->GetParsed(0, parse);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_TRUE(got->from_store) << "a disk copy of bytes that failed their checks was kept";
  EXPECT_EQ(cache->counters().disk_hits, 0u);
  cache->FlushDiskWrites();  // (its good copy is being written behind)
  EXPECT_TRUE(io::RemoveAll(io::DefaultFileSystem(), dir).ok());
}

// Bytes from the store are checked against the manifest's sha256 once per
// ETag: a refetch answered with the ETag already verified is not hashed again
// (an ETag names one content), one answered with another ETag (a stale
// replica, a replacement) is, and bytes that do not match are refused.
TEST(SharedCacheTest, EachStoreVersionIsHashCheckedOnce) {
  SharedFixture f({4, 4});
  ShardCacheOptions co;
  co.ram_bytes = 0;  // every Get goes to the store
  for (const auto& key : f.keys) {
    auto got = f.store->Get(key);
    ASSERT_TRUE(got.ok()) << got.status();
    co.sha256.push_back(ToHex(Sha256(got->data.data(), got->data.size())));
  }
  auto cache = *ShardCache::Open(f.store, f.keys, f.sizes, co);
  ASSERT_TRUE(cache->Get(0).ok());
  ASSERT_TRUE(cache->Get(0).ok());
  ASSERT_TRUE(cache->Get(1).ok());
  EXPECT_EQ(cache->counters().fetches, 3u);
  EXPECT_EQ(cache->counters().sha256_bytes, f.sizes[0] + f.sizes[1]);
  // Shard 0 replaced in place by other bytes of the same size: a new ETag, hashed, refused.
  auto old = *f.store->Get(f.keys[0]);
  std::string other = old.data.ToString();
  other[other.size() / 3] ^= 0x5a;
  ASSERT_TRUE(f.store->Put(f.keys[0], Buffer::FromString(other)).ok());
  auto replaced = cache->Get(0);
  ASSERT_FALSE(replaced.ok());
  EXPECT_EQ(replaced.status().code(), Code::kCorruption) << replaced.status();
  EXPECT_EQ(cache->counters().sha256_bytes, 2 * f.sizes[0] + f.sizes[1]);
}

// With both recorded, the CRC-32C is what is checked (8x cheaper), with the
// same once-per-ETag rule, and a replaced shard is refused naming it.
TEST(SharedCacheTest, ACrc32cRecordedIsCheckedInsteadOfTheSha256) {
  SharedFixture f({4, 4});
  ShardCacheOptions co;
  co.ram_bytes = 0;
  for (const auto& key : f.keys) {
    auto got = f.store->Get(key);
    ASSERT_TRUE(got.ok()) << got.status();
    co.sha256.push_back(ToHex(Sha256(got->data.data(), got->data.size())));
    co.crc32c.push_back(Crc32cHex(Crc32c(got->data.data(), got->data.size())));
  }
  auto cache = *ShardCache::Open(f.store, f.keys, f.sizes, co);
  auto first = cache->Get(0);
  ASSERT_TRUE(first.ok()) << first.status();
  // Checked whole here: the parser need not check its per-record CRCs again.
  EXPECT_TRUE(first->from_store && first->verified);
  auto again = cache->Get(0);
  ASSERT_TRUE(again.ok()) << again.status();
  // The same ETag is not hashed again, so this transfer's bytes are left to the parser.
  EXPECT_TRUE(again->from_store && !again->verified);
  ASSERT_TRUE(cache->Get(1).ok());
  EXPECT_EQ(cache->counters().crc32c_bytes, f.sizes[0] + f.sizes[1]);
  EXPECT_EQ(cache->counters().sha256_bytes, 0u);
  auto old = *f.store->Get(f.keys[1]);
  std::string other = old.data.ToString();
  other[other.size() / 2] ^= 0x01;  // one bit: CRC-32C catches every 1-bit error
  ASSERT_TRUE(f.store->Put(f.keys[1], Buffer::FromString(other)).ok());
  auto replaced = cache->Get(1);
  ASSERT_FALSE(replaced.ok());
  EXPECT_EQ(replaced.status().code(), Code::kCorruption) << replaced.status();
  EXPECT_NE(replaced.status().message().find("crc32c"), std::string::npos) << replaced.status();
  EXPECT_TRUE(replaced.status().retryable());
  EXPECT_EQ(cache->counters().crc32c_bytes, f.sizes[0] + 2 * f.sizes[1]);
}

}  // namespace
}  // namespace strata::loader

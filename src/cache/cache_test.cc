// Unit tests (no disk, no sleeping): block format, RAM tier, single-flight,
// read-ahead, invalidation, TTLs, backend faults. Mem stores and FakeClock.
#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "cache/block_cache.h"
#include "cache/block_format.h"
#include "cache/cache_test_util.h"
#include "cache/cached_store.h"
#include "cache/frequency_sketch.h"
#include "cache/readahead.h"
#include "cache/write_behind.h"
#include "object/fault_store.h"
#include "object/mem_store.h"
#include "object/store_wrapper.h"

namespace strata::cache {
namespace {
using testing_cache::CountingStore;
using testing_cache::Prefix;
using testing_cache::RandomBytes;
using testing_cache::Range;

constexpr uint64_t kBlock = 64 << 10;

TEST(BlockFormat, RoundTripAndEveryHeaderByteIsChecked) {
  BlockHeader h{BlockId{"mem://b", "dir/key", "etag-1", kBlock, 7}, 1234, 0xabcdef, 1700000000000};
  std::vector<uint8_t> page(kBlockHeaderSize);
  ASSERT_TRUE(EncodeBlockHeader(h, page.data()).ok());
  auto back = DecodeBlockHeader(page.data(), page.size());
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->id, h.id);
  EXPECT_EQ(back->length, 1234u);
  EXPECT_EQ(back->data_hash, 0xabcdefu);
  EXPECT_EQ(back->created_ms, 1700000000000);
  size_t used = 72 + h.id.store.size() + h.id.key.size() + h.id.etag.size() + 8;
  for (size_t i = 0; i < used; ++i) {
    auto copy = page;
    copy[i] ^= 0x40;
    EXPECT_FALSE(DecodeBlockHeader(copy.data(), copy.size()).ok()) << "byte " << i;
  }
  EXPECT_FALSE(DecodeBlockHeader(page.data(), 40).ok());
  h.length = kBlock + 1;
  EXPECT_FALSE(EncodeBlockHeader(h, page.data()).ok());
}

TEST(BlockKey, EtagAndBlockSizeChangeTheName) {
  BlockId a{"mem://b", "k", "e1", kBlock, 0};
  BlockId b = a;
  b.etag = "e2";
  BlockId c = a;
  c.block_size = 2 * kBlock;
  EXPECT_FALSE(HashBlockId(a) == HashBlockId(b));
  EXPECT_FALSE(HashBlockId(a) == HashBlockId(c));
  EXPECT_EQ(HashBlockId(a).Hex().size(), 32u);
}

// The hash names block files on disk: it must not change across builds or
// hosts (this value is what x86 builds before little-endian encoding wrote).
TEST(BlockKey, HashIsStableAcrossBuilds) {
  BlockId id{"mem://golden", "dir/key.bin", "\"etag-1\"", 4u << 20, 7};
  EXPECT_EQ(HashBlockId(id).Hex(), "e0064da4cd0fe4f6e9ee5047b54a94ae");
}

CachedBlock Blk(const std::string& key, size_t size) {
  return CachedBlock{BlockId{"s", key, "e", kBlock, 0}, RandomBytes(size, 1), 0, false};
}

TEST(RamTier, EvictsLeastRecentlyUsedAndNeverPassesCapacity) {
  RamTier ram(3 * 1000);
  std::vector<CachedBlock> evicted;
  for (std::string k : {"a", "b", "c"})
    ASSERT_TRUE(ram.Put(HashBlockId(Blk(k, 1000).id), Blk(k, 1000), false, &evicted));
  EXPECT_TRUE(evicted.empty());
  ASSERT_TRUE(ram.Get(HashBlockId(Blk("a", 1).id)).has_value());  // a becomes most recent
  ASSERT_TRUE(ram.Put(HashBlockId(Blk("d", 1000).id), Blk("d", 1000), false, &evicted));
  ASSERT_EQ(evicted.size(), 1u);
  EXPECT_EQ(evicted[0].id.key, "b");
  ASSERT_TRUE(ram.Put(HashBlockId(Blk("e", 2000).id), Blk("e", 2000), false, &evicted));
  ASSERT_EQ(evicted.size(), 3u);  // c then a went
  EXPECT_EQ(evicted[1].id.key, "c");
  EXPECT_EQ(evicted[2].id.key, "a");
  EXPECT_LE(ram.bytes(), 3000u);
  EXPECT_FALSE(ram.Put(HashBlockId(Blk("big", 3001).id), Blk("big", 3001), false, &evicted));
}

TEST(RamTier, PinnedBlocksStay) {
  RamTier ram(2000);
  std::vector<CachedBlock> evicted;
  ASSERT_TRUE(ram.Put(HashBlockId(Blk("p", 1000).id), Blk("p", 1000), true, &evicted));
  ASSERT_TRUE(ram.Put(HashBlockId(Blk("x", 1000).id), Blk("x", 1000), false, &evicted));
  ASSERT_TRUE(ram.Put(HashBlockId(Blk("y", 1000).id), Blk("y", 1000), false, &evicted));
  ASSERT_EQ(evicted.size(), 1u);
  EXPECT_EQ(evicted[0].id.key, "x");
  EXPECT_FALSE(ram.Put(HashBlockId(Blk("z", 2000).id), Blk("z", 2000), false, &evicted));
  EXPECT_TRUE(ram.Contains(HashBlockId(Blk("p", 1).id)));
}

TEST(Readahead, SequentialGrowsRandomResets) {
  ReadaheadState s;
  const uint64_t size = 100 * kBlock;
  EXPECT_EQ(PlanReadahead(s, 0, 1000, size, kBlock, 8 * kBlock).end_block, 0u);  // first read: unknown
  auto p = PlanReadahead(s, 1000, 2000, size, kBlock, 8 * kBlock);
  EXPECT_EQ(p.first_block, 1u);
  EXPECT_EQ(p.end_block, 2u);  // one block ahead
  p = PlanReadahead(s, 2000, kBlock, size, kBlock, 8 * kBlock);
  EXPECT_EQ(p.first_block, 2u);  // block 1 already issued
  EXPECT_EQ(p.end_block, 3u);    // window 2 blocks past the end of the read
  for (int i = 0; i < 10; ++i) p = PlanReadahead(s, s.next_offset, s.next_offset + kBlock, size, kBlock, 8 * kBlock);
  EXPECT_EQ(s.window, 8 * kBlock);                                                // capped
  p = PlanReadahead(s, 50 * kBlock, 50 * kBlock + 10, size, kBlock, 8 * kBlock);  // a jump
  EXPECT_EQ(p.end_block, 0u);
  EXPECT_EQ(s.window, 0u);
  p = PlanReadahead(s, 90 * kBlock, 90 * kBlock + 10, size, kBlock, 8 * kBlock);
  EXPECT_EQ(p.end_block, 0u);
}

struct Fixture {
  explicit Fixture(CacheOptions copt = {}, CachedStoreOptions sopt = {}) {
    mem = object::MakeMemStore();
    counting = std::make_shared<CountingStore>(mem);
    copt.block_size = kBlock;
    if (copt.ram_bytes == (1ull << 30)) copt.ram_bytes = 64 * kBlock;
    cache = BlockCache::Open(copt).value();
    sopt.fetch_part_size = 16 << 10;
    if (!sopt.clock) sopt.clock = &clock;
    store = std::make_shared<CachedStore>(counting, cache, sopt);
  }
  Buffer Add(const std::string& key, size_t size, uint64_t seed = 1) {
    Buffer b = RandomBytes(size, seed);
    EXPECT_TRUE(mem->Put(key, b).ok());
    return b;
  }
  FakeClock clock;
  object::ObjectStorePtr mem;
  std::shared_ptr<CountingStore> counting;
  std::shared_ptr<BlockCache> cache;
  std::shared_ptr<CachedStore> store;
};

TEST(CachedStore, RangesMatchTheBackendAndWarmReadsAreFree) {
  Fixture f;
  Buffer data = f.Add("obj", 5 * kBlock + 123);
  Random rnd(7);
  for (int i = 0; i < 200; ++i) {
    uint64_t off = rnd.Uniform(data.size()), len = rnd.Uniform(3 * kBlock) + 1;
    auto r = f.store->Get("obj", Range(object::ByteRange::Of(off, len)));
    ASSERT_TRUE(r.ok()) << r.status();
    ASSERT_EQ(r->data, data.Slice(off, len)) << off << "+" << len;
    EXPECT_EQ(r->offset, off);
    EXPECT_EQ(r->info.size, data.size());
  }
  auto last = f.store->Get("obj", Range(object::ByteRange::Last(100)));
  ASSERT_TRUE(last.ok());
  EXPECT_EQ(last->data, data.Slice(data.size() - 100));
  f.store->WaitForReadahead();
  int gets = f.counting->gets.load();
  auto all = f.store->Get("obj");
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->data, data);
  EXPECT_EQ(f.counting->gets.load(), gets);  // all six blocks were cached
  EXPECT_EQ(f.store->Get("obj", Range(object::ByteRange::From(data.size()))).status().code(), Code::kOutOfRange);
  EXPECT_EQ(f.store->Get("missing").status().code(), Code::kNotFound);
  f.Add("empty", 0);
  auto empty = f.store->Get("empty");
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->data.empty());
}

TEST(CachedStore, SingleBlockReadsAreZeroCopy) {
  Fixture f;
  f.Add("obj", 2 * kBlock);
  auto a = f.store->Get("obj", Range(object::ByteRange::Of(10, 100)));
  auto b = f.store->Get("obj", Range(object::ByteRange::Of(200, 100)));
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(b->data.data() - a->data.data(), 190);  // slices of one cached block
}

TEST(CachedStore, SingleFlightOneFetchForManyReaders) {
  CachedStoreOptions sopt;
  sopt.readahead_threads = 0;
  Fixture f({}, sopt);
  Buffer data = f.Add("obj", kBlock);
  ASSERT_TRUE(f.store->Head("obj").ok());
  f.counting->CloseGate();
  constexpr int kReaders = 8;
  std::vector<std::thread> threads;
  std::vector<Buffer> got(kReaders);
  for (int i = 0; i < kReaders; ++i) {
    threads.emplace_back([&, i] { got[i] = f.store->Get("obj").value().data; });
  }
  ASSERT_TRUE(f.counting->WaitHeld(4));  // the fill's four 16 KiB parts
  BlockId id{f.mem->Url(), "obj", f.store->Head("obj")->etag, kBlock, 0};
  // Wait with a deadline for every other reader to join the flight.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (f.cache->FlightWaiters(id) < kReaders - 1 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::yield();
  EXPECT_EQ(f.cache->FlightWaiters(id), size_t{kReaders - 1});
  f.counting->OpenGate();
  for (auto& t : threads) t.join();
  EXPECT_EQ(f.counting->gets.load(), 4);  // one fill, four parts
  for (auto& b : got) EXPECT_EQ(b, data);
  EXPECT_EQ(f.cache->Stats()[CacheCounter::kMisses], 1u);
  EXPECT_EQ(f.cache->Stats()[CacheCounter::kSingleFlightJoins], size_t{kReaders - 1});
}

TEST(CachedStore, ReadaheadForSequentialStreams) {
  Fixture f;
  Buffer data = f.Add("seq", 16 * kBlock);
  auto stream = f.store->OpenStream("seq");
  ASSERT_TRUE(stream.ok());
  for (uint64_t off = 0; off < data.size(); off += 16 << 10) {
    auto r = (*stream)->Read(off, 16 << 10);
    ASSERT_TRUE(r.ok());
    ASSERT_EQ(*r, data.Slice(off, 16 << 10));
    // Read-ahead lands before the next read: the counts check the mechanism, not how a
    // loaded machine schedules the reader against the fetch threads.
    f.store->WaitForReadahead();
  }
  CacheStats s = f.cache->Stats();
  EXPECT_GE(s[CacheCounter::kReadaheadIssued], 14u);
  EXPECT_GE(s[CacheCounter::kReadaheadHits], 14u);
  EXPECT_LE(s[CacheCounter::kMisses], 2u);  // only the first blocks were read before read-ahead began
  EXPECT_EQ(s[CacheCounter::kBytesFromBackend], data.size());  // nothing fetched twice
}

TEST(CachedStore, ReadaheadForSequentialPlainGets) {
  Fixture f;
  Buffer data = f.Add("seq", 16 * kBlock);
  for (uint64_t off = 0; off < data.size(); off += kBlock / 2) {
    ASSERT_TRUE(f.store->Get("seq", Range(object::ByteRange::Of(off, kBlock / 2))).ok());
  }
  f.store->WaitForReadahead();
  EXPECT_GE(f.cache->Stats()[CacheCounter::kReadaheadIssued], 10u);
}

TEST(CachedStore, NoReadaheadForRandomAccess) {
  Fixture f;
  Buffer data = f.Add("rnd", 64 * kBlock);
  auto stream = f.store->OpenStream("rnd");
  ASSERT_TRUE(stream.ok());
  // A permutation with no two consecutive blocks adjacent.
  for (uint64_t i = 0; i < 64; ++i) {
    uint64_t block = (i * 37) % 64;
    auto r = (*stream)->Read(block * kBlock + 100, 1000);
    ASSERT_TRUE(r.ok());
    ASSERT_EQ(*r, data.Slice(block * kBlock + 100, 1000));
  }
  for (uint64_t i = 0; i < 32; ++i) {
    ASSERT_TRUE(f.store->Get("rnd", Range(object::ByteRange::Of(((i * 23) % 64) * kBlock, 10))).ok());
  }
  f.store->WaitForReadahead();
  EXPECT_EQ(f.cache->Stats()[CacheCounter::kReadaheadIssued], 0u);
}

TEST(CachedStore, ReadaheadRespectsTheGlobalCap) {
  CachedStoreOptions sopt;
  sopt.readahead_global_bytes = 2 * kBlock;
  sopt.readahead_max_window = 32 * kBlock;
  Fixture f({}, sopt);
  Buffer data = f.Add("seq", 64 * kBlock);
  auto stream = f.store->OpenStream("seq");
  ASSERT_TRUE(stream.ok());
  ASSERT_TRUE((*stream)->Read(0, 1024).ok());
  f.counting->CloseGate(kBlock);  // hold every read-ahead fill
  for (uint64_t off = 1024; off < 8 * 1024; off += 1024) ASSERT_TRUE((*stream)->Read(off, 1024).ok());
  ASSERT_TRUE(f.counting->WaitHeld(2 * 4));  // two blocks' parts in flight
  EXPECT_GT(f.cache->Stats()[CacheCounter::kReadaheadThrottled], 0u);
  EXPECT_EQ(f.cache->Stats()[CacheCounter::kReadaheadIssued], 2u);
  f.counting->OpenGate();
  f.store->WaitForReadahead();
  EXPECT_LE(f.counting->max_held(), 2 * 4);
}

TEST(CachedStore, PrefetchFetchesAKnownVersionWithinTheGlobalBudget) {
  CachedStoreOptions sopt;
  sopt.readahead_global_bytes = 2 * kBlock;
  Fixture f({}, sopt);
  Buffer data = f.Add("obj", 4 * kBlock - 10);
  auto info = f.mem->Head("obj");
  ASSERT_TRUE(info.ok());
  f.counting->CloseGate();
  EXPECT_EQ(f.store->Prefetch("obj", *info, 1ull << 30), 2u) << "two blocks fit the budget";
  ASSERT_TRUE(f.counting->WaitHeld(2 * 4));
  EXPECT_GT(f.cache->Stats()[CacheCounter::kReadaheadThrottled], 0u);
  f.counting->OpenGate();
  f.store->WaitForReadahead();
  EXPECT_EQ(f.store->Prefetch("obj", *info, 1ull << 30), 2u) << "the rest, once the first two are in";
  f.store->WaitForReadahead();
  EXPECT_EQ(f.store->Prefetch("obj", *info, 1ull << 30), 0u) << "all cached";
  EXPECT_EQ(f.counting->heads.load(), 0) << "the known version needs no metadata request";
  const int gets = f.counting->gets.load();
  auto stream = f.store->OpenStream("obj", *info);
  ASSERT_TRUE(stream.ok());
  EXPECT_EQ(*(*stream)->Read(0, data.size()), data);
  EXPECT_EQ(f.counting->gets.load(), gets);
  EXPECT_EQ(f.store->fetch_stats().gets, static_cast<uint64_t>(gets));
  EXPECT_GE(f.store->fetch_stats().peak_in_flight, 8u);
}

TEST(CachedStore, WritesInvalidateBlocksAndMetadata) {
  Fixture f;
  Buffer v1 = f.Add("obj", 3 * kBlock, 1);
  ASSERT_EQ(f.store->Get("obj")->data, v1);
  EXPECT_EQ(f.cache->ram().blocks(), 3u);
  Buffer v2 = RandomBytes(2 * kBlock, 2);
  ASSERT_TRUE(f.store->Put("obj", v2).ok());
  EXPECT_EQ(f.cache->ram().blocks(), 0u);
  EXPECT_EQ(f.cache->Stats()[CacheCounter::kInvalidations], 3u);
  ASSERT_EQ(f.store->Get("obj")->data, v2);
  ASSERT_TRUE(f.store->Delete("obj").ok());
  EXPECT_EQ(f.store->Get("obj").status().code(), Code::kNotFound);
  // Copy invalidates its destination; multipart completion too.
  f.Add("src", kBlock, 3);
  ASSERT_TRUE(f.store->Put("dst", RandomBytes(10, 4)).ok());
  ASSERT_EQ(f.store->Get("dst")->data.size(), 10u);
  ASSERT_TRUE(f.store->Copy("src", "dst").ok());
  EXPECT_EQ(f.store->Get("dst")->data, RandomBytes(kBlock, 3));
  // List results are dropped too.
  ASSERT_EQ(f.store->List(Prefix("ne"))->objects.size(), 0u);
  ASSERT_TRUE(f.store->Put("new", RandomBytes(1, 5)).ok());
  EXPECT_EQ(f.store->List(Prefix("ne"))->objects.size(), 1u);
}

TEST(CachedStore, MetadataTtlBoundsStalenessAndVersionsNeverMix) {
  Fixture f;
  Buffer v1 = f.Add("obj", 2 * kBlock, 1);
  ASSERT_EQ(f.store->Get("obj", Range(object::ByteRange::Of(0, 10)))->data, v1.Slice(0, 10));
  Buffer v2 = f.Add("obj", 2 * kBlock, 2);  // changed behind the cache's back
  // Within the TTL: block 0 is the old version; block 1 is not cached and the
  // If-Match fill finds the change, so the read refreshes and returns v2 whole.
  auto r = f.store->Get("obj");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->data, v2);
  Buffer v3 = f.Add("obj", 2 * kBlock, 3);
  EXPECT_EQ(f.store->Get("obj")->data, v2);  // fully cached, metadata fresh: consistent v2
  f.clock.Advance(std::chrono::seconds(11));
  EXPECT_EQ(f.store->Get("obj")->data, v3);
}

TEST(CachedStore, StreamPinsItsVersion) {
  Fixture f;
  f.Add("obj", 3 * kBlock, 1);
  auto stream = f.store->OpenStream("obj");
  ASSERT_TRUE(stream.ok());
  ASSERT_TRUE((*stream)->Read(0, 10).ok());
  f.Add("obj", 3 * kBlock, 2);
  EXPECT_EQ((*stream)->Read(2 * kBlock, 10).status().code(), Code::kPreconditionFailed);
}

TEST(CachedStore, BlockTtlExpires) {
  CacheOptions copt;
  FakeClock clock;
  copt.ttl = std::chrono::seconds(60);
  copt.clock = &clock;
  CachedStoreOptions sopt;
  sopt.clock = &clock;
  Fixture f(copt, sopt);
  f.Add("obj", 100);
  ASSERT_TRUE(f.store->Get("obj").ok());
  ASSERT_TRUE(f.store->Get("obj").ok());
  EXPECT_EQ(f.counting->gets.load(), 1);
  clock.Advance(std::chrono::seconds(61));
  ASSERT_TRUE(f.store->Get("obj").ok());
  EXPECT_EQ(f.counting->gets.load(), 2);
  EXPECT_EQ(f.cache->Stats()[CacheCounter::kExpired], 1u);
}

TEST(CachedStore, ConditionsUseMetadata) {
  Fixture f;
  f.Add("obj", 100);
  std::string etag = f.store->Head("obj")->etag;
  object::GetOptions none_match, bad_match, good_match;
  none_match.if_none_match = etag;
  bad_match.if_match = "nope";
  good_match.if_match = etag;
  EXPECT_EQ(f.store->Get("obj", none_match).status().code(), Code::kNotModified);
  EXPECT_EQ(f.store->Get("obj", bad_match).status().code(), Code::kPreconditionFailed);
  EXPECT_TRUE(f.store->Get("obj", good_match).ok());
}

TEST(CachedStore, BackendErrorMidFillCachesNothing) {
  auto mem = object::MakeMemStore();
  auto fault = std::make_shared<object::FaultStore>(mem, object::FaultConfig{});
  CacheOptions copt;
  copt.block_size = kBlock;
  auto cache = BlockCache::Open(copt).value();
  CachedStoreOptions sopt;
  sopt.fetch_part_size = 16 << 10;
  CachedStore store(fault, cache, sopt);
  Buffer data = RandomBytes(kBlock, 9);
  ASSERT_TRUE(mem->Put("obj", data).ok());
  ASSERT_TRUE(store.Head("obj").ok());
  fault->FailKey("obj", UnavailableError("injected reset"), 1, object::FaultOp::kGet);  // one of four parts fails
  auto r = store.Get("obj");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kUnavailable);
  EXPECT_NE(r.status().message().find("obj"), std::string::npos);
  EXPECT_EQ(cache->ram().blocks(), 0u);
  EXPECT_EQ(store.Get("obj")->data, data);
}

TEST(CachedStore, TruncatedBodyIsAnErrorNotACachedBlock) {
  CachedStoreOptions sopt;
  Fixture f({}, sopt);
  Buffer data = f.Add("obj", kBlock);
  f.counting->truncate_next = 1;
  auto r = f.store->Get("obj");
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.status().retryable());
  EXPECT_EQ(f.cache->ram().blocks(), 0u);
  EXPECT_EQ(f.store->Get("obj")->data, data);
}

// A listing carries no metadata, so it cannot answer Head/Get by itself; it
// revalidates entries a Head filled when their ETag is unchanged.
TEST(CachedStore, ListRevalidatesHeadCache) {
  Fixture f;
  object::PutOptions po;
  po.metadata.content_type = "text/plain";
  po.metadata.user["mode"] = "33188";
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(f.mem->Put("d/" + std::to_string(i), Buffer::Copy("0123456789"), po).ok());
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(f.store->Head("d/" + std::to_string(i)).ok());
  EXPECT_EQ(f.counting->heads.load(), 5);
  f.clock.Advance(std::chrono::seconds(3600));  // every entry expired
  ASSERT_EQ(f.store->List(Prefix("d/"))->objects.size(), 5u);
  ASSERT_EQ(f.store->List(Prefix("d/"))->objects.size(), 5u);
  for (int i = 0; i < 5; ++i) {
    auto got = f.store->Get("d/" + std::to_string(i));
    ASSERT_TRUE(got.ok());
    EXPECT_EQ(got->info.metadata, po.metadata);
  }
  EXPECT_EQ(f.counting->lists.load(), 1);
  EXPECT_EQ(f.counting->heads.load(), 5);
}

TEST(CachedStore, ListedEntriesDoNotHideMetadata) {
  Fixture f;
  object::PutOptions po;
  po.metadata.content_type = "text/csv";
  po.metadata.cache_control = "no-cache";
  po.metadata.user["a"] = "1";
  ASSERT_TRUE(f.mem->Put("m/obj", Buffer::Copy("x"), po).ok());
  ASSERT_EQ(f.store->List(Prefix("m/"))->objects.size(), 1u);
  auto head = f.store->Head("m/obj");
  ASSERT_TRUE(head.ok());
  EXPECT_EQ(head->metadata, po.metadata);
  auto got = f.store->Get("m/obj");  // a hit now
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->info.metadata, po.metadata);
  auto stream = f.store->OpenStream("m/obj");
  ASSERT_TRUE(stream.ok());
  EXPECT_EQ((*stream)->info().metadata, po.metadata);
  EXPECT_EQ(f.counting->heads.load(), 1);
}

TEST(CachedStore, CopyReplacingMetadataInvalidates) {
  Fixture f;
  object::PutOptions po;
  po.metadata.user["mode"] = "33188";
  ASSERT_TRUE(f.store->Put("c/obj", Buffer::Copy("bytes"), po).ok());
  ASSERT_EQ(f.store->Head("c/obj")->metadata.user.at("mode"), "33188");
  object::CopyOptions co;
  co.directive = object::MetadataDirective::kReplace;
  co.metadata.user["mode"] = "33261";
  ASSERT_TRUE(f.store->Copy("c/obj", "c/obj", co).ok());
  EXPECT_EQ(f.store->Head("c/obj")->metadata.user.at("mode"), "33261");
  EXPECT_EQ(f.store->Get("c/obj")->data.ToString(), "bytes");
}

TEST(CachedStore, MetricsReachTheGlobalRegistry) {
  Fixture f;
  f.Add("obj", 10);
  ASSERT_TRUE(f.store->Get("obj").ok());
  ASSERT_TRUE(f.store->Get("obj").ok());
  std::string text = MetricsRegistry::Global().RenderPrometheus();
  EXPECT_NE(text.find("strata_cache_hits_total{tier=\"ram\"}"), std::string::npos);
  EXPECT_NE(text.find("strata_cache_occupancy_bytes"), std::string::npos);
}

// The write-behind queue refuses what would pass its bound (never waits),
// takes a write larger than the bound when empty, and drains.
TEST(WriteBehind, RefusesPastItsBoundAndDrains) {
  WriteBehind wb(WriteBehindOptions{.max_bytes = 100, .threads = 1, .name = "test-wb"});
  std::mutex mu;
  std::condition_variable cv;
  bool open = false;
  std::atomic<int> done{0};
  auto held = [&] {
    std::unique_lock lock(mu);
    cv.wait(lock, [&] { return open; });
    ++done;
  };
  EXPECT_TRUE(wb.TryQueue(60, held));
  EXPECT_TRUE(wb.TryQueue(40, held));
  EXPECT_FALSE(wb.TryQueue(1, held)) << "full: refused at once";
  EXPECT_EQ(wb.bytes(), 100u);
  {
    std::lock_guard lock(mu);
    open = true;
  }
  cv.notify_all();
  wb.Drain();
  EXPECT_EQ(done.load(), 2);
  EXPECT_EQ(wb.bytes(), 0u);
  EXPECT_TRUE(wb.TryQueue(500, [&] { ++done; })) << "larger than the bound, taken when empty";
  wb.Drain();
  EXPECT_EQ(done.load(), 3);
}

TEST(FrequencySketch, CountsAndForgets) {
  FrequencySketch sketch(100);  // halves after 1,000 increments
  for (int i = 0; i < 5; ++i) sketch.Increment(42);
  sketch.Increment(7);
  EXPECT_GE(sketch.Estimate(42), 5u);
  EXPECT_GE(sketch.Estimate(7), 1u);
  EXPECT_LT(sketch.Estimate(7), sketch.Estimate(42));
  EXPECT_EQ(sketch.Estimate(99), 0u);
  for (uint64_t k = 1000; k < 1994; ++k) sketch.Increment(k * 0x9e3779b97f4a7c15ull);  // 1,000 in all: halved
  EXPECT_LE(sketch.Estimate(42), 3u) << "old popularity fades";
}

// Issue 15, item 8: a backend that stops answering. A store under test with
// the fault decorator, bounded waits on and no read-ahead (nothing in flight
// but what a test asks for).
struct BoundedFixture {
  explicit BoundedFixture(bool serve_stale = true) {
    auto mem = object::MakeMemStore();
    fault = std::make_shared<object::FaultStore>(mem, object::FaultConfig{.clock = &clock});
    CacheOptions copt;
    copt.block_size = kBlock;
    copt.ram_bytes = 64 * kBlock;
    cache = BlockCache::Open(copt).value();
    CachedStoreOptions o;
    o.clock = &clock;
    o.readahead_threads = 0;
    o.backend_timeout = std::chrono::milliseconds(300);
    o.revalidate_timeout = std::chrono::milliseconds(100);
    o.serve_stale = serve_stale;
    store = std::make_shared<CachedStore>(fault, cache, o);
  }
  ~BoundedFixture() { Unfreeze(); }
  // Every stalled request sleeps a fake hour: let them all go.
  void Unfreeze() {
    fault->SetConfig({});
    const uint64_t stalls = fault->counters().stalls;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (clock.TotalSlept() < stalls * std::chrono::hours(1) && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::yield();
    }
    clock.Advance(std::chrono::hours(2));
  }
  FakeClock clock;
  std::shared_ptr<object::FaultStore> fault;
  std::shared_ptr<BlockCache> cache;
  std::shared_ptr<CachedStore> store;
};

double SecondsSince(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

TEST(CachedStoreBoundedWait, HangingBackendServesCachedDataAndBoundsUncachedReads) {
  BoundedFixture f;
  const Buffer warm = RandomBytes(2 * kBlock + 100, 11), cold = RandomBytes(3000, 12);
  ASSERT_TRUE(f.fault->inner().Put("warm", warm).ok());
  ASSERT_TRUE(f.fault->inner().Put("cold", cold).ok());
  ASSERT_EQ(f.store->Get("warm")->data, warm);

  f.fault->SetConfig({.stall_rate = 1.0, .stall = std::chrono::hours(1), .clock = &f.clock});  // nothing answers
  f.clock.Advance(std::chrono::minutes(1));  // the metadata expired: a revalidation is due
  auto start = std::chrono::steady_clock::now();
  auto got = f.store->Get("warm");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->data, warm) << "the cached version, byte-exact";
  EXPECT_LT(SecondsSince(start), 20.0);  // (a loaded machine's margin; the bound is 100 ms)
  EXPECT_GE(f.cache->metrics().Get(CacheCounter::kStaleServed), 1u);

  start = std::chrono::steady_clock::now();
  auto miss = f.store->Get("cold");
  EXPECT_EQ(miss.status().code(), Code::kDeadlineExceeded) << miss.status();
  EXPECT_NE(miss.status().message().find("no answer from the store"), std::string::npos) << miss.status();
  EXPECT_TRUE(miss.status().retryable());
  EXPECT_LT(SecondsSince(start), 20.0);  // the bound is 300 ms
  EXPECT_GE(f.cache->metrics().Get(CacheCounter::kBackendTimeouts), 1u);
  EXPECT_GE(f.fault->counters().stalls, 2u);

  f.Unfreeze();  // the backend answers again: everything recovers by itself
  auto back = f.store->Get("cold");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->data, cold);
}

TEST(CachedStoreBoundedWait, RefusingBackendServesStaleUnlessStrict) {
  for (bool serve_stale : {true, false}) {
    SCOPED_TRACE(serve_stale ? "serve stale" : "strict");
    BoundedFixture f(serve_stale);
    const Buffer warm = RandomBytes(kBlock + 5, 13);
    ASSERT_TRUE(f.fault->inner().Put("warm", warm).ok());
    ASSERT_EQ(f.store->Get("warm")->data, warm);
    f.fault->FailKey("", UnavailableError("connection refused"));
    f.clock.Advance(std::chrono::minutes(1));
    auto got = f.store->Get("warm");
    if (serve_stale) {
      ASSERT_TRUE(got.ok()) << got.status();
      EXPECT_EQ(got->data, warm);
    } else {
      EXPECT_EQ(got.status().code(), Code::kUnavailable) << got.status();
    }
    EXPECT_EQ(f.store->Get("never-seen").status().code(), Code::kUnavailable);
    // A definite answer is not overridden: the object deleted meanwhile is gone.
    f.fault->ClearRules();
    ASSERT_TRUE(f.fault->inner().Delete("warm").ok());
    f.clock.Advance(std::chrono::minutes(1));
    EXPECT_EQ(f.store->Get("warm").status().code(), Code::kNotFound);
  }
}

// A backend whose reads each wait (up to 10 s) until `target` of them are in
// flight at once: reads through the cache finish quickly only if the cache
// lets that many backend calls run together.
class RendezvousStore : public object::StoreWrapper {
 public:
  RendezvousStore(object::ObjectStorePtr base, int target) : StoreWrapper(std::move(base)), target_(target) {}
  using StoreWrapper::Get;
  Result<object::GetResult> Get(std::string_view key, const object::GetOptions& options) override {
    {
      std::unique_lock lock(mu_);
      peak_ = std::max(peak_, ++in_flight_);
      cv_.notify_all();
      cv_.wait_for(lock, std::chrono::seconds(10), [&] { return peak_ >= target_; });
      --in_flight_;
    }
    return StoreWrapper::Get(key, options);
  }
  int peak() {
    std::lock_guard lock(mu_);
    return peak_;
  }

 private:
  const int target_;
  std::mutex mu_;
  std::condition_variable cv_;
  int in_flight_ = 0, peak_ = 0;
};

// Bounded waits must not cap how many uncached blocks are fetched at once: 64
// readers of 64 cold objects all reach the backend together and none waits
// out its deadline in a queue (a fixed 16-thread wait pool failed this).
TEST(CachedStoreBoundedWait, ManyColdReadsReachTheBackendTogether) {
  constexpr int kReaders = 64;
  auto mem = object::MakeMemStore();
  auto rendezvous = std::make_shared<RendezvousStore>(mem, kReaders);
  CacheOptions copt;
  copt.block_size = kBlock;
  copt.ram_bytes = 2 * kReaders * kBlock;
  auto cache = BlockCache::Open(copt).value();
  CachedStoreOptions o;
  o.readahead_threads = 0;
  o.backend_timeout = std::chrono::seconds(5);
  auto store = std::make_shared<CachedStore>(rendezvous, cache, o);
  std::vector<Buffer> bodies;
  for (int i = 0; i < kReaders; ++i) {
    bodies.push_back(RandomBytes(kBlock / 2, 100 + i));
    ASSERT_TRUE(mem->Put("o" + std::to_string(i), bodies.back()).ok());
  }
  std::vector<Result<object::GetResult>> got(kReaders, InternalError("not run"));
  std::vector<std::thread> readers;
  for (int i = 0; i < kReaders; ++i) {
    readers.emplace_back([&, i] { got[i] = store->Get("o" + std::to_string(i)); });
  }
  for (auto& t : readers) t.join();
  for (int i = 0; i < kReaders; ++i) {
    ASSERT_TRUE(got[i].ok()) << "reader " << i << ": " << got[i].status();
    EXPECT_EQ(got[i]->data, bodies[i]);
  }
  EXPECT_EQ(rendezvous->peak(), kReaders);
  EXPECT_EQ(cache->metrics().Get(CacheCounter::kBackendTimeouts), 0u);
}

}  // namespace
}  // namespace strata::cache

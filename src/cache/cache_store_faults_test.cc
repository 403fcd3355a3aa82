// Store-fault campaign for cache fills: a CachedStore (RAM + disk tier small
// enough to evict and refill, read-ahead on, fills split into parts) reads
// from a FaultStore that injects 5xx errors, throttling, connection resets
// and truncated bodies at random (seeded). Readers on several threads issue
// ranged Gets, whole Gets and sequential streams. Every read either returns
// the object's exact bytes or fails with a clear retryable error
// (Unavailable / Throttled naming the fault); none returns wrong bytes. Once
// the store heals, every object reads byte-exact through the cache: no fault
// left a bad block behind. Faults and outcomes are counted and printed.
//
// CacheStoreStaleEtags: the objects are replaced while a lagging replica
// answers Heads and Gets from the old version (FaultStore stale_rate, with
// the other faults): every read is whole bytes of the version its ETag names
// (old or new, never a mix), or a clear error; once the store heals and the
// metadata expires, every object reads as its new version.
//
// Short versions in the default suite; STRATA_STRESS=1 runs longer ones.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <atomic>
#include <cstdlib>
#include <iostream>
#include <map>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "base/clock.h"
#include "base/hash.h"
#include "base/log.h"
#include "cache/block_cache.h"
#include "cache/cached_store.h"
#include "io/durable.h"
#include "object/fault_store.h"
#include "object/mem_store.h"
#include "testing/stress.h"

namespace strata::cache {
namespace {

constexpr uint64_t kBlock = 64 << 10;

std::string FreshDir() {
  struct stat st {};
  if (::stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode)) {
    char tmpl[] = "/dev/shm/strata-cache-faults-XXXXXX";
    if (::mkdtemp(tmpl)) return tmpl;
  }
  return io::MakeTempDir("strata-cache-faults-").value();
}

std::string Bytes(size_t n, uint64_t seed) {
  std::string s(n, '\0');
  uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;
  for (size_t i = 0; i < n; ++i) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    s[i] = static_cast<char>(x);
  }
  return s;
}

struct Outcomes {
  std::atomic<uint64_t> reads{0}, ok{0}, failed{0}, unclear{0}, wrong{0}, bytes_verified{0};
  std::mutex mu;
  std::map<std::string, uint64_t> by_code;
  std::string first_unclear;
};

void Record(Outcomes& out, const Status& st) {
  ++out.failed;
  const bool clear = (st.code() == Code::kUnavailable || st.code() == Code::kThrottled) && !st.message().empty();
  std::lock_guard lock(out.mu);
  ++out.by_code[std::string(CodeName(st.code()))];
  if (!clear) {
    ++out.unclear;
    if (out.first_unclear.empty()) out.first_unclear = st.ToString();
  }
}

void Check(Outcomes& out, const Result<Buffer>& got, std::string_view want) {
  ++out.reads;
  if (!got.ok()) return Record(out, got.status());
  if (got->view() != want) {
    ++out.wrong;
    ADD_FAILURE() << "wrong bytes served: " << got->size() << " bytes, expected " << want.size();
    return;
  }
  ++out.ok;
  out.bytes_verified += want.size();
}

void RunCampaign(uint64_t seed, int objects, int reads_per_thread, int threads) {
  SetLogLevel("error");  // every failed fill logs
  const std::string dir = FreshDir();
  auto mem = object::MakeMemStore();
  std::vector<std::string> data;
  std::mt19937_64 rng(seed);
  for (int i = 0; i < objects; ++i) {
    data.push_back(Bytes(1 + rng() % (4 * kBlock), seed * 1000 + i));
    ASSERT_TRUE(mem->Put("obj-" + std::to_string(i), Buffer::FromString(data.back())).ok());
  }
  object::FaultConfig faults;
  faults.seed = seed;
  faults.error_rate = 0.05, faults.throttle_rate = 0.05, faults.reset_rate = 0.05, faults.truncate_rate = 0.05;
  auto store = std::make_shared<object::FaultStore>(mem, faults);
  CacheOptions co;
  co.block_size = kBlock;
  co.ram_bytes = 4 * kBlock;
  co.dir = dir;
  co.disk_bytes = 8 * (kBlock + kBlockHeaderSize);  // a fraction of the objects: fills and evicts all along
  auto cache = BlockCache::Open(co);
  ASSERT_TRUE(cache.ok()) << cache.status();
  CachedStoreOptions so;
  so.fetch_part_size = 16 << 10;  // several parts per block
  so.readahead_threads = 2;
  auto cached = std::make_shared<CachedStore>(store, *cache, so);

  Outcomes out;
  std::vector<std::thread> readers;
  for (int t = 0; t < threads; ++t) {
    readers.emplace_back([&, t] {
      std::mt19937_64 r(seed * 31 + t);
      for (int i = 0; i < reads_per_thread; ++i) {
        const int o = static_cast<int>(r() % objects);
        const std::string key = "obj-" + std::to_string(o);
        const std::string& want = data[o];
        switch (r() % 3) {
          case 0: {  // a ranged Get
            const uint64_t off = r() % want.size(), len = 1 + r() % (want.size() - off);
            object::GetOptions g;
            g.range = object::ByteRange::Of(off, len);
            auto got = cached->Get(key, g);
            Check(out, got.ok() ? Result<Buffer>(got->data) : Result<Buffer>(got.status()),
                  std::string_view(want).substr(off, len));
            break;
          }
          case 1: {  // the whole object
            auto got = cached->Get(key, object::GetOptions{});
            Check(out, got.ok() ? Result<Buffer>(got->data) : Result<Buffer>(got.status()), want);
            break;
          }
          default: {  // a sequential stream (read-ahead fills behind it)
            auto stream = cached->OpenStream(key);
            if (!stream.ok()) {
              ++out.reads;
              Record(out, stream.status());
              break;
            }
            for (uint64_t off = 0; off < want.size(); off += 20000) {
              const uint64_t len = std::min<uint64_t>(20000, want.size() - off);
              auto got = (*stream)->Read(off, len);
              Check(out, got, std::string_view(want).substr(off, len));
              if (!got.ok()) break;
            }
          }
        }
      }
    });
  }
  for (auto& t : readers) t.join();

  // Healed: every object byte-exact, whatever the faults left in the cache.
  store->SetConfig(object::FaultConfig{});
  uint64_t healed_ok = 0;
  for (int o = 0; o < objects; ++o) {
    auto got = cached->Get("obj-" + std::to_string(o), object::GetOptions{});
    ASSERT_TRUE(got.ok()) << "obj-" << o << " after healing: " << got.status();
    if (got->data.view() == data[o]) {
      ++healed_ok;
    } else {
      ++out.wrong;
      ADD_FAILURE() << "obj-" << o << ": wrong bytes after healing";
    }
  }
  const object::StoreFaultCounters c = store->counters();
  std::string codes;
  for (const auto& [code, n] : out.by_code) codes += " " + code + "=" + std::to_string(n);
  std::cout << "cache store-fault campaign: seed " << seed << ", store requests " << c.requests << ", faults injected "
            << c.injected() << " (errors " << c.errors << ", throttles " << c.throttles << ", resets " << c.resets
            << ", truncated bodies " << c.truncations << "), reads " << out.reads << ", ok " << out.ok
            << ", failed clearly " << (out.failed - out.unclear) << " (" << codes << " ), unclear errors "
            << out.unclear << ", bytes verified " << out.bytes_verified << ", wrong bytes served " << out.wrong
            << ", objects exact after healing " << healed_ok << "/" << objects << "\n";
  SetLogLevel("warn");
  EXPECT_EQ(out.wrong.load(), 0u);
  EXPECT_EQ(out.unclear.load(), 0u) << out.first_unclear;
  EXPECT_GT(c.injected(), 20u);  // the faults did happen...
  EXPECT_GT(out.failed.load(), 0u);
  EXPECT_GT(out.ok.load(), out.reads / 4);  // ...and most reads still got through
  cached.reset();
  cache->reset();
  EXPECT_TRUE(io::RemoveAll(io::DefaultFileSystem(), dir).ok());
}

TEST(CacheStoreFaults, EveryReadIsExactOrAClearErrorUnderRandomFaults) { RunCampaign(1, 12, 60, 4); }

TEST(CacheStoreFaults, LongCampaign) {
  if (!strata::testing::StressRun()) GTEST_SKIP() << "long version: STRATA_STRESS=1";
  for (uint64_t seed : {2, 3, 4}) RunCampaign(seed, 24, 500, 8);
}

struct StaleOutcomes {
  std::atomic<uint64_t> reads{0}, current{0}, old{0}, failed{0}, unclear{0}, wrong{0}, bytes_verified{0};
  std::string first_unclear;
  std::mutex mu;
};

// `data` must be bytes [off, off + size) of the version named `etag` (`versions`: ETag -> bytes).
void CheckVersion(StaleOutcomes& out, const std::map<std::string, std::pair<int, std::string>>& versions,
                  const std::string& etag, uint64_t off, const Result<Buffer>& got) {
  ++out.reads;
  if (!got.ok()) {
    ++out.failed;
    const Code c = got.status().code();
    const bool clear = (c == Code::kUnavailable || c == Code::kThrottled || c == Code::kPreconditionFailed) &&
                       !got.status().message().empty();
    if (!clear) {
      std::lock_guard lock(out.mu);
      ++out.unclear;
      if (out.first_unclear.empty()) out.first_unclear = got.status().ToString();
    }
    return;
  }
  auto v = versions.find(etag);
  if (v == versions.end() || off + got->size() > v->second.second.size() ||
      got->view() != std::string_view(v->second.second).substr(off, got->size())) {
    ++out.wrong;
    ADD_FAILURE() << "wrong bytes served: " << got->size() << " bytes at " << off << " under ETag " << etag
                  << (v == versions.end() ? " (no version has it)" : "");
    return;
  }
  ++(v->second.first == 2 ? out.current : out.old);
  out.bytes_verified += got->size();
}

void RunStaleCampaign(uint64_t seed, int objects, int reads_per_thread, int threads) {
  SetLogLevel("error");
  const std::string dir = FreshDir();
  FakeClock clock;
  auto mem = object::MakeMemStore();
  object::FaultConfig faults;
  faults.seed = seed;
  faults.clock = &clock;
  faults.stale_rate = 0.3;
  faults.error_rate = 0.03, faults.throttle_rate = 0.03, faults.reset_rate = 0.03, faults.truncate_rate = 0.03;
  auto store = std::make_shared<object::FaultStore>(mem, object::FaultConfig{.seed = seed, .clock = &clock});
  CacheOptions co;
  co.block_size = kBlock;
  co.ram_bytes = 4 * kBlock;
  co.dir = dir;
  co.disk_bytes = 8 * (kBlock + kBlockHeaderSize);
  co.clock = &clock;
  auto cache = BlockCache::Open(co);
  ASSERT_TRUE(cache.ok()) << cache.status();
  CachedStoreOptions so;
  so.fetch_part_size = 16 << 10;
  so.readahead_threads = 2;
  so.metadata_ttl = std::chrono::seconds(1);
  so.clock = &clock;
  auto cached = std::make_shared<CachedStore>(store, *cache, so);

  // ETag -> (version, bytes) of every version of every object; the new ones differ in bytes and often in
  // size (never under 1000 bytes: the ranged reads start below that).
  std::map<std::string, std::pair<int, std::string>> versions;
  std::vector<std::string> latest;
  std::mt19937_64 rng(seed);
  for (int version = 1; version <= 2; ++version) {
    if (version == 2) store->SetConfig(faults);  // from now on the replaced versions are kept and served stale
    for (int i = 0; i < objects; ++i) {
      const std::string key = "obj-" + std::to_string(i);
      std::string data = Bytes(1000 + rng() % (3 * kBlock), seed * 1000 + i * 10 + version);
      Result<object::ObjectInfo> put = InternalError("not put");
      while (!(put = store->Put(key, Buffer::FromString(data))).ok()) {
      }  // (injected faults: put again)
      versions[put->etag] = {version, data};
      if (version == 1) {
        latest.push_back(data);
        ASSERT_TRUE(cached->Get(key, object::GetOptions{}).ok());  // the old version cached
      } else {
        latest[i] = data;
      }
    }
  }
  clock.Advance(std::chrono::seconds(2));  // the cached metadata expires: revalidations meet the replica

  StaleOutcomes out;
  std::vector<std::thread> readers;
  for (int t = 0; t < threads; ++t) {
    readers.emplace_back([&, t] {
      std::mt19937_64 r(seed * 31 + t);
      for (int i = 0; i < reads_per_thread; ++i) {
        if (r() % 16 == 0) clock.Advance(std::chrono::seconds(2));  // and again, now and then
        const std::string key = "obj-" + std::to_string(r() % objects);
        switch (r() % 3) {
          case 0: {
            object::GetOptions g;
            g.range = object::ByteRange::Of(r() % 1000, 1 + r() % (2 * kBlock));
            auto got = cached->Get(key, g);
            CheckVersion(out, versions, got.ok() ? got->info.etag : "", got.ok() ? got->offset : 0,
                         got.ok() ? Result<Buffer>(got->data) : Result<Buffer>(got.status()));
            break;
          }
          case 1: {
            auto got = cached->Get(key, object::GetOptions{});
            CheckVersion(out, versions, got.ok() ? got->info.etag : "", 0,
                         got.ok() ? Result<Buffer>(got->data) : Result<Buffer>(got.status()));
            break;
          }
          default: {
            auto stream = cached->OpenStream(key);
            if (!stream.ok()) {
              CheckVersion(out, versions, "", 0, stream.status());
              break;
            }
            for (uint64_t off = 0; off < (*stream)->info().size; off += 20000) {
              auto got = (*stream)->Read(off, 20000);
              CheckVersion(out, versions, (*stream)->info().etag, off, got);
              if (!got.ok()) break;
            }
          }
        }
      }
    });
  }
  for (auto& t : readers) t.join();

  // Healed and expired: every object reads as its new version.
  store->SetConfig(object::FaultConfig{.seed = seed, .clock = &clock});
  clock.Advance(std::chrono::seconds(2));
  int healed_ok = 0;
  for (int o = 0; o < objects; ++o) {
    auto got = cached->Get("obj-" + std::to_string(o), object::GetOptions{});
    ASSERT_TRUE(got.ok()) << "obj-" << o << " after healing: " << got.status();
    if (got->data.view() == latest[o]) {
      ++healed_ok;
    } else {
      ++out.wrong;
      ADD_FAILURE() << "obj-" << o << ": not its new version after healing";
    }
  }
  const object::StoreFaultCounters c = store->counters();
  std::cout << "cache stale-ETag campaign: seed " << seed << ", store requests " << c.requests << ", faults injected "
            << c.injected() << " (stale answers " << c.stale << ", errors " << c.errors << ", throttles " << c.throttles
            << ", resets " << c.resets << ", truncated bodies " << c.truncations << "), reads " << out.reads
            << ": new version " << out.current << ", old version whole " << out.old << ", failed clearly "
            << (out.failed - out.unclear) << ", unclear " << out.unclear << ", bytes verified " << out.bytes_verified
            << ", wrong bytes served " << out.wrong << ", new version after healing " << healed_ok << "/" << objects
            << "\n";
  SetLogLevel("warn");
  EXPECT_EQ(out.wrong.load(), 0u);
  EXPECT_EQ(out.unclear.load(), 0u) << out.first_unclear;
  EXPECT_GT(c.stale, 20u);                       // the replica did lag...
  EXPECT_GT(out.current.load(), out.reads / 4);  // ...and most reads still got the new version
  EXPECT_EQ(healed_ok, objects);
  cached.reset();
  cache->reset();
  EXPECT_TRUE(io::RemoveAll(io::DefaultFileSystem(), dir).ok());
}

TEST(CacheStoreStaleEtags, EveryReadIsOneWholeVersionOrAClearError) { RunStaleCampaign(1, 12, 60, 4); }

TEST(CacheStoreStaleEtags, LongCampaign) {
  if (!strata::testing::StressRun()) GTEST_SKIP() << "long version: STRATA_STRESS=1";
  for (uint64_t seed : {2, 3, 4}) RunStaleCampaign(seed, 24, 500, 8);
}

}  // namespace
}  // namespace strata::cache

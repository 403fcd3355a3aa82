// Store-fault campaign for the loader's shard fetches: a streaming dataset
// (RAM and disk shard cache, both small enough to evict and refetch) reads
// through a FaultStore injecting 5xx errors, throttling, connection resets
// and truncated bodies at random (seeded). With retries every epoch delivers
// every sample once, byte-exact; without, an epoch either does so or fails
// with a clear error naming the shard (Unavailable / Throttled), after only
// exact samples. Faults and outcomes are counted and printed.
// LoaderStaleEtags: the dataset is regenerated in place while a lagging
// replica answers shard reads from the old version (FaultStore stale_rate,
// with the other faults): every sample delivered is the new dataset's, or
// the epoch fails with a clear error naming the shard; never an old sample.
// LoaderHungStore: a store that stops answering bounds each shard fetch by
// fetch_timeout, and the loader recovers when it answers again; the threads
// of calls given up on are bounded and end when the store answers.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <numeric>
#include <set>
#include <string>
#include <thread>

#include "base/clock.h"
#include "base/hash.h"
#include "base/log.h"
#include "base/metrics.h"
#include "io/durable.h"
#include "loader/loader_test_util.h"
#include "loader/shard_cache.h"
#include "loader/streaming_dataset.h"
#include "object/fault_store.h"
#include "object/mem_store.h"

namespace strata::loader {
namespace {

std::string Payload(uint64_t i) {
  std::string s = "sample-" + std::to_string(i) + ":";
  uint64_t x = i * 0x9e3779b97f4a7c15ull + 7;
  for (size_t k = 0, n = 2000 + i % 3000; k < n; ++k) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    s.push_back(static_cast<char>('a' + x % 26));
  }
  return s;
}

std::vector<dataset::Field> Fields(uint64_t i) { return {{"txt", Buffer::FromString(Payload(i))}}; }

std::string FreshDir() {
  struct stat st {};
  if (::stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode)) {
    char tmpl[] = "/dev/shm/strata-loader-faults-XXXXXX";
    if (::mkdtemp(tmpl)) return tmpl;
  }
  return io::MakeTempDir("strata-loader-faults-").value();
}

TEST(LoaderStoreFaults, EveryEpochIsExactOrAClearErrorUnderRandomFaults) {
  SetLogLevel("error");
  const std::string name = testing::UniqueName("loader-faults");
  auto mem = object::MakeMemStore(name);
  const std::vector<uint64_t> counts = {20, 17, 25, 9, 30, 14, 22, 11};
  testing::WriteDataset(*mem, "ds/", dataset::ShardFormat::kTar, counts, Fields);
  const uint64_t total = std::accumulate(counts.begin(), counts.end(), uint64_t{0});
  object::FaultConfig faults;
  faults.seed = 7;
  faults.error_rate = 0.05, faults.throttle_rate = 0.05, faults.reset_rate = 0.05, faults.truncate_rate = 0.05;
  auto store = std::make_shared<object::FaultStore>(mem, faults);
  const std::string dir = FreshDir();

  uint64_t epochs = 0, exact_epochs = 0, failed_clearly = 0, unclear = 0, wrong = 0, samples = 0, bytes = 0,
           retries = 0, fetched = 0;
  std::map<std::string, uint64_t> by_code;
  for (int retry_budget : {8, 0}) {
    StreamingOptions o;
    o.shuffle = Shuffle::kShards, o.seed = 3;
    o.retries = retry_budget;
    o.retry_backoff = std::chrono::milliseconds(1);
    o.ram_cache_bytes = 64 << 10;  // a few shards: later epochs refetch
    o.cache_dir = dir + "/r" + std::to_string(retry_budget);
    o.cache_limit_bytes = 128 << 10;
    store->SetConfig(object::FaultConfig{});  // the campaign is about shard fetches, not opening the index
    auto ds = StreamingDataset::Open(store, "ds", o);
    ASSERT_TRUE(ds.ok()) << ds.status();
    store->SetConfig(faults);
    for (uint64_t epoch = 0; epoch < 10; ++epoch) {
      ++epochs;
      auto it = (*ds)->Iterate(0, (*ds)->MakeState(epoch, 0));
      ASSERT_TRUE(it.ok()) << it.status();
      std::set<uint64_t> seen;
      Status end;
      for (;;) {
        auto s = (*it)->NextSample();
        if (!s.ok()) {
          end = s.status();
          break;
        }
        if (!*s) break;
        const std::string got = (*s)->fields.at("txt").bytes.ToString();
        if (got != Payload((*s)->index) || !seen.insert((*s)->index).second) {
          ++wrong;
          ADD_FAILURE() << "sample " << (*s)->index << " delivered wrong or twice";
        }
        ++samples, bytes += got.size();
      }
      retries += (*it)->stats().shard_fetch_retries;
      fetched += (*it)->stats().shards_fetched;
      if (end.ok()) {
        EXPECT_EQ(seen.size(), total) << "epoch " << epoch << " ended early";
        exact_epochs += seen.size() == total;
        continue;
      }
      ++by_code[std::string(CodeName(end.code()))];
      const bool clear = (end.code() == Code::kUnavailable || end.code() == Code::kThrottled) &&
                         end.message().find("ds/shard-") != std::string::npos;
      clear ? ++failed_clearly : ++unclear;
      EXPECT_TRUE(clear) << end;
      if (retry_budget > 0) ADD_FAILURE() << "failed despite " << retry_budget << " retries: " << end;
    }
  }
  const object::StoreFaultCounters c = store->counters();
  std::string codes;
  for (const auto& [code, n] : by_code) codes += " " + code + "=" + std::to_string(n);
  std::cout << "loader store-fault campaign: store requests " << c.requests << ", faults injected " << c.injected()
            << " (errors " << c.errors << ", throttles " << c.throttles << ", resets " << c.resets
            << ", truncated bodies " << c.truncations << "), epochs " << epochs << ", exact " << exact_epochs
            << ", failed clearly " << failed_clearly << " (" << codes << " ), unclear " << unclear << ", shard fetches "
            << fetched << ", retries " << retries << ", samples verified " << samples << ", bytes verified " << bytes
            << ", wrong bytes served " << wrong << "\n";
  SetLogLevel("warn");
  EXPECT_EQ(wrong, 0u);
  EXPECT_EQ(unclear, 0u);
  EXPECT_GT(c.injected(), 5u);
  EXPECT_GT(retries, 0u);
  EXPECT_GE(exact_epochs, 10u);  // every epoch with retries
  object::DropMemStore(name);
  EXPECT_TRUE(io::RemoveAll(io::DefaultFileSystem(), dir).ok());
}

// The regenerated dataset's sample i: other bytes; with `same_size`, as long as the old one.
std::string PayloadV2(uint64_t i, bool same_size) {
  std::string s = Payload(i);
  for (size_t k = s.find(':') + 1; k < s.size(); ++k) s[k] = static_cast<char>('a' + (s[k] - 'a' + 7) % 26);
  return same_size ? s : s + "-v2";
}

struct StaleFigures {
  uint64_t epochs = 0, exact = 0, failed_clearly = 0, unclear = 0, old_samples = 0, wrong = 0, samples = 0, bytes = 0;
  object::StoreFaultCounters store;
  std::map<std::string, uint64_t> by_code;
};

StaleFigures RunStaleEpochs(bool same_size, ShardVerify verify = ShardVerify::kAuto) {
  const std::string name = testing::UniqueName("loader-stale");
  auto mem = object::MakeMemStore(name);
  auto store = std::make_shared<object::FaultStore>(mem, object::FaultConfig{.seed = 11});
  const std::vector<uint64_t> counts = {20, 17, 25, 9, 30, 14, 22, 11};
  const uint64_t total = std::accumulate(counts.begin(), counts.end(), uint64_t{0});
  // manifest.json records each shard's sha256 and crc32c, as strata pack writes them.
  auto write = [&](auto fields) {
    dataset::Manifest m = testing::WriteDataset(*store, "ds/", dataset::ShardFormat::kTar, counts, fields);
    for (auto& shard : m.shards) {
      auto bytes = mem->Get("ds/" + shard.name);
      EXPECT_TRUE(bytes.ok()) << bytes.status();
      if (!bytes.ok()) continue;
      shard.sha256 = ToHex(Sha256(bytes->data.data(), bytes->data.size()));
      shard.crc32c = Crc32cHex(Crc32c(bytes->data.data(), bytes->data.size()));
    }
    EXPECT_TRUE(
        store->Put("ds/" + std::string(dataset::kManifestName), Buffer::FromString(dataset::EncodeManifest(m))).ok());
  };
  write(Fields);
  object::FaultConfig faults;
  faults.seed = 11;
  faults.stale_rate = 0.3;
  store->SetConfig(faults);  // the regenerated dataset's writes keep the old versions for the replica
  write([&](uint64_t i) { return std::vector<dataset::Field>{{"txt", Buffer::FromString(PayloadV2(i, same_size))}}; });
  faults.error_rate = 0.03, faults.throttle_rate = 0.03, faults.reset_rate = 0.03, faults.truncate_rate = 0.03;
  const std::string dir = FreshDir();
  StaleFigures fig;
  for (int retry_budget : {8, 0}) {
    StreamingOptions o;
    o.shuffle = Shuffle::kShards, o.seed = 3;
    o.retries = retry_budget;
    o.verify = verify;
    o.retry_backoff = std::chrono::milliseconds(1);
    o.ram_cache_bytes = 64 << 10;
    o.cache_dir = dir + "/r" + std::to_string(retry_budget);
    o.cache_limit_bytes = 128 << 10;
    store->SetConfig(object::FaultConfig{.seed = 11});  // opened on the new index (the campaign is about shards)
    auto ds = StreamingDataset::Open(store, "ds", o);
    EXPECT_TRUE(ds.ok()) << ds.status();
    if (!ds.ok()) break;
    store->SetConfig(faults);
    for (uint64_t epoch = 0; epoch < 10; ++epoch) {
      ++fig.epochs;
      auto it = (*ds)->Iterate(0, (*ds)->MakeState(epoch, 0));
      EXPECT_TRUE(it.ok()) << it.status();
      if (!it.ok()) break;
      std::set<uint64_t> seen;
      Status end;
      for (;;) {
        auto s = (*it)->NextSample();
        if (!s.ok()) {
          end = s.status();
          break;
        }
        if (!*s) break;
        const std::string got = (*s)->fields.at("txt").bytes.ToString();
        ++fig.samples;
        if (got != PayloadV2((*s)->index, same_size) || !seen.insert((*s)->index).second) {
          ++fig.wrong;
          fig.old_samples += got == Payload((*s)->index);
          if (verify != ShardVerify::kOff) {
            ADD_FAILURE() << "sample " << (*s)->index << " delivered wrong or twice"
                          << (got == Payload((*s)->index) ? " (the old dataset's)" : "");
          }
          continue;
        }
        fig.bytes += got.size();
      }
      if (end.ok()) {
        if (verify != ShardVerify::kOff) {
          EXPECT_EQ(seen.size(), total) << "epoch " << epoch << " ended early";
        }
        fig.exact += seen.size() == total;
        continue;
      }
      ++fig.by_code[std::string(CodeName(end.code()))];
      const Code c = end.code();
      const bool clear = (c == Code::kUnavailable || c == Code::kThrottled || c == Code::kCorruption ||
                          c == Code::kPreconditionFailed) &&
                         end.message().find("ds/shard-") != std::string::npos;
      clear ? ++fig.failed_clearly : ++fig.unclear;
      EXPECT_TRUE(clear) << end;
    }
  }
  fig.store = store->counters();
  object::DropMemStore(name);
  EXPECT_TRUE(io::RemoveAll(io::DefaultFileSystem(), dir).ok());
  std::string codes;
  for (const auto& [code, n] : fig.by_code) codes += " " + code + "=" + std::to_string(n);
  const char* check = verify == ShardVerify::kOff ? "off" : verify == ShardVerify::kSha256 ? "sha256" : "crc32c";
  std::cout << "loader stale-ETag campaign (" << (same_size ? "same" : "other") << " shard sizes, checked by " << check
            << "): store requests " << fig.store.requests << ", faults injected " << fig.store.injected()
            << " (stale answers " << fig.store.stale << ", errors " << fig.store.errors << ", throttles "
            << fig.store.throttles << ", resets " << fig.store.resets << ", truncated bodies " << fig.store.truncations
            << "), epochs " << fig.epochs << ", exact " << fig.exact << ", failed clearly " << fig.failed_clearly
            << " (" << codes << " ), unclear " << fig.unclear << ", samples verified " << fig.samples
            << ", bytes verified " << fig.bytes << ", old samples served " << fig.old_samples << ", wrong " << fig.wrong
            << "\n";
  return fig;
}

// Tar pads records to 512 bytes: the old shards have the new ones' sizes, so
// only the manifest's hashes tell them apart (before they were checked, this
// served 682 old samples in 20 epochs). By default the crc32c is checked.
TEST(LoaderStaleEtags, ARegeneratedDatasetIsReadNewOrFailsClearly) {
  for (ShardVerify verify : {ShardVerify::kAuto, ShardVerify::kSha256}) {
    SetLogLevel("error");
    StaleFigures fig = RunStaleEpochs(/*same_size=*/true, verify);
    SetLogLevel("warn");
    EXPECT_EQ(fig.wrong, 0u);
    EXPECT_EQ(fig.unclear, 0u);
    EXPECT_GT(fig.store.stale, 5u);
    EXPECT_GE(fig.exact, 10u);  // every epoch with retries
  }
}

// verify off: nothing but sizes and framing, so the same campaign serves the
// old dataset's samples. This is what the check costs nothing to prevent.
TEST(LoaderStaleEtags, WithVerifyOffAStaleReplicaGoesUnnoticed) {
  SetLogLevel("error");
  StaleFigures fig = RunStaleEpochs(/*same_size=*/true, ShardVerify::kOff);
  SetLogLevel("warn");
  EXPECT_GT(fig.old_samples, 0u);
  EXPECT_EQ(fig.unclear, 0u);
}

// Issue 15, item 8: a store that stops answering (every request stalls a fake
// hour). A shard fetch gives up after fetch_timeout with a retryable
// DeadlineExceeded naming the shard, the retry policy applies, the iterator
// fails within a bounded time, and once the store answers again the same
// dataset reads an epoch byte-exact. Multi-part fetches (parallel ranged reads)
// share the one deadline.
struct HungStore {
  HungStore() {
    mem = object::MakeMemStore(name);
    testing::WriteDataset(*mem, "ds/", dataset::ShardFormat::kTar, counts, Fields);
    store = std::make_shared<object::FaultStore>(mem, object::FaultConfig{.clock = &clock()});
  }
  ~HungStore() {
    Answer();
    object::DropMemStore(name);
  }
  // Stalled calls sleep on this clock on background threads that may outlive the test: never destroyed.
  static FakeClock& clock() {
    static FakeClock* c = new FakeClock();
    return *c;
  }
  void Hang() {
    slept_before = clock().TotalSlept();  // the clock is shared by every test (and --gtest_repeat)
    store->SetConfig({.stall_rate = 1.0, .stall = std::chrono::hours(1), .clock = &clock()});
  }
  // The store answers again: new requests at once, stalled ones as they wake
  // (once each has gone to sleep: one that had not would miss the Advance).
  void Answer() {
    store->SetConfig({.clock = &clock()});
    const uint64_t stalls = store->counters().stalls;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (clock().TotalSlept() - slept_before < stalls * std::chrono::hours(1) &&
           std::chrono::steady_clock::now() < deadline) {
      std::this_thread::yield();
    }
    clock().Advance(std::chrono::hours(2));
  }
  StreamingOptions Options() const {
    StreamingOptions o;
    o.shuffle = Shuffle::kNone;
    o.retries = 1;
    o.retry_backoff = std::chrono::milliseconds(1);
    o.fetch_timeout = std::chrono::milliseconds(300);
    o.min_part_bytes = 8 << 10;  // shards of 20-30 KiB: several ranged reads each
    o.fetch_concurrency = 4;
    o.share_cache = false;
    return o;
  }
  const std::string name = testing::UniqueName("loader-hung");
  const std::vector<uint64_t> counts = {6, 9, 7, 8};
  std::shared_ptr<object::ObjectStore> mem;
  std::shared_ptr<object::FaultStore> store;
  Duration slept_before{0};
};

double SecondsSince(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

bool WaitUntil(const std::function<bool()>& cond) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!cond()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

// Store calls given up on that have not returned, in this process (the loader's gauge).
int64_t HungCalls() { return MetricsRegistry::Global().GetGauge("strata_loader_hung_store_calls", "").Value(); }

// This process's threads named `name` (/proc/self/task/*/comm).
size_t ThreadsNamed(const std::string& name) {
  size_t n = 0;
  std::error_code ec;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task", ec)) {
    std::ifstream comm(task.path() / "comm");
    std::string got;
    if (std::getline(comm, got) && got == name) ++n;
  }
  return n;
}

TEST(LoaderHungStore, ShardFetchFailsWithinTheBoundAndRecovers) {
  SetLogLevel("error");
  HungStore h;
  const uint64_t total = std::accumulate(h.counts.begin(), h.counts.end(), uint64_t{0});
  auto ds = StreamingDataset::Open(h.store, "ds", h.Options());
  ASSERT_TRUE(ds.ok()) << ds.status();
  EXPECT_EQ((*ds)->options().fetch_timeout, std::chrono::milliseconds(300));

  h.Hang();
  auto start = std::chrono::steady_clock::now();
  double first_error = 0;
  {
    auto it = (*ds)->Iterate(0, (*ds)->MakeState(0, 0));
    ASSERT_TRUE(it.ok()) << it.status();
    Status end = testing::NextUntilError(**it);
    first_error = SecondsSince(start);
    EXPECT_EQ(end.code(), Code::kDeadlineExceeded) << end;
    EXPECT_NE(end.message().find("ds/shard-00000"), std::string::npos) << end;
    EXPECT_NE(end.message().find("no answer from the store within 300 ms"), std::string::npos) << end;
    EXPECT_NE(end.message().find("2 attempt(s)"), std::string::npos) << end << " (retries apply)";
    EXPECT_GE((*it)->stats().shard_fetch_retries, 1u);
    // 2 attempts of 300 ms; without the bound this waits a (fake) hour per request.
    EXPECT_LT(first_error, 20.0);  // a loaded machine's margin
  }                                // the iterator goes while the store still hangs
  const double closed = SecondsSince(start) - first_error;
  EXPECT_LT(closed, 20.0);
  EXPECT_GE(h.store->counters().stalls, 2u);

  h.Answer();
  start = std::chrono::steady_clock::now();
  auto it = (*ds)->Iterate(0, (*ds)->MakeState(1, 0));
  ASSERT_TRUE(it.ok()) << it.status();
  std::set<uint64_t> seen;
  for (;;) {
    auto s = (*it)->NextSample();
    ASSERT_TRUE(s.ok()) << s.status();
    if (!*s) break;
    EXPECT_EQ((*s)->fields.at("txt").bytes.ToString(), Payload((*s)->index)) << "sample " << (*s)->index;
    EXPECT_TRUE(seen.insert((*s)->index).second);
  }
  EXPECT_EQ(seen.size(), total);
  std::cout << "loader hung store: first error after " << first_error << " s (fetch_timeout 300 ms, 2 attempts), "
            << "iterator closed in " << closed << " s, recovered epoch in " << SecondsSince(start) << " s, "
            << h.store->counters().stalls << " stalled requests\n";
  SetLogLevel("warn");
}

TEST(LoaderHungStore, SkipCorruptSkipsHungShardsAndClosingDoesNotWaitForThem) {
  SetLogLevel("error");
  HungStore h;
  StreamingOptions o = h.Options();
  o.skip_corrupt = true;
  o.retries = 0;
  auto ds = StreamingDataset::Open(h.store, "ds", o);
  ASSERT_TRUE(ds.ok()) << ds.status();
  h.Hang();
  const auto start = std::chrono::steady_clock::now();
  {
    auto it = (*ds)->Iterate(0, (*ds)->MakeState(0, 0));
    ASSERT_TRUE(it.ok()) << it.status();
    uint64_t good = 0;
    Status end = testing::NextUntilError(**it, &good);
    EXPECT_TRUE(end.ok()) << end;
    EXPECT_EQ(good, 0u);
    EXPECT_EQ((*it)->stats().shards_skipped, h.counts.size());
  }
  // The dataset (and its shard cache) goes with store calls still hung: not waited for.
  ds->reset();
  EXPECT_LT(SecondsSince(start), 20.0);
  EXPECT_GE(h.store->counters().stalls, h.counts.size());
  // Their threads (and all they hold) go once the store answers.
  h.Answer();
  EXPECT_TRUE(WaitUntil([] { return HungCalls() == 0 && ThreadsNamed("strata-getwait") == 0; }))
      << HungCalls() << " hung calls, " << ThreadsNamed("strata-getwait") << " threads";
  SetLogLevel("warn");
}

// A cache holds at most max_hung_calls threads of calls given up on: past it a
// fetch fails at once (Unavailable) without a store call. Counted in the
// process's gauge; freed when the store answers, after which fetches work.
TEST(LoaderHungStore, HungCallsAreBoundedAndEndWhenTheStoreAnswers) {
  SetLogLevel("error");
  HungStore h;
  ASSERT_TRUE(WaitUntil([] { return HungCalls() == 0 && ThreadsNamed("strata-getwait") == 0; }))
      << "earlier tests' calls still hung";
  std::vector<std::string> keys;
  std::vector<uint64_t> sizes;
  for (size_t k = 0; k < h.counts.size(); ++k) {
    keys.push_back("ds/shard-0000" + std::to_string(k) + ".tar");
    sizes.push_back(h.mem->Head(keys.back())->size);
  }
  ShardCacheOptions co;
  co.fetch_concurrency = 1;  // one store call per fetch
  co.fetch_timeout = std::chrono::milliseconds(200);
  co.max_hung_calls = 2;
  auto cache = ShardCache::Open(h.store, keys, sizes, co);
  ASSERT_TRUE(cache.ok()) << cache.status();

  h.Hang();
  for (size_t k = 0; k < 2; ++k) {
    auto r = (*cache)->Get(k);
    EXPECT_EQ(r.status().code(), Code::kDeadlineExceeded) << r.status();
    EXPECT_EQ(HungCalls(), static_cast<int64_t>(k + 1));
  }
  EXPECT_EQ(ThreadsNamed("strata-getwait"), 2u);
  auto refused = (*cache)->Get(2);
  EXPECT_EQ(refused.status().code(), Code::kUnavailable) << refused.status();
  EXPECT_NE(refused.status().message().find("max_hung_calls"), std::string::npos) << refused.status();
  EXPECT_EQ(h.store->counters().stalls, 2u);  // the refused fetch made no store call

  h.Answer();
  EXPECT_TRUE(WaitUntil([] { return HungCalls() == 0 && ThreadsNamed("strata-getwait") == 0; }))
      << HungCalls() << " hung calls, " << ThreadsNamed("strata-getwait") << " threads";
  for (size_t k = 0; k < 3; ++k) {
    auto r = (*cache)->Get(k);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->data.ToString(), h.mem->Get(keys[k], {})->data.ToString());
  }
  SetLogLevel("warn");
}

}  // namespace
}  // namespace strata::loader

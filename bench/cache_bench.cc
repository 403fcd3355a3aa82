// cache_bench: the classic cold/warm exercise through CachedStore.
//
// N objects (default 256 x 4 MiB) behind EmulateCloud (30 ms to first byte,
// 25 MB/s per connection, real clock) are read once cold and then warm, and
// compared in the same run with the two limits the warm path can approach:
//   - an in-process memcpy of the same bytes (the RAM tier's ceiling), and
//   - O_DIRECT 4 MiB preads of the cache's own block files, fio-style (the
//     disk tier's ceiling on this device).
// A "read" is Get(key) plus copying the returned bytes into the reader's own
// buffer (what a read(2) into user memory or a socket write costs), so the
// zero-copy cache is not credited with work it skipped.
// Warm runs: RAM tier; disk tier only (RAM 0) through the page cache; disk
// tier only with O_DIRECT, reopened (as after a restart: the metadata comes
// from the cache's journal, no request per object); each with 1 and 4
// concurrent readers. The O_DIRECT tier reads each block as 1 MiB parts in
// flight at once (io_uring); the same tier reading each block in one read
// (queue depth 1, as before) and the device read the same two ways are
// measured in the same run.
// Encryption at rest (--cache-encryption-key-file): the codec's seal and open
// rates per core (thread CPU time, against XXH3 and memcpy on the same
// thread), and the warm disk tier encrypted against clear, back to back over
// rounds (page cache, 1 and 4 readers; O_DIRECT, 1), by wall and reader CPU
// time; --encryption-only runs just these.
// Output: a table on stdout, JSON in bench/out/cache.json (`strata plan
// --from-bench` reads its warm and device rates).
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "base/aead.h"
#include "base/clock.h"
#include "base/executor.h"
#include "base/hash.h"
#include "base/random.h"
#include "bench_output.h"
#include "cache/block_cache.h"
#include "cache/block_sealer.h"
#include "cache/cached_store.h"
#include "io/file_system.h"
#include "io/uring_read.h"
#include "object/cloud_store.h"
#include "object/mem_store.h"

using namespace strata;
namespace fs = std::filesystem;

namespace {

struct Args {
  int objects = 256;
  uint64_t size = 4ull << 20;
  int cold_readers = 4;
  std::string dir = "/tmp/strata-cache-bench";
  std::string out;               // default: bench/out/cache.json (cache_encryption.json with --encryption-only)
  bool encryption_only = false;  // only the encrypted-against-clear runs and the codec rates
  int encryption_rounds = 5;
};

// The command line into `a`: nullopt to run, or the exit code once CLI11 has printed help or a
// clear error (a malformed number is a message and exit code 2, not an uncaught exception).
std::optional<int> Parse(int argc, char** argv, Args* a) {
  CLI::App app("strata's block cache: cold, warm RAM, warm disk and encrypted reads against memcpy and fio");
  uint64_t size_mib = a->size >> 20;
  bool quick = false;
  app.add_option("--objects", a->objects, "Objects in the emulated bucket")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 20));
  app.add_option("--size-mib", size_mib, "Object size")->capture_default_str()->check(CLI::Range(1, 1 << 16));
  app.add_option("--cold-readers", a->cold_readers, "Readers of the cold pass")
      ->capture_default_str()
      ->check(CLI::Range(1, 1024));
  app.add_option("--dir", a->dir, "Cache directory (removed at the end)")->capture_default_str();
  app.add_option("--out", a->out,
                 "JSON output (default: bench/out/cache.json; bench/out/cache_encryption.json with "
                 "--encryption-only)");
  app.add_flag("--quick", quick, "32 objects");
  app.add_flag("--encryption-only", a->encryption_only,
               "Only the encrypted-against-clear warm disk reads and the codec's rates");
  app.add_option("--encryption-rounds", a->encryption_rounds, "Rounds of the encrypted-against-clear reads")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  a->size = size_mib << 20;
  if (quick) a->objects = 32;
  if (a->out.empty()) a->out = a->encryption_only ? "bench/out/cache_encryption.json" : "bench/out/cache.json";
  return std::nullopt;
}

// Clears a scratch directory. A failure is reported and the run goes on (opening the cache there
// then says what is wrong), never an uncaught filesystem_error.
void RemoveAll(const std::string& dir) {
  std::error_code ec;
  fs::remove_all(dir, ec);
  if (ec) std::fprintf(stderr, "cache_bench: cannot remove %s: %s\n", dir.c_str(), ec.message().c_str());
}

std::string Key(int i) {
  char k[32];
  std::snprintf(k, sizeof(k), "data/obj-%04d.bin", i);
  return k;
}

Buffer Content(uint64_t size, uint64_t seed) {
  MutableBuffer b(size);
  Random r(seed);
  for (uint64_t i = 0; i < size; i += 8) {
    uint64_t w = r.Next();
    std::memcpy(b.data() + i, &w, std::min<uint64_t>(8, size - i));
  }
  return std::move(b).Freeze();
}

// This thread's CPU time: what a core spent, whatever else the machine runs.
double ThreadSeconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + t.tv_nsec / 1e9;
}

// Reads every object through `store` with `readers` threads; each read is
// copied into the reader's own buffer (faulted in beforehand). Returns
// seconds, and in *cpu the readers' CPU seconds; exits on a mismatch.
// Each pass starts with one List of the prefix, as a loader does per epoch: it
// refreshes the metadata cache (size, ETag) for every object in one request,
// instead of one Head per object once the metadata TTL has passed.
double ReadAll(object::ObjectStore& store, const Args& a, int readers, const std::vector<uint64_t>& hashes, bool verify,
               double* cpu = nullptr) {
  std::atomic<int> next{0};
  std::atomic<double> cpu_total{0};
  std::vector<MutableBuffer> dsts;
  for (int t = 0; t < readers; ++t) {
    dsts.emplace_back(a.size);
    std::memset(dsts.back().data(), 0, a.size);
  }
  auto start = RealClock().Now();
  object::ListOptions lo;
  lo.prefix = "data/";
  if (!store.List(lo).ok()) std::exit(1);
  ParallelFor(readers, readers, [&](size_t t) {
    const double cpu0 = ThreadSeconds();
    MutableBuffer& dst = dsts[t];
    for (int i = next++; i < a.objects; i = next++) {
      auto r = store.Get(Key(i));
      if (!r.ok()) {
        std::fprintf(stderr, "read %s failed: %s\n", Key(i).c_str(), r.status().ToString().c_str());
        std::exit(1);
      }
      std::memcpy(dst.data(), r->data.data(), r->data.size());
      if (verify && XxHash3(dst.data(), r->data.size()) != hashes[i]) {
        std::fprintf(stderr, "wrong bytes for %s\n", Key(i).c_str());
        std::exit(1);
      }
    }
    cpu_total += ThreadSeconds() - cpu0;
  });
  if (cpu) *cpu = cpu_total;
  return Seconds(RealClock().Now() - start);
}

// Into memory faulted in beforehand: the yardstick is the copy, not page faults.
double MemcpyAll(const std::vector<Buffer>& data, uint64_t size, int threads) {
  std::atomic<int> next{0};
  std::vector<MutableBuffer> dsts;
  for (int t = 0; t < threads; ++t) {
    dsts.emplace_back(size);
    std::memset(dsts.back().data(), 0, size);
  }
  auto start = RealClock().Now();
  ParallelFor(threads, threads, [&](size_t t) {
    MutableBuffer& dst = dsts[t];
    for (int i = next++; i < static_cast<int>(data.size()); i = next++) std::memcpy(dst.data(), data[i].data(), size);
  });
  return Seconds(RealClock().Now() - start);
}

// The device read as the O_DIRECT tier reads it: each file as 1 MiB parts in flight at once.
double DirectPartsReadAll(const std::vector<std::string>& files, uint64_t* bytes) {
  uint64_t total = 0;
  auto start = RealClock().Now();
  io::PosixFileSystem posix;
  std::shared_ptr<uint8_t> buf(static_cast<uint8_t*>(std::aligned_alloc(4096, 8 << 20)), std::free);
  for (const auto& path : files) {
    auto file = posix.OpenForReadDirect(path);
    if (!file.ok()) continue;
    const uint64_t size = fs::file_size(path);
    auto n = (*file)->ReadAtParts(0, (size + 4095) / 4096 * 4096, buf.get(), 1 << 20, {});
    if (n.ok()) total += *n;
  }
  *bytes = total;
  return Seconds(RealClock().Now() - start);
}

// fio-style: O_DIRECT preads of `chunk` bytes over every block file, `threads` at once.
double DirectReadAll(const std::vector<std::string>& files, size_t chunk, int threads, uint64_t* bytes) {
  std::atomic<size_t> next{0};
  std::atomic<uint64_t> total{0};
  auto start = RealClock().Now();
  ParallelFor(threads, threads, [&](size_t) {
    MutableBuffer buf(chunk);
    for (size_t i = next++; i < files.size(); i = next++) {
      int fd = open(files[i].c_str(), O_RDONLY | O_DIRECT);
      if (fd < 0) continue;
      for (off_t off = 0;; off += chunk) {
        ssize_t n = pread(fd, buf.data(), chunk, off);
        if (n <= 0) break;
        total += n;
        if (static_cast<size_t>(n) < chunk) break;
      }
      close(fd);
    }
  });
  *bytes = total;
  return Seconds(RealClock().Now() - start);
}

struct CodecRates {
  double seal = 0, open = 0, xxh3 = 0, memcpy = 0;  // GB per CPU-second of one thread
};

// Seals and opens `rounds` passes over `data`'s blocks on one thread, as the
// disk tier does per block (a fresh nonce, the block's header as AAD), and
// times XXH3 (what a clear block's read checks) and memcpy over the same bytes.
CodecRates MeasureCodec(const std::vector<Buffer>& data, int rounds) {
  AesKey key;
  if (!RandomBytes(key.data(), key.size()).ok()) std::exit(1);
  auto sealer = cache::BlockSealer::FromKey(key);
  const size_t size = data[0].size();
  MutableBuffer sealed(size + cache::BlockSealer::kOverhead), plain(size);
  std::memset(sealed.data(), 0, sealed.size());
  std::memset(plain.data(), 0, plain.size());
  const std::string aad(200, 'h');  // a header's worth of names
  const double gb = static_cast<double>(rounds) * data.size() * size / 1e9;
  auto timed = [&](auto&& one) {
    const double t0 = ThreadSeconds();
    for (int r = 0; r < rounds; ++r) {
      for (const Buffer& b : data) one(b);
    }
    return gb / (ThreadSeconds() - t0);
  };
  CodecRates c;
  uint64_t sink = 0;
  c.memcpy = timed([&](const Buffer& b) { std::memcpy(plain.data(), b.data(), size); });
  c.xxh3 = timed([&](const Buffer& b) { sink += XxHash3(b.data(), size); });
  c.seal = timed([&](const Buffer& b) {
    if (!sealer->Seal(aad, b.data(), size, sealed.data()).ok()) std::exit(1);
  });
  c.open = timed([&](const Buffer&) {
    if (!sealer->Open(aad, sealed.data(), sealed.size(), plain.data()).ok()) std::exit(1);
  });
  if (sink == 42) std::printf(" ");  // keeps the hashes from being optimised away
  return c;
}

std::shared_ptr<cache::CachedStore> Open(object::ObjectStorePtr backend, const Args& a, uint64_t ram, bool direct,
                                         uint64_t read_part_bytes = cache::CacheOptions{}.disk_read_part_bytes,
                                         std::shared_ptr<const cache::BlockSealer> sealer = nullptr,
                                         const std::string& dir = "") {
  cache::CacheOptions o;
  o.dir = dir.empty() ? a.dir : dir;
  if (!dir.empty()) o.disk_write_queue_bytes = 0;  // the encryption runs' fills write inline: every block lands
  o.sealer = std::move(sealer);
  o.ram_bytes = ram;
  o.disk_bytes = a.objects * (a.size + cache::kBlockHeaderSize + cache::BlockSealer::kOverhead) * 2;
  o.direct_io = direct;
  o.disk_read_part_bytes = read_part_bytes;
  auto cache = cache::BlockCache::Open(o);
  if (!cache.ok()) {
    std::fprintf(stderr, "%s\n", cache.status().ToString().c_str());
    std::exit(1);
  }
  cache::CachedStoreOptions so;
  return std::make_shared<cache::CachedStore>(backend, *cache, so);
}

// The objects the runs read, in memory behind EmulateCloud; their hashes check every cold read.
struct Bucket {
  std::vector<Buffer> data;
  std::vector<uint64_t> hashes;
  object::CloudProfile profile;  // 30 ms, 25 MB/s per connection
  object::ObjectStorePtr mem;    // the same objects without the emulation (unmeasured fills)
  object::ObjectStorePtr cloud;
};

Bucket Populate(const Args& a) {
  Bucket b;
  auto mem = object::MakeMemStore("cache-bench");
  for (int i = 0; i < a.objects; ++i) {
    b.data.push_back(Content(a.size, i + 1));
    b.hashes.push_back(XxHash3(b.data.back().data(), a.size));
    if (!mem->Put(Key(i), b.data.back()).ok()) std::exit(1);
  }
  b.mem = mem;
  b.cloud = object::EmulateCloud(mem, b.profile);
  return b;
}

// Prints a run as a table row and records it in the JSON's "runs".
struct Rows {
  double mb;
  nlohmann::json* j;
  void operator()(const char* name, double secs, int readers) const {
    std::printf("  %-34s %2d reader%s %8.3f s %9.1f MB/s\n", name, readers, readers == 1 ? " " : "s", secs, mb / secs);
    (*j)["runs"].push_back({{"name", name}, {"readers", readers}, {"seconds", secs}, {"mb_per_s", mb / secs}});
  }
};

// Seconds of each run (and the ratios the summary reports).
struct Timings {
  double memcpy1 = 0, memcpy4 = 0, cold = 0, warm_ram1 = 0, warm_ram4 = 0, disk1 = 0, disk4 = 0;
  double direct1 = 0, direct4 = 0, direct_one_read1 = 0, fio4 = 0, tier_of_fio = 0, one_read_of_fio = 0;
  uint64_t requests_after_reopen = 0;
  double SlowestWarm() const { return std::max({warm_ram1, warm_ram4, disk1, disk4, direct1, direct4}); }
};

// Cold from the emulated cloud, then warm from the RAM tier.
void MeasureColdAndRam(const Bucket& b, const Args& a, const Rows& row, Timings* t, nlohmann::json* j) {
  auto store = Open(b.cloud, a, a.objects * a.size + (64ull << 20), false);
  t->cold = ReadAll(*store, a, a.cold_readers, b.hashes, true);
  row("cold (emulated cloud)", t->cold, a.cold_readers);
  t->warm_ram1 = ReadAll(*store, a, 1, b.hashes, false);
  row("warm, RAM tier", t->warm_ram1, 1);
  t->warm_ram4 = ReadAll(*store, a, 4, b.hashes, false);
  row("warm, RAM tier", t->warm_ram4, 4);
  cache::CacheStats s = store->cache().Stats();
  (*j)["cold_stats"] = {{"misses", s[cache::CacheCounter::kMisses]},
                        {"ram_hits", s[cache::CacheCounter::kRamHits]},
                        {"bytes_from_backend", s[cache::CacheCounter::kBytesFromBackend]}};
}

// The disk tier alone (RAM 0) through the page cache.
void MeasureDiskPageCache(const Bucket& b, const Args& a, const Rows& row, Timings* t) {
  auto store = Open(b.cloud, a, 0, false);  // reopen: index rebuilt from headers
  ReadAll(*store, a, 1, b.hashes, true);    // verify everything once from disk
  t->disk1 = ReadAll(*store, a, 1, b.hashes, false);
  row("warm, disk tier only (page cache)", t->disk1, 1);
  t->disk4 = ReadAll(*store, a, 4, b.hashes, false);
  row("warm, disk tier only (page cache)", t->disk4, 4);
  if (store->cache().Stats()[cache::CacheCounter::kMisses] != 0) std::fprintf(stderr, "unexpected misses from disk\n");
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Ratios taken round by round (the pair ran back to back), then their median.
double PairedRatio(const std::vector<double>& base, const std::vector<double>& t) {
  std::vector<double> r;
  for (size_t i = 0; i < t.size(); ++i) r.push_back(base[i] / t[i]);
  return Median(r);
}

// O_DIRECT after a reopen, 1 reader: the tier (each block read as parts in
// flight), the same tier reading each block in one read (queue depth 1),
// and the device read fio-style and as parts, interleaved over rounds (a
// shared VM's disk drifts between runs): medians.
void MeasureDirect(const Bucket& b, const Args& a, const Rows& row, Timings* t, nlohmann::json* j) {
  std::vector<std::string> files;
  for (auto& e : fs::recursive_directory_iterator(fs::path(a.dir) / "blocks")) {
    if (e.is_regular_file()) files.push_back(e.path());
  }
  constexpr int kRounds = 5;
  std::vector<double> t_parts, t_one, t_fio, t_devparts;
  uint64_t direct_bytes = 0, parts_bytes = 0;
  for (int round = 0; round < kRounds; ++round) {
    {
      auto store = Open(b.cloud, a, 0, true);  // reopened: warm from the disk tier, as after a restart
      t_parts.push_back(ReadAll(*store, a, 1, b.hashes, false));
      if (round == 0) {
        cache::CacheStats s = store->cache().Stats();
        t->requests_after_reopen = s[cache::CacheCounter::kMetaMisses] + s[cache::CacheCounter::kMisses];
        t->direct4 = ReadAll(*store, a, 4, b.hashes, false);
      }
    }
    {
      auto store = Open(b.cloud, a, 0, true, /*read_part_bytes=*/0);
      t_one.push_back(ReadAll(*store, a, 1, b.hashes, false));
    }
    t_fio.push_back(DirectReadAll(files, 4 << 20, 1, &direct_bytes));
    t_devparts.push_back(DirectPartsReadAll(files, &parts_bytes));
  }
  t->direct1 = Median(t_parts);
  t->direct_one_read1 = Median(t_one);
  const double fio1 = Median(t_fio), parts1 = Median(t_devparts);
  t->tier_of_fio = PairedRatio(t_fio, t_parts);
  t->one_read_of_fio = PairedRatio(t_fio, t_one);
  row("warm, disk tier only (O_DIRECT)", t->direct1, 1);
  row("warm, disk tier only (O_DIRECT)", t->direct4, 4);
  row("warm, disk tier, O_DIRECT one read", t->direct_one_read1, 1);
  t->fio4 = DirectReadAll(files, 4 << 20, 4, &direct_bytes);
  const double fio_mb1 = direct_bytes / 1e6 / fio1, fio_mb4 = direct_bytes / 1e6 / t->fio4;
  const double parts_mb1 = parts_bytes / 1e6 / parts1;
  std::printf("  %-34s %2d reader  %8.3f s %9.1f MB/s\n", "O_DIRECT pread 4 MiB (fio-style)", 1, fio1, fio_mb1);
  std::printf("  %-34s %2d readers %8.3f s %9.1f MB/s\n", "O_DIRECT pread 4 MiB (fio-style)", 4, t->fio4, fio_mb4);
  std::printf("  %-34s %2d reader  %8.3f s %9.1f MB/s\n", "O_DIRECT 1 MiB parts in flight", 1, parts1, parts_mb1);
  std::printf(
      "  (1-reader O_DIRECT rows: medians of %d interleaved rounds, each tier run after a reopen, ratios to fio-style "
      "taken round by round; io_uring %s)\n",
      kRounds, io::UringAvailable() ? "in use" : "unavailable: parts read one after another");
  (*j)["runs"].push_back(
      {{"name", "O_DIRECT 1 MiB parts in flight"}, {"readers", 1}, {"seconds", parts1}, {"mb_per_s", parts_mb1}});
  (*j)["runs"].push_back({{"name", "O_DIRECT pread 4 MiB"}, {"readers", 1}, {"seconds", fio1}, {"mb_per_s", fio_mb1}});
  (*j)["runs"].push_back(
      {{"name", "O_DIRECT pread 4 MiB"}, {"readers", 4}, {"seconds", t->fio4}, {"mb_per_s", fio_mb4}});
}

// Encrypted at rest against clear, in the same run: two directories filled
// (unmeasured) straight from memory and read warm from the disk tier alone,
// clear then encrypted back to back, over rounds: through the page cache
// (both directories held in it) with 1 and 4 readers, and with O_DIRECT
// (reopened) with 1 reader. Medians of the seconds; encrypted/clear rate
// ratios taken round by round.
// One encrypted-against-clear comparison over rounds: wall and reader CPU seconds.
struct ClearVsSealed {
  const char* name;
  int readers;
  std::vector<double> clear = {}, sealed = {}, clear_cpu = {}, sealed_cpu = {};

  void Round(object::ObjectStore& clear_store, object::ObjectStore& sealed_store, const Bucket& b, const Args& a) {
    double cpu = 0;
    clear.push_back(ReadAll(clear_store, a, readers, b.hashes, false, &cpu));
    clear_cpu.push_back(cpu);
    sealed.push_back(ReadAll(sealed_store, a, readers, b.hashes, false, &cpu));
    sealed_cpu.push_back(cpu);
  }
  // Encrypted rate / clear rate, and clear / encrypted reader CPU, round by round.
  double Ratio() const { return PairedRatio(clear, sealed); }
  double CpuRatio() const { return PairedRatio(clear_cpu, sealed_cpu); }
};

struct Encryption {
  std::vector<ClearVsSealed> runs;
  int rounds = 0;
  CodecRates codec;
};

// A disk tier alone (RAM 0) on `dir`, written inline while filled, so every block lands.
std::shared_ptr<cache::CachedStore> OpenDiskOnly(const Bucket& b, const Args& a, const std::string& dir, bool direct,
                                                 std::shared_ptr<const cache::BlockSealer> sealer) {
  return Open(b.mem, a, 0, direct, cache::CacheOptions{}.disk_read_part_bytes, std::move(sealer), dir);
}

void FillAndCheck(const Bucket& b, const Args& a, const std::string& dir,
                  const std::shared_ptr<const cache::BlockSealer>& sealer) {
  RemoveAll(dir);
  auto store = OpenDiskOnly(b, a, dir, false, sealer);
  ReadAll(*store, a, 4, b.hashes, true);  // fill
  store->cache().Flush();                 // the disk writes behind the fill land
  ReadAll(*store, a, 1, b.hashes, true);  // verify everything once from disk
  const uint64_t blocks = a.objects * ((a.size + cache::kDefaultBlockSize - 1) / cache::kDefaultBlockSize);
  if (store->cache().Stats()[cache::CacheCounter::kMisses] != blocks) {  // the fill's, none after
    std::fprintf(stderr, "unexpected misses from the disk tier in %s\n", dir.c_str());
    std::exit(1);
  }
}

Encryption MeasureEncryption(const Bucket& b, const Args& a, const Rows& row) {
  Encryption e;
  const std::string clear_dir = a.dir + "-clear", sealed_dir = a.dir + "-sealed";
  AesKey key;
  if (!RandomBytes(key.data(), key.size()).ok()) std::exit(1);
  const auto sealer = cache::BlockSealer::FromKey(key);
  FillAndCheck(b, a, clear_dir, nullptr);
  FillAndCheck(b, a, sealed_dir, sealer);
  e.rounds = a.encryption_rounds;
  e.runs = {{"page cache", 1}, {"page cache", 4}, {"O_DIRECT", 1}};
  for (int round = 0; round < e.rounds; ++round) {
    {
      auto clear = OpenDiskOnly(b, a, clear_dir, false, nullptr);
      auto sealed = OpenDiskOnly(b, a, sealed_dir, false, sealer);
      e.runs[0].Round(*clear, *sealed, b, a);
      e.runs[1].Round(*clear, *sealed, b, a);
    }
    auto clear = OpenDiskOnly(b, a, clear_dir, true, nullptr);
    auto sealed = OpenDiskOnly(b, a, sealed_dir, true, sealer);
    e.runs[2].Round(*clear, *sealed, b, a);
  }
  for (const ClearVsSealed& r : e.runs) {
    const std::string name = std::string("warm, disk tier, ") + r.name;
    row((name + ", clear").c_str(), Median(r.clear), r.readers);
    row((name + ", encrypted").c_str(), Median(r.sealed), r.readers);
  }
  std::printf(
      "  (encryption rows: medians of %d rounds, clear and encrypted back to back, ratios taken round by round)\n",
      e.rounds);
  RemoveAll(clear_dir);
  RemoveAll(sealed_dir);
  e.codec = MeasureCodec(b.data, a.objects >= 64 ? 2 : 8);
  std::printf("  %-34s %9.2f GB/s per core (XXH3 %.2f, memcpy %.2f, same thread)\n", "AES-256-GCM seal 4 MiB",
              e.codec.seal, e.codec.xxh3, e.codec.memcpy);
  std::printf("  %-34s %9.2f GB/s per core\n", "AES-256-GCM open 4 MiB", e.codec.open);
  return e;
}

nlohmann::json EncryptionJson(const Encryption& e) {
  nlohmann::json j = {{"seal_gb_per_core_s", e.codec.seal},
                      {"open_gb_per_core_s", e.codec.open},
                      {"xxh3_gb_per_core_s", e.codec.xxh3},
                      {"memcpy_gb_per_core_s", e.codec.memcpy},
                      {"rounds", e.rounds}};
  for (const ClearVsSealed& r : e.runs) {
    j["warm_disk"].push_back({{"read", r.name},
                              {"readers", r.readers},
                              {"clear_seconds", Median(r.clear)},
                              {"encrypted_seconds", Median(r.sealed)},
                              {"clear_cpu_seconds", Median(r.clear_cpu)},
                              {"encrypted_cpu_seconds", Median(r.sealed_cpu)},
                              {"encrypted_over_clear", r.Ratio()},
                              {"clear_cpu_over_encrypted_cpu", r.CpuRatio()}});
  }
  return j;
}

void PrintEncryption(const Encryption& e) {
  std::printf("encryption at rest: seal %.2f GB/s, open %.2f GB/s per core (XXH3 %.2f, memcpy %.2f)\n", e.codec.seal,
              e.codec.open, e.codec.xxh3, e.codec.memcpy);
  for (const ClearVsSealed& r : e.runs) {
    std::printf(
        "  warm disk tier (%s, %d reader%s): encrypted = %.0f%% of clear's rate; clear's reader CPU = %.0f%% "
        "of encrypted's\n",
        r.name, r.readers, r.readers == 1 ? "" : "s", 100 * r.Ratio(), 100 * r.CpuRatio());
  }
}

nlohmann::json SummaryJson(const Timings& t) {
  return {{"cold_seconds", t.cold},
          {"warm_seconds", t.warm_ram1},
          {"speedup", t.cold / t.warm_ram1},
          {"warm_fraction_of_memcpy_1", t.memcpy1 / t.warm_ram1},
          {"warm_fraction_of_memcpy_4", t.memcpy4 / t.warm_ram4},
          {"disk_direct_fraction_of_fio_1", t.tier_of_fio},
          {"disk_direct_fraction_of_fio_4", t.fio4 / t.direct4},
          {"disk_direct_one_read_fraction_of_fio_1", t.one_read_of_fio},
          {"requests_after_reopen", t.requests_after_reopen},
          {"every_warm_faster_than_cold", t.SlowestWarm() < t.cold}};
}

void PrintSummary(const Timings& t, const Encryption& e, bool every_warm_faster) {
  std::printf(
      "\ncold %.2f s, warm %.3f s (RAM, 1 reader): speedup %.0fx; warm = %.0f%% of memcpy (1 thread), "
      "%.0f%% (4 threads)\n",
      t.cold, t.warm_ram1, t.cold / t.warm_ram1, 100 * t.memcpy1 / t.warm_ram1, 100 * t.memcpy4 / t.warm_ram4);
  std::printf(
      "disk tier with O_DIRECT = %.0f%% (1 reader), %.0f%% (4 readers) of fio-style O_DIRECT reads; "
      "%.0f%% (1 reader) reading each block in one read\n",
      100 * t.tier_of_fio, 100 * t.fio4 / t.direct4, 100 * t.one_read_of_fio);
  std::printf("store requests by the reopened cache's two warm passes: %llu (each pass starts with a LIST)\n",
              static_cast<unsigned long long>(t.requests_after_reopen));
  PrintEncryption(e);
  std::printf("slowest warm run %.3f s vs cold %.2f s: %s\n", t.SlowestWarm(), t.cold,
              every_warm_faster ? "every warm run beat cold" : "A WARM RUN WAS SLOWER THAN COLD");
}

}  // namespace

// Every run: the baselines, cold, each warm tier, and encryption at rest.
void MeasureAll(const Bucket& bucket, const Args& a, const Rows& row, nlohmann::json* j) {
  Timings t;
  t.memcpy1 = MemcpyAll(bucket.data, a.size, 1);
  t.memcpy4 = MemcpyAll(bucket.data, a.size, 4);
  row("memcpy (baseline)", t.memcpy1, 1);
  row("memcpy (baseline)", t.memcpy4, 4);
  MeasureColdAndRam(bucket, a, row, &t, j);
  MeasureDiskPageCache(bucket, a, row, &t);
  MeasureDirect(bucket, a, row, &t, j);
  const Encryption enc = MeasureEncryption(bucket, a, row);
  (*j)["encryption"] = EncryptionJson(enc);
  (*j)["summary"] = SummaryJson(t);
  PrintSummary(t, enc, (*j)["summary"]["every_warm_faster_than_cold"].get<bool>());
}

int main(int argc, char** argv) {
  Args a;
  if (const std::optional<int> exit_code = Parse(argc, argv, &a)) return *exit_code;
  const double total = static_cast<double>(a.objects) * a.size;
  RemoveAll(a.dir);
  const Bucket bucket = Populate(a);
  std::printf("cache_bench: %d objects x %.0f MiB = %.0f MiB behind EmulateCloud(%s), cache dir %s\n", a.objects,
              a.size / 1048576.0, total / 1048576.0, object::FormatCloudProfile(bucket.profile).c_str(), a.dir.c_str());

  nlohmann::json j;
  j["bench"] = "cache_bench";  // how `strata plan --from-bench` tells it apart
  j["objects"] = a.objects;
  j["object_bytes"] = a.size;
  j["block_bytes"] = cache::kDefaultBlockSize;
  j["profile"] = object::FormatCloudProfile(bucket.profile);
  const Rows row{total / 1e6, &j};

  if (a.encryption_only) {
    const Encryption enc = MeasureEncryption(bucket, a, row);
    j["encryption"] = EncryptionJson(enc);
    PrintEncryption(enc);
  } else {
    MeasureAll(bucket, a, row, &j);
  }
  if (!bench::WriteResultsJson("cache_bench", a.out, j)) return 1;
  std::printf(
      "wrote %s\nreproduce: ninja -C build cache_bench && build/bench/cache_bench --objects %d --size-mib %llu%s%s\n",
      a.out.c_str(), a.objects, static_cast<unsigned long long>(a.size >> 20),
      a.encryption_only ? " --encryption-only" : "",
      a.encryption_rounds != 5 ? (" --encryption-rounds " + std::to_string(a.encryption_rounds)).c_str() : "");
  RemoveAll(a.dir);
  return 0;
}

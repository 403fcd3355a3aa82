// shards_bench: small files vs packed shards behind an emulated cloud bucket.
// N files of ~100 KiB (default 100,000) sit in a mem:// bucket behind
// EmulateCloud (30 ms to first byte, 25 MB/s per connection). In one run it
// measures: (1) reading every file as its own object, 64 GETs in flight;
// (2) packing them into shards (dataset::Pack), the pack throughput;
// (3) reading the shards sequentially with large ranged GETs, 64 in flight;
// (4) random access to samples via the shard index (one GET per sample).
// Samples/s and request counts for each; JSON to bench/out/shards.json (+ a
// PNG through bench/plot.py when matplotlib is there).
#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/executor.h"
#include "base/random.h"
#include "bench_output.h"
#include "dataset/dataset.h"
#include "dataset/pack.h"
#include "object/cloud_store.h"
#include "object/mem_store.h"
#include "object/store_wrapper.h"
#include "testing/subprocess.h"

namespace strata {
namespace {

// Counts requests per kind on their way to the emulated bucket.
class CountingStore : public object::StoreWrapper {
 public:
  explicit CountingStore(object::ObjectStorePtr inner) : object::StoreWrapper(std::move(inner)) {}
  std::atomic<uint64_t> gets{0}, puts{0}, other{0}, get_bytes{0};
  uint64_t total() const { return gets + puts + other; }
  void Reset() { gets = puts = other = get_bytes = 0; }

  Result<object::GetResult> Get(std::string_view key, const object::GetOptions& o) override {
    ++gets;
    auto r = base_->Get(key, o);
    if (r.ok()) get_bytes += r->data.size();
    return r;
  }
  Result<object::ObjectInfo> Head(std::string_view key) override { return ++other, base_->Head(key); }
  Result<object::ListResult> List(const object::ListOptions& o) override { return ++other, base_->List(o); }
  Result<object::ObjectInfo> Put(std::string_view key, Buffer data, const object::PutOptions& o) override {
    return ++puts, base_->Put(key, std::move(data), o);
  }
  Status Delete(std::string_view key) override { return ++other, base_->Delete(key); }
  Result<std::string> CreateMultipartUpload(std::string_view key, const object::PutOptions& o) override {
    return ++other, base_->CreateMultipartUpload(key, o);
  }
  Result<std::string> UploadPart(std::string_view key, std::string_view id, int n, Buffer data,
                                 const object::PartOptions& o) override {
    return ++puts, base_->UploadPart(key, id, n, std::move(data), o);
  }
  Result<object::ObjectInfo> CompleteMultipartUpload(std::string_view key, std::string_view id,
                                                     const std::vector<object::CompletedPart>& parts,
                                                     const object::CompleteOptions& o) override {
    return ++other, base_->CompleteMultipartUpload(key, id, parts, o);
  }
  Status AbortMultipartUpload(std::string_view key, std::string_view id) override {
    return ++other, base_->AbortMultipartUpload(key, id);
  }
  Result<std::vector<object::PartInfo>> ListParts(std::string_view key, std::string_view id) override {
    return ++other, base_->ListParts(key, id);
  }
  Result<object::ObjectInfo> Copy(std::string_view src, std::string_view dst,
                                  const object::CopyOptions& options) override {
    return ++other, base_->Copy(src, dst, options);
  }
};

struct Args {
  uint64_t count = 100000;
  uint64_t size = 100 << 10;
  int concurrency = 64;
  uint64_t shard_size_mib = 64;
  std::string format = "tar";
  int pack_parallel = 8;
  int read_streams = 16;
  uint64_t chunk_mib = 8;
  int random_samples = 2000;
  double ttfb_ms = 30, bw_mbps = 25;
  std::string out = "bench/out/shards.json";
};

uint64_t MemAvailable() {
  std::ifstream in("/proc/meminfo");
  std::string k;
  uint64_t v;
  std::string unit;
  while (in >> k >> v >> unit) {
    if (k == "MemAvailable:") return v << 10;
  }
  return 0;
}

std::string Key(uint64_t i) {
  char b[64];
  snprintf(b, sizeof b, "files/c%02llu/%07llu.jpg", static_cast<unsigned long long>(i % 10),
           static_cast<unsigned long long>(i));
  return b;
}

[[noreturn]] void Die(const std::string& what, const Status& s) {
  std::cerr << "shards_bench: " << what << ": " << s.ToString() << "\n";
  std::exit(1);
}

// The small files in a mem:// bucket: slices of one random pool (the mem
// store keeps Buffers without copying), each of size +-10%.
struct Bucket {
  std::shared_ptr<object::ObjectStore> files;
  uint64_t total_bytes = 0;
};

Bucket Populate(const Args& a, Random& rng) {
  uint64_t pool_size = 64ull << 20;
  std::string pool(pool_size, '\0');
  for (size_t i = 0; i + 8 <= pool.size(); i += 8) {
    uint64_t v = rng.Next();
    std::memcpy(pool.data() + i, &v, 8);
  }
  Buffer pool_buf = Buffer::FromString(std::move(pool));
  Bucket b;
  b.files = object::MakeMemStore();
  for (uint64_t i = 0; i < a.count; ++i) {
    uint64_t size = a.size * 9 / 10 + rng.Uniform(a.size / 5 + 1);
    uint64_t off = (i * 1000003) % (pool_size - size);
    if (!b.files->Put(Key(i), pool_buf.Slice(off, size)).ok()) Die("populate", InternalError("put failed"));
    b.total_bytes += size;
  }
  return b;
}

// One measured phase: how long it took and the requests it made.
struct Phase {
  double seconds = 0;
  uint64_t requests = 0;
};

// (1) Small files: one GET each, `concurrency` in flight.
Phase ReadSmallFiles(const Args& a, CountingStore& src, uint64_t total_bytes) {
  TimePoint t0 = RealClock().Now();
  std::atomic<uint64_t> next{0}, errors{0};
  ParallelFor(a.concurrency, a.concurrency, [&](size_t) {
    for (uint64_t i = next++; i < a.count; i = next++) {
      if (!src.Get(Key(i), {}).ok()) ++errors;
    }
  });
  Phase p{Seconds(RealClock().Now() - t0), src.total()};
  if (errors) Die("small-file read", InternalError(std::to_string(errors.load()) + " GETs failed"));
  std::printf("small files:   %8.0f samples/s  %7.1f MB/s  %8llu requests  %.1f s\n", a.count / p.seconds,
              total_bytes / p.seconds / 1e6, static_cast<unsigned long long>(p.requests), p.seconds);
  return p;
}

// (2) Pack, with as many GETs in flight as (1).
dataset::PackResult PackShards(const Args& a, dataset::ShardFormat format, uint64_t shard_bytes, CountingStore& src,
                               CountingStore& dst, uint64_t total_bytes, Phase* phase) {
  src.Reset();
  dataset::PackOptions po;
  po.format = format;
  po.shard_size = shard_bytes;
  po.parallel = a.pack_parallel;
  po.fetch_concurrency = std::max(1, a.concurrency / a.pack_parallel);  // same GETs in flight as (1)
  po.imagefolder = dataset::ImageFolderMode::kOff;
  TimePoint t0 = RealClock().Now();
  auto packed = dataset::Pack(src, "files/", dst, "shards/", po);
  phase->seconds = Seconds(RealClock().Now() - t0);
  if (!packed.ok()) Die("pack", packed.status());
  phase->requests = src.total() + dst.total();
  std::printf("pack:          %8.0f samples/s  %7.1f MB/s  %8llu requests  %.1f s -> %llu shards\n",
              a.count / phase->seconds, total_bytes / phase->seconds / 1e6,
              static_cast<unsigned long long>(phase->requests), phase->seconds,
              static_cast<unsigned long long>(packed->manifest.shards.size()));
  return std::move(*packed);
}

// (3) Shards, streamed: read_streams shards at once, 4 chunks in flight each.
Phase ReadShards(const Args& a, const std::shared_ptr<CountingStore>& dst, uint64_t shards, uint64_t shard_bytes_out) {
  dst->Reset();
  auto ds = dataset::Dataset::Open(dst, "shards/");
  if (!ds.ok()) Die("open dataset", ds.status());
  TimePoint t0 = RealClock().Now();
  std::atomic<uint64_t> next_shard{0}, samples_read{0};
  std::atomic<bool> failed{false};
  ParallelFor(a.read_streams, a.read_streams, [&](size_t) {
    for (uint64_t k = next_shard++; k < shards && !failed; k = next_shard++) {
      auto s = (*ds)->OpenShard(k, {a.chunk_mib << 20, 4, nullptr});
      if (!s.ok()) {
        failed = true;
        std::cerr << s.status() << "\n";
        return;
      }
      while (true) {
        auto sample = s->samples->Next();
        if (!sample.ok()) {
          failed = true;
          std::cerr << sample.status() << "\n";
          return;
        }
        if (!*sample) break;
        ++samples_read;
      }
    }
  });
  Phase p{Seconds(RealClock().Now() - t0), dst->total()};
  if (failed || samples_read != a.count) {
    Die("shard read", InternalError("read " + std::to_string(samples_read.load()) + " of " + std::to_string(a.count)));
  }
  std::printf("shards:        %8.0f samples/s  %7.1f MB/s  %8llu requests  %.1f s\n", a.count / p.seconds,
              shard_bytes_out / p.seconds / 1e6, static_cast<unsigned long long>(p.requests), p.seconds);
  return p;
}

// (4) Random access through the index: one GET per sample after the sidecars.
Phase RandomAccess(const Args& a, const std::shared_ptr<CountingStore>& dst, Random& rng) {
  dst->Reset();
  auto ds = dataset::Dataset::Open(dst, "shards/");
  if (!ds.ok()) Die("open dataset", ds.status());
  std::vector<uint64_t> picks(a.random_samples);
  for (auto& p : picks) p = rng.Uniform(a.count);
  std::atomic<uint64_t> next_pick{0};
  std::atomic<bool> failed{false};
  TimePoint t0 = RealClock().Now();
  ParallelFor(a.concurrency, a.concurrency, [&](size_t) {
    for (uint64_t i = next_pick++; i < picks.size(); i = next_pick++) {
      if (!(*ds)->Get(picks[i]).ok()) failed = true;
    }
  });
  Phase p{Seconds(RealClock().Now() - t0), dst->total()};
  if (failed) Die("random access", InternalError("a sample read failed"));
  std::printf("random access: %8.0f samples/s  %18llu requests for %d samples (%.1f s)\n", a.random_samples / p.seconds,
              static_cast<unsigned long long>(p.requests), a.random_samples, p.seconds);
  return p;
}

struct Results {
  uint64_t total_bytes = 0, shard_bytes = 0, shards = 0, packed_bytes = 0;
  Phase small, pack, read, random;
};

nlohmann::json ResultsJson(const Args& a, const Results& r) {
  const double small_s = r.small.seconds, pack_s = r.pack.seconds, shard_s = r.read.seconds;
  nlohmann::json j;
  j["title"] = "small files vs packed shards (emulated cloud bucket)";
  j["config"] = {{"files", a.count},
                 {"bytes", r.total_bytes},
                 {"mean_file_size", a.size},
                 {"concurrency", a.concurrency},
                 {"format", a.format},
                 {"shard_size", r.shard_bytes},
                 {"ttfb_ms", a.ttfb_ms},
                 {"bw_mb_per_s_per_conn", a.bw_mbps},
                 {"read_streams", a.read_streams},
                 {"chunk_mib", a.chunk_mib},
                 {"pack_parallel", a.pack_parallel}};
  j["small_files"] = {{"seconds", small_s},
                      {"samples_per_s", a.count / small_s},
                      {"requests", r.small.requests},
                      {"mb_per_s", r.total_bytes / small_s / 1e6}};
  j["pack"] = {{"seconds", pack_s},           {"samples_per_s", a.count / pack_s},
               {"requests", r.pack.requests}, {"mb_per_s", r.total_bytes / pack_s / 1e6},
               {"shards", r.shards},          {"shard_bytes", r.packed_bytes}};
  j["shards"] = {{"seconds", shard_s},
                 {"samples_per_s", a.count / shard_s},
                 {"requests", r.read.requests},
                 {"mb_per_s", r.packed_bytes / shard_s / 1e6}};
  j["random_access"] = {{"samples", a.random_samples},
                        {"seconds", r.random.seconds},
                        {"samples_per_s", a.random_samples / r.random.seconds},
                        {"requests", r.random.requests}};
  j["speedup_samples_per_s"] = (a.count / shard_s) / (a.count / small_s);
  j["charts"] = {{{"title", "samples/s"},
                  {"ylabel", "samples/s"},
                  {"groups", {"read"}},
                  {"series",
                   {{{"label", "small files (64 GETs)"}, {"values", {a.count / small_s}}},
                    {{"label", "packed shards"}, {"values", {a.count / shard_s}}}}}},
                 {{"title", "requests"},
                  {"ylabel", "requests"},
                  {"groups", {"read"}},
                  {"series",
                   {{{"label", "small files"}, {"values", {r.small.requests}}},
                    {{"label", "packed shards"}, {"values", {r.read.requests}}}}}}};
  return j;
}

// The JSON, a PNG through bench/plot.py when it is there, and the command line.
bool WriteResults(const Args& a, const nlohmann::json& j) {
  if (!bench::WriteResultsJson("shards_bench", a.out, j)) return false;
  std::string png = a.out.substr(0, a.out.rfind('.')) + ".png";
  if (std::error_code ec; std::filesystem::exists("bench/plot.py", ec)) {
    // No shell: --out may hold any character. The plot is optional (matplotlib may be missing).
    testing::RunCommand({"/usr/bin/python3", "bench/plot.py", a.out, png}).status().IgnoreError();
  }
  std::printf(
      "wrote %s\nreproduce: ninja -C build shards_bench && build/bench/shards_bench --count %llu --size %llu "
      "--concurrency %d --format %s\n",
      a.out.c_str(), static_cast<unsigned long long>(a.count), static_cast<unsigned long long>(a.size), a.concurrency,
      a.format.c_str());
  return true;
}

int Main(int argc, char** argv) {
  Args a;
  CLI::App app("small files vs packed shards behind an emulated cloud bucket");
  app.add_option("--count", a.count, "Number of files")->capture_default_str();
  app.add_option("--size", a.size, "Mean file size in bytes (each file is size +-10%)")->capture_default_str();
  app.add_option("--concurrency", a.concurrency, "GETs in flight for the small-file read")->capture_default_str();
  app.add_option("--shard-size-mib", a.shard_size_mib, "Shard size")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 16));
  app.add_option("--format", a.format, "tar | tfrecord | indexed")->capture_default_str();
  app.add_option("--pack-parallel", a.pack_parallel, "Shards packed at once (sharing --concurrency input GETs)")
      ->capture_default_str();
  app.add_option("--read-streams", a.read_streams, "Shards read at once (x4 chunk GETs in flight each)")
      ->capture_default_str();
  app.add_option("--chunk-mib", a.chunk_mib, "Ranged GET size when streaming shards")->capture_default_str();
  app.add_option("--random-samples", a.random_samples, "Samples read by random access")->capture_default_str();
  app.add_option("--ttfb-ms", a.ttfb_ms, "Emulated time to first byte")->capture_default_str();
  app.add_option("--bw-mbps", a.bw_mbps, "Emulated bandwidth per connection, MB/s")->capture_default_str();
  app.add_option("--out", a.out, "JSON output")->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  auto format = dataset::ParseShardFormat(a.format);
  if (!format.ok()) Die("--format", format.status());
  Results r;
  r.shard_bytes = a.shard_size_mib << 20;

  // The packed shards are real bytes, so that much RAM is needed.
  uint64_t need = a.count * a.size * 11 / 10 + (2ull << 30);
  if (MemAvailable() && MemAvailable() < need) {
    std::cerr << "shards_bench: needs about " << (need >> 20) << " MiB of RAM for the shards, "
              << (MemAvailable() >> 20) << " MiB available; lower --count\n";
    return 2;
  }
  Random rng(42);
  const Bucket bucket = Populate(a, rng);
  r.total_bytes = bucket.total_bytes;
  object::CloudProfile profile;
  profile.first_byte = std::chrono::microseconds(static_cast<int64_t>(a.ttfb_ms * 1000));
  profile.bytes_per_second_per_connection = a.bw_mbps * 1e6;
  auto src = std::make_shared<CountingStore>(object::EmulateCloud(bucket.files, profile));
  auto dst = std::make_shared<CountingStore>(object::EmulateCloud(object::MakeMemStore(), profile));
  std::printf("%llu files, %.2f GB, bucket: ttfb %.0f ms, %.0f MB/s per connection\n",
              static_cast<unsigned long long>(a.count), r.total_bytes / 1e9, a.ttfb_ms, a.bw_mbps);

  r.small = ReadSmallFiles(a, *src, r.total_bytes);
  const dataset::PackResult packed = PackShards(a, *format, r.shard_bytes, *src, *dst, r.total_bytes, &r.pack);
  r.shards = packed.manifest.shards.size();
  r.packed_bytes = packed.output_bytes;
  r.read = ReadShards(a, dst, r.shards, r.packed_bytes);
  r.random = RandomAccess(a, dst, rng);
  std::printf("shards vs small files: %.1fx samples/s with %.0fx fewer requests\n",
              (a.count / r.read.seconds) / (a.count / r.small.seconds),
              static_cast<double>(r.small.requests) / r.read.requests);
  return WriteResults(a, ResultsJson(a, r)) ? 0 : 1;
}

}  // namespace
}  // namespace strata

int main(int argc, char** argv) { return strata::Main(argc, argv); }

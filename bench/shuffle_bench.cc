// Loader benchmark: shuffle quality vs cost, and streaming throughput with
// and without prefetch from an emulated cloud bucket.
//
// Quality (pure, from loader/plan.h over a synthetic index), of the order
// StreamingDataLoader(num_workers=8) yields (8 streams, one run of shards per
// worker): for kNone, kShards and kWindow with windows 1..16, the Spearman rank correlation
// between a sample's storage position and its epoch position, the share of
// consecutive epoch samples that come from the same shard, and the distinct
// shards per batch. Cost, measured: real iterators over a mem store of the
// same shape, their Stats.shards_fetched summed: per worker when each worker
// (a DataLoader process) has a RAM cache of its own (in the 8-stream order,
// and in the one-stream order a plain torch DataLoader over the dataset
// deals), and per node when the
// workers share a cache directory (the Python default), the workers running
// at once with caches of their own on one directory. Cost, simulated: fetches
// per worker if it kept only an LRU cache of C shards (a reader that drops
// shards it still needs; the loader keeps each shard from its first to its
// last use instead). Throughput: StreamingDataset over a mem
// store behind EmulateCloud (30 ms first byte, 25 MB/s per connection):
// one request at a time (no prefetch), a fixed 4 shards ahead with 16
// ranged reads each (the old default), and the default demand-sized prefetch.
// Writes bench/out/shuffle.json (plot.py schema) and prints the tables.
// Reproduce: build-*/bench/shuffle_bench [--quick] [--out bench/out/shuffle.json]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <list>
#include <nlohmann/json.hpp>
#include <numeric>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>

#include "bench_output.h"
#include "io/durable.h"
#include "io/file_system.h"
#include "loader/loader_test_util.h"
#include "loader/plan.h"
#include "loader/streaming_dataset.h"
#include "object/cloud_store.h"
#include "object/mem_store.h"

namespace strata::loader {
namespace {

struct Quality {
  std::string name;
  OrderSpec spec;
  double spearman = 0, same_shard = 0, shards_per_batch = 0;
  std::vector<double> fetches;    // simulated, per cache size
  double fetched_per_worker = 0;  // measured: own cache per worker (mean), one stream per worker
  double fetched_one_stream = 0;  // measured: the same with the one-stream order
  uint64_t fetched_per_node = 0;  // measured: the workers sharing a cache directory (total)
};

double Spearman(const std::vector<uint64_t>& order) {
  // order[p] = storage index; both are ranks, so rho = 1 - 6 sum d^2 / (n (n^2 - 1)).
  double n = static_cast<double>(order.size()), sum = 0;
  for (size_t p = 0; p < order.size(); ++p) {
    double d = static_cast<double>(p) - static_cast<double>(order[p]);
    sum += d * d;
  }
  return 1 - 6 * sum / (n * (n * n - 1));
}

// Fetches one worker makes over the epoch with an LRU cache of `cache` shards.
double WorkerFetches(const std::vector<uint64_t>& order, const PartitionSpec& spec, size_t worker, uint64_t per_shard,
                     size_t cache) {
  std::list<uint64_t> lru;
  std::unordered_map<uint64_t, std::list<uint64_t>::iterator> where;
  double fetches = 0;
  for (auto r : WorkerBatches(spec, 0, worker)) {
    for (uint64_t p = r.begin; p < r.end; ++p) {
      uint64_t shard = order[p] / per_shard;
      auto it = where.find(shard);
      if (it != where.end()) {
        lru.erase(it->second);
      } else {
        ++fetches;
        if (lru.size() == cache) where.erase(lru.back()), lru.pop_back();
      }
      lru.push_front(shard);
      where[shard] = lru.begin();
    }
  }
  return fetches;
}

Quality Measure(const std::string& name, OrderSpec spec, size_t shards, uint64_t per_shard, size_t workers,
                size_t batch, const std::vector<size_t>& caches) {
  // The order of `workers` streams: global batch g comes from run g % workers.
  dataset::Manifest m;
  for (size_t k = 0; k < shards; ++k) m.shards.push_back({"s" + std::to_string(k), 1, per_shard, "", "", ""});
  std::string fp = Fingerprint(m, spec);
  auto order = EpochOrder(std::vector<uint64_t>(shards, per_shard), spec, fp, 0, workers, batch);
  Quality q;
  q.name = name;
  q.spec = spec;
  q.spearman = Spearman(order);
  uint64_t same = 0;
  for (size_t p = 1; p < order.size(); ++p) same += order[p] / per_shard == order[p - 1] / per_shard;
  q.same_shard = 100.0 * same / (order.size() - 1);
  double distinct = 0, batches = 0;
  for (size_t p = 0; p < order.size(); p += batch, ++batches) {
    std::set<uint64_t> s;
    for (size_t i = p; i < std::min(order.size(), p + batch); ++i) s.insert(order[i] / per_shard);
    distinct += s.size();
  }
  q.shards_per_batch = distinct / batches;
  PartitionSpec part{order.size(), 1, 0, workers, batch, false};
  for (size_t c : caches) {
    double total = 0;
    for (size_t w = 0; w < workers; ++w) total += WorkerFetches(order, part, w, per_shard, c);
    q.fetches.push_back(total / workers);
  }
  return q;
}

// Drains worker `w`'s part of epoch 0 of a dataset opened with `o`; its Stats.
Stats DrainWorker(object::ObjectStorePtr store, StreamingOptions o, size_t w, uint64_t streams) {
  auto ds = StreamingDataset::Open(store, "ds", o);
  if (!ds.ok()) {
    fprintf(stderr, "shuffle_bench: %s\n", ds.status().ToString().c_str());
    return {};
  }
  auto it = *(*ds)->Iterate(w, (*ds)->MakeState(0, 0, streams));
  while (true) {
    auto b = it->NextBatch();
    if (!b.ok()) fprintf(stderr, "shuffle_bench: %s\n", b.status().ToString().c_str());
    if (!b.ok() || !*b) break;
  }
  return it->stats();
}

// The real loader's fetches for `q`'s order: each worker with a cache of its
// own (RAM only, as separate DataLoader processes without cache_dir), then all
// workers at once on one cache directory (each with its own cache, as processes).
void MeasureFetches(object::ObjectStorePtr store, Quality& q, size_t workers, size_t batch, const std::string& dir) {
  StreamingOptions o;
  o.shuffle = q.spec.shuffle, o.seed = q.spec.seed, o.shuffle_window = std::max<size_t>(q.spec.shuffle_window, 1);
  o.num_workers = workers, o.batch_size = batch, o.share_cache = false, o.decode_threads = 1;
  o.ram_cache_bytes = 0;  // the iterator itself holds a shard from first to last use
  uint64_t own = 0;
  for (size_t w = 0; w < workers; ++w) own += DrainWorker(store, o, w, workers).shards_fetched;
  q.fetched_per_worker = static_cast<double>(own) / workers;
  own = 0;
  for (size_t w = 0; w < workers; ++w) own += DrainWorker(store, o, w, 1).shards_fetched;
  q.fetched_one_stream = static_cast<double>(own) / workers;
  o.cache_dir = dir;
  std::vector<Stats> stats(workers);
  std::vector<std::thread> threads;
  for (size_t w = 0; w < workers; ++w) threads.emplace_back([&, w] { stats[w] = DrainWorker(store, o, w, workers); });
  for (auto& t : threads) t.join();
  for (const Stats& s : stats) q.fetched_per_node += s.shards_fetched;
  (void)io::RemoveAll(io::DefaultFileSystem(), dir);
}

double Throughput(object::ObjectStorePtr store, StreamingOptions o, uint64_t* samples) {
  auto ds = *StreamingDataset::Open(store, "ds", o);
  auto t0 = std::chrono::steady_clock::now();
  auto it = *ds->Iterate(0, ds->MakeState(0, 0));
  *samples = 0;
  while (true) {
    auto b = it->NextBatch();
    if (!b.ok()) {
      fprintf(stderr, "shuffle_bench: %s\n", b.status().ToString().c_str());
      return 0;
    }
    if (!*b) break;
    *samples += (*b)->indices.size();
  }
  return *samples / std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// The dataset's shape: shards x samples, read by `workers` in batches.
struct Shape {
  size_t shards = 256, workers = 8, batch = 32;
  uint64_t per_shard = 200;
  std::vector<size_t> caches = {1, 4, 16, 64};  // simulated LRU sizes, in shards
};

// Every shuffle's quality and simulated cost, then its fetches measured by
// the real loader over a mem store of the same shape (tiny samples: the fetch
// counts are the point); `*measure_s` is how long those took.
std::vector<Quality> MeasureShuffles(const Shape& s, double* measure_s) {
  std::vector<Quality> rows;
  rows.push_back(Measure("none", {Shuffle::kNone, 1, 1}, s.shards, s.per_shard, s.workers, s.batch, s.caches));
  rows.push_back(Measure("shards", {Shuffle::kShards, 1, 1}, s.shards, s.per_shard, s.workers, s.batch, s.caches));
  for (size_t w : {1, 2, 4, 8, 16}) {
    rows.push_back(Measure("window " + std::to_string(w), {Shuffle::kWindow, 1, w}, s.shards, s.per_shard, s.workers,
                           s.batch, s.caches));
  }
  auto fetch_store = object::MakeMemStore("shuffle-bench-fetches");
  testing::WriteDataset(*fetch_store, "ds/", dataset::ShardFormat::kTar, std::vector<uint64_t>(s.shards, s.per_shard),
                        [](uint64_t i) {
                          return std::vector<dataset::Field>{{"bin", Buffer::FromString(std::to_string(i))}};
                        });
  const std::string fetch_dir = *io::MakeTempDir("strata-shuffle-bench-");
  auto t_measure = std::chrono::steady_clock::now();
  for (auto& q : rows) MeasureFetches(fetch_store, q, s.workers, s.batch, fetch_dir + "/" + q.name);
  *measure_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_measure).count();
  (void)io::RemoveAll(io::DefaultFileSystem(), fetch_dir);
  object::DropMemStore("shuffle-bench-fetches");
  return rows;
}

void PrintShuffles(const Shape& s, const std::vector<Quality>& rows, double measure_s) {
  printf("shuffle quality and cost: %zu shards x %llu samples, %zu workers, batch %zu\n", s.shards,
         static_cast<unsigned long long>(s.per_shard), s.workers, s.batch);
  printf("%-10s %9s %11s %12s | %14s %14s %12s |", "shuffle", "spearman", "same-shard%", "shards/batch",
         "fetched/worker", "(one stream)", "fetched/node");
  for (size_t c : s.caches) printf(" sim LRU C=%-3zu", c);
  printf("\n");
  for (const auto& q : rows) {
    printf("%-10s %9.4f %11.1f %12.1f | %14.1f %14.1f %12llu |", q.name.c_str(), q.spearman, q.same_shard,
           q.shards_per_batch, q.fetched_per_worker, q.fetched_one_stream,
           static_cast<unsigned long long>(q.fetched_per_node));
    for (double f : q.fetches) printf(" %13.0f", f);
    printf("\n");
  }
  printf(
      "(order of %zu streams, one per worker, as StreamingDataLoader deals it; measured: real iterators'\n"
      " Stats.shards_fetched, %.1f s; per worker: each with its own cache, and the same in the one-stream order of\n"
      " a plain DataLoader; per node: the workers at once sharing a cache directory; sim LRU: a reader keeping\n"
      " only C shards)\n",
      s.workers, measure_s);
}

// Samples/s from an emulated cloud bucket three ways.
struct Throughputs {
  uint64_t sample_bytes = 64 << 10;
  double off = 0, fixed = 0, demand = 0;
};

Throughputs MeasureThroughputs(bool quick) {
  Throughputs t;
  const uint64_t tp_shards = quick ? 8 : 24, tp_per_shard = 32, tp_bytes = t.sample_bytes;
  auto mem = object::MakeMemStore("shuffle-bench");
  testing::WriteDataset(
      *mem, "ds/", dataset::ShardFormat::kTar, std::vector<uint64_t>(tp_shards, tp_per_shard), [&](uint64_t i) {
        return std::vector<dataset::Field>{{"bin", Buffer::FromString(std::string(tp_bytes, static_cast<char>(i)))}};
      });
  auto cloud = object::EmulateCloud(mem, object::CloudProfile{});
  StreamingOptions demand;  // the defaults: prefetch sized by demand
  demand.batch_size = 16, demand.ram_cache_bytes = 0, demand.shuffle_window = 4;
  StreamingOptions off = demand;  // one request at a time, nothing ahead
  off.max_connections = 1, off.fetch_concurrency = 1, off.prefetch_shards = 1;
  StreamingOptions fixed = demand;  // the old default: a fixed count of shards ahead
  fixed.prefetch_shards = 4, fixed.fetch_concurrency = 16;
  uint64_t n_off = 0, n_fixed = 0, n_demand = 0;
  t.off = Throughput(cloud, off, &n_off);
  t.fixed = Throughput(cloud, fixed, &n_fixed);
  t.demand = Throughput(cloud, demand, &n_demand);
  double mb = static_cast<double>(tp_bytes) / 1e6;
  printf("\nthroughput from EmulateCloud (30 ms first byte, 25 MB/s per connection), %llu x %llu KiB samples:\n",
         static_cast<unsigned long long>(n_demand), static_cast<unsigned long long>(tp_bytes >> 10));
  printf("  one request at a time:                         %8.0f samples/s %7.1f MB/s\n", t.off, t.off * mb);
  printf("  fixed: 4 shards ahead, 16 ranged reads each:   %8.0f samples/s %7.1f MB/s  (x%.1f)\n", t.fixed,
         t.fixed * mb, t.off > 0 ? t.fixed / t.off : 0);
  printf("  demand-sized prefetch (the default):           %8.0f samples/s %7.1f MB/s  (x%.1f)\n", t.demand,
         t.demand * mb, t.off > 0 ? t.demand / t.off : 0);
  object::DropMemStore("shuffle-bench");
  return t;
}

nlohmann::json ResultsJson(const Shape& s, const std::vector<Quality>& rows, const Throughputs& t) {
  nlohmann::json j;
  j["title"] = "loader: shuffle quality vs cost, streaming throughput";
  std::vector<std::string> names;
  std::vector<double> same, spb, per_worker, one_stream, per_node;
  for (const auto& q : rows) {
    names.push_back(q.name), same.push_back(q.same_shard), spb.push_back(q.shards_per_batch);
    per_worker.push_back(q.fetched_per_worker), one_stream.push_back(q.fetched_one_stream);
    per_node.push_back(static_cast<double>(q.fetched_per_node));
  }
  nlohmann::json fetch_series = nlohmann::json::array();
  for (size_t c = 0; c < s.caches.size(); ++c) {
    std::vector<double> v;
    for (const auto& q : rows) v.push_back(q.fetches[c]);
    fetch_series.push_back({{"label", "cache " + std::to_string(s.caches[c]) + " shards"}, {"values", v}});
  }
  j["charts"] = {{{"title", "consecutive samples from the same shard"},
                  {"ylabel", "%"},
                  {"groups", names},
                  {"series", {{{"label", "same-shard %"}, {"values", same}}}}},
                 {{"title", "distinct shards per batch of " + std::to_string(s.batch)},
                  {"ylabel", "shards"},
                  {"groups", names},
                  {"series", {{{"label", "shards/batch"}, {"values", spb}}}}},
                 {{"title", "simulated: shard fetches per worker with an LRU of C shards (" +
                                std::to_string(s.workers) + " workers)"},
                  {"ylabel", "fetches"},
                  {"groups", names},
                  {"series", fetch_series}},
                 {{"title", "measured: shard fetches per epoch (" + std::to_string(s.shards) + " shards, " +
                                std::to_string(s.workers) + " workers)"},
                  {"ylabel", "fetches"},
                  {"groups", names},
                  {"series",
                   {{{"label", "per worker (own cache)"}, {"values", per_worker}},
                    {{"label", "per worker, one-stream order"}, {"values", one_stream}},
                    {{"label", "per node (shared cache dir)"}, {"values", per_node}}}}},
                 {{"title", "throughput from a 30 ms / 25 MB/s bucket"},
                  {"ylabel", "samples/s"},
                  {"groups", {"one request at a time", "4 shards ahead", "demand-sized"}},
                  {"series", {{{"label", "samples/s"}, {"values", {t.off, t.fixed, t.demand}}}}}}};
  j["rows"] = nlohmann::json::array();
  for (const auto& q : rows) {
    j["rows"].push_back({{"shuffle", q.name},
                         {"spearman", q.spearman},
                         {"same_shard_pct", q.same_shard},
                         {"shards_per_batch", q.shards_per_batch},
                         {"simulated_lru_fetches_per_worker", q.fetches},
                         {"fetched_per_worker", q.fetched_per_worker},
                         {"fetched_per_worker_one_stream", q.fetched_one_stream},
                         {"fetched_per_node", q.fetched_per_node}});
  }
  j["cache_sizes"] = s.caches;
  j["throughput"] = {{"one_request_samples_per_s", t.off},
                     {"fixed_prefetch_samples_per_s", t.fixed},
                     {"demand_prefetch_samples_per_s", t.demand},
                     {"sample_bytes", t.sample_bytes}};
  return j;
}

int Main(int argc, char** argv) {
  bool quick = false;
  std::string out = "bench/out/shuffle.json";
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "--quick"))
      quick = true;
    else if (!strcmp(argv[i], "--out") && i + 1 < argc)
      out = argv[++i];
    else {
      fprintf(stderr, "usage: shuffle_bench [--quick] [--out FILE]\n");
      return 2;
    }
  }
  const Shape shape;
  double measure_s = 0;
  const std::vector<Quality> rows = MeasureShuffles(shape, &measure_s);
  PrintShuffles(shape, rows, measure_s);
  const Throughputs throughputs = MeasureThroughputs(quick);
  if (!bench::WriteResultsJson("shuffle_bench", out, ResultsJson(shape, rows, throughputs))) return 1;
  printf("\nwrote %s; plot: /usr/bin/python3 bench/plot.py %s bench/out/shuffle.png\n", out.c_str(), out.c_str());
  printf("reproduce: build/bench/shuffle_bench%s\n", quick ? " --quick" : "");
  return 0;
}

}  // namespace
}  // namespace strata::loader

int main(int argc, char** argv) { return strata::loader::Main(argc, argv); }

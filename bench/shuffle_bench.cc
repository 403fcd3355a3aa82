// Loader benchmark: shuffle quality vs cost, and streaming throughput with
// and without prefetch from an emulated cloud bucket.
//
// Quality (pure, from loader/plan.h over a synthetic index): for kNone,
// kShards and kWindow with windows 1..16, the Spearman rank correlation
// between a sample's storage position and its epoch position, the share of
// consecutive epoch samples that come from the same shard, and the distinct
// shards per batch. Cost, measured: real iterators over a mem store of the
// same shape, their Stats.shards_fetched summed: per worker when each worker
// (a DataLoader process) has a RAM cache of its own, and per node when the
// workers share a cache directory (the Python default), the workers running
// at once with caches of their own on one directory. Cost, simulated: fetches
// per worker if it kept only an LRU cache of C shards (a reader that drops
// shards it still needs; the loader keeps each shard from its first to its
// last use instead). Throughput: StreamingDataset over a mem
// store behind EmulateCloud (30 ms first byte, 25 MB/s per connection),
// prefetch off (prefetch_shards 0, one connection) vs on (defaults).
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
  double fetched_per_worker = 0;  // measured: own cache per worker (mean)
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
  dataset::Manifest m;
  for (size_t k = 0; k < shards; ++k) m.shards.push_back({"s" + std::to_string(k), 1, per_shard, "", ""});
  std::string fp = Fingerprint(m, spec);
  auto order = EpochOrder(std::vector<uint64_t>(shards, per_shard), spec, fp, 0);
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
Stats DrainWorker(object::ObjectStorePtr store, StreamingOptions o, size_t w) {
  auto ds = StreamingDataset::Open(store, "ds", o);
  if (!ds.ok()) {
    fprintf(stderr, "shuffle_bench: %s\n", ds.status().ToString().c_str());
    return {};
  }
  auto it = *(*ds)->Iterate(w, (*ds)->MakeState(0, 0));
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
  for (size_t w = 0; w < workers; ++w) own += DrainWorker(store, o, w).shards_fetched;
  q.fetched_per_worker = static_cast<double>(own) / workers;
  o.cache_dir = dir;
  std::vector<Stats> stats(workers);
  std::vector<std::thread> threads;
  for (size_t w = 0; w < workers; ++w) threads.emplace_back([&, w] { stats[w] = DrainWorker(store, o, w); });
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
  const size_t shards = 256, workers = 8, batch = 32;
  const uint64_t per_shard = 200;
  const std::vector<size_t> caches = {1, 4, 16, 64};
  std::vector<Quality> rows;
  rows.push_back(Measure("none", {Shuffle::kNone, 1, 1}, shards, per_shard, workers, batch, caches));
  rows.push_back(Measure("shards", {Shuffle::kShards, 1, 1}, shards, per_shard, workers, batch, caches));
  for (size_t w : {1, 2, 4, 8, 16}) {
    rows.push_back(
        Measure("window " + std::to_string(w), {Shuffle::kWindow, 1, w}, shards, per_shard, workers, batch, caches));
  }
  // The real loader over a mem store of the same shape (tiny samples: the fetch counts are the point).
  auto fetch_store = object::MakeMemStore("shuffle-bench-fetches");
  testing::WriteDataset(*fetch_store, "ds/", dataset::ShardFormat::kTar, std::vector<uint64_t>(shards, per_shard),
                        [](uint64_t i) {
                          return std::vector<dataset::Field>{{"bin", Buffer::FromString(std::to_string(i))}};
                        });
  const std::string fetch_dir = *io::MakeTempDir("strata-shuffle-bench-");
  auto t_measure = std::chrono::steady_clock::now();
  for (auto& q : rows) MeasureFetches(fetch_store, q, workers, batch, fetch_dir + "/" + q.name);
  double measure_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_measure).count();
  (void)io::RemoveAll(io::DefaultFileSystem(), fetch_dir);
  object::DropMemStore("shuffle-bench-fetches");

  printf("shuffle quality and cost: %zu shards x %llu samples, %zu workers, batch %zu\n", shards,
         static_cast<unsigned long long>(per_shard), workers, batch);
  printf("%-10s %9s %11s %12s | %14s %12s |", "shuffle", "spearman", "same-shard%", "shards/batch", "fetched/worker",
         "fetched/node");
  for (size_t c : caches) printf(" sim LRU C=%-3zu", c);
  printf("\n");
  for (const auto& q : rows) {
    printf("%-10s %9.4f %11.1f %12.1f | %14.1f %12llu |", q.name.c_str(), q.spearman, q.same_shard, q.shards_per_batch,
           q.fetched_per_worker, static_cast<unsigned long long>(q.fetched_per_node));
    for (double f : q.fetches) printf(" %13.0f", f);
    printf("\n");
  }
  printf(
      "(measured: real iterators' Stats.shards_fetched, %.1f s; per worker: each with its own cache; per node:\n"
      " %zu workers at once sharing a cache directory; sim LRU: a reader keeping only C shards)\n",
      measure_s, workers);

  // Throughput from an emulated cloud bucket.
  const uint64_t tp_shards = quick ? 8 : 24, tp_per_shard = 32, tp_bytes = 64 << 10;
  auto mem = object::MakeMemStore("shuffle-bench");
  testing::WriteDataset(
      *mem, "ds/", dataset::ShardFormat::kTar, std::vector<uint64_t>(tp_shards, tp_per_shard), [&](uint64_t i) {
        return std::vector<dataset::Field>{{"bin", Buffer::FromString(std::string(tp_bytes, static_cast<char>(i)))}};
      });
  auto cloud = object::EmulateCloud(mem, object::CloudProfile{});
  StreamingOptions off;
  off.batch_size = 16, off.prefetch_shards = 0, off.fetch_concurrency = 1, off.ram_cache_bytes = 0;
  off.shuffle_window = 4;
  StreamingOptions on = off;
  on.prefetch_shards = 4, on.fetch_concurrency = 16;
  uint64_t n_off = 0, n_on = 0;
  double s_off = Throughput(cloud, off, &n_off);
  double s_on = Throughput(cloud, on, &n_on);
  double mb = static_cast<double>(tp_bytes) / 1e6;
  printf("\nthroughput from EmulateCloud (30 ms first byte, 25 MB/s per connection), %llu x %llu KiB samples:\n",
         static_cast<unsigned long long>(n_on), static_cast<unsigned long long>(tp_bytes >> 10));
  printf("  prefetch off (0 shards ahead, 1 connection): %8.0f samples/s %7.1f MB/s\n", s_off, s_off * mb);
  printf("  prefetch on  (4 shards ahead, 16 in flight):  %8.0f samples/s %7.1f MB/s  (x%.1f)\n", s_on, s_on * mb,
         s_off > 0 ? s_on / s_off : 0);
  object::DropMemStore("shuffle-bench");

  nlohmann::json j;
  j["title"] = "loader: shuffle quality vs cost, streaming throughput";
  std::vector<std::string> names;
  std::vector<double> same, spb, per_worker, per_node;
  for (const auto& q : rows) {
    names.push_back(q.name), same.push_back(q.same_shard), spb.push_back(q.shards_per_batch);
    per_worker.push_back(q.fetched_per_worker), per_node.push_back(static_cast<double>(q.fetched_per_node));
  }
  nlohmann::json fetch_series = nlohmann::json::array();
  for (size_t c = 0; c < caches.size(); ++c) {
    std::vector<double> v;
    for (const auto& q : rows) v.push_back(q.fetches[c]);
    fetch_series.push_back({{"label", "cache " + std::to_string(caches[c]) + " shards"}, {"values", v}});
  }
  j["charts"] = {{{"title", "consecutive samples from the same shard"},
                  {"ylabel", "%"},
                  {"groups", names},
                  {"series", {{{"label", "same-shard %"}, {"values", same}}}}},
                 {{"title", "distinct shards per batch of " + std::to_string(batch)},
                  {"ylabel", "shards"},
                  {"groups", names},
                  {"series", {{{"label", "shards/batch"}, {"values", spb}}}}},
                 {{"title", "simulated: shard fetches per worker with an LRU of C shards (" + std::to_string(workers) +
                                " workers)"},
                  {"ylabel", "fetches"},
                  {"groups", names},
                  {"series", fetch_series}},
                 {{"title", "measured: shard fetches per epoch (" + std::to_string(shards) + " shards, " +
                                std::to_string(workers) + " workers)"},
                  {"ylabel", "fetches"},
                  {"groups", names},
                  {"series",
                   {{{"label", "per worker (own cache)"}, {"values", per_worker}},
                    {{"label", "per node (shared cache dir)"}, {"values", per_node}}}}},
                 {{"title", "throughput from a 30 ms / 25 MB/s bucket"},
                  {"ylabel", "samples/s"},
                  {"groups", {"prefetch off", "prefetch on"}},
                  {"series", {{{"label", "samples/s"}, {"values", {s_off, s_on}}}}}}};
  j["rows"] = nlohmann::json::array();
  for (const auto& q : rows) {
    j["rows"].push_back({{"shuffle", q.name},
                         {"spearman", q.spearman},
                         {"same_shard_pct", q.same_shard},
                         {"shards_per_batch", q.shards_per_batch},
                         {"simulated_lru_fetches_per_worker", q.fetches},
                         {"fetched_per_worker", q.fetched_per_worker},
                         {"fetched_per_node", q.fetched_per_node}});
  }
  j["cache_sizes"] = caches;
  j["throughput"] = {
      {"prefetch_off_samples_per_s", s_off}, {"prefetch_on_samples_per_s", s_on}, {"sample_bytes", tp_bytes}};
  std::ofstream(out) << j.dump(2) << "\n";
  printf("\nwrote %s; plot: /usr/bin/python3 bench/plot.py %s bench/out/shuffle.png\n", out.c_str(), out.c_str());
  printf("reproduce: build-loader/bench/shuffle_bench%s\n", quick ? " --quick" : "");
  return 0;
}

}  // namespace
}  // namespace strata::loader

int main(int argc, char** argv) { return strata::loader::Main(argc, argv); }

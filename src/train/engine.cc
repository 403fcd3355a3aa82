// The AU benchmark engine: the emulated accelerators (RunEpoch, Sweep) and
// their sources (strata's loader, one file per sample).
#include "train/engine.h"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <numeric>
#include <random>
#include <thread>

#include "base/executor.h"
#include "base/units.h"
#include "dataset/manifest.h"
#include "dataset/pack.h"
#include "object/mem_store.h"

namespace strata::train {

nlohmann::json EpochResult::ToJson() const {
  return {{"accelerators", accelerators},
          {"epoch", epoch},
          {"au", au},
          {"au_dlio", au_dlio},
          {"samples_per_s", samples_per_s},
          {"mib_per_s", mib_per_s},
          {"record_size", record_size},
          {"wall_s", wall_s},
          {"measured_s", measured_s},
          {"first_batch_s", first_batch_s},
          {"first_step_s", first_step_s},
          {"steps", steps},
          {"samples", samples},
          {"bytes", bytes},
          {"cold", cold},
          {"store_bytes_in_window", store_counted ? nlohmann::json(store_bytes) : nlohmann::json(nullptr)},
          {"loader_memory_bytes", memory_bytes},
          {"valid", rules.valid},
          {"not_valid", rules.failures},
          {"realtime_accelerators", realtime_accelerators},
          {"sources_at_window_start", open_stats},
          {"sources", source_stats}};
}

namespace {

struct RankLog : RankTimeline {
  Status error;
};

// A real accelerator computes on its own silicon: its step time does not
// depend on whether the host's cores are busy loading data. An emulated one
// sleeps on a thread that, woken while every core runs loader threads, can
// wait a millisecond or more for a CPU, which would count against the data
// path. So the accelerator threads ask for a real-time priority (they sleep
// almost all the time, so they cannot starve the loader); without the
// privilege they run as they are, and the result says so.
bool PreferAcceleratorThread() {
  sched_param param{};
  param.sched_priority = 1;
  return pthread_setschedparam(pthread_self(), SCHED_FIFO, &param) == 0;
}

void RunRank(size_t rank, uint64_t epoch, Duration compute, const RankSourceFactory& factory, std::barrier<>& sync,
             RankLog& log) {
  Clock& clock = RealClock();
  log.realtime = PreferAcceleratorThread();
  sync.arrive_and_wait();  // every accelerator starts together
  // The window opens here, before the source exists: its queues are empty
  // and whatever it fetches to fill them is timed.
  log.start = clock.Now();
  auto source = factory(rank, epoch);
  if (!source.ok()) {
    log.error = source.status();
    sync.arrive_and_drop();
    return;
  }
  log.open_stats = (*source)->Stats();
  for (;;) {
    auto batch = (*source)->Next();
    if (!batch.ok() || !*batch) {
      if (!batch.ok()) log.error = batch.status();
      sync.arrive_and_drop();
      break;
    }
    if (log.batches.empty()) log.first_batch = clock.Now();
    TimePoint c0 = clock.Now();
    std::this_thread::sleep_for(compute);  // the emulated accelerator's work on the batch
    TimePoint c1 = clock.Now();
    sync.arrive_and_wait();  // the step ends when every accelerator is done (allreduce)
    log.step_end.push_back(clock.Now());
    log.compute.push_back(c1 - c0);
    log.batches.push_back(**batch);
  }
  log.stats = (*source)->Stats();
}

}  // namespace

Result<EpochResult> RunEpoch(size_t world, uint64_t epoch, Duration compute, const RankSourceFactory& factory) {
  if (world == 0) return InvalidArgumentError("the number of accelerators must be at least 1");
  std::vector<RankLog> logs(world);
  {
    std::barrier<> sync(static_cast<std::ptrdiff_t>(world));
    std::vector<std::thread> threads;
    threads.reserve(world);
    for (size_t r = 0; r < world; ++r) {
      threads.emplace_back([&, r] { RunRank(r, epoch, compute, factory, sync, logs[r]); });
    }
    for (auto& t : threads) t.join();
  }
  for (size_t r = 0; r < world; ++r) {
    if (!logs[r].error.ok()) {
      return logs[r].error.WithContext("accelerator " + std::to_string(r) + " of " + std::to_string(world));
    }
  }
  std::vector<RankTimeline> timelines(logs.begin(), logs.end());
  return SummarizeEpoch(epoch, compute, timelines);
}

Result<EpochResult> SummarizeEpoch(uint64_t epoch, Duration compute, const std::vector<RankTimeline>& logs) {
  if (logs.empty()) return InvalidArgumentError("no accelerators to summarise");
  const size_t world = logs.size();
  EpochResult res;
  res.accelerators = world;
  res.realtime_accelerators =
      std::all_of(logs.begin(), logs.end(), [](const RankTimeline& log) { return log.realtime; });
  res.epoch = epoch + 1;
  TimePoint start = logs[0].start, first_batch{}, first_end{}, end{};
  Duration measured{0};
  uint64_t steps = 0;
  for (size_t r = 0; r < world; ++r) {
    const RankTimeline& log = logs[r];
    if (log.step_end.size() != log.batches.size() || log.compute.size() != log.batches.size()) {
      return InvalidArgumentError("accelerator " + std::to_string(r) + "'s timeline has " +
                                  std::to_string(log.batches.size()) + " batches but " +
                                  std::to_string(log.step_end.size()) + " step ends and " +
                                  std::to_string(log.compute.size()) + " compute times");
    }
    start = std::min(start, log.start);
    res.steps = std::max<uint64_t>(res.steps, log.step_end.size());
    steps += log.step_end.size();
    for (size_t i = 0; i < log.batches.size(); ++i) {
      res.samples += log.batches[i].samples;
      res.bytes += log.batches[i].bytes;
      measured += log.compute[i];
    }
    res.open_stats.push_back(log.open_stats);
    if (log.step_end.empty()) continue;
    first_batch = std::max(first_batch, log.first_batch);
    first_end = std::max(first_end, log.step_end.front());
    end = std::max(end, log.step_end.back());
    res.source_stats.push_back(log.stats);
  }
  if (res.steps == 0) {
    return InvalidArgumentError(std::to_string(world) +
                                " accelerators got no batch: use more --samples or a smaller --batch");
  }
  const double window = std::max(Seconds(end - start), 1e-9);
  res.au = double(steps) * Seconds(compute) / (double(world) * window);
  res.au_dlio = Seconds(measured) / (double(world) * window);
  res.samples_per_s = double(res.samples) / window;
  res.record_size = res.samples ? double(res.bytes) / double(res.samples) : 0;
  res.mib_per_s = res.samples_per_s * res.record_size / double(1 << 20);
  res.wall_s = window;
  res.measured_s = window;
  res.first_batch_s = Seconds(first_batch - start);
  res.first_step_s = Seconds(first_end - start);
  return res;
}

namespace {

// See MakeFileSource. Workers fill per-batch slots; Next() takes them in order.
class FileSource : public RankSource {
 public:
  FileSource(object::ObjectStorePtr store, std::shared_ptr<const std::vector<std::string>> keys,
             const FileSourceOptions& o, size_t rank, uint64_t epoch)
      : store_(std::move(store)), keys_(std::move(keys)), o_(o) {
    std::vector<size_t> order(keys_->size());
    std::iota(order.begin(), order.end(), 0);
    std::mt19937_64 gen(o.seed * 1000003 + epoch);
    std::shuffle(order.begin(), order.end(), gen);
    const size_t batch = std::max<size_t>(1, o.batch), world = std::max<size_t>(1, o.world);
    for (size_t g = rank, begin = rank * batch; begin < order.size(); g += world, begin = g * batch) {
      size_t end = std::min(order.size(), begin + batch);
      batches_.emplace_back(order.begin() + begin, order.begin() + end);
    }
    slots_.resize(batches_.size());
    const size_t workers = std::max<size_t>(1, o.workers);
    for (size_t w = 0; w < std::min(workers, batches_.size()); ++w)
      threads_.emplace_back([this, w, workers] { Work(w, workers); });
  }
  ~FileSource() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    for (auto& t : threads_) t.join();
  }

  Result<std::optional<BatchInfo>> Next() override {
    if (next_ >= batches_.size()) return std::optional<BatchInfo>();
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return slots_[next_].has_value(); });
    Result<BatchInfo> r = std::move(*slots_[next_]);
    slots_[next_].reset();
    ++next_;
    lock.unlock();
    cv_.notify_all();
    if (!r.ok()) return r.status();
    return std::optional<BatchInfo>(*r);
  }

  nlohmann::json Stats() const override {
    return {{"gets", gets_.load()}, {"workers", o_.workers}, {"prefetch_per_worker", o_.prefetch}};
  }

 private:
  void Work(size_t w, size_t workers) {
    const size_t ahead = workers * std::max<size_t>(1, o_.prefetch);
    for (size_t b = w; b < batches_.size(); b += workers) {
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return stop_ || b < next_ + ahead; });
        if (stop_) return;
      }
      Result<BatchInfo> r = Fetch(batches_[b]);
      {
        std::lock_guard<std::mutex> lock(mu_);
        slots_[b] = std::move(r);
      }
      cv_.notify_all();
    }
  }

  // One GET per sample, one after the other (a DataLoader worker calling
  // __getitem__), collated into one contiguous buffer as default_collate does.
  Result<BatchInfo> Fetch(const std::vector<size_t>& indices) {
    std::vector<Buffer> parts;
    parts.reserve(indices.size());
    for (size_t i : indices) {
      const std::string& key = (*keys_)[i];
      auto got = store_->Get(key);
      gets_.fetch_add(1, std::memory_order_relaxed);
      if (!got.ok()) return got.status().WithContext("reading " + key);
      parts.push_back(std::move(got->data));
    }
    Buffer batch = Concat(parts);
    return BatchInfo{indices.size(), batch.size()};
  }

  object::ObjectStorePtr store_;
  std::shared_ptr<const std::vector<std::string>> keys_;
  FileSourceOptions o_;
  std::vector<std::vector<size_t>> batches_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::optional<Result<BatchInfo>>> slots_;
  size_t next_ = 0;  // guarded by mu_ (read unlocked only by the consumer thread)
  bool stop_ = false;
  std::atomic<uint64_t> gets_{0};
  std::vector<std::thread> threads_;
};

}  // namespace

std::unique_ptr<RankSource> MakeFileSource(object::ObjectStorePtr store,
                                           std::shared_ptr<const std::vector<std::string>> keys,
                                           const FileSourceOptions& options, size_t rank, uint64_t epoch) {
  return std::make_unique<FileSource>(std::move(store), std::move(keys), options, rank, epoch);
}

namespace {

class LoaderSource : public RankSource {
 public:
  LoaderSource(std::shared_ptr<loader::StreamingDataset> ds, std::unique_ptr<loader::Iterator> it)
      : ds_(std::move(ds)), it_(std::move(it)) {}

  Result<std::optional<BatchInfo>> Next() override {
    STRATA_ASSIGN_OR_RETURN(std::optional<loader::Batch> batch, it_->NextBatch());
    if (!batch) return std::optional<BatchInfo>();
    BatchInfo info{batch->indices.size(), 0};
    for (const auto& [name, column] : batch->columns) info.bytes += column.size();
    return std::optional<BatchInfo>(info);
  }

  nlohmann::json Stats() const override {
    loader::Stats s = it_->stats();
    return {{"batches", s.batches},
            {"samples", s.samples},
            {"bytes", s.bytes},
            {"shards_fetched", s.shards_fetched},
            {"shard_fetch_retries", s.shard_fetch_retries},
            {"shards_skipped", s.shards_skipped},
            {"shards_from_cache", s.shards_from_cache},
            {"shards_parsed", s.shards_parsed},
            {"shards_from_previous_epoch", s.shards_from_previous_epoch},
            {"cache_not_admitted_busy", s.cache_not_admitted_busy},
            {"cache_not_admitted_no_reuse", s.cache_not_admitted_no_reuse},
            {"cache_not_admitted_low_space", s.cache_not_admitted_low_space},
            {"cache_disk_hits_resident", s.cache_disk_hits_resident},
            {"cache_store_instead_of_disk", s.cache_store_instead_of_disk},
            {"queue_depth", s.queue_depth},
            {"consumer_wait_s", Seconds(s.consumer_wait)},
            {"elapsed_s", Seconds(s.elapsed)}};
  }

 private:
  std::shared_ptr<loader::StreamingDataset> ds_;
  std::unique_ptr<loader::Iterator> it_;
};

// Removes a per-N cache directory when the last source factory using it goes.
struct DirGuard {
  std::string path;
  ~DirGuard() {
    std::error_code ec;
    if (!path.empty()) std::filesystem::remove_all(path, ec);
  }
};

}  // namespace

std::unique_ptr<RankSource> MakeLoaderSource(std::shared_ptr<loader::StreamingDataset> dataset,
                                             std::unique_ptr<loader::Iterator> iterator) {
  return std::make_unique<LoaderSource>(std::move(dataset), std::move(iterator));
}

Result<object::GetResult> ByteCountingStore::Get(std::string_view key, const object::GetOptions& options) {
  auto got = base_->Get(key, options);
  if (got.ok()) bytes_.fetch_add(got->data.size(), std::memory_order_relaxed);
  return got;
}

Status ByteCountingStore::ReadRangeTo(std::string_view key, std::string_view etag, uint64_t offset, uint64_t length,
                                      const object::RangeConsumer& consume) {
  // Without streaming the base's ranged Get goes through this->Get (counted there).
  if (!base_->Capabilities().range_streaming) return ObjectStore::ReadRangeTo(key, etag, offset, length, consume);
  return base_->ReadRangeTo(key, etag, offset, length, [&](uint64_t at, const uint8_t* data, size_t size) {
    bytes_.fetch_add(size, std::memory_order_relaxed);
    return consume(at, data, size);
  });
}

loader::StreamingOptions RankOptions(const loader::StreamingOptions& base, const std::vector<std::string>& fields,
                                     size_t world, size_t rank, const std::string& cache_dir) {
  loader::StreamingOptions o = base;
  o.world_size = world;
  o.rank = rank;
  o.num_workers = 1;
  o.cache_dir = cache_dir;
  // Every sample exactly once (the sweep checks the count); the barrier lets a
  // rank with one batch fewer drop out, where DDP would need even_batches.
  o.even_batches = false;
  // The accelerator gets bytes, as DLIO's readers hand over (no JSON or Example decoding).
  for (const auto& f : fields) o.decode.emplace(f, loader::Decode::kRaw);
  return o;
}

PrepareFn LoaderPrepare(object::ObjectStorePtr bucket, std::string prefix, loader::StreamingOptions base,
                        std::string cache_root, bool no_cache, uint64_t batch_bytes) {
  if (no_cache) cache_root.clear();
  auto counted = std::make_shared<ByteCountingStore>(std::move(bucket));
  object::ObjectStorePtr store = counted;
  return [store, counted, prefix, base, cache_root, no_cache, batch_bytes](size_t world) -> Result<Prepared> {
    auto guard = std::make_shared<DirGuard>();
    if (!cache_root.empty()) {
      guard->path = cache_root + "/n" + std::to_string(world);
      std::error_code ec;
      std::filesystem::remove_all(guard->path, ec);
      std::filesystem::create_directories(guard->path, ec);
      if (ec) return ErrnoToStatus(ec.value(), "cannot create the cache directory " + guard->path);
    }
    STRATA_ASSIGN_OR_RETURN(auto probe, loader::StreamingDataset::Open(store, prefix, base));
    const std::vector<std::string> fields = probe->index().fields;
    const uint64_t samples = probe->size();
    // A batch's bytes, unless given: from the shards' (framing included).
    const uint64_t batch = batch_bytes ? batch_bytes
                           : samples   ? probe->index().total_shard_bytes() / samples * base.batch_size
                                       : 0;
    probe.reset();
    // Opened before the clock starts: each rank reads the index once, as a
    // training process does at start-up.
    auto open_all = [store, prefix, base, fields, world,
                     path = guard->path]() -> Result<std::vector<std::shared_ptr<loader::StreamingDataset>>> {
      std::vector<std::shared_ptr<loader::StreamingDataset>> all;
      for (size_t r = 0; r < world; ++r) {
        STRATA_ASSIGN_OR_RETURN(
            auto ds, loader::StreamingDataset::Open(store, prefix, RankOptions(base, fields, world, r, path)));
        all.push_back(std::move(ds));
      }
      return all;
    };
    struct Open {
      std::mutex mu;
      uint64_t epoch = 0;
      std::vector<std::shared_ptr<loader::StreamingDataset>> datasets;
    };
    auto open = std::make_shared<Open>();
    STRATA_ASSIGN_OR_RETURN(open->datasets, open_all());
    Prepared p;
    p.expected_samples = samples;
    p.memory_bytes = LoaderMemoryBytes(base, world, batch);
    p.store_bytes = [counted] { return counted->bytes(); };
    p.every_epoch_cold = no_cache;
    // `guard` first: it goes last, after the datasets have finished writing into its directory.
    p.factory = [guard, open, open_all, no_cache](size_t rank, uint64_t epoch) -> Result<std::unique_ptr<RankSource>> {
      std::shared_ptr<loader::StreamingDataset> ds;
      {
        std::lock_guard lock(open->mu);
        if (no_cache && epoch != open->epoch) {
          // The previous epoch's sources are gone (RunEpoch joined them):
          // dropping its datasets drops their cache, so this epoch starts cold.
          open->datasets.clear();
          STRATA_ASSIGN_OR_RETURN(open->datasets, open_all());
          open->epoch = epoch;
        }
        ds = open->datasets[rank];
      }
      loader::State state;
      state.epoch = epoch;
      state.fingerprint = ds->fingerprint();
      STRATA_ASSIGN_OR_RETURN(auto it, ds->Iterate(0, state));
      return MakeLoaderSource(ds, std::move(it));
    };
    return p;
  };
}

PrepareFn FilePrepare(object::ObjectStorePtr store, std::shared_ptr<const std::vector<std::string>> keys, size_t batch,
                      size_t workers, std::function<uint64_t(size_t)> limit, uint64_t batch_bytes) {
  auto counted = std::make_shared<ByteCountingStore>(std::move(store));
  return [=](size_t world) -> Result<Prepared> {
    const size_t n = std::min<size_t>(keys->size(), limit(world));
    auto part = std::make_shared<std::vector<std::string>>(keys->begin(), keys->begin() + n);
    FileSourceOptions fo{world, batch, workers, 2, 1};
    Prepared p;
    p.expected_samples = part->size();
    p.memory_bytes = world * (workers * fo.prefetch + 1) * batch_bytes;
    p.store_bytes = [counted] { return counted->bytes(); };
    p.every_epoch_cold = true;  // no cache on this path
    p.factory = [counted, part, fo](size_t rank, uint64_t epoch) -> Result<std::unique_ptr<RankSource>> {
      return MakeFileSource(counted, part, fo, rank, epoch);
    };
    return p;
  };
}

Result<std::vector<EpochResult>> Sweep(const SweepOptions& o, const PrepareFn& prepare, std::string* note) {
  std::vector<EpochResult> results;
  for (size_t world : o.counts) {
    if (o.samples && o.batch && o.samples < world * o.batch) {
      std::string why = "N=" + std::to_string(world) + " needs at least " + std::to_string(world * o.batch) +
                        " samples (a batch of " + std::to_string(o.batch) + " per accelerator), the dataset has " +
                        std::to_string(o.samples);
      if (results.empty()) return InvalidArgumentError(why + ": use more --samples or a smaller --batch");
      if (note) *note = "stopped: " + why;
      break;
    }
    STRATA_ASSIGN_OR_RETURN(Prepared p, prepare(world));
    bool all_below = true;
    for (uint64_t e = 0; e < o.epochs; ++e) {
      // Only the epoch's sources fetch (created after its clock starts, joined
      // before RunEpoch returns): the counter's growth is the window's.
      const uint64_t fetched_before = p.store_bytes ? p.store_bytes() : 0;
      auto r = RunEpoch(world, e, o.compute, p.factory);
      STRATA_RETURN_IF_ERROR(r.status());
      r->cold = e == 0 || p.every_epoch_cold;
      r->store_counted = bool(p.store_bytes);
      r->store_bytes = p.store_bytes ? p.store_bytes() - fetched_before : 0;
      r->memory_bytes = p.memory_bytes;
      r->rules = CheckRules(o.rules, {r->cold, r->steps, r->measured_s, r->bytes, r->memory_bytes, r->store_bytes,
                                      r->store_counted, o.smoke});
      if (p.expected_samples && r->samples != p.expected_samples) {
        return CorruptionError("epoch " + std::to_string(e + 1) + " with " + std::to_string(world) +
                               " accelerators delivered " + std::to_string(r->samples) + " samples; the dataset has " +
                               std::to_string(p.expected_samples));
      }
      all_below = all_below && r->au < o.threshold;
      if (o.on_result) o.on_result(*r);
      results.push_back(std::move(*r));
    }
    if (all_below && o.stop_below && world >= o.min_n) break;
  }
  return results;
}

Result<std::vector<size_t>> AcceleratorCounts(std::string_view list, size_t max) {
  std::vector<size_t> counts;
  if (list.empty()) {
    if (max == 0) return InvalidArgumentError("--max-accelerators must be at least 1");
    for (size_t n = 1; n <= max; n *= 2) counts.push_back(n);
    return counts;
  }
  size_t pos = 0;
  while (pos <= list.size()) {
    size_t comma = list.find(',', pos);
    std::string_view item = list.substr(pos, comma == std::string_view::npos ? std::string_view::npos : comma - pos);
    size_t n = 0;
    bool ok = !item.empty() && item.size() <= 6;
    for (char c : item) {
      if (c < '0' || c > '9')
        ok = false;
      else
        n = n * 10 + size_t(c - '0');
    }
    if (!ok || n == 0 || n > 4096) {
      return InvalidArgumentError("--accelerators: expected a comma list of counts 1..4096 (e.g. 1,2,4,8), got '" +
                                  std::string(list) + "'");
    }
    counts.push_back(n);
    if (comma == std::string_view::npos) break;
    pos = comma + 1;
  }
  return counts;
}

}  // namespace strata::train

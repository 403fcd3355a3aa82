// The iterator: fetch -> decode -> (collate) on background threads.
//
// The worker's batches are known up front (plan.h), so are the shards in
// the order it first needs them. Fetches run on a pool, as many as the
// PrefetchSizer (prefetch.h) says cover the consumer's demand: shards in
// order of need while the store requests in flight stay within its
// connection count and the bytes ahead of the consumer within its window
// (at least `prefetch_batches` whole batches, fewer when they do not fit in
// the memory budget, but never fewer than two); `prefetch_shards`, when set,
// bounds the shards beyond those the batch being decoded needs. Decoders
// claim batches in order, at most that many batches ahead of the consumer
// (the queue bound), and wait until the batch's shards are parsed.
// When every batch that uses a shard is decoded, the iterator drops it and
// tells the cache it may be evicted first. One mutex guards all of this;
// the work (fetch, parse, decode, collate) runs outside it.
#include <algorithm>
#include <deque>
#include <map>
#include <set>
#include <thread>

#include "base/executor.h"
#include "base/mutex.h"
#include "loader/decode.h"
#include "loader/internal.h"
#include "loader/prefetch.h"

namespace strata::loader {
namespace {

using Clock = std::chrono::steady_clock;

// Batches of the next epoch fetched while this one ends (EpochHead).
constexpr size_t kHeadBatches = 2;

struct Item {
  uint64_t position;
  uint64_t index;
  size_t shard;
  uint64_t local;
};

struct Unit {
  Status status;
  uint64_t first_position = 0;
  std::vector<DecodedSample> samples;
  std::optional<Batch> batch;
  uint64_t bytes = 0;
};

uint64_t SampleBytes(const DecodedSample& s) {
  uint64_t n = 0;
  for (const auto& [_, v] : s.fields) n += (v.kind == Decode::kJson ? v.json.size() : v.bytes.size());
  return n;
}

class IteratorImpl : public Iterator {
 public:
  IteratorImpl(std::shared_ptr<DatasetImpl> ds, size_t worker, const State& state)
      : ds_(std::move(ds)),
        opt_(ds_->options()),
        epoch_(state.epoch),
        worker_(worker),
        streams_(state.streams),
        start_(Clock::now()),
        sizer_(Limits(opt_), opt_.clock ? *opt_.clock : RealClock()) {
    order_ = ds_->Order(epoch_, state.streams);
    Plan(WorkerBatches(ds_->Partition(), state.samples_consumed, worker));
    // One thread per shard in flight: at most one per connection (a one-part shard is one request).
    size_t fetchers = std::clamp<size_t>(shard_seq_.size(), 1, std::max<size_t>(opt_.max_connections, 1));
    if (opt_.prefetch_shards > 0) fetchers = std::min(fetchers, opt_.prefetch_shards + 1);
    fetch_pool_ = std::make_unique<ThreadPool>(fetchers, "strata-ld-fetch");
    // What the previous epoch's iterator fetched of this one (EpochHead): what landed is loaded,
    // what is still on its way is awaited by the fetch of that shard; the rest of it is released.
    EpochHead::Taken head = ds_->head().Take(epoch_, worker_, std::set<size_t>(shard_seq_.begin(), shard_seq_.end()));
    head_pending_ = std::move(head.pending);
    {
      MutexLock lock(mu_);
      stats_.shards_from_previous_epoch = head.ready.size();
      head_pending_left_ = head_pending_.size();
      loaded_.merge(head.ready);
      if (!items_.empty()) {
        // The next epoch's head may hold what this one's start held ahead (or the budget, if more).
        head_limit_ = std::max(sizer_.limits().budget_bytes,
                               seq_bytes_[need_upto_[std::min(AheadBatchesLocked(), items_.size()) - 1]]);
      }
      MaybeFetchLocked();
    }
    for (size_t i = 0; i < std::max<size_t>(opt_.decode_threads, 1); ++i) {
      decoders_.emplace_back([this] { DecodeLoop(); });
    }
  }

  ~IteratorImpl() override {
    {
      MutexLock lock(mu_);
      stop_ = true;
    }
    cv_.NotifyAll();
    for (auto& t : decoders_) t.join();
    fetch_pool_.reset();  // queued fetches see stop_ and return at once
    // What the previous epoch's head still had on its way, this iterator no longer awaits.
    if (!head_pending_.empty()) ds_->head().Drop(epoch_, worker_);
    // The cache may be shared with other iterators (ranks): say we are done with what we hold.
    for (const auto& [shard, parsed] : loaded_) ds_->cache().Release(shard);
  }

  Result<std::optional<Batch>> NextBatch() override {
    collate_ = true;
    if (!pending_.empty()) {  // samples left over from NextSample calls
      std::vector<DecodedSample> rest(std::make_move_iterator(pending_.begin()),
                                      std::make_move_iterator(pending_.end()));
      pending_.clear();
      return std::optional<Batch>(Collate(rest, epoch_, pending_first_, opt_.batch_views));
    }
    STRATA_ASSIGN_OR_RETURN(std::optional<Unit> u, NextUnit());
    if (!u) return std::optional<Batch>();
    if (!u->batch) u->batch = Collate(u->samples, epoch_, u->first_position, opt_.batch_views);
    return std::move(u->batch);
  }

  Result<std::optional<DecodedSample>> NextSample() override {
    while (pending_.empty()) {
      STRATA_ASSIGN_OR_RETURN(std::optional<Unit> u, NextUnit());
      if (!u) return std::optional<DecodedSample>();
      pending_first_ = u->first_position;
      for (auto& s : u->samples) pending_.push_back(std::move(s));
    }
    DecodedSample s = std::move(pending_.front());
    pending_.pop_front();
    ++pending_first_;
    return std::optional<DecodedSample>(std::move(s));
  }

  strata::Clock& sizer_clock() const { return opt_.clock ? *opt_.clock : RealClock(); }

  Stats stats() const override {
    const ShardCache::Counters cache = ds_->cache().counters();
    MutexLock lock(mu_);
    Stats s = stats_;
    s.cache_not_admitted_busy = cache.not_admitted_busy;
    s.cache_not_admitted_no_reuse = cache.not_admitted_no_reuse;
    s.cache_not_admitted_low_space = cache.not_admitted_low_space;
    s.cache_disk_hits_resident = cache.disk_hits_resident;
    s.cache_store_instead_of_disk = cache.store_instead_of_disk;
    s.queue_depth = ready_.size();
    s.elapsed = std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start_);
    return s;
  }

 private:
  static PrefetchLimits Limits(const StreamingOptions& o) {
    PrefetchLimits l;
    l.budget_bytes = PrefetchBudgetBytes(o);
    l.max_connections = std::max<size_t>(o.max_connections, 1);
    return l;
  }

  void Plan(const std::vector<PositionRange>& batches) {
    const auto& order = *order_;
    std::map<size_t, size_t> first_batch;
    items_.resize(batches.size());
    for (size_t b = 0; b < batches.size(); ++b) {
      for (uint64_t p = batches[b].begin; p < batches[b].end; ++p) {
        uint64_t index = order[OrderSlot(p, order.size())];  // (padding repeats the epoch's start)
        auto [shard, local] = ds_->Locate(index);
        items_[b].push_back({p, index, shard, local});
        if (!last_batch_.count(shard)) shard_seq_.push_back(shard);
        last_batch_[shard] = b;
      }
      need_upto_.push_back(shard_seq_.size());
    }
    seq_bytes_.assign(1, 0);
    for (size_t shard : shard_seq_) seq_bytes_.push_back(seq_bytes_.back() + ds_->cache().ShardSize(shard));
  }

  // Whole batches kept ahead of the consumer (fetched, decoded or queued):
  // prefetch_batches, or as many as fit in the prefetch budget when batches
  // are that large (unet3d's 7 x 140 MiB: eight of them asked for the whole
  // 3.9 GB dataset at once, far beyond the budget), but at least two (the
  // next one and the one after), so the consumer never waits on a batch
  // that could have been fetched while it computed.
  size_t AheadBatchesLocked() const REQUIRES(mu_) {
    const size_t most = std::max<size_t>(opt_.prefetch_batches, 1), n = items_.size();
    size_t k = std::min<size_t>(most, 2);
    if (out_next_ >= n) return most;
    const size_t base = out_next_ == 0 ? 0 : need_upto_[out_next_ - 1];
    const uint64_t budget = sizer_.limits().budget_bytes;
    while (k < most && out_next_ + k < n && seq_bytes_[need_upto_[out_next_ + k]] - seq_bytes_[base] <= budget) ++k;
    return k;
  }

  // Starts fetches: always those the batch being claimed needs; beyond them,
  // while the sizer's connections and window allow (and prefetch_shards, if set).
  void MaybeFetchLocked() REQUIRES(mu_) {
    if (items_.empty() || stop_) return;
    const size_t n = items_.size();
    const size_t need = need_upto_[std::min(claim_next_, n - 1)];
    // Shards first needed by batches already handed out are behind the consumer, not ahead.
    const size_t base = out_next_ == 0 ? 0 : need_upto_[std::min(out_next_, n) - 1];
    const size_t floor_end = need_upto_[std::min(out_next_ + AheadBatchesLocked(), n) - 1];
    const uint64_t floor = seq_bytes_[std::max(floor_end, base)] - seq_bytes_[base];
    while (fetch_next_ < shard_seq_.size() && fetch_inflight_ < fetch_pool_->size()) {
      const size_t shard = shard_seq_[fetch_next_];
      if (loaded_.count(shard)) {  // taken from the previous epoch's head (only those can be ahead of fetch_next_)
        ++fetch_next_;
        continue;
      }
      const size_t parts = ds_->cache().Parts(shard);
      const uint64_t request = std::max<uint64_t>(ds_->cache().ShardSize(shard) / parts, 1);
      if (fetch_next_ >= need) {
        if (opt_.prefetch_shards > 0 && fetch_next_ >= need + opt_.prefetch_shards) break;
        const uint64_t ahead = seq_bytes_[fetch_next_ + 1] - seq_bytes_[std::min(base, fetch_next_)];
        if (ahead > sizer_.WindowBytes(request, floor)) break;
        // (a shard of more parts than the connections allowed still goes, alone)
        if (fetch_inflight_ > 0 && inflight_requests_ + parts > sizer_.Connections(request, floor)) break;
      }
      ++fetch_next_;
      ++fetch_inflight_;
      inflight_shards_.insert(shard);
      inflight_requests_ += parts;
      fetch_pool_->Submit([this, shard, parts] { FetchShard(shard, parts); });
    }
    // Every fetch of this epoch has started: the fetchers would idle through
    // its last steps, so the next epoch's first shards start, as the window allows.
    if (HeadDueLocked()) fetch_pool_->Submit([this] { PlanHead(); });  // a shuffle: not on the consumer's thread
    // (Not while a shard of this epoch's own head is awaited: a new head replaces it.)
    if (head_planned_ && fetch_next_ >= shard_seq_.size() && head_pending_left_ == 0) {
      const uint64_t ahead = seq_bytes_.back() - seq_bytes_[base];
      while (head_next_ < head_seq_.size() && ahead + head_bytes_[head_next_ + 1] <= head_limit_) {
        // One this epoch is still fetching goes when it lands (then shared, not fetched twice).
        if (inflight_shards_.count(head_seq_[head_next_])) break;
        ds_->head().Start(epoch_ + 1, worker_, head_seq_[head_next_++]);
      }
    }
  }

  // True once: when this epoch's fetches have all started and the next one's head is to be planned.
  bool HeadDueLocked() REQUIRES(mu_) {
    if (!opt_.prefetch_next_epoch || head_planning_ || stop_ || items_.empty()) return false;
    if (fetch_next_ < shard_seq_.size()) return false;
    head_planning_ = true;
    return true;
  }

  // The shards of the next epoch's first two batches (what its start waits
  // for: the one the consumer takes first and the one decoded meanwhile), in
  // order of need, as far as head_limit_ bytes. Outside the lock: the order
  // is a shuffle of the whole dataset.
  void PlanHead() {
    uint64_t limit = 0;
    {
      MutexLock lock(mu_);
      if (stop_) return;
      limit = head_limit_;
    }
    const auto order = ds_->Order(epoch_ + 1, streams_);
    std::vector<size_t> seq;
    std::vector<uint64_t> bytes{0};
    std::set<size_t> seen;
    const std::vector<PositionRange> batches = WorkerBatches(ds_->Partition(), 0, worker_);
    for (size_t i = 0; i < std::min<size_t>(batches.size(), kHeadBatches); ++i) {
      const PositionRange& b = batches[i];
      for (uint64_t p = b.begin; p < b.end && bytes.back() < limit; ++p) {
        const size_t shard = ds_->Locate((*order)[OrderSlot(p, order->size())]).first;
        if (!seen.insert(shard).second) continue;
        seq.push_back(shard);
        bytes.push_back(bytes.back() + ds_->cache().ShardSize(shard));
      }
      if (bytes.back() >= limit) break;
    }
    MutexLock lock(mu_);
    head_seq_ = std::move(seq);
    head_bytes_ = std::move(bytes);
    head_planned_ = true;
    MaybeFetchLocked();
  }

  void FetchShard(size_t shard, size_t parts) {
    if (head_pending_.count(shard)) {  // fetched ahead, still on its way: awaited, not fetched again
      std::shared_ptr<const ParsedShard> ahead = ds_->head().Await(epoch_, worker_, shard);
      const bool landed = ahead != nullptr;
      {
        MutexLock lock(mu_);
        --head_pending_left_;
        if (landed) {
          --fetch_inflight_;
          inflight_shards_.erase(shard);
          inflight_requests_ -= parts;
          loaded_[shard] = std::move(ahead);
          ++stats_.shards_from_previous_epoch;
        }
        MaybeFetchLocked();
      }
      if (landed) {
        cv_.NotifyAll();
        return;
      }  // its fetch failed or was dropped: fetched here, with the retries
    }
    const std::string key = ds_->ShardKey(shard);
    Status last;
    std::shared_ptr<const ParsedShard> parsed;
    bool from_store = false, parsed_here = false;
    int attempts = 0;
    // Parsed once per cache: iterators sharing it (other ranks) reuse the result.
    const ShardParser parse = ShardParserFor(*ds_, shard);
    for (int attempt = 0; attempt <= opt_.retries; ++attempt) {
      if (attempt > 0 && !Backoff(shard, attempt)) break;
      {
        MutexLock lock(mu_);
        if (stop_) break;
        if (attempt > 0) ++stats_.shard_fetch_retries;
      }
      ++attempts;
      // Bytes that fail to parse are invalidated by the cache: the retry refetches.
      const TimePoint t0 = sizer_clock().Now();
      // A fetch that throws (a store or cache bug, bad_alloc) fails this attempt, not the pool thread.
      auto fetch = [&] { return ds_->cache().GetParsed(shard, parse); };
      decltype(fetch()) got = InternalError("shard " + key + " was not fetched");
      Status threw = RunGuarded("loader: fetching shard " + key, [&] { got = fetch(); });
      if (!threw.ok()) got = threw;
      if (got.ok()) {  // from the store or the local tiers: what this shard's delivery took
        MutexLock lock(mu_);
        sizer_.OnFetched(ds_->cache().ShardSize(shard), parts, sizer_clock().Now() - t0);
      }
      if (!got.ok()) {
        last = got.status();
        continue;
      }
      from_store = got->from_store;
      parsed_here = got->parsed_here;
      parsed = std::move(got->parsed);
      break;
    }
    {
      MutexLock lock(mu_);
      --fetch_inflight_;
      inflight_shards_.erase(shard);
      inflight_requests_ -= parts;
      if (parsed) {
        loaded_[shard] = std::move(parsed);
        ++(from_store ? stats_.shards_fetched : stats_.shards_from_cache);
        if (parsed_here) ++stats_.shards_parsed;
      } else if (!stop_) {
        if (opt_.skip_corrupt) {
          skipped_.insert(shard);
          ++stats_.shards_skipped;
        } else {
          failed_[shard] = Status(last.code(), "shard " + key + " failed after " + std::to_string(attempts) +
                                                   " attempt(s): " + last.ToString());
        }
      }
      MaybeFetchLocked();
    }
    cv_.NotifyAll();
  }

  // Waits before retry `attempt` (>= 1): exponential with jitter, so shards
  // failing together (a throttled or restarting store) do not retry in lockstep.
  // False if the iterator stopped meanwhile.
  bool Backoff(size_t shard, int attempt) {
    using std::chrono::nanoseconds;
    const nanoseconds cap = std::chrono::seconds(2);
    nanoseconds full = std::min<nanoseconds>(cap, opt_.retry_backoff);  // doubled below the cap: no overflow
    for (int k = 1; k < attempt && full < cap; ++k) full = std::min<nanoseconds>(cap, full * 2);
    SplitMix64 rng(MixSeed(
        {shard, static_cast<uint64_t>(attempt), static_cast<uint64_t>(Clock::now().time_since_epoch().count())}));
    nanoseconds wait = full / 2 + nanoseconds(full.count() > 0 ? rng.Below(full.count() / 2 + 1) : 0);
    if (opt_.clock) {
      opt_.clock->SleepFor(wait);
    } else {
      MutexLock lock(mu_);
      // The predicate runs with mu_ held (the analysis cannot see that through the lambda).
      cv_.WaitFor(lock, wait, [&]() NO_THREAD_SAFETY_ANALYSIS { return stop_; });
    }
    MutexLock lock(mu_);
    return !stop_;
  }

  bool BatchReadyLocked(size_t b) const REQUIRES(mu_) {
    for (const Item& it : items_[b]) {
      if (!loaded_.count(it.shard) && !failed_.count(it.shard) && !skipped_.count(it.shard)) return false;
    }
    return true;
  }

  void DecodeLoop() {
    MutexLock lock(mu_);
    while (true) {
      cv_.Wait(lock, [&]() NO_THREAD_SAFETY_ANALYSIS {
        return stop_ || claim_next_ >= items_.size() ||
               (claim_next_ < out_next_ + AheadBatchesLocked() && BatchReadyLocked(claim_next_));
      });
      if (stop_ || claim_next_ >= items_.size()) return;
      size_t b = claim_next_++;
      MaybeFetchLocked();
      std::map<size_t, std::shared_ptr<const ParsedShard>> shards;
      Status failed;
      for (const Item& it : items_[b]) {
        if (auto f = failed_.find(it.shard); f != failed_.end() && failed.ok()) failed = f->second;
        if (auto l = loaded_.find(it.shard); l != loaded_.end()) shards[it.shard] = l->second;
      }
      lock.Unlock();
      Unit u;
      if (failed.ok()) {
        // An exception while decoding fails this batch (its reader gets Internal), not the process.
        Status threw = RunGuarded("loader: decoding batch " + std::to_string(b), [&] { u = Decode(b, shards); });
        if (!threw.ok()) {
          u = Unit();
          u.status = threw;
        }
      } else {
        u.status = failed;
      }
      lock.Lock();
      ready_.emplace(b, std::move(u));
      decoded_.insert(b);
      while (decoded_.count(frontier_)) decoded_.erase(frontier_++);
      ReleaseShardsLocked();
      cv_.NotifyAll();
    }
  }

  // Shards whose last batch is decoded are dropped here and offered to the cache for eviction.
  void ReleaseShardsLocked() REQUIRES(mu_) {
    for (auto it = loaded_.begin(); it != loaded_.end();) {
      if (last_batch_[it->first] < frontier_) {
        ds_->cache().Release(it->first);
        it = loaded_.erase(it);
      } else {
        ++it;
      }
    }
  }

  Unit Decode(size_t b, const std::map<size_t, std::shared_ptr<const ParsedShard>>& shards) {
    Unit u;
    bool first = true;
    for (const Item& it : items_[b]) {
      auto s = shards.find(it.shard);
      if (s == shards.end()) continue;  // skipped shard
      const ParsedShard& p = *s->second;
      const dataset::Example* ex = p.examples.empty() ? nullptr : &p.examples[it.local];
      auto d = DecodeSample(opt_, it.index, p.samples[it.local], ex);
      if (!d.ok()) {
        if (opt_.skip_corrupt) {
          MutexLock lock(mu_);
          ++stats_.samples_skipped;
          continue;
        }
        u.status = d.status().WithContext("decoding sample " + std::to_string(it.index) + " of shard " +
                                          ds_->ShardKey(it.shard));
        return u;
      }
      if (first) u.first_position = it.position, first = false;
      u.bytes += SampleBytes(*d);
      u.samples.push_back(std::move(*d));
    }
    if (collate_ && !u.samples.empty()) u.batch = Collate(u.samples, epoch_, u.first_position, opt_.batch_views);
    return u;
  }

  Result<std::optional<Unit>> NextUnit() {
    if (!error_.ok()) return error_;
    MutexLock lock(mu_);
    while (true) {
      auto t0 = Clock::now();
      cv_.Wait(lock, [&]() NO_THREAD_SAFETY_ANALYSIS { return out_next_ >= items_.size() || ready_.count(out_next_); });
      const auto waited = std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0);
      stats_.consumer_wait += waited;
      if (out_next_ >= items_.size()) return std::optional<Unit>();
      Unit u = std::move(ready_.at(out_next_));
      ready_.erase(out_next_++);
      // The consumer's pace sizes the prefetch; the window moved on by one batch.
      sizer_.OnConsumed(u.bytes, waited);
      MaybeFetchLocked();
      cv_.NotifyAll();
      if (!u.status.ok()) {
        error_ = u.status;
        return error_;
      }
      if (u.samples.empty()) continue;  // every sample was in skipped shards
      stats_.samples += u.samples.size();
      stats_.bytes += u.bytes;
      ++stats_.batches;
      return std::optional<Unit>(std::move(u));
    }
  }

  std::shared_ptr<DatasetImpl> ds_;
  const StreamingOptions& opt_;
  const uint64_t epoch_;
  const size_t worker_;
  const uint64_t streams_;
  const Clock::time_point start_;
  std::shared_ptr<const std::vector<uint64_t>> order_;

  // The plan (immutable after construction).
  std::vector<std::vector<Item>> items_;  // per batch
  std::vector<size_t> shard_seq_;         // shards in order of first need
  std::vector<size_t> need_upto_;         // per batch: shard_seq_ entries needed through it
  std::map<size_t, size_t> last_batch_;   // shard -> last batch using it
  std::vector<uint64_t> seq_bytes_;       // seq_bytes_[i]: bytes of shard_seq_[0, i)

  // Guards the pipeline's progress below; the plan above is read without it.
  mutable Mutex mu_;
  CondVar cv_;
  bool stop_ GUARDED_BY(mu_) = false;
  size_t fetch_next_ GUARDED_BY(mu_) = 0;
  size_t fetch_inflight_ GUARDED_BY(mu_) = 0;
  std::set<size_t> inflight_shards_ GUARDED_BY(mu_);
  size_t inflight_requests_ GUARDED_BY(mu_) = 0;  // store requests of the shards being fetched (parts; cache hits too)
  PrefetchSizer sizer_ GUARDED_BY(mu_);
  size_t claim_next_ GUARDED_BY(mu_) = 0;
  size_t out_next_ GUARDED_BY(mu_) = 0;
  size_t frontier_ GUARDED_BY(mu_) = 0;
  std::set<size_t> decoded_ GUARDED_BY(mu_);
  std::map<size_t, std::shared_ptr<const ParsedShard>> loaded_ GUARDED_BY(mu_);
  std::map<size_t, Status> failed_ GUARDED_BY(mu_);
  std::set<size_t> skipped_ GUARDED_BY(mu_);
  std::map<size_t, Unit> ready_ GUARDED_BY(mu_);
  Stats stats_ GUARDED_BY(mu_);
  std::atomic<bool> collate_{false};
  // The next epoch's head (EpochHead): its shards in order of need and their
  // running byte sums, planned once every fetch of this epoch has started.
  uint64_t head_limit_ GUARDED_BY(mu_) = 0;
  bool head_planning_ GUARDED_BY(mu_) = false;
  bool head_planned_ GUARDED_BY(mu_) = false;
  std::vector<size_t> head_seq_ GUARDED_BY(mu_);
  std::vector<uint64_t> head_bytes_ GUARDED_BY(mu_);
  size_t head_next_ GUARDED_BY(mu_) = 0;
  // Shards of this epoch the previous one's head was still fetching when this
  // iterator started (set before any fetch runs, then read only), and how many
  // of them are not yet awaited.
  std::set<size_t> head_pending_;
  size_t head_pending_left_ GUARDED_BY(mu_) = 0;

  // Consumer-thread state.
  Status error_;
  std::deque<DecodedSample> pending_;
  uint64_t pending_first_ = 0;

  std::unique_ptr<ThreadPool> fetch_pool_;
  std::vector<std::thread> decoders_;
};

}  // namespace

ShardParser ShardParserFor(const DatasetImpl& ds, size_t shard) {
  const dataset::ShardFormat format = ds.index().format;
  const uint64_t samples = ds.index().shards[shard].samples, first = ds.ShardFirst(shard);
  return [format, samples, first, key = ds.ShardKey(shard)](const Buffer& bytes, bool verified) -> Result<ParsedValue> {
    Result<ParsedValue> out = InternalError("shard " + key + " was not parsed");
    Status threw = RunGuarded("loader: parsing shard " + key, [&]() -> Status {
      STRATA_ASSIGN_OR_RETURN(auto p, ParseShard(format, bytes, key, samples, first, verified));
      uint64_t extra = p->extra_bytes;
      out = ParsedValue{std::move(p), extra};
      return Status::Ok();
    });
    if (!threw.ok()) return threw;
    return out;
  };
}

std::unique_ptr<Iterator> MakeIterator(std::shared_ptr<DatasetImpl> ds, size_t worker, const State& state) {
  return std::make_unique<IteratorImpl>(std::move(ds), worker, state);
}

}  // namespace strata::loader

#include "loader/epoch_head.h"

#include <algorithm>
#include <string>

namespace strata::loader {

EpochHead::EpochHead(ShardCache& cache, Fetch fetch, size_t threads)
    : cache_(cache), fetch_(std::move(fetch)), threads_(std::max<size_t>(threads, 1)) {}

EpochHead::~EpochHead() {
  std::unique_ptr<ThreadPool> pool;
  {
    MutexLock lock(mu_);
    stop_ = true;
    pool = std::move(pool_);
  }
  landed_.NotifyAll();
  pool.reset();  // queued fetches see stop_; running ones finish and release what they bring
  MutexLock lock(mu_);
  for (auto& [worker, head] : heads_) ReleaseLocked(head);
}

void EpochHead::ReleaseLocked(Head& head) {
  for (const auto& [shard, parsed] : head.ready) {
    cache_.Release(shard);
    ++counters_.released;
  }
  head.ready.clear();
}

void EpochHead::Start(uint64_t epoch, size_t worker, size_t shard) {
  MutexLock lock(mu_);
  if (stop_) return;
  auto it = heads_.find(worker);
  if (it == heads_.end() || it->second.epoch != epoch) {
    if (it != heads_.end()) ReleaseLocked(it->second);
    Head fresh;
    fresh.epoch = epoch;
    it = heads_.insert_or_assign(worker, std::move(fresh)).first;
  }
  Head& head = it->second;
  if (head.running.count(shard) || head.ready.count(shard)) return;
  head.running.insert(shard);
  ++counters_.started;
  if (!pool_) pool_ = std::make_unique<ThreadPool>(threads_, "strata-ld-head");
  pool_->Submit([this, epoch, worker, shard] { Run(epoch, worker, shard); });
}

void EpochHead::Run(uint64_t epoch, size_t worker, size_t shard) {
  auto current = [&]() REQUIRES(mu_) -> Head* {
    auto it = heads_.find(worker);
    return it != heads_.end() && it->second.epoch == epoch && it->second.running.count(shard) ? &it->second : nullptr;
  };
  {
    MutexLock lock(mu_);
    if (stop_ || !current()) return;  // taken or replaced before it started: nothing to fetch
  }
  Result<ParsedFetch> got = InternalError("not fetched");
  // An exception (a store or cache bug, bad_alloc) loses this shard's head, not the process.
  Status threw =
      RunGuarded("loader: fetching the next epoch's shard " + std::to_string(shard), [&] { got = fetch_(shard); });
  if (!threw.ok()) got = threw;
  MutexLock lock(mu_);
  landed_.NotifyAll();
  Head* head = current();
  if (head) head->running.erase(shard);
  if (!got.ok()) {
    ++counters_.failed;
    if (head) {
      head->awaited.erase(shard);  // (its Await returns null)
      EraseIfDoneLocked(worker);
    }
    return;  // the iterator fetches it itself, with its retries
  }
  ++counters_.landed;
  if (head && !stop_ && (!head->taken || head->awaited.count(shard))) {
    head->ready[shard] = std::move(got->parsed);
  } else {
    cache_.Release(shard);
    ++counters_.released;
    if (head) EraseIfDoneLocked(worker);
  }
}

void EpochHead::EraseIfDoneLocked(size_t worker) {
  auto it = heads_.find(worker);
  if (it == heads_.end() || !it->second.taken) return;
  const Head& head = it->second;
  if (head.running.empty() && head.awaited.empty() && head.ready.empty()) heads_.erase(it);
}

EpochHead::Taken EpochHead::Take(uint64_t epoch, size_t worker, const std::set<size_t>& wanted) {
  Taken out;
  MutexLock lock(mu_);
  auto it = heads_.find(worker);
  if (it == heads_.end()) return out;
  Head& head = it->second;
  if (head.epoch != epoch || head.taken) {
    ReleaseLocked(head);
    heads_.erase(it);  // fetches still running find no head: what they bring is released
    return out;
  }
  for (auto r = head.ready.begin(); r != head.ready.end();) {
    if (wanted.count(r->first)) {
      out.ready.insert(*r);
      r = head.ready.erase(r);
    } else {
      ++r;
    }
  }
  counters_.taken += out.ready.size();
  ReleaseLocked(head);
  for (size_t shard : head.running) {
    if (wanted.count(shard)) out.pending.insert(shard);
  }
  head.taken = true;
  head.awaited = out.pending;
  EraseIfDoneLocked(worker);
  return out;
}

std::shared_ptr<const ParsedShard> EpochHead::Await(uint64_t epoch, size_t worker, size_t shard) {
  MutexLock lock(mu_);
  auto mine = [&]() REQUIRES(mu_) -> Head* {
    auto it = heads_.find(worker);
    return it != heads_.end() && it->second.epoch == epoch && it->second.taken && it->second.awaited.count(shard)
               ? &it->second
               : nullptr;
  };
  landed_.Wait(lock, [&]() NO_THREAD_SAFETY_ANALYSIS {
    Head* head = mine();
    return stop_ || !head || !head->running.count(shard);
  });
  Head* head = mine();
  if (!head) return nullptr;
  std::shared_ptr<const ParsedShard> out;
  if (auto r = head->ready.find(shard); r != head->ready.end()) {
    out = std::move(r->second);
    head->ready.erase(r);
    ++counters_.taken;
  }
  head->awaited.erase(shard);
  EraseIfDoneLocked(worker);
  return out;
}

void EpochHead::Drop(uint64_t epoch, size_t worker) {
  MutexLock lock(mu_);
  auto it = heads_.find(worker);
  if (it == heads_.end() || it->second.epoch != epoch || !it->second.taken) return;
  ReleaseLocked(it->second);
  it->second.awaited.clear();  // what still lands is released
  EraseIfDoneLocked(worker);
}

EpochHead::Counters EpochHead::counters() const {
  MutexLock lock(mu_);
  return counters_;
}

}  // namespace strata::loader

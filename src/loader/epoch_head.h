// EpochHead: the first shards of a worker's next epoch, fetched while its
// current epoch ends, so the next epoch's first batch does not wait for them.
//
// Every epoch otherwise starts from empty queues: the consumer waits for a
// whole batch before its first step, while at the end of the epoch before
// the fetchers sat idle for its last steps. With few, large steps (unet3d:
// 12 steps of 7 x 140 MiB) that wait was most of a warm epoch's stall (0.55 s
// of 0.68 s at N=1, epoch 3). The order of the next epoch is known (a
// function of seed and epoch), so the iterator of epoch e, once every shard
// it needs has been requested, starts the first two batches' shards of e + 1
// here, within its own prefetch window; the iterator of e + 1 takes them (tf.data's repeat() +
// prefetch() overlaps epochs the same way). Nothing about the order changes.
//
// Fetches run on this object's threads, not the iterator's, so an iterator
// that ends does not wait for them; one the next iterator needs while it is
// still running is awaited by that iterator (not fetched again). What nobody
// takes is released to the cache: when the next iterator is for another
// epoch or does not need it, when a newer head replaces it, or when the
// dataset goes.
// Thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>

#include "base/executor.h"
#include "base/mutex.h"
#include "base/status.h"
#include "loader/shard_cache.h"

namespace strata::loader {

class EpochHead {
 public:
  // `fetch` gets a shard parsed through `cache` (each success counts one user
  // of the shard there, until Release); `threads`: shards fetched at once.
  using Fetch = std::function<Result<ParsedFetch>(size_t shard)>;
  EpochHead(ShardCache& cache, Fetch fetch, size_t threads);
  ~EpochHead();  // waits for the fetches running; releases what nobody took

  // Fetches `shard` ahead for `worker`'s iterator of `epoch` (a head for an
  // older epoch of that worker is dropped). A failed fetch is forgotten: the
  // iterator fetches the shard itself, with its retries.
  void Start(uint64_t epoch, size_t worker, size_t shard);

  // What was fetched ahead for (`epoch`, `worker`) among `wanted`, now the
  // caller's (it releases each to the cache when done), and the wanted ones
  // still being fetched, for Await. The rest of the worker's head is
  // released, and so is what its other running fetches bring.
  struct Taken {
    std::map<size_t, std::shared_ptr<const ParsedShard>> ready;
    std::set<size_t> pending;
  };
  Taken Take(uint64_t epoch, size_t worker, const std::set<size_t>& wanted);
  // Waits for a pending shard of Take's: the caller's as Take's ready ones,
  // or null if its fetch failed or the head was replaced (then the caller
  // fetches it itself).
  std::shared_ptr<const ParsedShard> Await(uint64_t epoch, size_t worker, size_t shard);
  // The caller will not Await the rest of what it took pending: it is
  // released when it lands.
  void Drop(uint64_t epoch, size_t worker);

  struct Counters {
    uint64_t started = 0;   // shards fetched ahead
    uint64_t landed = 0;    // ... that arrived
    uint64_t failed = 0;    // ... whose fetch failed (forgotten)
    uint64_t taken = 0;     // ... that an iterator took
    uint64_t released = 0;  // ... that nobody took
  };
  Counters counters() const;

 private:
  struct Head {
    uint64_t epoch = 0;
    bool taken = false;  // by its iterator: only `awaited` fetches are kept
    std::set<size_t> running;
    std::map<size_t, std::shared_ptr<const ParsedShard>> ready;
    std::set<size_t> awaited;  // taken pending: kept for Await when they land
  };
  void Run(uint64_t epoch, size_t worker, size_t shard);
  void ReleaseLocked(Head& head) REQUIRES(mu_);
  // Forgets a taken head once nothing of it is running or waits to be collected.
  void EraseIfDoneLocked(size_t worker) REQUIRES(mu_);

  ShardCache& cache_;
  const Fetch fetch_;
  const size_t threads_;
  mutable Mutex mu_;
  CondVar landed_;  // a running fetch ended
  bool stop_ GUARDED_BY(mu_) = false;
  std::map<size_t, Head> heads_ GUARDED_BY(mu_);  // per worker
  Counters counters_ GUARDED_BY(mu_);
  std::unique_ptr<ThreadPool> pool_ GUARDED_BY(mu_);  // made at the first Start
};

}  // namespace strata::loader

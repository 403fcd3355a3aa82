// The loader's pure functions: the epoch order (shuffles), the deal of that
// order to (rank, worker) in units of one batch, and the fingerprint that
// ties a resume state to a dataset and its order options. No I/O, no state;
// thread-safe. Everything here is reproducible across machines and standard
// libraries: the PRNG and the bounded draws are our own (splitmix64 and
// Lemire's method), never std::shuffle or std distributions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "dataset/manifest.h"
#include "loader/streaming_dataset.h"

namespace strata::loader {

// splitmix64: a 64-bit generator whose output is fixed by the seed alone.
class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  uint64_t Next();
  // Uniform in [0, n), unbiased (Lemire's multiply-and-reject); n > 0.
  uint64_t Below(uint64_t n);

 private:
  uint64_t state_;
};

// Fisher-Yates with SplitMix64; the same (seed, input) gives the same output everywhere.
void SeededShuffle(std::vector<uint64_t>& v, uint64_t seed);

// Mixes several values into one seed (order matters).
uint64_t MixSeed(std::initializer_list<uint64_t> parts);

// The order options that, with the index, fix every epoch's order.
struct OrderSpec {
  Shuffle shuffle = Shuffle::kWindow;
  uint64_t seed = 0;
  size_t shuffle_window = 8;
};

// Hex fingerprint of the index (format, each shard's name, size, sample
// count and sha256 where recorded) and the order options.
std::string Fingerprint(const dataset::Manifest& index, const OrderSpec& spec);

// Shard order for `epoch`: storage order for kNone, else a seeded permutation.
std::vector<uint64_t> ShardOrder(size_t shards, const OrderSpec& spec, const std::string& fingerprint, uint64_t epoch);

// The epoch's global order of sample indices. `shard_samples[k]` is shard k's
// sample count. kWindow: samples of each group of `shuffle_window`
// consecutive shards (in shuffled shard order) are shuffled together, so a
// sample's epoch position stays within its window's span.
//
// `streams` > 1 (the DataLoader's worker count; kNone ignores it): the
// shard order's samples are cut into `streams` contiguous runs of whole
// `chunk`s (the global batch; lengths differ by at most one chunk, and the
// run whose turn it is takes the partial last chunk), each is ordered as
// above on its own (windows of `shuffle_window` of its segments, a shard
// split at a run boundary being two, or of half of them, rounded down, when
// the run has fewer than two windows' worth: its first batch must not wait
// for all its shards), and the order takes `chunk` samples of each run in
// turn. Global batch g then comes from run g % streams, so with
// as many workers as streams each worker reads only its run's shards (about
// 1/streams of them, plus at most two split at run boundaries), not every
// shard of every window. `streams` = 1 is the order above.
std::vector<uint64_t> EpochOrder(const std::vector<uint64_t>& shard_samples, const OrderSpec& spec,
                                 const std::string& fingerprint, uint64_t epoch, size_t streams = 1,
                                 uint64_t chunk = 1);

// The deal. After `consumed` samples of an epoch of `total` samples, the
// remainder is cut into global batches of batch*world samples; rank r gets
// the r-th run of `batch` samples of each. Rank-local batch b goes to worker
// b % workers. The last, partial global batch (`tail` < batch*world samples):
//  - even_batches, !drop_last: cut into world runs of ceil(tail/world), so
//    every rank gets the same number of batches; positions past the end are
//    padding, position total+j repeating position j % total (the epoch's
//    start), as torch's DistributedSampler pads. At most world-1 repeats.
//  - even_batches, drop_last: dropped for every rank (the same batch counts
//    as DistributedSampler(drop_last) + DataLoader(drop_last)).
//  - !even_batches: cut like the full ones (ranks past its end get nothing,
//    at most one rank gets a partial batch, so ranks may differ by one
//    batch); drop_last drops only that one partial batch (< batch samples).
struct PartitionSpec {
  uint64_t total = 0;
  size_t world_size = 1;
  size_t rank = 0;
  size_t num_workers = 1;
  size_t batch_size = 1;
  bool drop_last = false;
  bool even_batches = false;
};

// A batch as a half-open range of positions in the epoch's global order
// (positions >= total are padding: see PartitionSpec).
struct PositionRange {
  uint64_t begin = 0;
  uint64_t end = 0;
  uint64_t size() const { return end - begin; }
};

// The rank's batches after `consumed`, in rank-local order.
std::vector<PositionRange> RankBatches(const PartitionSpec& spec, uint64_t consumed);
// The worker's batches (every num_workers-th rank batch, from `worker`).
std::vector<PositionRange> WorkerBatches(const PartitionSpec& spec, uint64_t consumed, size_t worker);
// The epoch order's index for `position` (padding wraps to the epoch's start); total > 0.
inline uint64_t OrderSlot(uint64_t position, uint64_t total) { return position < total ? position : position % total; }
// Samples the rank gets after `consumed` (all its workers; padding included).
uint64_t RankSampleCount(const PartitionSpec& spec, uint64_t consumed);

Status ValidatePartition(const PartitionSpec& spec);

}  // namespace strata::loader

// The run rules of `strata bench train`: MLPerf Storage's, adapted to one
// node reading an (emulated) bucket, so that an AU figure cannot come from
// memory filled before the clock started.
//
// MLPerf Storage (Submission_guidelines.md, mlpstorage's datasize check,
// DLIO's statscounter) requires per run: a dataset at least 5 x the hosts'
// memory (so it cannot be served from the page cache), at least 500 steps per
// epoch, and AU over an epoch with its first step excluded (start-up). Here:
//
//  - The window opens at the epoch's start, when each rank's loader is
//    created with empty queues, and counts the time to fill them (nothing is
//    excluded: with the first step excluded, the loaders would fill their
//    prefetch budgets during it and the window would open on full queues).
//  - Memory, for a cold epoch: the dataset is at least `memory_factor` (5, as
//    MLPerf's) x what the loaders may hold (every rank's prefetch budget, or
//    two batches when larger, plus its batch in use, plus the RAM cache the
//    ranks share). The basis is the loaders' budgets, not the host's RAM: the
//    page cache of the machine running an emulated bucket is not the client's
//    memory, and 5 x 24 GiB of data per run does not fit this machine's disk.
//    A smaller dataset is "not valid: fits in memory" (the loaders could fetch
//    all of it at full parallelism, a burst a long epoch never sustains).
//  - Length: at least `min_steps` (100) steps and `min_seconds` (2 s). 100 is
//    a fifth of MLPerf's 500 (a unet3d epoch of 500 steps at N=1 is 500 GB;
//    at 100, one slow step or the first fill weighs about 1%); 2 s is about
//    MLPerf's own shortest epoch (cosmoflow: 500 x 3.5 ms) and keeps timer and
//    scheduling noise (about 1 ms per step on a busy machine) small.
//  - A cold epoch must fetch from the store, inside the window, at least the
//    bytes it consumes (else some came from memory filled beforehand).
//
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/status.h"
#include "loader/streaming_dataset.h"

namespace strata::train {

struct RunRules {
  uint64_t min_steps = 100;
  double min_seconds = 2.0;
  double memory_factor = 5.0;
  nlohmann::json ToJson() const;
};

// What the rules look at in one epoch's result.
struct RuleInputs {
  bool cold = false;
  uint64_t steps = 0;          // steps in the window (most of any rank)
  double seconds = 0;          // the window's length
  uint64_t dataset_bytes = 0;  // payload bytes the epoch consumed (all ranks)
  uint64_t memory_bytes = 0;   // what the loaders may hold (all ranks)
  uint64_t store_bytes = 0;    // fetched from the store inside the window
  bool store_counted = false;  // store_bytes was measured
  bool smoke = false;          // --quick: never valid
};

struct RuleCheck {
  bool valid = true;
  std::vector<std::string> failures;  // each "fits in memory: ...", "too short: ...", ...
  std::string Summary() const;        // "valid" or "not valid: <failures; ...>"
};

RuleCheck CheckRules(const RunRules& rules, const RuleInputs& in);

// Steps an epoch needs at least: min_steps, and enough nominal compute to
// last min_seconds (each step holds one full compute time, so the window
// then lasts at least that long).
uint64_t MinStepsFor(const RunRules& rules, double compute_s);

// What the loaders at `world` ranks may hold: per rank the prefetch budget
// (or two batches when larger: the loader always keeps two ahead) and the
// batch in use, plus the RAM cache, shared by the ranks of a process.
uint64_t LoaderMemoryBytes(const loader::StreamingOptions& base, size_t world, uint64_t batch_bytes);

// The smallest dataset (samples, a whole number of shards of
// `samples_per_file`) whose epochs at `world` accelerators meet the rules:
// MinStepsFor steps of `batch` per rank, and at least memory_factor x
// `memory_bytes` of `record_bytes` samples.
uint64_t RequiredSamples(const RunRules& rules, size_t world, uint64_t batch, double compute_s, uint64_t record_bytes,
                         uint64_t samples_per_file, uint64_t memory_bytes);

// What a dataset is made of, for sizing it: per accelerator `batch` samples
// of `record_bytes` per step of `compute_s`, `samples_per_file` per shard.
struct DatasetShape {
  uint64_t batch = 1;
  double compute_s = 0;
  uint64_t record_bytes = 0;
  uint64_t samples_per_file = 1;
};

// What the run rules need of the dataset at N = `largest_n`.
struct Sizing {
  size_t largest_n = 1;
  uint64_t memory_bytes = 0;  // the loaders' at that N
  uint64_t steps = 0;         // per rank
  uint64_t samples = 0;       // RequiredSamples
  // "what the run rules need at N=4: 112 steps of 32 per accelerator, and 5 x
  // the loaders' memory of 70.0 MiB"
  std::string Explain(const RunRules& rules, uint64_t batch) const;
};
Sizing SizeFor(const RunRules& rules, const loader::StreamingOptions& base, const DatasetShape& shape,
               size_t largest_n);
// The largest N of `counts` whose epochs a dataset of `samples` can make
// valid (0: none).
size_t LargestSizedN(const RunRules& rules, const loader::StreamingOptions& base, const DatasetShape& shape,
                     const std::vector<size_t>& counts, uint64_t samples);

// One line per filesystem a run writes to: what it needs there and where.
struct DiskNeed {
  std::string path;  // an existing directory or one to be created (its nearest existing parent is checked)
  uint64_t bytes = 0;
  std::string what;  // "the dataset's shards", ...
};
// Sums the needs per filesystem and compares each with its free space:
// NoSpace naming every size, the total and what is free, else OK.
Status CheckDiskSpace(const std::vector<DiskNeed>& needs, const std::string& hint);

}  // namespace strata::train

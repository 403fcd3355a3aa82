// What `strata bench train` and the demo's AU section say about a sweep: one
// line per epoch, the largest N that kept up, the memory the loaders held, the
// emulated bucket's ceiling, and the workload as the JSON records it. Pure
// functions of their inputs; thread-safe.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "loader/streaming_dataset.h"
#include "object/cloud_store.h"
#include "train/engine.h"
#include "train/workloads.h"

namespace strata::train {

// "N=  4 epoch 2: AU  93.1%   1234.5 samples/s   135.2 MiB/s  (160 steps, 2.23 s from empty queues)"
// and, indented below, the store's bytes in the window against those consumed and the rules' verdict.
std::string FormatResultLine(const EpochResult& r);

// The largest N whose AU >= threshold in `epoch` and whose result is valid
// under the run rules (0 if none).
size_t LargestPassing(const std::vector<EpochResult>& results, uint64_t epoch, double threshold);

// "largest N with AU >= 90% and a valid result: epoch 1 (cold): 1, epoch 2 (warm): 4"
// (every epoch cold with `every_epoch_cold`); `*best` gets {"1": 1, "2": 4}.
std::string LargestPassingLine(const std::vector<EpochResult>& results, uint64_t epochs, double threshold,
                               bool every_epoch_cold, nlohmann::json* best);

// The process's peak RSS against what the loaders may hold at the largest N
// that ran (LoaderMemoryBytes, into `*budget`).
std::string MemoryLine(const std::vector<EpochResult>& results, const loader::StreamingOptions& base,
                       uint64_t batch_bytes, uint64_t peak_rss_bytes, uint64_t* budget);

// What an emulated bucket can give one rank: its connections, each paying the
// first byte per request of the size the loader asks for (a shard of
// `shard_bytes` in fetch_concurrency parts). nullopt without a bandwidth.
struct BucketCeiling {
  size_t connections = 0;
  uint64_t request_bytes = 0;
  double per_connection_bytes_s = 0;
  double bytes_s = 0;  // per rank
  // "128 connections x 20.2 MiB/s (requests of 4.0 MiB) = 2.5 GiB/s"
  std::string Line() const;
};
std::optional<BucketCeiling> EmulatedBucketCeiling(const object::CloudProfile& profile,
                                                   const loader::StreamingOptions& base, uint64_t shard_bytes);

// The workload as `strata bench train --json` records it (`strata plan
// --from-bench` reads it back).
nlohmann::json WorkloadJson(const Workload& w, std::string_view accelerator, double compute_s, double threshold);

}  // namespace strata::train

// The MLPerf Storage training workloads `strata bench train` emulates and
// `strata plan` sizes: plain data, apart from the benchmark engine so the plan
// (and its fuzz target) need no loader.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "dataset/sample.h"

namespace strata::train {

// One MLPerf Storage training workload with its published parameters
// (mlcommons/storage workload configs, DLIO). Sizes are per sample.
struct Workload {
  std::string name;
  dataset::ShardFormat format;
  std::string field;          // the file extension / field name of a sample
  uint64_t record_size;       // bytes per sample
  uint64_t samples_per_file;  // samples per shard
  size_t batch;               // per accelerator
  double compute_h100_s;      // emulated compute per batch
  double compute_a100_s;
  double threshold;          // AU a run must keep (fraction)
  uint64_t published_files;  // num_files_train in the published config
  uint64_t samples;          // default dataset size here (small: 2 cores, loopback)
};

const std::vector<Workload>& Workloads();
// InvalidArgument listing the known names.
Result<Workload> FindWorkload(std::string_view name);
// "h100" or "a100"; InvalidArgument otherwise.
Result<double> ComputeTime(const Workload& w, std::string_view accelerator);

}  // namespace strata::train

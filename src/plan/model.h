// The arithmetic behind `strata plan`: from a training job's data needs
// (dataset, accelerators, epochs), an object store's latency, bandwidth and
// prices, the nodes' NVMe and a checkpoint policy, what each way of feeding
// the accelerators gives (utilisation, connections, cache size, cost).
// Pure functions of their inputs, no I/O: the command (src/cli/cmd_plan.cc) reads
// flags and files into a PlanInput (input.h) and prints the report.
//
// Model (every assumption in one place; the README repeats it):
// - The job needs B = accelerators x per-accelerator samples/s x mean sample
//   bytes. An epoch takes T0 = dataset / B if the data path keeps up.
// - A source delivering R bytes/s of an epoch's X bytes takes X / R; sources
//   work in parallel, so an epoch takes max(T0, miss/R_store, hit/R_local).
//   Utilisation = sum T0 / sum epoch times (data stalls only).
// - One connection moving requests of s bytes delivers s / (ttfb + s / bw)
//   (first byte, then the per-connection bandwidth). Little's law: requests
//   in flight = arrival rate x time in the system = B / s x (ttfb + s / bw).
// - Samples are reshuffled across nodes every epoch (PyTorch's
//   DistributedSampler, strata's loader): a node's local cache holds only what
//   that node read, so after e epochs it has seen 1 - (1 - 1/nodes)^e of the
//   dataset; a cache group pools every node's NVMe, so epoch 2 is warm once
//   nodes x NVMe holds the dataset. Random eviction: hit ratio = cache/dataset.
// - Monthly cost: the accelerators are rented for a month (730 h) and the job
//   runs back to back; requests and egress scale with the job's rate.
// - Checkpoints: a synchronous save stalls for bytes / storage bandwidth, an
//   asynchronous save (strata's CheckpointWriter) for bytes / snapshot
//   bandwidth, the upload (bytes / persist bandwidth, else the storage
//   bandwidth) overlapping training. Optimal interval: Young
//   (1974) sqrt(2 delta M) and Daly (2006)'s higher-order estimate.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/status.h"

namespace strata::plan {

constexpr double kHoursPerMonth = 730;  // 365 x 24 / 12, as cloud price lists count

// An object store's list prices and typical performance. Prices in USD.
struct StorePreset {
  std::string name;          // "aws-s3-standard"
  std::string description;   // "AWS S3 Standard, us-east-1"
  std::string price_date;    // when the list prices were read
  double get_per_1000 = 0;   // GET (class B) requests
  double put_per_1000 = 0;   // PUT/LIST (class A) requests
  double egress_per_gb = 0;  // to the internet (out of the provider's region)
  double storage_per_gb_month = 0;
  double first_byte_s = 0;        // typical first-byte latency
  double connection_bytes_s = 0;  // typical bandwidth of one connection
};
const std::vector<StorePreset>& StorePresets();
// InvalidArgument naming the known presets.
Result<StorePreset> FindStorePreset(const std::string& name);

struct SizeBucket {
  double upper = 0;  // bytes, inclusive upper bound of the bucket
  uint64_t count = 0;
};

struct PlanInput {
  // Dataset.
  double dataset_bytes = 0;
  uint64_t samples = 0;
  uint64_t objects = 0;               // objects as stored now (0: one per sample)
  std::vector<SizeBucket> histogram;  // optional: object sizes
  // Accelerators.
  uint64_t accelerators = 8;
  uint64_t accelerators_per_node = 8;
  std::string accelerator_type = "h100";
  std::string workload;                // unet3d | resnet50 | cosmoflow (MLPerf Storage), or empty
  double samples_per_s_per_accel = 0;  // measured or derived from the workload
  double accelerator_hour_price = 0;   // USD per accelerator-hour
  double epochs = 1;
  // Object store.
  StorePreset store;
  uint64_t connections_per_node = 64;
  bool in_region = false;  // compute in the store's region: no egress charge
  // Nodes.
  double nvme_bytes = 0;       // per node
  double nvme_bytes_s = 0;     // per node
  double network_bytes_s = 0;  // per node NIC (0: no limit)
  // Shards.
  double shard_bytes = 256.0 * (1 << 20);
  double shard_request_bytes = 16.0 * (1 << 20);  // ranged GETs per shard fetch
  // Checkpoints (model_bytes 0: none).
  double checkpoint_bytes = 0;
  double checkpoint_interval_s = 3600;
  double checkpoint_bytes_s = 0;           // to durable storage, whole job
  double checkpoint_snapshot_bytes_s = 0;  // to host memory / local NVMe (async save), whole job
  double checkpoint_persist_bytes_s = 0;   // the async save's background write, whole job (0: bytes_s)
  double mtbf_s = 0;                       // of the whole job (0: no failures)
  uint64_t checkpoints_kept = 3;
  // A data path's measured rates per node (`strata bench train`, the cache
  // bench; 0: none): they cap what the shard options get from the store
  // (epoch 1) and what the caches deliver.
  double measured_store_bytes_s_per_node = 0;
  double measured_cache_bytes_s_per_node = 0;
  // Budget in USD per month (negative: none).
  double budget_per_month = -1;
  // Where measured figures came from ("strata bench train au.json"), for the report.
  std::vector<std::string> sources;
};

// --- The formulas, each on its own so tests can check them by hand. ---

// Bytes/s one connection delivers with requests of `request_bytes`.
double ConnectionRate(double request_bytes, double first_byte_s, double connection_bytes_s);
// Little's law: requests in flight to move `bytes_s` in requests of `request_bytes`.
double ConnectionsInFlight(double bytes_s, double request_bytes, double first_byte_s, double connection_bytes_s);
// USD for `requests` at `per_1000` USD per 1,000 requests.
double RequestCost(double requests, double per_1000);
// Share of the wall time lost to a stall of `stall_s` every `interval_s`.
double StallFraction(double stall_s, double interval_s);
// Young (1974): sqrt(2 delta M).
double YoungInterval(double checkpoint_s, double mtbf_s);
// Daly (2006), eq. 37: sqrt(2 delta M) [1 + 1/3 sqrt(delta/2M) + 1/9 (delta/2M)] - delta
// for delta < 2M, else M.
double DalyInterval(double checkpoint_s, double mtbf_s);
// First-order expected waste of a checkpoint every `interval_s` costing
// `checkpoint_s`, failures every `mtbf_s` on average: the saves plus half an
// interval of lost work per failure. Capped at 1.
double CheckpointWaste(double checkpoint_s, double interval_s, double mtbf_s);
// Cache hit ratio of a node's own cache in epoch `epoch` (1-based) when
// samples are reshuffled over `nodes` every epoch.
double LocalCacheHitRatio(double cache_bytes, double dataset_bytes, uint64_t nodes, double epoch);
// Effective price of a useful accelerator-hour.
double EffectiveHourPrice(double hour_price, double utilisation);

// --- The report. ---

struct Cost {
  double compute = 0, storage = 0, requests = 0, egress = 0;
  double total() const { return compute + storage + requests + egress; }
};

struct OptionResult {
  std::string name;  // "stream", "local-cache", "shards", "cache-group"
  std::string how;   // one line
  double request_bytes = 0;
  double store_bytes_s = 0;       // what the store can deliver at most (all nodes)
  double local_bytes_s = 0;       // what the caches can deliver (0: none)
  double connections_needed = 0;  // Little's law at the job's bandwidth (all nodes)
  double connections_per_node = 0;
  double cache_bytes_per_node = 0;  // for a warm 2nd epoch (0: no cache)
  double hit_ratio_epoch2 = 0;
  double utilisation = 0;      // data stalls only
  double useful_fraction = 0;  // utilisation x (1 - checkpoint waste)
  double job_hours = 0;
  double job_cost = 0;  // one job: the month's cost prorated to its hours
  double requests_per_job = 0;
  double store_bytes_per_job = 0;
  Cost monthly;
  double effective_hour_price = 0;      // compute price / utilisation
  double all_in_useful_hour_price = 0;  // monthly total / useful accelerator-hours
  bool meets_demand = false;            // utilisation >= 0.9 (MLPerf Storage's AU bar)
  bool within_budget = true;
  std::vector<std::string> notes;
};

struct CheckpointResult {
  bool enabled = false;
  double sync_stall_s = 0, async_stall_s = 0, upload_s = 0;
  double sync_fraction = 0, async_fraction = 0;  // at the configured interval
  double young_sync_s = 0, daly_sync_s = 0, young_async_s = 0, daly_async_s = 0;
  double waste_sync = 0, waste_async = 0;  // at the configured interval, with failures
  double waste_async_at_daly = 0;
  std::vector<std::string> notes;
};

struct PlanReport {
  PlanInput input;
  double nodes = 0;
  double mean_sample_bytes = 0, mean_object_bytes = 0;
  double per_accel_bytes_s = 0, needed_bytes_s = 0;
  double compute_epoch_s = 0;  // T0
  CheckpointResult checkpoint;
  std::vector<OptionResult> options;
  std::string recommendation;
  std::vector<std::string> notes;
};

// InvalidArgument naming the field when the input cannot be planned
// (no dataset, no accelerators, no throughput, ...).
Result<PlanReport> MakePlan(const PlanInput& input);
nlohmann::json ToJson(const PlanReport& report);
// "45 ms", "12.3 s", "4.2 min", "1.5 h", "3.0 d".
std::string HumanDuration(double seconds);
// "850 MB/s", "3.18 GB/s" (decimal, as bandwidths are quoted).
std::string HumanRate(double bytes_s);
std::string FormatReport(const PlanReport& report);
// Three charts comparing the options (utilisation, cost per useful hour,
// monthly cost), in bench/plot.py's schema.
nlohmann::json Charts(const PlanReport& report);

}  // namespace strata::plan

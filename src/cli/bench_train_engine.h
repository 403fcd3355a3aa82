// The accelerator-utilisation (AU) benchmark behind `strata bench train` and
// the demo's "accelerator utilisation" section, in the manner of DLIO /
// MLPerf Storage: N emulated accelerators, each with its own data source
// (rank r of N). Per step an accelerator takes a batch, "computes" for a
// fixed time (a sleep: the emulated accelerator), then waits at a barrier
// with the others and asks for the next batch.
//
//   AU = nominal compute time of every step after the first (all ranks)
//        / (N x wall time from the end of the first step to the end of the epoch)
//
// The first step is excluded because it pays start-up (opening the dataset,
// filling the pipeline), as DLIO does. AU counts the nominal compute time per
// step (a fixed amount of accelerator work); `au_dlio` counts the measured
// sleeps instead, which a busy CPU stretches. samples/s is measured over the
// same window; MiB/s = samples/s x record size / 2^20.
//
// Thread safety: the functions are thread-safe; RunEpoch starts N threads and
// joins them before it returns.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/clock.h"
#include "base/status.h"
#include "cli/workloads.h"
#include "dataset/sample.h"
#include "loader/streaming_dataset.h"
#include "object/object_store.h"

namespace strata::cli::train {

// Writes `samples` files "<prefix>files/%08d.<field>" of `record_size`
// pseudo-random bytes (the sample's index in the first 8 bytes), then packs
// them with dataset::Pack into "<prefix>shards/" (`samples_per_file` per
// shard), so the same samples exist both as individual files and as shards.
struct GenerateOptions {
  uint64_t samples = 0;
  uint64_t record_size = 0;
  uint64_t samples_per_file = 1;
  dataset::ShardFormat format = dataset::ShardFormat::kTfRecord;
  std::string field = "bin";
  int parallel = 4;
  uint64_t seed = 1;
};
struct GenerateResult {
  uint64_t samples = 0;
  uint64_t shards = 0;
  uint64_t file_bytes = 0;
  uint64_t shard_bytes = 0;
  double seconds = 0;
};
Result<GenerateResult> Generate(object::ObjectStore& store, const std::string& prefix, const GenerateOptions& options);

// What one emulated accelerator reads from: Next() blocks until the next
// batch is ready and returns its sample count and payload bytes, or nullopt
// at the end of this rank's part of the epoch. Used by one thread.
struct BatchInfo {
  uint64_t samples = 0;
  uint64_t bytes = 0;
};
class RankSource {
 public:
  virtual ~RankSource() = default;
  virtual Result<std::optional<BatchInfo>> Next() = 0;
  // Counters for the report (may be empty).
  virtual nlohmann::json Stats() const { return nlohmann::json::object(); }
};
// Creates rank `rank`'s source for `epoch` (0-based). Called on the rank's
// own thread, before its first step (so inside the excluded first step).
using RankSourceFactory = std::function<Result<std::unique_ptr<RankSource>>(size_t rank, uint64_t epoch)>;

struct EpochResult {
  size_t accelerators = 0;
  uint64_t epoch = 0;  // 1-based, as printed
  double au = 0;
  double au_dlio = 0;
  double samples_per_s = 0;
  double mib_per_s = 0;
  double record_size = 0;  // payload bytes per sample, measured
  double wall_s = 0;
  double measured_s = 0;
  double first_step_s = 0;
  uint64_t steps = 0;  // most steps of any rank
  uint64_t samples = 0;
  uint64_t bytes = 0;
  bool realtime_accelerators = false;                     // every accelerator thread ran at real-time priority
  nlohmann::json source_stats = nlohmann::json::array();  // per rank
  nlohmann::json ToJson() const;
};

// What one accelerator recorded over an epoch (RunEpoch's threads fill these).
struct RankTimeline {
  TimePoint start{};                // when it asked for its source (the epoch's start)
  std::vector<TimePoint> step_end;  // after each step's barrier (the allreduce)
  std::vector<Duration> compute;    // measured compute sleep per step
  std::vector<BatchInfo> batches;
  nlohmann::json stats = nlohmann::json::object();
  bool realtime = false;  // the thread got its real-time priority
};
// The report of one epoch from every rank's timeline: the AU formula above
// and the rates over the same window. Pure. InvalidArgument if no rank got
// 2 steps (ranks get equal batch counts under the loader's even_batches).
Result<EpochResult> SummarizeEpoch(uint64_t epoch, Duration compute, const std::vector<RankTimeline>& ranks);

// Runs one epoch with `world` accelerators. FailedPrecondition-like
// InvalidArgument if a rank gets fewer than 2 batches (AU needs a step after
// the first); a source's error is returned naming the rank.
Result<EpochResult> RunEpoch(size_t world, uint64_t epoch, Duration compute, const RankSourceFactory& factory);

// A source over individual files, the way torch's DataLoader reads a map-style
// dataset of one file per sample: `workers` threads per rank, each building
// whole batches (one GET per sample, one after the other) for the batches
// b = worker (mod workers), at most `prefetch` batches per worker ahead of
// the consumer; batches are handed out in order. The epoch's order is a
// seeded shuffle of `keys`, dealt to ranks batch by batch.
struct FileSourceOptions {
  size_t world = 1;
  size_t batch = 1;
  size_t workers = 2;
  size_t prefetch = 2;
  uint64_t seed = 0;
};
std::unique_ptr<RankSource> MakeFileSource(object::ObjectStorePtr store,
                                           std::shared_ptr<const std::vector<std::string>> keys,
                                           const FileSourceOptions& options, size_t rank, uint64_t epoch);

// Rank `rank`'s loader iterator (worker 0) over `epoch` of `dataset` (opened
// with world_size = N, rank = rank).
std::unique_ptr<RankSource> MakeLoaderSource(std::shared_ptr<loader::StreamingDataset> dataset,
                                             std::unique_ptr<loader::Iterator> iterator);

// What one N needs: a source factory valid for every epoch at that N (it
// owns whatever the sources share, released when the factory is destroyed)
// and the samples one epoch must deliver over all ranks (0: unchecked).
struct Prepared {
  RankSourceFactory factory;
  uint64_t expected_samples = 0;
};
using PrepareFn = std::function<Result<Prepared>(size_t world)>;

struct SweepOptions {
  std::vector<size_t> counts;  // N values, in order
  uint64_t epochs = 1;
  Duration compute{0};
  double threshold = 0.9;
  bool stop_below = true;  // stop after the first N whose every epoch is below the threshold ...
  size_t min_n = 1;        // ... once N >= min_n (so a plot has a few points)
  uint64_t samples = 0;    // dataset size and batch, if known: an N with fewer than 2 batches
  size_t batch = 0;        // per accelerator ends the sweep (or fails it, if it is the first N)
  std::function<void(const EpochResult&)> on_result;  // progress (may be empty)
};
// Runs every epoch for each N. Corruption if an epoch delivers another
// number of samples than expected. An N too large for the dataset (fewer
// than 2 steps) ends the sweep with the results so far (`*note` says why),
// or is InvalidArgument if it is the first.
Result<std::vector<EpochResult>> Sweep(const SweepOptions& options, const PrepareFn& prepare, std::string* note);

// Loader options for rank `rank` of `world` from `base`, every field decoded as raw bytes.
loader::StreamingOptions RankOptions(const loader::StreamingOptions& base, const std::vector<std::string>& fields,
                                     size_t world, size_t rank, const std::string& cache_dir);

// A PrepareFn for strata's loader over the packed dataset `prefix` in
// `store`: per N, N datasets (rank r of N) sharing one cache directory
// `cache_root`/nN (a node's local disk), created empty (so epoch 1 is cold)
// and removed when the next N is prepared. Empty `cache_root`: RAM only.
// `no_cache`: no disk tier, and the datasets (with their RAM cache) are
// opened afresh for every epoch, so every epoch reads the store (cold).
PrepareFn LoaderPrepare(object::ObjectStorePtr store, std::string prefix, loader::StreamingOptions base,
                        std::string cache_root, bool no_cache = false);

// 1,2,4,... up to `max`, or the comma list in `list` ("1,2,4,8").
Result<std::vector<size_t>> AcceleratorCounts(std::string_view list, size_t max);

// The largest N whose AU >= threshold in `epoch` (0 if none).
size_t LargestPassing(const std::vector<EpochResult>& results, uint64_t epoch, double threshold);

// "N=  4 epoch 2: AU  93.1%   1234.5 samples/s   135.2 MiB/s  (16 steps, 1.23 s measured)"
std::string FormatResultLine(const EpochResult& r);

}  // namespace strata::cli::train

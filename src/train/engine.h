// The accelerator-utilisation (AU) benchmark behind `strata bench train` and
// the demo's "accelerator utilisation" section, in the manner of DLIO /
// MLPerf Storage: N emulated accelerators, each with its own data source
// (rank r of N). Per step an accelerator takes a batch, "computes" for a
// fixed time (a sleep: the emulated accelerator), then waits at a barrier
// with the others and asks for the next batch.
//
//   AU = nominal compute time of every step (all ranks)
//        / (N x wall time from the epoch's start to the end of its last step)
//
// The window opens at the epoch's start, when each rank creates its source
// (empty queues: nothing fetched, nothing prefetched), so the time to fill
// the pipeline counts; the run rules (train/rules.h) say why the
// first step is not excluded here as DLIO does, and what else makes a figure
// valid. AU counts the nominal compute time per step (a fixed amount of
// accelerator work); `au_dlio` counts the measured sleeps instead, which a
// busy CPU stretches. samples/s is measured over the same window;
// MiB/s = samples/s x record size / 2^20.
//
// Thread safety: the functions are thread-safe; RunEpoch starts N threads and
// joins them before it returns.
#pragma once

#include <atomic>
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
#include "dataset/sample.h"
#include "loader/streaming_dataset.h"
#include "object/object_store.h"
#include "object/store_wrapper.h"
#include "train/rules.h"
#include "train/workloads.h"

namespace strata::train {

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
  // Counters for the report (may be empty). Also taken right after the
  // source is created, at the window's start (the queues' state there).
  virtual nlohmann::json Stats() const { return nlohmann::json::object(); }
};
// Creates rank `rank`'s source for `epoch` (0-based). Called on the rank's
// own thread, after the epoch's clock started (its start-up is timed).
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
  double measured_s = 0;     // the window: the epoch's start to the end of its last step
  double first_batch_s = 0;  // from the start until every rank had its first batch (the first fill)
  double first_step_s = 0;   // from the start to the end of the first step (what DLIO excludes)
  uint64_t steps = 0;        // most steps of any rank
  uint64_t samples = 0;
  uint64_t bytes = 0;                                     // consumed (payload) bytes, all ranks
  bool realtime_accelerators = false;                     // every accelerator thread ran at real-time priority
  nlohmann::json source_stats = nlohmann::json::array();  // per rank, at the end
  nlohmann::json open_stats = nlohmann::json::array();    // per rank, at the window's start
  // Filled by Sweep: the run rules' inputs and verdict.
  bool cold = false;
  uint64_t store_bytes = 0;  // fetched from the store inside the window (all ranks)
  bool store_counted = false;
  uint64_t memory_bytes = 0;  // what the sources may hold in memory (all ranks)
  RuleCheck rules;
  nlohmann::json ToJson() const;
};

// What one accelerator recorded over an epoch (RunEpoch's threads fill these).
struct RankTimeline {
  TimePoint start{};                                     // when it asked for its source (the epoch's start)
  TimePoint first_batch{};                               // when its first batch arrived
  nlohmann::json open_stats = nlohmann::json::object();  // its source's counters right after creation
  std::vector<TimePoint> step_end;                       // after each step's barrier (the allreduce)
  std::vector<Duration> compute;                         // measured compute sleep per step
  std::vector<BatchInfo> batches;
  nlohmann::json stats = nlohmann::json::object();
  bool realtime = false;  // the thread got its real-time priority
};
// The report of one epoch from every rank's timeline: the AU formula above
// and the rates over the same window. Pure. InvalidArgument if no rank got a
// batch.
Result<EpochResult> SummarizeEpoch(uint64_t epoch, Duration compute, const std::vector<RankTimeline>& ranks);

// Runs one epoch with `world` accelerators. InvalidArgument if no rank gets
// a batch; a source's error is returned naming the rank.
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
// and the samples one epoch must deliver over all ranks (0: unchecked); for
// the run rules, what the sources may hold in memory, a counter of the bytes
// fetched from the store (empty: not counted), and whether every epoch
// starts cold (epoch 1 always does).
struct Prepared {
  RankSourceFactory factory;
  uint64_t expected_samples = 0;
  uint64_t memory_bytes = 0;
  std::function<uint64_t()> store_bytes;
  bool every_epoch_cold = false;
};
using PrepareFn = std::function<Result<Prepared>(size_t world)>;

struct SweepOptions {
  std::vector<size_t> counts;  // N values, in order
  uint64_t epochs = 1;
  Duration compute{0};
  double threshold = 0.9;
  bool stop_below = true;  // stop after the first N whose every epoch is below the threshold ...
  size_t min_n = 1;        // ... once N >= min_n (so a plot has a few points)
  uint64_t samples = 0;    // dataset size and batch, if known: an N with less than one batch
  size_t batch = 0;        // per accelerator ends the sweep (or fails it, if it is the first N)
  RunRules rules;          // every result is checked against them ...
  bool smoke = false;      // ... and with `smoke` (--quick) marked not valid whatever they say
  std::function<void(const EpochResult&)> on_result;  // progress (may be empty)
};
// Runs every epoch for each N and checks each against the run rules.
// Corruption if an epoch delivers another number of samples than expected.
// An N too large for the dataset (less than one batch per rank) ends the
// sweep with the results so far (`*note` says why), or is InvalidArgument if
// it is the first.
Result<std::vector<EpochResult>> Sweep(const SweepOptions& options, const PrepareFn& prepare, std::string* note);

// Counts the payload bytes a store returns (Get and streamed ranges): what a
// data path fetched from the store. Thread-safe if the base store is.
class ByteCountingStore : public object::StoreWrapper {
 public:
  using StoreWrapper::Get;
  using StoreWrapper::StoreWrapper;
  Result<object::GetResult> Get(std::string_view key, const object::GetOptions& options) override;
  Status ReadRangeTo(std::string_view key, std::string_view etag, uint64_t offset, uint64_t length,
                     const object::RangeConsumer& consume) override;
  uint64_t bytes() const { return bytes_.load(std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> bytes_{0};
};

// Loader options for rank `rank` of `world` from `base`, every field decoded as raw bytes.
loader::StreamingOptions RankOptions(const loader::StreamingOptions& base, const std::vector<std::string>& fields,
                                     size_t world, size_t rank, const std::string& cache_dir);

// A PrepareFn for strata's loader over the packed dataset `prefix` in
// `store`: per N, N datasets (rank r of N) sharing one cache directory
// `cache_root`/nN (a node's local disk), created empty (so epoch 1 is cold)
// and removed when the next N is prepared. Empty `cache_root`: RAM only.
// `no_cache`: no disk tier, and the datasets (with their RAM cache) are
// opened afresh for every epoch, so every epoch reads the store (cold).
// The store's bytes are counted and the loaders' memory is LoaderMemoryBytes
// of `batch_bytes` (0: estimated from the shards' sizes, framing included).
PrepareFn LoaderPrepare(object::ObjectStorePtr store, std::string prefix, loader::StreamingOptions base,
                        std::string cache_root, bool no_cache = false, uint64_t batch_bytes = 0);

// A PrepareFn for the per-file path: rank r of N reads its part of the first
// `limit(N)` of `keys` (one GET per sample, `workers` threads each with two
// batches ahead, no cache: every epoch is cold). The store's bytes are counted;
// the memory is every worker's two batches and the batch in use, per rank.
PrepareFn FilePrepare(object::ObjectStorePtr store, std::shared_ptr<const std::vector<std::string>> keys, size_t batch,
                      size_t workers, std::function<uint64_t(size_t world)> limit, uint64_t batch_bytes);

// 1,2,4,... up to `max`, or the comma list in `list` ("1,2,4,8").
Result<std::vector<size_t>> AcceleratorCounts(std::string_view list, size_t max);

}  // namespace strata::train

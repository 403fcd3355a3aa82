// CheckpointWriter: async, sharded, atomic checkpoints.
//
// Save() validates and copies the tensors into a staging region (parallel,
// non-temporal copy in chunks; regions are pooled between saves so
// steady-state saves pay no page faults; with staging_bytes the first region
// is mapped and faulted in the background at Open, so the first save does
// not pay them either) and returns; no hashing happens inside Save. A
// background thread then writes the shards in parallel (safetensors, temp +
// fsync + rename, SHA-256, whole-shard and per-tensor xxh3 computed while
// writing), the rank manifest and rank commit,
// and on rank 0 the global manifest and LAST the global commit marker. When
// a remote store is configured, committed checkpoints are uploaded in the
// background in bounded parts, each shard checked against its manifest hash
// before it appears (remote markers last), and resumed after a restart
// (shards the upload journal records are not sent again). The newest
// committed step goes first, and a step that keep_remote would delete as soon
// as the newer ones land is never sent (upload_queue.h); a restarted writer
// does the same with what its predecessor left. The backlog of steps waiting
// for the bucket is bounded (BacklogLimit, BacklogPolicy), so the local
// directory holds at most keep_local + the bound. Retention keeps the last N
// local / M remote (remote after each upload), never deleting the newest
// fully verified one.
// A failed persist removes what it wrote; a failed staging leaves the step free.
//
// Distributed: every rank opens a writer on the same dir (and/or store) with
// its rank, world size and attempt id; rank 0 waits (deadline on the Clock)
// for all rank commits of its attempt before writing the global commit. Only
// a globally committed checkpoint counts for readers.
//
// Attempts: a job that crashes mid-save and restarts may save the same step
// again, while parts of the crashed attempt (rank commits, locally and in the
// store) are still there. Every rank part records WriterOptions::attempt and
// the coordinator pairs only parts carrying its own, so a stale part is never
// committed with new ones; each rank withdraws its stale commit (local and
// remote) before replacing its shards, and never overwrites a step already
// committed in the store. The caller picks the id: the same on every rank of
// one run of the job, a new one when the job restarts (e.g. a UUID broadcast
// by rank 0; strata.checkpoint does this through torch.distributed). Saving
// a step again under the attempt id that already has a part there fails
// (PreconditionFailed) rather than risk mixing.
//
// Thread-safe: Save may be called from any thread; each call must name a
// newer step than every earlier call (concurrent saves persist in the order
// their staging finishes). The destructor waits for staged saves to persist; uploads
// stop at once (a remote commit waiting for other ranks too), their handles
// get Cancelled, and the next writer opened on the dir resumes them.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/status.h"
#include "ckpt/format.h"
#include "io/file_system.h"
#include "object/object_store.h"

namespace strata::ckpt {

enum class InflightPolicy {
  kWait,   // Save blocks until the previous save has persisted locally
  kQueue,  // Save stages at once unless max_queued saves are already staged
};

// The upload backlog: checkpoints committed (or being persisted) locally that
// the bucket is behind on (TierStats::pending_steps), which the local
// directory keeps beyond keep_local. With BacklogPolicy::kWait and uploads
// succeeding, the bucket's newest is at most `steps` checkpoints behind.
struct BacklogLimit {
  // At most this many; unset: keep_remote (what the bucket keeps anyway), or 2
  // when it keeps everything; 0: no bound by count.
  std::optional<size_t> steps;
  uint64_t bytes = 0;  // and at most this many shard bytes (0: no bound by size)
  size_t Steps(int keep_remote) const { return steps.value_or(keep_remote > 0 ? keep_remote : 2); }
};

// What Save does when one more save would exceed the BacklogLimit (the bucket
// is slower than the saves). A save always fits when nothing else is pending.
enum class BacklogPolicy {
  kWait,   // it blocks until uploads make room: training waits for the bucket
  kSkip,   // it is saved locally but never uploaded: the bucket falls behind
  kError,  // it fails with Throttled and nothing is saved: the caller decides
};

// The remote tier as this writer sees it (CheckpointWriter::tier_stats()).
struct TierStats {
  int64_t newest_local = -1;   // newest step committed locally (-1: none)
  int64_t newest_remote = -1;  // newest step committed in the bucket (-1: none known)
  int64_t lag_steps = 0;       // newest_local - newest_remote while the bucket is behind, else 0
  size_t lag_checkpoints = 0;  // checkpoints committed locally newer than the bucket's newest
  Duration lag{0};             // since the oldest of those was committed (wall time; 0: current)
  // The backlog: tiered steps queued, uploading, admitted and persisting, or
  // superseded but newer than the bucket's newest (kept until a newer one lands).
  size_t pending_steps = 0;
  uint64_t pending_bytes = 0;
  int64_t uploading = -1;    // the step in flight (-1: none)
  size_t waiting_saves = 0;  // saves blocked on the backlog now (kWait)
  // Since Open:
  uint64_t uploaded = 0;
  uint64_t superseded = 0;   // dropped from the queue, never sent (keep_remote)
  uint64_t not_tiered = 0;   // kept local only: kSkip, or beyond the bound at Open
  uint64_t rejected = 0;     // saves refused by kError
  uint64_t failed = 0;       // uploads that failed (resumed by the next writer)
  Duration backlog_wait{0};  // time saves blocked on the backlog (kWait)
};

struct WriterOptions {
  std::string dir;                // local checkpoint directory (created)
  std::string remote_url;         // optional: object store URL to tier to
  object::ObjectStorePtr remote;  // or the store itself (wins over remote_url)
  int rank = 0;
  int world_size = 1;
  // Every rank writes into the same `dir` (e.g. NFS or one machine): rank 0
  // writes the global commit there. When false (node-local disks), local dirs
  // only hold rank commits and the remote store is where checkpoints commit.
  bool shared_dir = true;
  // This run's save attempt id (see "Attempts" above; up to 256 bytes).
  // Required when world_size > 1; a single rank gets a random one.
  std::string attempt;
  InflightPolicy policy = InflightPolicy::kWait;
  size_t max_queued = 2;     // kQueue: staged saves not yet persisted
  size_t io_threads = 4;     // shards written at once
  size_t stage_threads = 2;  // copy parallelism in Save (the caller + N-1 threads)
  // Bytes of staging memory to map and fault in on a background thread at
  // Open (at least the state's size + ~1 MiB of headers makes the FIRST save
  // as fast as later ones). 0: the first save maps its region (page faults
  // inside the stall); later saves reuse it either way.
  uint64_t staging_bytes = 0;
  uint64_t shard_bytes = 256ull << 20;  // target shard size (a bigger tensor gets its own shard)
  int keep_local = 0;                   // keep the newest N committed checkpoints locally; 0 = all
  int keep_remote = 0;                  // and M remotely; 0 = all
  // With a remote: the upload backlog's bound and what a save beyond it does.
  // Local disk: at most keep_local + the backlog's steps committed checkpoints.
  BacklogLimit backlog;
  BacklogPolicy backlog_policy = BacklogPolicy::kWait;
  Duration commit_timeout = std::chrono::minutes(10);  // rank 0 waiting for the other ranks
  Duration poll_interval = std::chrono::milliseconds(20);
  uint64_t upload_part_size = 16ull << 20;
  int upload_concurrency = 8;         // parts in flight per file
  size_t upload_files_in_flight = 4;  // files uploaded at once
  bool fsync = true;                  // false: skip fsyncs (benchmarks of the raw path only)
  // Shards are written from staging straight to the device (O_DIRECT where
  // the file system allows): no copy into the page cache, whose first-touch
  // cost dominates a buffered persist, and the training data's cached pages
  // are not evicted by checkpoint bytes. false: buffered writes.
  bool bypass_page_cache = true;
  bool upload_on_open = true;    // re-upload committed checkpoints missing remotely
  io::FileSystem* fs = nullptr;  // nullptr: DefaultFileSystem()
  Clock* clock = nullptr;        // nullptr: RealClock()
};

// "Memory speed", the yardstick for a save's stall: seconds for a plain
// memcpy of `tensors` in 4 MiB chunks over `threads` threads into a
// pre-faulted region like the staging one; best of two runs.
Result<double> MemcpyBaselineSeconds(const std::vector<TensorView>& tensors, size_t threads);

struct SaveStats {
  Duration stall{0};    // time inside Save (validation + staging)
  Duration persist{0};  // staging done -> local commit
  Duration upload{0};   // local commit -> remote commit
  uint64_t bytes = 0;   // shard bytes written
  size_t shards = 0;
  Duration wait{0};           // part of the stall spent waiting: previous save (kWait/kQueue full) or the prefault
  Duration copy{0};           // part of the stall spent copying tensors into staging
  bool cold_staging = false;  // the staging region was freshly mapped (page faults in `copy`)
  Duration backlog_wait{0};   // part of `wait` spent on the upload backlog (BacklogPolicy::kWait)
  bool tiered = false;        // queued for upload (false: no remote, or kSkip kept it local)
};

class SaveHandle {
 public:
  SaveHandle() = default;
  int64_t step() const;
  // Blocks until the checkpoint is committed locally (or failed).
  Status Wait() const;
  bool Done() const;
  // Blocks until uploaded and committed remotely; OK at once without a
  // remote. Cancelled when it will not be uploaded by this writer: superseded
  // (a newer step lands instead), kept local by BacklogPolicy::kSkip, or the
  // writer closed first (the next writer resumes it).
  Status WaitUploaded() const;
  SaveStats stats() const;

  struct State;

 private:
  friend class CheckpointWriter;
  explicit SaveHandle(std::shared_ptr<State> state) : state_(std::move(state)) {}
  std::shared_ptr<State> state_;
};

class CheckpointWriter {
 public:
  static Result<std::unique_ptr<CheckpointWriter>> Open(WriterOptions options);
  ~CheckpointWriter();
  CheckpointWriter(const CheckpointWriter&) = delete;
  CheckpointWriter& operator=(const CheckpointWriter&) = delete;

  // Copies `tensors` and returns; the bytes may be reused once it returns.
  // `metadata_json`: user metadata (a JSON value; other text is stored as a
  // string). Errors: InvalidArgument (bad tensor, duplicate name, step not
  // newer than the last save staged), AlreadyExists (step already committed),
  // NoSpace (no staging memory; the same step may be saved again), Throttled
  // (BacklogPolicy::kError and the backlog is full; nothing saved).
  Result<SaveHandle> Save(int64_t step, const std::vector<TensorView>& tensors, std::string metadata_json = "{}");
  // Waits for every staged save to commit locally; the first failure since the last Flush.
  Status Flush();
  // Waits for every queued upload (including those resumed at Open) and the
  // remote retention passes they asked for.
  Status WaitForUploads();
  // The remote tier's figures now (also exported as strata_ckpt_* metrics
  // labelled with dir and rank).
  TierStats tier_stats() const;
  // Waits until the staging memory requested by options().staging_bytes is
  // mapped and faulted in (OK at once without it); the error if mapping failed.
  Status WaitStagingReady();
  const WriterOptions& options() const { return opts_; }

  struct Impl;

 private:
  explicit CheckpointWriter(WriterOptions options);
  WriterOptions opts_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace strata::ckpt

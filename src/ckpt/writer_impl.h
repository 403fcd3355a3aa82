// Internals of CheckpointWriter shared by writer.cc (staging, persist) and
// tiering.cc (upload, recovery, retention). Not a public header.
#pragma once

#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <thread>

#include "base/buffer.h"
#include "base/executor.h"
#include "base/metrics.h"
#include "base/mutex.h"
#include "ckpt/location.h"
#include "ckpt/staging.h"
#include "ckpt/upload_queue.h"
#include "ckpt/writer.h"

namespace strata::ckpt {

// Which shards of a rank's part are already in the store (a restart resumes
// from it): hidden, so listings and verification ignore it.
inline std::string UploadJournalName(int rank) { return ".upload-" + RankManifestName(rank); }

struct SaveHandle::State {
  int64_t step = 0;
  mutable Mutex mu;
  mutable CondVar cv;
  bool done GUARDED_BY(mu) = false;
  Status status GUARDED_BY(mu);
  bool want_upload GUARDED_BY(mu) = false;
  bool uploaded GUARDED_BY(mu) = false;
  Status upload_status GUARDED_BY(mu);
  SaveStats stats GUARDED_BY(mu);
  TimePoint committed_at GUARDED_BY(mu){};
};

struct StagedShard {
  std::string file;
  uint8_t* data = nullptr;  // the whole shard file (header, then tensors), inside the job's region
  uint64_t size = 0;
  std::vector<TensorEntry> tensors;
  std::string sha256;            // set once written
  std::optional<uint64_t> xxh3;  // of the whole file, set once written
};

struct SaveJob {
  int64_t step = 0;
  bool tiered = false;  // queued for upload once committed
  std::string metadata;
  int64_t wall_time_ms = 0;
  StagingRegionPtr region;  // holds every shard's bytes
  std::vector<StagedShard> shards;
  std::shared_ptr<SaveHandle::State> state;
};

// The tiering figures as Prometheus metrics, labelled with the writer's dir and rank.
struct TierMetrics {
  explicit TierMetrics(const Labels& labels);
  void Publish(const TierStats& now, WallTime wall_now);  // gauges set, counters advanced
  Gauge &lag_steps, &lag_checkpoints, &lag_ms, &behind_since, &pending_steps, &pending_bytes, &waiting_saves;
  Counter &uploaded, &superseded, &not_tiered, &rejected, &failed, &backlog_wait_ms;
  TierStats last;  // what the counters hold
};

struct CheckpointWriter::Impl {
  WriterOptions opts;
  io::FileSystem* fs = nullptr;
  Clock* clock = nullptr;
  std::unique_ptr<Location> local;
  std::unique_ptr<Location> remote;  // null without tiering
  StagingPool pool;
  ThreadPool io_pool;

  Mutex mu;
  CondVar cv;
  std::deque<SaveJob> jobs GUARDED_BY(mu);               // staged, front is being persisted
  size_t reserved GUARDED_BY(mu) = 0;                    // slots taken by Save (staging or queued)
  std::map<int64_t, uint64_t> admitting GUARDED_BY(mu);  // saves waiting for the backlog: step -> bytes
  std::optional<int64_t> last_step GUARDED_BY(mu);
  Status first_error GUARDED_BY(mu);  // since the last Flush
  bool stopping GUARDED_BY(mu) = false;

  UploadQueue queue GUARDED_BY(mu);  // what to upload, newest first; the backlog
  uint64_t not_tiered GUARDED_BY(mu) = 0, rejected GUARDED_BY(mu) = 0;
  Duration backlog_wait GUARDED_BY(mu){0};
  std::unique_ptr<TierMetrics> metrics GUARDED_BY(mu);  // null without a remote
  Status first_upload_error GUARDED_BY(mu);
  // Steps known good without reading them again, for retention: this writer
  // hashed them while writing (local) or checked them while uploading
  // (remote), or retention verified them once.
  std::set<int64_t> verified_local GUARDED_BY(mu), verified_remote GUARDED_BY(mu);
  bool remote_retention_wanted GUARDED_BY(mu) = false;
  bool remote_retention_running GUARDED_BY(mu) = false;
  Mutex local_retention_mu, remote_retention_mu;  // one pass per tier at a time
  Mutex journal_mu;                               // the upload journal, shared by parallel file uploads

  std::thread persist_thread;
  std::thread upload_thread;
  std::thread retention_thread;  // the remote tier's passes, beside the uploads

  explicit Impl(const WriterOptions& o)
      : opts(o), io_pool(std::max<size_t>(1, o.io_threads), "ckpt-io"), queue(o.keep_remote, o.backlog) {}

  std::string StepDir(int64_t step) const;
  bool CommitsLocally() const { return opts.world_size == 1 || (opts.shared_dir && opts.rank == 0); }

  // writer.cc
  // Takes a staging slot and, when tiered, room in the upload backlog
  // (BacklogPolicy); records the step as the last one saved (*previous: the one before).
  Status Admit(SaveJob& job, uint64_t bytes, size_t limit, std::optional<int64_t>* previous, Duration* backlog_waited);
  void PersistLoop();
  Status Persist(SaveJob& job);
  Status WritePart(SaveJob& job);
  void RemovePart(const SaveJob& job);  // what a failed persist left behind
  Status WriteShard(int64_t step, StagedShard& shard);

  // tiering.cc
  void UploadLoop();
  Status Upload(int64_t step);
  TierStats TierStatsLocked() REQUIRES(mu);
  void PublishLocked() REQUIRES(mu);
  // Ends the handles of steps that will not be uploaded by this writer.
  void Settle(const std::vector<UploadQueue::Entry>& entries, const Status& why);
  Status SupersededError() const;
  Status UploadFile(int64_t step, const RankManifest& m, uint32_t shard, const std::string& digest,
                    std::map<std::string, std::string>* journal);
  bool Stopping();  // Close() began: background waits give up
  void EnqueueRecoveredUploads();
  // Of the steps that matter for recovery, whether each is committed in the store (local ones: with this part).
  std::map<int64_t, bool> CommittedInStore(const std::set<int64_t>& in_local, const std::set<int64_t>& in_remote);
  // Whether the store has this rank's part of `step` as committed locally (and, on rank 0, the global commit).
  bool RemoteHasPart(int64_t step);
  // Remote retention is rank 0's, on its own thread: a pass costs round trips
  // the next upload should not wait for.
  bool RetainsRemotely() const { return remote && opts.keep_remote > 0 && opts.rank == 0; }
  void RetentionLoop();
  void ApplyLocalRetention();
  void ApplyRemoteRetention();
  void Forget(bool remote_tier, const Result<std::vector<int64_t>>& deleted);
  std::set<int64_t> ProtectedSteps();
  // Whether `step` counts as committed in `loc` for retention purposes.
  Status LocallyValid(int64_t step);  // OK, or why not (ProvenTorn: torn)
  // Whether every byte of `step` in the local or remote tier is good: in its
  // verified_* memo, or verified now (when `can_verify`).
  bool KnownGood(bool remote_tier, int64_t step, bool can_verify);
  std::set<int64_t>& VerifiedLocked(bool remote_tier) REQUIRES(mu) {
    return remote_tier ? verified_remote : verified_local;
  }
};

}  // namespace strata::ckpt

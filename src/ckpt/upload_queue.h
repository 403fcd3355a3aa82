// UploadQueue: which committed checkpoints the writer's uploader sends, in
// which order, and how far the bucket is behind; no I/O, so the rules are
// tested on their own (upload_queue_test.cc, a fake clock).
//
// - Newest first: Next() hands out the newest queued step.
// - Superseded steps are dropped: with keep_remote = M > 0, a queued step
//   with at least M newer steps committed in the bucket, queued or uploading
//   would be deleted by the bucket's retention as soon as those land, so it is
//   never sent (Enqueue and NoteRemote return what they drop). An upload in
//   flight is never dropped: under saves faster than the bucket, dropping it
//   would mean nothing ever lands.
// - The backlog is every tiered step the bucket is behind on: queued,
//   uploading, admitted and still persisting, or dropped as superseded but
//   newer than the bucket's newest (until a newer upload lands, which passes
//   it). Fits() says whether one more save keeps it within BacklogLimit. So
//   while uploads succeed the bucket's newest is never more than the bound
//   behind, across restarts too (the local directory keeps the backlog, and a
//   restarted writer finds it there), and the uploader, which must land one
//   step for saves to go on, sticks to the newest instead of starting over
//   on each new one. A failed upload ends that guarantee until the next lands:
//   the steps it superseded stop counting, so saves are not held for it.
//
// Not thread-safe: the writer calls it under its lock.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <vector>

#include "base/clock.h"
#include "ckpt/writer.h"

namespace strata::ckpt {

class UploadQueue {
 public:
  struct Entry {
    int64_t step = 0;
    uint64_t bytes = 0;                        // shard bytes (0: unknown, e.g. unreadable at Open)
    std::shared_ptr<SaveHandle::State> state;  // the save's handle; null for one found at Open
  };

  UploadQueue(int keep_remote, BacklogLimit limit)
      : keep_remote_(keep_remote), max_steps_(limit.Steps(keep_remote)), max_bytes_(limit.bytes) {}

  // Whether a save of `bytes` as `step` (newer than every step here) keeps the
  // backlog within the limit once it and the saves admitted before it commit.
  // True when nothing else would be pending: one save always fits.
  bool Fits(int64_t step, uint64_t bytes) const;
  // Whether one more step of `bytes`, older than those here (found at Open,
  // walking newest first), fits in the backlog as it is.
  bool HasRoomFor(uint64_t bytes) const;
  // A step found at Open that keep_remote newer ones supersede: in the
  // backlog while newer than the bucket's newest.
  void NoteSuperseded(int64_t step, uint64_t bytes);
  void Reserve(int64_t step, uint64_t bytes);  // an admitted save, persisting
  void Unreserve(int64_t step);                // it failed before committing

  // A step committed locally (tiered or not): for the lag.
  void NoteLocalCommit(int64_t step, WallTime at);
  // Queues a committed step (its reservation, if any, ends); returns the queued steps it supersedes, removed.
  std::vector<Entry> Enqueue(Entry entry);
  // A step known to be committed in the bucket; returns the queued steps that supersedes, removed.
  std::vector<Entry> NoteRemote(int64_t step);

  // The newest queued step, now in flight; nullopt when none is queued.
  std::optional<Entry> Next();
  // The step in flight is done; `uploaded`: it is committed in the bucket now.
  std::vector<Entry> Finish(int64_t step, bool uploaded);
  // Every queued step (the writer is closing); they stay unsent.
  std::vector<Entry> TakeQueued();

  bool HasQueued() const { return !queued_.empty(); }
  // Admitted saves newer than every queued step: the uploader waits for them
  // to commit (or fail) rather than start an older step.
  std::set<int64_t> NewerThanQueued() const;
  bool Reserved(int64_t step) const { return reserved_.count(step) > 0; }
  int64_t NewestQueued() const { return queued_.empty() ? -1 : queued_.rbegin()->first; }
  bool Idle() const { return queued_.empty() && !inflight_; }
  std::optional<int64_t> uploading() const;
  // Whether `step` would be deleted by keep_remote once the newer ones land.
  bool Superseded(int64_t step) const;
  // Steps local retention must keep: the backlog.
  std::set<int64_t> Pending() const;
  // The figures of TierStats this queue knows (newest steps, lag, backlog).
  TierStats Stats(WallTime now) const;

 private:
  // How many steps newer than `step` are committed in the bucket, queued,
  // uploading, or in `extra`.
  size_t NewerThan(int64_t step, const std::set<int64_t>& extra = {}) const;
  std::vector<Entry> DropSuperseded();

  int keep_remote_;
  size_t max_steps_;    // 0: no bound
  uint64_t max_bytes_;  // 0: no bound
  std::map<int64_t, Entry> queued_;
  std::optional<Entry> inflight_;
  std::map<int64_t, uint64_t> reserved_;  // step -> bytes
  std::map<int64_t, uint64_t> passed_;    // superseded, newer than the bucket's newest: step -> bytes
  std::set<int64_t> remote_;              // committed in the bucket: the newest few
  int64_t newest_local_ = -1, newest_remote_ = -1;
  std::map<int64_t, WallTime> behind_;  // committed locally, newer than the bucket's newest
  uint64_t uploaded_ = 0, superseded_ = 0, failed_ = 0;
};

}  // namespace strata::ckpt

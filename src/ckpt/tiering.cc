// CheckpointWriter's tiering: background upload of committed checkpoints to
// the remote store (remote markers last, resumable through a per-rank upload
// journal), re-upload after a restart, and retention on both tiers.
#include <algorithm>
#include <nlohmann/json.hpp>

#include "base/hash.h"
#include "base/log.h"
#include "base/metrics.h"
#include "ckpt/commit.h"
#include "ckpt/reader.h"
#include "ckpt/writer_impl.h"
#include "io/durable.h"
#include "object/transfer.h"

namespace strata::ckpt {
namespace {

// The journal: {"manifest": sha256 of the rank manifest it belongs to,
// "etags": {shard file: ETag once uploaded}}. One left by another attempt at
// the step (other shards under the same names) is ignored.
std::map<std::string, std::string> ReadJournal(Location& local, int64_t step, int rank, const std::string& digest) {
  std::map<std::string, std::string> etags;
  auto text = local.ReadSmall(step, UploadJournalName(rank), 1 << 20);
  if (!text.ok()) return etags;
  auto j = nlohmann::json::parse(*text, nullptr, false);
  // Checked member by member: value() would throw on a damaged journal's wrong types.
  if (!j.is_object()) return etags;
  auto manifest = j.find("manifest");
  auto uploaded = j.find("etags");
  if (manifest == j.end() || !manifest->is_string() || manifest->get<std::string>() != digest || uploaded == j.end() ||
      !uploaded->is_object()) {
    return etags;
  }
  for (auto it = uploaded->begin(); it != uploaded->end(); ++it) {
    if (it->is_string()) etags[it.key()] = it->get<std::string>();
  }
  return etags;
}

}  // namespace

void CheckpointWriter::Impl::UploadLoop() {
  for (;;) {
    UploadQueue::Entry item;
    {
      MutexLock lock(mu);
      cv.Wait(lock, [&] {
        mu.AssertHeld();  // the predicate runs under the lock
        return stopping || queue.HasQueued();
      });
      if (stopping) return;  // pending uploads resume at the next Open
      // A save persisting now, or about to (it waited for this room), is
      // newer than anything queued: it goes first. Only those known by now
      // are waited for (one persist at most).
      std::set<int64_t> coming = queue.NewerThanQueued();
      for (const auto& [s, bytes] : admitting) {
        if (s > queue.NewestQueued() && queue.Fits(s, bytes)) coming.insert(s);
      }
      cv.Wait(lock, [&] {
        mu.AssertHeld();  // the predicate runs under the lock
        return stopping || std::none_of(coming.begin(), coming.end(), [&](int64_t s) {
                 mu.AssertHeld();
                 auto waiting = admitting.find(s);
                 return queue.Reserved(s) || (waiting != admitting.end() && queue.Fits(s, waiting->second));
               });
      });
      if (stopping) return;
      item = *queue.Next();  // the newest
      PublishLocked();
    }
    const TimePoint start = clock->Now();
    // An exception fails this upload only (Internal), never the training process.
    Status st = RunGuarded("ckpt: uploading " + StepDirName(item.step), [&] { return Upload(item.step); });
    if (!st.ok()) {
      STRATA_LOG_WARN("ckpt: uploading {} failed: {}", StepDirName(item.step), st.ToString());
    } else {
      STRATA_LOG_INFO("ckpt: uploaded {} ({} bytes) in {:.2f} s", StepDirName(item.step), item.bytes,
                      Seconds(clock->Now() - start));
    }
    if (item.state) {
      MutexLock lock(item.state->mu);
      item.state->stats.upload = clock->Now() - start;
    }
    std::vector<UploadQueue::Entry> superseded;
    {
      MutexLock lock(mu);
      superseded = queue.Finish(item.step, st.ok());
      if (!st.ok() && first_upload_error.ok()) first_upload_error = st;
      if (st.ok() && opts.rank == 0) verified_remote.insert(item.step);  // every shard checked while streaming
      if (st.ok()) remote_retention_wanted = RetainsRemotely();          // asked before WaitForUploads can return
      PublishLocked();
    }
    Settle({item}, st);
    Settle(superseded, SupersededError());
    cv.NotifyAll();
    // Uploaded: no longer kept locally for the bucket's sake.
    if (st.ok()) RunGuarded("ckpt: retention", [this] { ApplyLocalRetention(); }).IgnoreError();  // logged
  }
}

void CheckpointWriter::Impl::Settle(const std::vector<UploadQueue::Entry>& entries, const Status& why) {
  for (const auto& e : entries) {
    if (!e.state) continue;
    MutexLock lock(e.state->mu);
    e.state->uploaded = true;
    e.state->upload_status = why.ok() ? why : why.WithContext(StepDirName(e.step));
    e.state->cv.NotifyAll();
  }
}

Status CheckpointWriter::Impl::SupersededError() const {
  return CancelledError("not uploaded: superseded by newer steps, of which keep_remote=" +
                        std::to_string(opts.keep_remote) + " are kept in the bucket instead");
}

Status CheckpointWriter::Impl::UploadFile(int64_t step, const RankManifest& m, uint32_t s, const std::string& digest,
                                          std::map<std::string, std::string>* journal) {
  const ShardEntry& shard = m.shards[s];
  std::string recorded;
  {
    MutexLock lock(journal_mu);
    if (auto it = journal->find(shard.file); it != journal->end()) recorded = it->second;
  }
  if (!recorded.empty()) {
    auto head = opts.remote->Head(StepDirName(step) + "/" + shard.file);
    if (head.ok() && head->size == shard.size && head->etag == recorded) return Status::Ok();  // done before a restart
  }
  // Streamed in parts, checked against the manifest before the object
  // appears: local damage is never spread, and a huge shard needs no huge buffer.
  // Close() stops a large shard between parts, not after its last one.
  STRATA_ASSIGN_OR_RETURN(std::string etag, CopyShard(*local, step, m, s, *remote, [this] { return Stopping(); }));
  MutexLock lock(journal_mu);
  (*journal)[shard.file] = etag;
  const nlohmann::json j = {{"manifest", digest}, {"etags", *journal}};
  // The ETag is the store's bytes: a strict dump() throws on one that is not UTF-8. A replaced
  // byte only makes the ETag unequal at a resume, which uploads that shard again.
  return io::WriteFileAtomic(*fs, io::JoinPath(StepDir(step), UploadJournalName(opts.rank)),
                             j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

Status CheckpointWriter::Impl::Upload(int64_t step) {
  std::string digest, text;
  STRATA_ASSIGN_OR_RETURN(RankManifest m, ReadRankCommit(*local, step, opts.rank, &digest, &text));
  const std::string marker = EncodeCommit(digest);
  // Committed in the store already: done if with this part, else never overwritten.
  if (auto committed = OpenCheckpoint(*remote, step); committed.ok()) {
    for (const auto& ref : committed->manifest.ranks) {
      if (ref.rank == opts.rank && ref.sha256 == digest) return Status::Ok();
    }
    return AlreadyExistsError(StepDirName(step) + " is already committed in " + remote->Describe() + " by attempt '" +
                              committed->manifest.attempt + "'; not overwriting it with attempt '" + m.attempt + "'");
  }
  auto remote_marker = remote->ReadSmall(step, RankCommitName(opts.rank), 4096);
  if (!remote_marker.ok() && remote_marker.status().code() != Code::kNotFound) return remote_marker.status();
  const bool part_done = remote_marker.ok() && *remote_marker == marker;  // uploaded before a restart
  if (remote_marker.ok() && !part_done) {
    // Left by another attempt: withdrawn before any of its shards is replaced,
    // so the coordinator never pairs it with this attempt's parts.
    STRATA_RETURN_IF_ERROR(remote->Remove(step, RankCommitName(opts.rank)).WithContext("withdrawing a stale commit"));
  }
  if (!part_done) {
    auto journal = ReadJournal(*local, step, opts.rank, digest);
    // Several shards at once (each a parallel multipart upload when large).
    std::vector<Status> results(m.shards.size());
    ParallelFor(m.shards.size(), std::max<size_t>(1, opts.upload_files_in_flight), [&](size_t i) {
      results[i] = Stopping() ? CancelledError("writer closed during the upload")
                              : UploadFile(step, m, static_cast<uint32_t>(i), digest, &journal);
    });
    for (const auto& st : results) STRATA_RETURN_IF_ERROR(st);
    // The rank manifest, then its commit marker, exactly as committed locally.
    STRATA_RETURN_IF_ERROR(remote->WriteFile(step, RankManifestName(opts.rank), Buffer::FromString(text)));
    STRATA_RETURN_IF_ERROR(remote->WriteFile(step, RankCommitName(opts.rank), Buffer::FromString(marker)));
  }
  if (opts.rank != 0) return Status::Ok();
  if (RetainsRemotely()) {
    // The pass the last upload (or Open) asked for deletes what it pushed past
    // keep_remote before this one commits: the bucket never holds more than
    // keep_remote + 1 committed steps. The bytes above went up meanwhile.
    MutexLock lock(mu);
    cv.Wait(lock, [&] {
      mu.AssertHeld();  // the predicate runs under the lock
      return stopping || (!remote_retention_wanted && !remote_retention_running);
    });
    if (stopping) return CancelledError("writer closed before the remote commit");
  }
  if (opts.world_size == 1) return CommitSingleRank(*remote, m, digest).WithContext("remote commit");
  // Waiting ends early on Close, or when a newer save of this step replaced
  // this rank's part locally (e.g. the retry after a crash while resuming
  // the crashed attempt's upload, whose other parts may never come).
  bool superseded = false;
  auto give_up = [&] {
    auto now = local->ReadSmall(step, RankCommitName(opts.rank), 4096);
    // Replaced or removed; a read that merely failed says nothing (keep waiting).
    superseded = now.ok() ? *now != marker : now.status().code() == Code::kNotFound;
    // Or newer steps make this one pointless (keep_remote), e.g. a rank dropped its part of it.
    MutexLock lock(mu);
    superseded = superseded || queue.Superseded(step);
    return superseded || stopping;
  };
  Status st = CommitGlobal(*remote, step, opts.world_size, m.attempt, *clock, clock->Now() + opts.commit_timeout,
                           opts.poll_interval, give_up);
  return st.WithContext(superseded ? "remote commit, superseded by a newer save" : "remote commit");
}

namespace {

Gauge& TierGauge(const char* name, const char* help, const Labels& labels) {
  return MetricsRegistry::Global().GetGauge(name, help, labels);
}
Counter& TierCounter(const char* name, const char* help, const Labels& labels) {
  return MetricsRegistry::Global().GetCounter(name, help, labels);
}
void Advance(Counter& c, uint64_t now, uint64_t before) {
  if (now > before) c.Inc(now - before);
}
int64_t Millis(Duration d) { return std::chrono::duration_cast<std::chrono::milliseconds>(d).count(); }

}  // namespace

TierMetrics::TierMetrics(const Labels& l)
    : lag_steps(TierGauge("strata_ckpt_upload_lag_steps",
                          "Steps between the newest checkpoint committed locally and the newest in the bucket", l)),
      lag_checkpoints(TierGauge("strata_ckpt_upload_lag_checkpoints",
                                "Checkpoints committed locally that are newer than the bucket's newest", l)),
      lag_ms(TierGauge("strata_ckpt_upload_lag_milliseconds",
                       "Since the oldest of those was committed, as of the writer's last event", l)),
      behind_since(TierGauge("strata_ckpt_upload_behind_since_seconds",
                             "Unix time the bucket fell behind (lag = time() - this; 0: current)", l)),
      pending_steps(TierGauge("strata_ckpt_upload_pending_steps",
                              "Upload backlog: checkpoints queued, uploading, or admitted and persisting", l)),
      pending_bytes(TierGauge("strata_ckpt_upload_pending_bytes", "Shard bytes of the upload backlog", l)),
      waiting_saves(TierGauge("strata_ckpt_saves_waiting", "Saves blocked on the upload backlog now (policy wait)", l)),
      uploaded(TierCounter("strata_ckpt_uploads_total", "Checkpoints uploaded and committed in the bucket", l)),
      superseded(TierCounter("strata_ckpt_uploads_superseded_total",
                             "Checkpoints never uploaded: keep_remote keeps newer ones instead", l)),
      not_tiered(TierCounter("strata_ckpt_saves_not_tiered_total",
                             "Checkpoints kept locally only: the upload backlog was full (policy skip)", l)),
      rejected(TierCounter("strata_ckpt_saves_rejected_total",
                           "Saves refused: the upload backlog was full (policy error)", l)),
      failed(TierCounter("strata_ckpt_upload_failures_total", "Uploads that failed (resumed by the next writer)", l)),
      backlog_wait_ms(TierCounter("strata_ckpt_backlog_wait_milliseconds_total",
                                  "Time saves blocked on the upload backlog (policy wait)", l)) {}

void TierMetrics::Publish(const TierStats& now, WallTime wall_now) {
  lag_steps.Set(now.lag_steps);
  lag_checkpoints.Set(static_cast<int64_t>(now.lag_checkpoints));
  lag_ms.Set(Millis(now.lag));
  behind_since.Set(
      now.lag_checkpoints == 0
          ? 0
          : std::chrono::duration_cast<std::chrono::seconds>((wall_now - now.lag).time_since_epoch()).count());
  pending_steps.Set(static_cast<int64_t>(now.pending_steps));
  pending_bytes.Set(static_cast<int64_t>(now.pending_bytes));
  waiting_saves.Set(static_cast<int64_t>(now.waiting_saves));
  Advance(uploaded, now.uploaded, last.uploaded);
  Advance(superseded, now.superseded, last.superseded);
  Advance(not_tiered, now.not_tiered, last.not_tiered);
  Advance(rejected, now.rejected, last.rejected);
  Advance(failed, now.failed, last.failed);
  Advance(backlog_wait_ms, Millis(now.backlog_wait), Millis(last.backlog_wait));
  last = now;
}

TierStats CheckpointWriter::Impl::TierStatsLocked() {
  TierStats t = queue.Stats(clock->WallNow());
  t.not_tiered = not_tiered;
  t.rejected = rejected;
  t.waiting_saves = admitting.size();
  t.backlog_wait = backlog_wait;
  return t;
}

void CheckpointWriter::Impl::PublishLocked() {
  if (metrics) metrics->Publish(TierStatsLocked(), clock->WallNow());
}

TierStats CheckpointWriter::tier_stats() const {
  MutexLock lock(impl_->mu);
  impl_->PublishLocked();  // the lag keeps growing between events: fresh on every read
  return impl_->TierStatsLocked();
}

bool CheckpointWriter::Impl::Stopping() {
  MutexLock lock(mu);
  return stopping;
}

Status CheckpointWriter::Impl::LocallyValid(int64_t step) {
  if (CommitsLocally() || opts.shared_dir) return OpenCheckpoint(*local, step).status();
  Status st = ReadRankCommit(*local, step, opts.rank).status();
  // An oversized or malformed marker or manifest is damage of its own bytes.
  if (st.code() == Code::kInvalidArgument || st.code() == Code::kOutOfRange) return CorruptionError(st.ToString());
  return st;
}

bool CheckpointWriter::Impl::RemoteHasPart(int64_t step) {
  auto local_marker = local->ReadSmall(step, RankCommitName(opts.rank), 4096);
  auto remote_marker = remote->ReadSmall(step, RankCommitName(opts.rank), 4096);
  return local_marker.ok() && remote_marker.ok() && *local_marker == *remote_marker &&
         (opts.rank != 0 || OpenCheckpoint(*remote, step).ok());
}

std::map<int64_t, bool> CheckpointWriter::Impl::CommittedInStore(const std::set<int64_t>& in_local,
                                                                 const std::set<int64_t>& in_remote) {
  // Only the newest |local| + keep_remote steps can matter (with keep_remote
  // = 0 only local ones: nothing is superseded), asked at once: a restart
  // must not spend a round trip per step before the first upload.
  std::set<int64_t> all = in_remote;
  all.insert(in_local.begin(), in_local.end());
  std::vector<int64_t> asked;
  size_t seen = 0;
  for (auto it = all.rbegin(); it != all.rend(); ++it, ++seen) {
    if (opts.keep_remote > 0 && seen >= in_local.size() + static_cast<size_t>(opts.keep_remote)) break;
    if (in_remote.count(*it) && (opts.keep_remote > 0 || in_local.count(*it))) asked.push_back(*it);
  }
  std::vector<char> committed(asked.size(), 0);
  ParallelFor(asked.size(), std::max<size_t>(1, opts.upload_files_in_flight) * 2, [&](size_t i) {
    committed[i] = in_local.count(asked[i]) ? RemoteHasPart(asked[i]) : OpenCheckpoint(*remote, asked[i]).ok();
  });
  std::map<int64_t, bool> out;
  for (size_t i = 0; i < asked.size(); ++i) out[asked[i]] = committed[i] != 0;
  return out;
}

// Walks the steps of both tiers newest first, as the uploader would have
// sent them: a local one not in the store is queued unless keep_remote newer
// ones are already there or queued (superseded, as is everything older; in
// the backlog while newer than the bucket's newest) or the backlog is full
// (left local only).
void CheckpointWriter::Impl::EnqueueRecoveredUploads() {
  auto local_steps = local->ListSteps();
  if (!local_steps.ok()) return;
  std::set<int64_t> in_remote;
  if (auto listed = remote->ListSteps(); listed.ok()) in_remote.insert(listed->begin(), listed->end());
  // A failed listing asks nothing more: every local step is tried (Upload checks the store).
  const std::set<int64_t> in_local(local_steps->begin(), local_steps->end());
  const std::map<int64_t, bool> in_store = CommittedInStore(in_local, in_remote);
  auto committed_there = [&](int64_t s) {
    auto it = in_store.find(s);
    return it != in_store.end() && it->second;
  };
  std::set<int64_t> all = in_remote;
  all.insert(in_local.begin(), in_local.end());
  size_t newer = 0;    // steps newer than this one in the store or queued
  MutexLock lock(mu);  // (before the upload thread starts; taken for the analysis)
  for (auto it = all.rbegin(); it != all.rend(); ++it) {
    const int64_t step = *it;
    const bool superseded = opts.keep_remote > 0 && newer >= static_cast<size_t>(opts.keep_remote);
    if (!in_local.count(step) || committed_there(step)) {
      if (!superseded && committed_there(step)) {
        queue.NoteRemote(step);
        ++newer;
        // Uploaded from this very part, checked while streaming: as good as
        // what this writer uploads itself (retention need not download it).
        if (in_local.count(step) && opts.rank == 0) verified_remote.insert(step);
      }
      if (!in_local.count(step)) continue;
    }
    // One that cannot be read right now is tried (Upload reports why), not dropped.
    const Status valid = LocallyValid(step);
    if (ProvenTorn(valid)) continue;
    auto m = ReadRankCommit(*local, step, opts.rank);
    if (valid.ok() && m.ok()) queue.NoteLocalCommit(step, WallTime{} + std::chrono::milliseconds(m->wall_time_ms));
    if (committed_there(step)) continue;
    uint64_t bytes = 0;
    for (const auto& shard : m.ok() ? m->shards : std::vector<ShardEntry>{}) bytes += shard.size;
    if (superseded) {
      queue.NoteSuperseded(step, bytes);  // still behind the bucket's newest: in the backlog
      continue;
    }
    if (!queue.HasRoomFor(bytes)) {
      STRATA_LOG_WARN("ckpt: not uploading {}: the upload backlog is full; it stays in {} only", StepDirName(step),
                      opts.dir);
      ++not_tiered;
      continue;
    }
    STRATA_LOG_INFO("ckpt: resuming the upload of {} to {}", StepDirName(step), remote->Describe());
    queue.Enqueue({step, bytes, nullptr});
    ++newer;
  }
  // A predecessor killed before its pass may have left more than keep_remote.
  remote_retention_wanted = RetainsRemotely() && in_remote.size() > static_cast<size_t>(opts.keep_remote);
  PublishLocked();
}

std::set<int64_t> CheckpointWriter::Impl::ProtectedSteps() {
  MutexLock lock(mu);
  std::set<int64_t> keep = queue.Pending();
  for (const auto& j : jobs) keep.insert(j.step);
  if (last_step) keep.insert(*last_step);
  return keep;
}

bool CheckpointWriter::Impl::KnownGood(bool remote_tier, int64_t step, bool can_verify) {
  {
    MutexLock lock(mu);
    if (VerifiedLocked(remote_tier).count(step)) return true;
  }
  if (!can_verify || !Verify(remote_tier ? *remote : *local, step, VerifyLevel::kBytes).ok()) return false;
  MutexLock lock(mu);
  VerifiedLocked(remote_tier).insert(step);
  return true;
}

void CheckpointWriter::Impl::Forget(bool remote_tier, const Result<std::vector<int64_t>>& deleted) {
  if (!deleted.ok() || deleted->empty()) return;
  STRATA_LOG_INFO("ckpt: retention deleted {} step(s) from {} to {} in {}", deleted->size(),
                  StepDirName(deleted->front()), StepDirName(deleted->back()),
                  remote_tier ? remote->Describe() : opts.dir);
  MutexLock lock(mu);
  for (int64_t s : *deleted) {
    VerifiedLocked(remote_tier).erase(s);
  }
}

void CheckpointWriter::Impl::ApplyLocalRetention() {
  if (opts.keep_local <= 0 || (opts.rank != 0 && opts.shared_dir)) return;
  MutexLock lock(local_retention_mu);
  // Verify needs a global commit: a rank whose directory holds only its own
  // part counts only the steps it wrote itself as verified.
  const bool global = CommitsLocally() || opts.shared_dir;
  Forget(false, RetainNewest(
                    *local, opts.keep_local, ProtectedSteps(), [this](int64_t s) { return LocallyValid(s); },
                    [this, global](int64_t s) { return KnownGood(false, s, global); }));
}

void CheckpointWriter::Impl::ApplyRemoteRetention() {
  MutexLock lock(remote_retention_mu);
  std::set<int64_t> protect;
  {
    MutexLock l(mu);
    protect = queue.Pending();
  }
  // Only the newest keep_remote valid steps are read (older ones go unread),
  // each whole: a marker alone could be an out-of-date replica's answer.
  auto valid = [this](int64_t s) { return OpenCheckpoint(*remote, s).status(); };
  Forget(true, RetainNewest(*remote, opts.keep_remote, protect, valid,
                            [this](int64_t s) { return KnownGood(true, s, true); }));
}

void CheckpointWriter::Impl::RetentionLoop() {
  for (;;) {
    {
      MutexLock lock(mu);
      cv.Wait(lock, [&] {
        mu.AssertHeld();  // the predicate runs under the lock
        return stopping || remote_retention_wanted;
      });
      if (!remote_retention_wanted) return;  // stopping; a pass asked for runs first
      remote_retention_wanted = false;
      remote_retention_running = true;
    }
    RunGuarded("ckpt: remote retention", [this] { ApplyRemoteRetention(); }).IgnoreError();  // logged
    {
      MutexLock lock(mu);
      remote_retention_running = false;
    }
    cv.NotifyAll();  // WaitForUploads
  }
}

}  // namespace strata::ckpt

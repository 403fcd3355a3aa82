// CheckpointWriter's tiering: background upload of committed checkpoints to
// the remote store (remote markers last, resumable through a per-rank upload
// journal), re-upload after a restart, and retention on both tiers.
#include <algorithm>
#include <nlohmann/json.hpp>

#include "base/hash.h"
#include "base/log.h"
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
    std::pair<int64_t, std::shared_ptr<SaveHandle::State>> item;
    {
      MutexLock lock(mu);
      cv.Wait(lock, [&] {
        mu.AssertHeld();  // the predicate runs under the lock
        return stopping || !uploads.empty();
      });
      if (stopping) return;  // pending uploads resume at the next Open
      item = uploads.front();
      uploads.pop_front();
      uploading = item.first;
    }
    const TimePoint start = clock->Now();
    // An exception fails this upload only (Internal), never the training process.
    Status st = RunGuarded("ckpt: uploading " + StepDirName(item.first), [&] { return Upload(item.first); });
    if (!st.ok()) STRATA_LOG_WARN("ckpt: uploading {} failed: {}", StepDirName(item.first), st.ToString());
    if (item.second) {
      MutexLock lock(item.second->mu);
      item.second->uploaded = true;
      item.second->upload_status = st;
      item.second->stats.upload = clock->Now() - start;
      item.second->cv.NotifyAll();
    }
    {
      MutexLock lock(mu);
      uploading.reset();
      if (!st.ok() && first_upload_error.ok()) first_upload_error = st;
      if (st.ok() && opts.rank == 0) verified_remote.insert(item.first);  // every shard checked while streaming
    }
    cv.NotifyAll();
    if (st.ok()) RunGuarded("ckpt: retention", [this] { ApplyRetention(); }).IgnoreError();  // logged
  }
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
  return io::WriteFileAtomic(*fs, io::JoinPath(StepDir(step), UploadJournalName(opts.rank)), j.dump());
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
  // Waiting ends early on Close, or when a newer save of this step replaced
  // this rank's part locally (e.g. the retry after a crash while resuming
  // the crashed attempt's upload, whose other parts may never come).
  bool superseded = false;
  auto give_up = [&] {
    auto now = local->ReadSmall(step, RankCommitName(opts.rank), 4096);
    // Replaced or removed; a read that merely failed says nothing (keep waiting).
    superseded = now.ok() ? *now != marker : now.status().code() == Code::kNotFound;
    return superseded || Stopping();
  };
  Status st = CommitGlobal(*remote, step, opts.world_size, m.attempt, *clock, clock->Now() + opts.commit_timeout,
                           opts.poll_interval, give_up);
  return st.WithContext(superseded ? "remote commit, superseded by a newer save of the step" : "remote commit");
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

void CheckpointWriter::Impl::EnqueueRecoveredUploads() {
  auto steps = local->ListSteps();
  if (!steps.ok()) return;
  auto newest_remote = NewestCommitted(*remote);
  const int64_t floor = newest_remote.ok() && newest_remote->has_value() ? **newest_remote : -1;
  for (int64_t step : *steps) {
    // One that cannot be read right now is tried (Upload reports why), not dropped.
    if (step <= floor || ProvenTorn(LocallyValid(step))) continue;
    // Done when the store has this very part (not one of another attempt) and, on rank 0, the commit.
    auto local_marker = local->ReadSmall(step, RankCommitName(opts.rank), 4096);
    auto remote_marker = remote->ReadSmall(step, RankCommitName(opts.rank), 4096);
    const bool remote_done = local_marker.ok() && remote_marker.ok() && *local_marker == *remote_marker &&
                             (opts.rank != 0 || OpenCheckpoint(*remote, step).ok());
    if (remote_done) continue;
    STRATA_LOG_INFO("ckpt: resuming the upload of {} to {}", StepDirName(step), remote->Describe());
    MutexLock lock(mu);  // (before the upload thread starts; taken for the analysis)
    uploads.emplace_back(step, nullptr);
  }
}

std::set<int64_t> CheckpointWriter::Impl::ProtectedSteps() {
  MutexLock lock(mu);
  std::set<int64_t> keep;
  for (const auto& j : jobs) keep.insert(j.step);
  for (const auto& u : uploads) keep.insert(u.first);
  if (uploading) keep.insert(*uploading);
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

void CheckpointWriter::Impl::ApplyRetention() {
  MutexLock lock(retention_mu);
  auto forget = [this](bool remote_tier, const Result<std::vector<int64_t>>& deleted) {
    MutexLock l(mu);
    if (deleted.ok()) {
      for (int64_t s : *deleted) VerifiedLocked(remote_tier).erase(s);
    }
  };
  if (opts.keep_local > 0 && (opts.rank == 0 || !opts.shared_dir)) {
    // Verify needs a global commit: a rank whose directory holds only its own
    // part counts only the steps it wrote itself as verified.
    const bool global = CommitsLocally() || opts.shared_dir;
    auto deleted = RetainNewest(
        *local, opts.keep_local, ProtectedSteps(), [this](int64_t s) { return LocallyValid(s); },
        [this, global](int64_t s) { return KnownGood(false, s, global); });
    forget(false, deleted);
  }
  if (remote && opts.keep_remote > 0 && opts.rank == 0) {
    std::set<int64_t> protect;
    {
      MutexLock l(mu);
      if (uploading) protect.insert(*uploading);
      for (const auto& u : uploads) protect.insert(u.first);
    }
    auto deleted = RetainNewest(
        *remote, opts.keep_remote, protect, [this](int64_t s) { return OpenCheckpoint(*remote, s).status(); },
        [this](int64_t s) { return KnownGood(true, s, true); });
    forget(true, deleted);
  }
}

}  // namespace strata::ckpt

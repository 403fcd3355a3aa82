#include "ckpt/writer.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <random>
#include <unordered_set>

#include "base/hash.h"
#include "base/log.h"
#include "base/metrics.h"
#include "base/utf8.h"
#include "ckpt/commit.h"
#include "ckpt/shard_hasher.h"
#include "ckpt/writer_impl.h"
#include "io/durable.h"
#include "object/store_url.h"

namespace strata::ckpt {
namespace {

constexpr uint64_t kWriteChunk = 8ull << 20;
constexpr uint64_t kMinShard = 4ull << 20;

Histogram& StallHistogram() {
  static Histogram& h = MetricsRegistry::Global().GetHistogram("strata_ckpt_stall_seconds",
                                                               "Time Save() blocked the caller (validation + staging)");
  return h;
}

// Groups tensors into shards of about `target` bytes, in order.
std::vector<std::vector<size_t>> PlanShards(const std::vector<TensorView>& tensors, uint64_t target) {
  std::vector<std::vector<size_t>> plan;
  uint64_t current = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (plan.empty() || (current > 0 && current + tensors[i].size > target)) {
      plan.emplace_back();
      current = 0;
    }
    plan.back().push_back(i);
    current += tensors[i].size;
  }
  return plan;
}

// Where each shard starts in the staging region: 4 KiB aligned (O_DIRECT-able).
uint64_t AlignUp(uint64_t n) { return (n + 4095) & ~uint64_t{4095}; }

// A single rank needs no agreement on its attempt id, only uniqueness.
std::string RandomAttempt() {
  std::random_device rd;
  char buf[40];
  std::snprintf(buf, sizeof(buf), "%08x%08x%08x%08x", rd(), rd(), rd(), rd());
  return buf;
}

}  // namespace

// ---- SaveHandle ----

int64_t SaveHandle::step() const { return state_ ? state_->step : -1; }

Status SaveHandle::Wait() const {
  if (!state_) return InvalidArgumentError("empty SaveHandle");
  MutexLock lock(state_->mu);
  state_->cv.Wait(lock, [&] {
    state_->mu.AssertHeld();  // the predicate runs under the lock
    return state_->done;
  });
  return state_->status;
}

bool SaveHandle::Done() const {
  if (!state_) return true;
  MutexLock lock(state_->mu);
  return state_->done;
}

Status SaveHandle::WaitUploaded() const {
  STRATA_RETURN_IF_ERROR(Wait());
  MutexLock lock(state_->mu);
  if (!state_->want_upload) return Status::Ok();
  state_->cv.Wait(lock, [&] {
    state_->mu.AssertHeld();  // the predicate runs under the lock
    return state_->uploaded;
  });
  return state_->upload_status;
}

SaveStats SaveHandle::stats() const {
  if (!state_) return {};
  MutexLock lock(state_->mu);
  return state_->stats;
}

// ---- CheckpointWriter ----

std::string CheckpointWriter::Impl::StepDir(int64_t step) const { return io::JoinPath(opts.dir, StepDirName(step)); }

CheckpointWriter::CheckpointWriter(WriterOptions options)
    : opts_(std::move(options)), impl_(std::make_unique<Impl>(opts_)) {}

Result<std::unique_ptr<CheckpointWriter>> CheckpointWriter::Open(WriterOptions options) {
  if (options.world_size < 1 || options.rank < 0 || options.rank >= options.world_size) {
    return InvalidArgumentError("rank " + std::to_string(options.rank) + " is outside world size " +
                                std::to_string(options.world_size));
  }
  if (options.shard_bytes == 0 || options.max_queued == 0) {
    return InvalidArgumentError("shard_bytes and max_queued must be positive");
  }
  if (!options.remote && !options.remote_url.empty()) {
    STRATA_ASSIGN_OR_RETURN(options.remote, object::OpenStore(options.remote_url));
  }
  if (options.world_size > 1 && !options.shared_dir && !options.remote) {
    return InvalidArgumentError("world size > 1 with per-node directories needs a remote store to commit through");
  }
  if (options.attempt.empty()) {
    if (options.world_size > 1) {
      return InvalidArgumentError(
          "world size > 1 needs an attempt id: the same on every rank, a new one when the job restarts");
    }
    options.attempt = RandomAttempt();
  }
  if (options.attempt.size() > kMaxAttemptBytes) {
    return InvalidArgumentError("attempt id is longer than " + std::to_string(kMaxAttemptBytes) + " bytes");
  }
  if (!IsValidUtf8(options.attempt)) {  // it is stored in JSON manifests and compared after a round trip
    return InvalidArgumentError("attempt id is not valid UTF-8");
  }
  std::unique_ptr<CheckpointWriter> w(new CheckpointWriter(std::move(options)));
  Impl& impl = *w->impl_;
  impl.fs = impl.opts.fs ? impl.opts.fs : &io::DefaultFileSystem();
  impl.clock = impl.opts.clock ? impl.opts.clock : &RealClock();
  STRATA_ASSIGN_OR_RETURN(impl.local, OpenLocalLocation(*impl.fs, impl.opts.dir));
  if (impl.opts.remote) {
    impl.remote = StoreLocation(impl.opts.remote, impl.opts.upload_part_size, impl.opts.upload_concurrency);
  }
  impl.pool.Prefault(impl.opts.staging_bytes);
  if (impl.remote) {
    MutexLock lock(impl.mu);  // (before any thread starts; taken for the analysis)
    impl.metrics =
        std::make_unique<TierMetrics>(Labels{{"dir", impl.opts.dir}, {"rank", std::to_string(impl.opts.rank)}});
  }
  if (impl.remote && impl.opts.upload_on_open) impl.EnqueueRecoveredUploads();
  impl.persist_thread = std::thread([&impl] { impl.PersistLoop(); });
  if (impl.remote) impl.upload_thread = std::thread([&impl] { impl.UploadLoop(); });
  if (impl.RetainsRemotely()) impl.retention_thread = std::thread([&impl] { impl.RetentionLoop(); });
  return w;
}

CheckpointWriter::~CheckpointWriter() {
  {
    MutexLock lock(impl_->mu);
    impl_->cv.Wait(lock, [&] {
      impl_->mu.AssertHeld();  // the predicate runs under the lock
      return impl_->jobs.empty() && impl_->reserved == 0;
    });
    impl_->stopping = true;
  }
  impl_->cv.NotifyAll();
  impl_->persist_thread.join();
  if (impl_->upload_thread.joinable()) impl_->upload_thread.join();
  if (impl_->retention_thread.joinable()) impl_->retention_thread.join();
  // Uploads still queued resume at the next Open; their handles learn it now
  // instead of waiting forever.
  std::vector<UploadQueue::Entry> queued;
  {
    MutexLock lock(impl_->mu);
    queued = impl_->queue.TakeQueued();
  }
  impl_->Settle(queued, CancelledError("writer closed before uploading it; the next writer opened on " + opts_.dir +
                                       " resumes it"));
}

Result<SaveHandle> CheckpointWriter::Save(int64_t step, const std::vector<TensorView>& tensors,
                                          std::string metadata_json) {
  Impl& impl = *impl_;
  const TimePoint start = impl.clock->Now();
  if (step < 0) return InvalidArgumentError("step must be >= 0");
  std::unordered_set<std::string_view> names;
  uint64_t total = 0;
  for (const auto& t : tensors) {
    STRATA_RETURN_IF_ERROR(ValidateTensor(t));
    if (!names.insert(t.name).second) return InvalidArgumentError("duplicate tensor name '" + t.name + "'");
    total += t.size;
  }
  {
    MutexLock lock(impl.mu);
    if (impl.last_step && step <= *impl.last_step) {
      return InvalidArgumentError("step " + std::to_string(step) + " is not newer than the last saved step " +
                                  std::to_string(*impl.last_step));
    }
  }
  auto committed = impl.fs->Exists(io::JoinPath(impl.StepDir(step), kCommitFile));
  if (committed.ok() && *committed) {
    return AlreadyExistsError(StepDirName(step) + " is already committed in " + opts_.dir);
  }
  SaveJob job;
  job.step = step;
  job.metadata = std::move(metadata_json);
  job.wall_time_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(impl.clock->WallNow().time_since_epoch()).count();
  const uint64_t target = std::min<uint64_t>(
      opts_.shard_bytes, std::max<uint64_t>(total / std::max<size_t>(1, opts_.io_threads), kMinShard));
  // Plan every shard (header + offsets) first, so one region holds them all.
  std::vector<std::string> headers;
  uint64_t region_bytes = 0;
  auto plan = PlanShards(tensors, target);
  for (size_t s = 0; s < plan.size(); ++s) {
    std::vector<SafetensorsTensor> header_tensors;
    uint64_t data_bytes = 0;
    for (size_t i : plan[s]) {
      const auto& t = tensors[i];
      header_tensors.push_back({t.name, t.dtype, t.shape, data_bytes, data_bytes + t.size});
      data_bytes += t.size;
    }
    headers.push_back(EncodeSafetensorsHeader(header_tensors, {{"format", "pt"}, {"step", std::to_string(step)}}));
    StagedShard shard;
    shard.file = ShardFileName(opts_.rank, static_cast<int>(s));
    shard.size = headers.back().size() + data_bytes;
    for (size_t k = 0; k < plan[s].size(); ++k) {
      const auto& t = tensors[plan[s][k]];
      const uint64_t offset = headers.back().size() + header_tensors[k].begin;
      shard.tensors.push_back({t.name, t.dtype, t.shape, static_cast<uint32_t>(s), offset, t.size, 0});
    }
    region_bytes += AlignUp(shard.size);
    job.shards.push_back(std::move(shard));
  }
  const size_t limit = opts_.policy == InflightPolicy::kWait ? 1 : opts_.max_queued;
  uint64_t bytes = 0;
  for (const auto& shard : job.shards) bytes += shard.size;
  job.tiered = impl.remote != nullptr;
  const TimePoint wait_start = impl.clock->Now();
  std::optional<int64_t> previous_step;
  Duration backlog_waited{0};
  STRATA_RETURN_IF_ERROR(impl.Admit(job, bytes, limit, &previous_step, &backlog_waited));
  Duration waited = impl.clock->Now() - wait_start;
  // Staging failed: nothing of this step exists, so it may be saved again.
  auto release = [&impl, step, previous_step] {
    {
      MutexLock lock(impl.mu);
      --impl.reserved;
      impl.queue.Unreserve(step);
      if (impl.last_step == step) impl.last_step = previous_step;
      impl.PublishLocked();
    }
    impl.cv.NotifyAll();
  };

  impl.pool.SetLimit((limit + 1) * (region_bytes + (2u << 20)));  // regions round up to 2 MiB
  const TimePoint take_start = impl.clock->Now();
  bool cold = false;
  auto region = impl.pool.Take(region_bytes, &cold);
  if (!region.ok()) {
    release();
    return region.status().WithContext("staging " + StepDirName(step));
  }
  waited += cold ? Duration{0} : impl.clock->Now() - take_start;  // waiting for a region being prefaulted
  job.region = std::move(*region);
  const TimePoint copy_start = impl.clock->Now();
  std::vector<CopyTask> copies;
  uint64_t at = 0;
  for (size_t s = 0; s < job.shards.size(); ++s) {
    StagedShard& shard = job.shards[s];
    shard.data = job.region->data() + at;
    at += AlignUp(shard.size);
    std::memcpy(shard.data, headers[s].data(), headers[s].size());
    for (size_t k = 0; k < plan[s].size(); ++k) {
      copies.push_back({tensors[plan[s][k]].data, shard.data + shard.tensors[k].offset, shard.tensors[k].size});
    }
  }
  StageCopy(copies, opts_.stage_threads);

  auto state = std::make_shared<SaveHandle::State>();
  state->step = step;
  const TimePoint end = impl.clock->Now();
  {
    MutexLock lock(state->mu);  // not shared yet; taken for the analysis
    state->want_upload = impl.remote != nullptr;
    state->stats.stall = end - start;
    state->stats.wait = waited;
    state->stats.copy = end - copy_start;
    state->stats.cold_staging = cold;
    state->stats.backlog_wait = backlog_waited;
    state->stats.tiered = job.tiered;
    if (state->want_upload && !job.tiered) {  // kSkip: WaitUploaded says so once persisted
      state->uploaded = true;
      state->upload_status = CancelledError(StepDirName(step) +
                                            " is kept locally only: the upload backlog was full "
                                            "(backlog policy: skip)");
    }
  }
  job.state = state;
  StallHistogram().Observe(Seconds(end - start));
  {
    MutexLock lock(impl.mu);
    --impl.reserved;
    impl.jobs.push_back(std::move(job));
  }
  impl.cv.NotifyAll();
  return SaveHandle(state);
}

Status CheckpointWriter::Impl::Admit(SaveJob& job, uint64_t bytes, size_t limit, std::optional<int64_t>* previous,
                                     Duration* backlog_waited) {
  const int64_t step = job.step;
  MutexLock lock(mu);
  if (last_step && step <= *last_step) {
    return InvalidArgumentError("step " + std::to_string(step) + " is not newer than the last saved step " +
                                std::to_string(*last_step));
  }
  *previous = last_step;
  last_step = step;  // reserved now, so concurrent saves keep their order
  const bool wait_backlog = job.tiered && opts.backlog_policy == BacklogPolicy::kWait;
  const bool full = wait_backlog && !queue.Fits(step, bytes);
  const TimePoint start = clock->Now();
  if (full) {
    admitting[step] = bytes;  // the uploader lets it go first once it fits
    PublishLocked();
  }
  cv.Wait(lock, [&] {
    mu.AssertHeld();  // the predicate runs under the lock
    return jobs.size() + reserved < limit && (!wait_backlog || queue.Fits(step, bytes));
  });
  admitting.erase(step);
  if (full) {
    *backlog_waited = clock->Now() - start;
    backlog_wait += *backlog_waited;
  }
  if (job.tiered && !queue.Fits(step, bytes)) {
    if (opts.backlog_policy == BacklogPolicy::kError) {
      last_step = *previous;
      ++rejected;
      PublishLocked();
      const TierStats t = queue.Stats(clock->WallNow());
      return Status(Code::kThrottled, "the upload backlog is full (" + std::to_string(t.pending_steps) + " steps, " +
                                          std::to_string(t.pending_bytes) +
                                          " bytes pending): the bucket is slower "
                                          "than the saves; " +
                                          StepDirName(step) + " was not saved (backlog policy: error)");
    }
    job.tiered = false;  // kSkip: kept locally only
    ++not_tiered;
  }
  if (job.tiered) queue.Reserve(step, bytes);
  ++reserved;
  PublishLocked();
  return Status::Ok();
}

Status CheckpointWriter::WaitStagingReady() { return impl_->pool.WaitReady(); }

Status CheckpointWriter::Flush() {
  MutexLock lock(impl_->mu);
  impl_->cv.Wait(lock, [&] {
    impl_->mu.AssertHeld();  // the predicate runs under the lock
    return impl_->jobs.empty() && impl_->reserved == 0;
  });
  Status st = impl_->first_error;
  impl_->first_error = Status::Ok();
  return st;
}

Status CheckpointWriter::WaitForUploads() {
  STRATA_RETURN_IF_ERROR(Flush());
  MutexLock lock(impl_->mu);
  impl_->cv.Wait(lock, [&] {
    impl_->mu.AssertHeld();  // the predicate runs under the lock
    return impl_->queue.Idle() && !impl_->remote_retention_wanted && !impl_->remote_retention_running;
  });
  Status st = impl_->first_upload_error;
  impl_->first_upload_error = Status::Ok();
  return st;
}

void CheckpointWriter::Impl::PersistLoop() {
  for (;;) {
    SaveJob* job = nullptr;
    {
      MutexLock lock(mu);
      cv.Wait(lock, [&] {
        mu.AssertHeld();  // the predicate runs under the lock
        return stopping || !jobs.empty();
      });
      if (jobs.empty()) return;
      job = &jobs.front();  // stays in the deque (counted as in flight) until persisted
    }
    const TimePoint start = clock->Now();
    // An exception fails this save only (Internal), never the training process.
    Status st = RunGuarded("ckpt: persisting " + StepDirName(job->step), [&] { return Persist(*job); });
    if (!st.ok()) STRATA_LOG_WARN("ckpt: saving {} failed: {}", StepDirName(job->step), st.ToString());
    uint64_t bytes = 0;
    for (auto& shard : job->shards) bytes += shard.size;
    pool.Give(std::move(job->region));
    auto state = job->state;
    {
      MutexLock lock(state->mu);
      state->done = true;
      state->status = st;
      state->stats.persist = clock->Now() - start;
      state->stats.bytes = bytes;
      state->stats.shards = job->shards.size();
      state->committed_at = clock->Now();
      if (!st.ok()) {
        state->uploaded = true;
        state->upload_status = st;
      }
    }
    state->cv.NotifyAll();
    std::vector<UploadQueue::Entry> superseded;
    {
      MutexLock lock(mu);
      if (!st.ok() && first_error.ok()) first_error = st;
      if (st.ok()) {
        verified_local.insert(job->step);  // hashed while writing
        queue.NoteLocalCommit(job->step, clock->WallNow());
      }
      if (st.ok() && job->tiered) {
        superseded = queue.Enqueue({job->step, bytes, state});
      } else {
        queue.Unreserve(job->step);
      }
      PublishLocked();
      jobs.pop_front();
    }
    Settle(superseded, SupersededError());
    cv.NotifyAll();
    if (st.ok()) RunGuarded("ckpt: retention", [this] { ApplyLocalRetention(); }).IgnoreError();  // logged
  }
}

Status CheckpointWriter::Impl::WriteShard(int64_t step, StagedShard& shard) {
  const std::string path = io::JoinPath(StepDir(step), shard.file), tmp = path + ".tmp";
  std::vector<const TensorEntry*> order;
  for (const auto& t : shard.tensors) order.push_back(&t);
  ShardHasher hasher(order);  // tensors are already in offset order
  Status st = [&]() -> Status {
    STRATA_ASSIGN_OR_RETURN(auto file,
                            opts.bypass_page_cache ? fs->OpenForStreamingWrite(tmp) : fs->OpenForWrite(tmp, true));
    for (uint64_t off = 0; off < shard.size; off += kWriteChunk) {
      const uint64_t n = std::min(kWriteChunk, shard.size - off);
      STRATA_RETURN_IF_ERROR(file->Append(shard.data + off, n));
      hasher.Update(shard.data + off, n);  // hashing overlaps the kernel's writeback
    }
    if (opts.fsync) STRATA_RETURN_IF_ERROR(file->Sync());
    STRATA_RETURN_IF_ERROR(file->Close());
    return fs->Rename(tmp, path);
  }();
  if (!st.ok()) {
    fs->Remove(tmp).IgnoreError();
    return st.WithContext("writing shard " + shard.file + " of " + StepDirName(step));
  }
  const auto& digests = hasher.Digests();
  for (size_t i = 0; i < shard.tensors.size() && i < digests.size(); ++i) shard.tensors[i].xxh3 = digests[i];
  shard.sha256 = hasher.Sha256Hex();
  shard.xxh3 = hasher.Xxh3();
  return Status::Ok();
}

Status CheckpointWriter::Impl::Persist(SaveJob& job) {
  const int64_t step = job.step;
  const std::string dir = StepDir(step);
  STRATA_RETURN_IF_ERROR(fs->CreateDirs(dir));
  if (opts.fsync) STRATA_RETURN_IF_ERROR(fs->SyncDir(opts.dir));
  // An earlier attempt at this step (before a crash or restart) may have left
  // this rank's part. The same attempt id twice would make its parts
  // indistinguishable: refuse, touching nothing.
  auto stale = ReadRankCommit(*local, step, opts.rank);
  if (stale.ok() && stale->attempt == opts.attempt) {
    return PreconditionFailedError(StepDirName(step) + " in " + opts.dir + " already holds rank " +
                                   std::to_string(opts.rank) + "'s part of attempt '" + opts.attempt +
                                   "': saving a step again needs a new attempt id");
  }
  Status st = WritePart(job);
  if (!st.ok()) RemovePart(job);
  return st;
}

Status CheckpointWriter::Impl::WritePart(SaveJob& job) {
  const int64_t step = job.step;
  const std::string dir = StepDir(step);
  // Withdraw a stale commit (and its upload journal) before any shard is
  // replaced, so the coordinator never pairs it with new shards.
  bool withdrew = false;
  for (const std::string& name : {RankCommitName(opts.rank), UploadJournalName(opts.rank)}) {
    STRATA_ASSIGN_OR_RETURN(bool exists, fs->Exists(io::JoinPath(dir, name)));
    if (!exists) continue;
    STRATA_RETURN_IF_ERROR(fs->Remove(io::JoinPath(dir, name)));
    withdrew = true;
  }
  if (withdrew) STRATA_RETURN_IF_ERROR(fs->SyncDir(dir));
  std::vector<Status> results(job.shards.size());
  {
    TaskGroup group(io_pool);
    for (size_t i = 0; i < job.shards.size(); ++i) {
      group.Run([this, &results, &job, i, step] { results[i] = WriteShard(step, job.shards[i]); });
    }
    group.Wait();
  }
  for (const auto& st : results) STRATA_RETURN_IF_ERROR(st);
  if (opts.fsync) STRATA_RETURN_IF_ERROR(fs->SyncDir(dir));  // the renamed shards are durable

  RankManifest m;
  m.step = step;
  m.rank = opts.rank;
  m.world_size = opts.world_size;
  m.attempt = opts.attempt;
  m.wall_time_ms = job.wall_time_ms;
  m.metadata = job.metadata;
  for (const auto& shard : job.shards) {
    m.shards.push_back({shard.file, shard.size, shard.sha256, shard.xxh3});
    m.tensors.insert(m.tensors.end(), shard.tensors.begin(), shard.tensors.end());
  }
  STRATA_RETURN_IF_ERROR(WriteRankCommit(*local, m).WithContext("committing rank " + std::to_string(opts.rank)));
  if (CommitsLocally()) {
    STRATA_RETURN_IF_ERROR(CommitGlobal(*local, step, opts.world_size, opts.attempt, *clock,
                                        clock->Now() + opts.commit_timeout, opts.poll_interval));
    if (opts.fsync) STRATA_RETURN_IF_ERROR(fs->SyncDir(opts.dir));
  }
  return Status::Ok();
}

void CheckpointWriter::Impl::RemovePart(const SaveJob& job) {
  const std::string dir = StepDir(job.step);
  // Markers first, so nothing half-removed ever counts as committed.
  std::vector<std::string> names;
  if (CommitsLocally()) names = {std::string(kCommitFile), std::string(kManifestFile)};
  for (std::string name : {RankCommitName(opts.rank), RankManifestName(opts.rank), UploadJournalName(opts.rank)}) {
    names.push_back(std::move(name));
  }
  for (const auto& shard : job.shards) {
    names.push_back(shard.file);
    names.push_back(shard.file + ".tmp");
  }
  for (const auto& name : names) {
    Status st = fs->Remove(io::JoinPath(dir, name));
    if (!st.ok() && st.code() != Code::kNotFound) {
      STRATA_LOG_WARN("ckpt: cleaning up the failed {}: {}", StepDirName(job.step), st.ToString());
    }
  }
  fs->SyncDir(dir).IgnoreError();
  if (fs->RemoveDir(dir).ok()) fs->SyncDir(opts.dir).IgnoreError();  // only when no other rank's files remain
}

}  // namespace strata::ckpt

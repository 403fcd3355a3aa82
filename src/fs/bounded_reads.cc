#include "fs/bounded_reads.h"

#include <algorithm>
#include <chrono>

namespace strata::fs {

namespace {
std::string Ms(Duration d) {
  return std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(d).count()) + " ms";
}

// One read run on the pool, which its caller waits for with its own deadline
// (real time: it bounds how long a caller is kept waiting).
struct PendingRead {
  Mutex mu;
  CondVar cv;
  bool done GUARDED_BY(mu) = false;
  Result<Buffer> result GUARDED_BY(mu) = InternalError("not read");

  void Finish(Result<Buffer> got) {
    MutexLock lock(mu);
    done = true;
    result = std::move(got);
    cv.NotifyAll();
  }
  // nullopt when `timeout` passed first.
  std::optional<Result<Buffer>> WaitFor(Duration timeout) {
    MutexLock lock(mu);
    if (!cv.WaitFor(lock, timeout, [&]() REQUIRES(mu) { return done; })) return std::nullopt;
    return result;
  }
};
}  // namespace

BoundedReads::BoundedReads(const FsOptions& options, Clock& clock, Executor& pool, uint64_t block_size,
                           LiveCounters& counters)
    : options_(options),
      clock_(clock),
      pool_(pool),
      block_size_(std::max<uint64_t>(block_size, 1)),
      counters_(counters) {}

Result<Buffer> BoundedReads::Read(const std::shared_ptr<Reader>& reader, const std::string& version, uint64_t offset,
                                  size_t size) {
  const uint64_t first = offset / block_size_, last = (offset + std::max<size_t>(size, 1) - 1) / block_size_;
  // Bytes in the cache are served whatever the backoff says: a read given up
  // on may have filled them since, once the backend answered again.
  const bool cached = reader->view->Cached(offset, size);
  if (!cached) {
    if (auto failing = Backoff(version, first, last)) return *failing;
  }
  Result<Buffer> data = InternalError("not read");
  if (options_.read_timeout.count() <= 0 || cached) {
    MutexLock sl(reader->mu);  // cached: no backend wait (the kernel's requests in order)
    data = reader->stream->Read(offset, size);
  } else {
    data = ReadWithDeadline(reader, offset, size);
  }
  Record(version, first, last, data.status());
  return data;
}

std::optional<Status> BoundedReads::Backoff(const std::string& version, uint64_t first, uint64_t last) {
  MutexLock lock(mu_);
  const TimePoint now = clock_.Now();
  for (uint64_t b = first; b <= last; ++b) {
    auto it = failed_.find({version, b});
    if (it == failed_.end()) continue;
    if (now >= it->second.first) {
      failed_.erase(it);  // backoff over: tried again
      continue;
    }
    ++counters_.fast_failed_reads;
    return it->second.second.WithContext("failed moments ago (retried after a short backoff)");
  }
  return std::nullopt;
}

// Shared with the read, which outlives its caller's deadline: it finishes
// (and fills the cache) safely, even after the handle's release.
Result<Buffer> BoundedReads::ReadWithDeadline(const std::shared_ptr<Reader>& reader, uint64_t offset, size_t size) {
  auto call = std::make_shared<PendingRead>();
  pool_.Submit([call, reader, offset, size] {
    Result<Buffer> got = InternalError("not read");
    Status st = RunGuarded("mount: reading", [&] {
      MutexLock sl(reader->mu);
      got = reader->stream->Read(offset, size);
    });
    if (!st.ok()) got = st;
    call->Finish(std::move(got));
  });
  if (auto got = call->WaitFor(options_.read_timeout)) return std::move(*got);
  ++counters_.read_timeouts;
  return DeadlineExceededError("no answer from the store within " + Ms(options_.read_timeout));
}

void BoundedReads::Record(const std::string& version, uint64_t first, uint64_t last, const Status& st) {
  MutexLock lock(mu_);
  if (st.ok()) {
    for (uint64_t b = first; b <= last; ++b) failed_.erase({version, b});
  } else if (options_.failed_read_backoff.count() > 0 && st.code() != Code::kPreconditionFailed) {
    if (failed_.size() > 4096) failed_.clear();  // bounded; a cleared block is merely retried
    const TimePoint until = clock_.Now() + options_.failed_read_backoff;
    for (uint64_t b = first; b <= last; ++b) failed_[{version, b}] = {until, st};
  }
}

}  // namespace strata::fs

// BoundedReads: reads of stored object versions that never hold a caller
// longer than read_timeout (the read goes on in the background and fills the
// cache; the caller gets EIO), and that fail at once, for
// failed_read_backoff, for blocks whose read just failed (the kernel's next
// requests for them), instead of each waiting on a backend that refuses.
// Bytes already cached are served whatever the backoff says.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>

#include "base/buffer.h"
#include "base/clock.h"
#include "base/executor.h"
#include "base/mutex.h"
#include "base/status.h"
#include "cache/cached_store.h"
#include "fs/fs_counters.h"
#include "fs/types.h"

namespace strata::fs {

// A handle's stream of one object version, shared with a bounded read still
// running after its caller gave up.
struct Reader {
  explicit Reader(std::unique_ptr<cache::ReadStream> s) : stream(std::move(s)), view(stream.get()) {}
  // One sequential reader: Read() moves the stream's read-ahead window, so
  // the kernel's parallel requests queue here and reach it in order.
  Mutex mu;
  const std::unique_ptr<cache::ReadStream> stream PT_GUARDED_BY(mu);
  const cache::ReadStream* const view;  // its const side (info(), Cached()): any thread
};

class BoundedReads {
 public:
  // Reads that must be abandoned run on `pool`. Everything passed in must
  // outlive this; `pool` must be drained before the readers' store goes.
  BoundedReads(const FsOptions& options, Clock& clock, Executor& pool, uint64_t block_size, LiveCounters& counters);

  // Up to `size` bytes at `offset` of `reader`'s version, which `version`
  // ("key@etag") names for the backoff. Thread-safe.
  Result<Buffer> Read(const std::shared_ptr<Reader>& reader, const std::string& version, uint64_t offset, size_t size);

 private:
  // The backoff's answer for blocks [first, last] of `version`, if one is still failing.
  std::optional<Status> Backoff(const std::string& version, uint64_t first, uint64_t last);
  Result<Buffer> ReadWithDeadline(const std::shared_ptr<Reader>& reader, uint64_t offset, size_t size);
  void Record(const std::string& version, uint64_t first, uint64_t last, const Status& st);

  const FsOptions& options_;
  Clock& clock_;
  Executor& pool_;
  const uint64_t block_size_;
  LiveCounters& counters_;
  Mutex mu_;
  // Blocks (key@etag, index) whose read failed, until when they fail at once (clock_).
  std::map<std::pair<std::string, uint64_t>, std::pair<TimePoint, Status>> failed_ GUARDED_BY(mu_);
};

}  // namespace strata::fs

// Sequential-read detection and the global read-ahead budget.
//
// A stream is sequential when a read starts where the previous one ended
// (within a small slack, since FUSE and async readers reorder a little). Each
// sequential read doubles the window, from one block up to a per-stream cap;
// any other read resets it to zero, so random readers never trigger read-ahead
// and pay nothing for it. The window is counted past the end of the current
// read, and blocks already issued are not issued again.
//
// ReadaheadBudget is shared by every stream of a CachedStore: read-ahead that
// would pass it is skipped (counted as throttled), never queued, because many
// handles each holding a large prefetch window is a known way to exhaust a
// host's memory. The readers themselves are never blocked by it.
#pragma once

#include <atomic>
#include <cstdint>
#include <limits>

namespace strata::cache {

struct ReadaheadState {
  static constexpr uint64_t kUnset = std::numeric_limits<uint64_t>::max();
  uint64_t next_offset = kUnset;  // where a sequential read would start
  uint64_t window = 0;            // bytes to keep ahead of the reader
  uint64_t issued_until = 0;      // blocks [.., issued_until) already requested
};

struct ReadaheadPlan {
  uint64_t first_block = 0;
  uint64_t end_block = 0;  // exclusive; empty when first_block >= end_block
};

// Records a read of [begin, end) of an object of `object_size` bytes and
// returns the blocks to prefetch.
ReadaheadPlan PlanReadahead(ReadaheadState& state, uint64_t begin, uint64_t end, uint64_t object_size,
                            uint64_t block_size, uint64_t max_window);

class ReadaheadBudget {
 public:
  explicit ReadaheadBudget(uint64_t capacity) : capacity_(capacity) {}
  bool TryAcquire(uint64_t bytes) {
    uint64_t cur = in_flight_.load();
    while (cur + bytes <= capacity_) {
      if (in_flight_.compare_exchange_weak(cur, cur + bytes)) return true;
    }
    return false;
  }
  void Release(uint64_t bytes) { in_flight_.fetch_sub(bytes); }
  uint64_t in_flight() const { return in_flight_.load(); }
  uint64_t capacity() const { return capacity_; }

 private:
  const uint64_t capacity_;
  std::atomic<uint64_t> in_flight_{0};
};

}  // namespace strata::cache

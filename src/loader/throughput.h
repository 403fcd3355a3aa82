// Throughput: one source's pace (a disk, a store), for choosing between
// sources. Real time (steady clock): it weighs real devices, which a test's
// fake clock does not move. Thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>

#include "base/mutex.h"

namespace strata::loader {

// One source's pace, from the reads that landed: bytes over the real time
// at least one read was in flight (what the source gives, concurrent reads
// counted once: how fast a disk's queue drains) and bytes over the reads'
// summed durations (what one more read takes: a store's, which serves
// many at once).
class Throughput {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;
  // Starts a read of `bytes` unless reads in flight would keep it waiting
  // longer than `max_seconds` at the measured pace (unknown: a busy
  // source refuses any finite bound). nullopt: not started.
  std::optional<TimePoint> Begin(uint64_t bytes, double max_seconds);
  void End(TimePoint start, uint64_t bytes, uint64_t landed);
  double BytesPerSecondPerRead() const;  // 0 until a read has landed

 private:
  mutable Mutex mu_;
  int in_flight_ GUARDED_BY(mu_) = 0;
  uint64_t bytes_in_flight_ GUARDED_BY(mu_) = 0;
  TimePoint busy_since_ GUARDED_BY(mu_);
  std::chrono::nanoseconds busy_ GUARDED_BY(mu_){0};
  std::chrono::nanoseconds read_time_ GUARDED_BY(mu_){0};
  uint64_t bytes_ GUARDED_BY(mu_) = 0;
};

}  // namespace strata::loader

// Small helpers shared by the strata commands: a timestamp, whole writes and a
// progress line on stderr for terminals. Values (sizes, durations, rates) are
// parsed and shown by base/units.h.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "base/clock.h"
#include "base/units.h"
#include "object/object_store.h"

namespace strata::cli {

std::string FormatTime(WallTime t);  // "2026-11-21T10:00:00Z"

// Writes all of `data` to fd, retrying short writes and EINTR.
Status WriteAll(int fd, std::string_view data);

// Progress counters updated by workers; a background thread redraws one
// line on stderr (only when stderr is a terminal). Thread-safe.
class Progress {
 public:
  Progress(std::string verb, uint64_t total_objects, uint64_t total_bytes);
  ~Progress();  // stops the redraw thread and clears the line
  void Add(uint64_t objects, uint64_t bytes) {
    objects_.fetch_add(objects, std::memory_order_relaxed);
    bytes_.fetch_add(bytes, std::memory_order_relaxed);
  }
  uint64_t objects() const { return objects_.load(); }
  uint64_t bytes() const { return bytes_.load(); }
  double ElapsedSeconds() const;
  // "copied 12 objects, 12.0 MiB in 1.20 s (10.5 MB/s)"
  std::string Summary() const;

 private:
  void Loop();
  std::string Line() const;

  std::string verb_;
  uint64_t total_objects_, total_bytes_;
  std::atomic<uint64_t> objects_{0}, bytes_{0};
  TimePoint start_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace strata::cli

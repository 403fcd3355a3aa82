// Staging memory for CheckpointWriter::Save: long-lived, pre-faulted
// anonymous regions and a parallel streaming copy into them. Internal to ckpt/.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

#include "base/mutex.h"
#include "base/status.h"

namespace strata::ckpt {

// One anonymous mapping, 2 MiB aligned with transparent huge pages advised
// (fewer faults and TLB misses), unmapped when the last reference goes.
class StagingRegion {
 public:
  // Maps `capacity` bytes (rounded up to 2 MiB); pages are not touched.
  static Result<std::shared_ptr<StagingRegion>> Map(size_t capacity);
  ~StagingRegion();
  StagingRegion(const StagingRegion&) = delete;
  StagingRegion& operator=(const StagingRegion&) = delete;
  uint8_t* data() const { return data_; }
  size_t capacity() const { return capacity_; }
  // Faults every page in now (MADV_POPULATE_WRITE, else one write per page),
  // 64 MiB at a time; gives up early (false) once *stop is set.
  bool Prefault(const std::atomic<bool>* stop = nullptr);

 private:
  StagingRegion(void* base, size_t mapped, uint8_t* data, size_t capacity)
      : base_(base), mapped_(mapped), data_(data), capacity_(capacity) {}
  void* base_;
  size_t mapped_;
  uint8_t* data_;
  size_t capacity_;
};
using StagingRegionPtr = std::shared_ptr<StagingRegion>;

// Staging regions reused between saves, so a steady-state save touches pages
// that are already mapped. Prefault() maps and faults a region on a
// background thread (at Open) so that even the first save stages at memory
// speed: first-touch page faults cost far more than the copy itself.
// Thread-safe.
class StagingPool {
 public:
  ~StagingPool();
  // Starts mapping + faulting a region of `bytes` in the background.
  void Prefault(size_t bytes);
  // Blocks until a Prefault() started earlier has finished (OK at once otherwise).
  Status WaitReady();
  // The smallest free region of at least `size` bytes; waits for a region
  // still being prefaulted if it would fit; else maps a new (cold) one.
  // *cold is set when the region's pages were never touched.
  Result<StagingRegionPtr> Take(size_t size, bool* cold);
  // Returns a region; freed instead when the pool would exceed its limit.
  void Give(StagingRegionPtr region);
  void SetLimit(uint64_t bytes);

 private:
  Mutex mu_;
  CondVar cv_;  // prefaulting_ went to 0
  std::vector<StagingRegionPtr> free_ GUARDED_BY(mu_);
  uint64_t pooled_ GUARDED_BY(mu_) = 0;  // bytes in free_
  uint64_t limit_ GUARDED_BY(mu_) = 0;
  size_t prefaulting_ GUARDED_BY(mu_) = 0;  // bytes of the region being prefaulted (0 = none)
  Status prefault_status_ GUARDED_BY(mu_);
  std::atomic<bool> stop_{false};
  // Replaced by Prefault, joined by it and the destructor. Taken before mu_
  // (never while holding it: the thread takes mu_ to finish).
  Mutex thread_mu_;
  std::thread prefault_thread_ GUARDED_BY(thread_mu_);
};

struct CopyTask {
  const void* src;
  uint8_t* dst;
  uint64_t n;
};

// Copies every task, split into chunks shared by the caller and threads-1
// helper threads. Large chunks use non-temporal stores where the CPU has
// them: the staged bytes are not read again soon, so they should not evict
// the cache nor pay a read-for-ownership of the destination.
void StageCopy(const std::vector<CopyTask>& tasks, size_t threads);

}  // namespace strata::ckpt

#include "base/buffer_pool.h"

#include <pthread.h>
#include <sys/mman.h>

#include <algorithm>
#include <bit>
#include <cstdlib>
#include <new>
#include <unordered_map>
#include <utility>
#include <vector>

#include "base/mutex.h"
#include "base/sanitizers.h"

namespace strata {
namespace {

uint64_t DefaultIdleLimit() {
  if (kAddressSanitizer) return 0;
  if (const char* env = std::getenv("STRATA_BUFFER_POOL_MIB")) {
    char* end = nullptr;
    unsigned long long mib = std::strtoull(env, &end, 10);
    if (end != env && *end == '\0' && mib < (1ull << 24)) return mib << 20;
  }
  return 512ull << 20;
}

// Sizes round up to 1/8 of their power of two (at most 12.5% slack), so
// blocks of nearly equal sizes (shards, batches, ranges) share a class.
size_t SizeClass(size_t size, BufferFit fit) {
  size_t step = fit == BufferFit::kExact ? 4096 : std::max<size_t>(4096, std::bit_floor(size) / 8);
  return (size + step - 1) / step * step;
}

struct Idle {
  void* block;
  uint64_t seq;  // when it was released: the oldest goes first
};

class Pool {
 public:
  Pool() : limit_(DefaultIdleLimit()) {
    // fork() while another thread holds mu_ would leave the child's copy
    // locked forever: hold it across the fork instead.
    // (The lock spans the handlers, beyond what the analysis can follow.)
    pthread_atfork([]() NO_THREAD_SAFETY_ANALYSIS { Get().mu_.lock(); },
                   []() NO_THREAD_SAFETY_ANALYSIS { Get().mu_.unlock(); },
                   []() NO_THREAD_SAFETY_ANALYSIS { Get().ForgetIdleInChild(); });
  }

  static Pool& Get() {
    static Pool* pool = new Pool();  // never destroyed: buffers may outlive static destruction
    return *pool;
  }

  void* Acquire(size_t size, size_t* capacity, BufferFit fit) {
    const size_t cls = SizeClass(size, fit);
    *capacity = cls;
    {
      MutexLock lock(mu_);
      auto it = idle_.find(cls);
      if (it != idle_.end() && !it->second.empty()) {
        void* block = it->second.back().block;
        it->second.pop_back();
        idle_bytes_ -= cls;
        ++hits_;
        return block;
      }
      ++misses_;
    }
    void* p = ::mmap(nullptr, cls, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    MarkMapped(p, cls);
    return p;
  }

  void Release(void* block, size_t cls) {
    std::vector<std::pair<void*, size_t>> unmap;
    {
      MutexLock lock(mu_);
      if (cls > LimitLocked()) {
        unmap.emplace_back(block, cls);
      } else {
        idle_[cls].push_back({block, ++seq_});
        idle_bytes_ += cls;
        TrimLocked(&unmap);
      }
    }
    for (auto [p, n] : unmap) ::munmap(p, n);  // outside the lock: munmap can be slow
  }

  BufferPoolStats Stats() {
    MutexLock lock(mu_);
    return {hits_, misses_, idle_bytes_, LimitLocked()};
  }

  void SetLimit(uint64_t bytes) {
    std::vector<std::pair<void*, size_t>> unmap;
    {
      MutexLock lock(mu_);
      limit_ = bytes;
      TrimLocked(&unmap);
    }
    for (auto [p, n] : unmap) ::munmap(p, n);
  }

  void Reserve(uint64_t bytes, bool add) {
    std::vector<std::pair<void*, size_t>> unmap;
    {
      MutexLock lock(mu_);
      reserved_ = add ? reserved_ + bytes : reserved_ - std::min(reserved_, bytes);
      TrimLocked(&unmap);
    }
    for (auto [p, n] : unmap) ::munmap(p, n);
  }

 private:
  // In a forked child (mu_ held since the prepare handler): the idle blocks
  // are copy-on-write views of the parent's, so reusing them would copy every
  // page anyway; unmapping them keeps the parent's idle memory from being
  // pinned twice (DataLoader workers). Only munmap: no allocation here.
  void ForgetIdleInChild() RELEASE(mu_) {
    for (auto& [cls, blocks] : idle_) {
      for (const Idle& b : blocks) ::munmap(b.block, cls);
      blocks.clear();
    }
    idle_bytes_ = 0;
    mu_.unlock();
  }

  // The bound with the live reservations; reuse off (0) stays off.
  uint64_t LimitLocked() const REQUIRES(mu_) { return limit_ == 0 ? 0 : limit_ + reserved_; }

  // Drops the oldest idle blocks until the idle bytes fit the limit.
  void TrimLocked(std::vector<std::pair<void*, size_t>>* unmap) REQUIRES(mu_) {
    while (idle_bytes_ > LimitLocked()) {
      auto oldest = idle_.end();
      for (auto it = idle_.begin(); it != idle_.end(); ++it) {
        if (!it->second.empty() && (oldest == idle_.end() || it->second.front().seq < oldest->second.front().seq)) {
          oldest = it;
        }
      }
      unmap->emplace_back(oldest->second.front().block, oldest->first);
      oldest->second.erase(oldest->second.begin());
      idle_bytes_ -= oldest->first;
    }
  }

  Mutex mu_;
  std::unordered_map<size_t, std::vector<Idle>> idle_ GUARDED_BY(mu_);  // by size class; back = most recent
  uint64_t idle_bytes_ GUARDED_BY(mu_) = 0;
  uint64_t limit_ GUARDED_BY(mu_);
  uint64_t reserved_ GUARDED_BY(mu_) = 0;  // BufferPoolReservations alive
  uint64_t seq_ GUARDED_BY(mu_) = 0;
  uint64_t hits_ GUARDED_BY(mu_) = 0;
  uint64_t misses_ GUARDED_BY(mu_) = 0;
};

}  // namespace

void* BufferPoolAcquire(size_t size, size_t* capacity, BufferFit fit) {
  return Pool::Get().Acquire(size, capacity, fit);
}
void BufferPoolRelease(void* block, size_t capacity) { Pool::Get().Release(block, capacity); }
std::shared_ptr<uint8_t> BufferPoolAllocate(size_t size, BufferFit fit) {
  if (size == 0) return nullptr;
  if (size >= kBufferPoolMinBlock) {
    size_t capacity = 0;
    auto* p = static_cast<uint8_t*>(BufferPoolAcquire(size, &capacity, fit));
    return std::shared_ptr<uint8_t>(p, [capacity](uint8_t* q) { BufferPoolRelease(q, capacity); });
  }
  constexpr size_t kAlign = 4096;  // lets the disk tier use O_DIRECT on these bytes
  void* p = std::aligned_alloc(kAlign, (size + kAlign - 1) / kAlign * kAlign);
  if (!p) throw std::bad_alloc();
  return std::shared_ptr<uint8_t>(static_cast<uint8_t*>(p), [](uint8_t* q) { std::free(q); });
}
BufferPoolStats GetBufferPoolStats() { return Pool::Get().Stats(); }
void SetBufferPoolIdleLimit(uint64_t bytes) { Pool::Get().SetLimit(bytes); }

BufferPoolReservation::BufferPoolReservation(uint64_t bytes) : bytes_(bytes) { Pool::Get().Reserve(bytes_, true); }
BufferPoolReservation::~BufferPoolReservation() { Pool::Get().Reserve(bytes_, false); }

}  // namespace strata

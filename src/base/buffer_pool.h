// A process-wide pool of large page-aligned blocks behind MutableBuffer.
// Freed blocks are kept (up to a bound of idle bytes) and handed out again:
// touching fresh pages costs a page fault each, slower than the copy that
// fills them (0.3 GB/s on some VMs, against 10+ GB/s into reused memory), and
// the hot paths (shard loads, ranged GETs, batches) allocate the same sizes
// over and over. Thread-safe and fork-safe: a forked child starts with no
// idle blocks (they would be copy-on-write views of its parent's).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

namespace strata {

// Blocks of at least this many bytes are pooled; smaller ones use malloc,
// whose own free lists already recycle them.
inline constexpr size_t kBufferPoolMinBlock = 256 * 1024;

// How a request is rounded into a pool class.
enum class BufferFit {
  kSizeClass,  // up to 1/8 of its power of two: nearly equal sizes share blocks
  kExact,      // to a page only: for buffers kept long (the block cache's disk
               // reads live on in its RAM tier), where a class's slack would
               // be held as long as they are
};

// Returns a page-aligned block of at least `size` bytes (size >= the
// minimum), reused when an idle one of its class exists; *capacity
// receives the block's size, to pass back to BufferPoolRelease. Throws
// std::bad_alloc when memory is exhausted.
void* BufferPoolAcquire(size_t size, size_t* capacity, BufferFit fit = BufferFit::kSizeClass);
// Page-aligned memory of `size` bytes (a null pointer for 0), from the pool
// when size >= the minimum, else from aligned_alloc; given back when the last
// owner lets go. Throws std::bad_alloc when memory is exhausted. MutableBuffer
// and the block cache's disk reads (O_DIRECT needs the alignment) use it.
std::shared_ptr<uint8_t> BufferPoolAllocate(size_t size, BufferFit fit = BufferFit::kSizeClass);

// Takes a block back: kept idle if the bound allows (the oldest idle blocks
// make room), else returned to the system.
void BufferPoolRelease(void* block, size_t capacity);

struct BufferPoolStats {
  uint64_t hits = 0;        // acquisitions served by an idle block
  uint64_t misses = 0;      // acquisitions that mapped fresh memory
  uint64_t idle_bytes = 0;  // held for reuse now
  uint64_t idle_limit = 0;
};
BufferPoolStats GetBufferPoolStats();

// The bound on idle bytes; 0 turns reuse off (and frees what is idle). The
// default is 512 MiB, or STRATA_BUFFER_POOL_MIB when set; 0 under
// AddressSanitizer, so it still sees every use after free.
void SetBufferPoolIdleLimit(uint64_t bytes);

// Raises the idle bound by `bytes` while it lives. A user that cycles blocks
// larger than the default bound (the loader's batches of 7 x 140 MiB
// samples) keeps them for reuse without raising the bound for good. No
// effect while reuse is off (a bound of 0). Thread-safe.
class BufferPoolReservation {
 public:
  explicit BufferPoolReservation(uint64_t bytes);
  ~BufferPoolReservation();
  BufferPoolReservation(const BufferPoolReservation&) = delete;
  BufferPoolReservation& operator=(const BufferPoolReservation&) = delete;

 private:
  uint64_t bytes_;
};

}  // namespace strata

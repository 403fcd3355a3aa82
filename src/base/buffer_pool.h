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

namespace strata {

// Blocks of at least this many bytes are pooled; smaller ones use malloc,
// whose own free lists already recycle them.
inline constexpr size_t kBufferPoolMinBlock = 256 * 1024;

// Returns a page-aligned block of at least `size` bytes (size >= the
// minimum), reused when an idle one of its size class exists; *capacity
// receives the block's size, to pass back to BufferPoolRelease. Throws
// std::bad_alloc when memory is exhausted.
void* BufferPoolAcquire(size_t size, size_t* capacity);
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

}  // namespace strata

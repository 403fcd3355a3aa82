// The mount's counters as it keeps them: relaxed atomics, counted by every
// part of the mount without a lock; FsCounters is their snapshot.
#pragma once

#include <atomic>
#include <cstdint>

#include "fs/types.h"

namespace strata::fs {

struct LiveCounters {
  std::atomic<uint64_t> lists{0}, heads{0}, meta_heads{0}, meta_copies{0}, uploads{0}, multipart_uploads{0},
      read_errors{0}, refused{0}, prefetched_dirs{0}, stale_served{0}, read_timeouts{0}, fast_failed_reads{0},
      prefetched_files{0}, new_versions{0};

  // meta_waits is counted by the metadata loads' SingleFlight (its joins).
  FsCounters Snapshot(uint64_t meta_waits) const {
    FsCounters c;
    c.lists = lists;
    c.heads = heads;
    c.meta_heads = meta_heads;
    c.meta_waits = meta_waits;
    c.meta_copies = meta_copies;
    c.uploads = uploads;
    c.multipart_uploads = multipart_uploads;
    c.read_errors = read_errors;
    c.refused = refused;
    c.prefetched_dirs = prefetched_dirs;
    c.stale_served = stale_served;
    c.read_timeouts = read_timeouts;
    c.fast_failed_reads = fast_failed_reads;
    c.prefetched_files = prefetched_files;
    c.new_versions = new_versions;
    return c;
  }
};

}  // namespace strata::fs

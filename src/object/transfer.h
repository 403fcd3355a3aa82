// Whole-object transfers built on any ObjectStore: parallel ranged GETs into
// one buffer, parallel multipart PUTs, and listing everything under a prefix.
// Latency is hidden only by requests in flight, so size `concurrency` from
// the store's latency and bandwidth, not from the core count. Thread-safe if
// the store is; each call uses up to `concurrency` short-lived threads.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "object/object_store.h"

namespace strata {

// Heads `key`, then fetches it in `part_size` ranges, `concurrency` at a time,
// into one buffer. Every range is pinned to the ETag seen by the Head
// (If-Match), so a concurrent overwrite fails with PreconditionFailed instead
// of mixing two versions. InvalidArgument if part_size or concurrency is 0.
Result<Buffer> ParallelGet(ObjectStore& store, std::string_view key, uint64_t part_size, int concurrency);

// One Put when data fits in one part; otherwise a multipart upload of
// `part_size` parts, `concurrency` at a time, aborted on any failure (the
// first error is returned). InvalidArgument if part_size is below the store's
// MinPartSize() for a multipart upload, or if it would need over 10000 parts.
Result<ObjectInfo> ParallelPut(ObjectStore& store, std::string_view key, Buffer data, uint64_t part_size,
                               int concurrency, const PutOptions& options = {});

// Every object under `prefix` (no delimiter), following continuation tokens.
Result<std::vector<ObjectInfo>> ListAll(ObjectStore& store, std::string_view prefix);

}  // namespace strata

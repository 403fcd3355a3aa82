// Whole-object transfers built on any ObjectStore: parallel ranged GETs into
// one buffer, parallel multipart PUTs, and listing everything under a prefix.
// Latency is hidden only by requests in flight, so size `concurrency` from
// the store's latency and bandwidth, not from the core count. Thread-safe if
// the store is; each call uses up to `concurrency` short-lived threads.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "object/object_store.h"

namespace strata::object {

// RangeConsumer (object_store.h) receives the bytes; stores that stream
// (Capabilities().range_streaming) hand them over as they arrive, through any
// decorator that forwards ReadRangeTo.

// Heads `key`, then fetches it in `part_size` ranges, `concurrency` at a time,
// into one buffer. Every range is pinned to the ETag seen by the Head
// (If-Match), so a concurrent overwrite fails with PreconditionFailed instead
// of mixing two versions. InvalidArgument if part_size or concurrency is 0.
Result<Buffer> ParallelGet(ObjectStore& store, std::string_view key, uint64_t part_size, int concurrency);

// Like ParallelGet, but hands the bytes to `consume` as they arrive instead of
// assembling one buffer (e.g. pwrite them into a file, overlapping the write
// with the download). Memory use does not grow with the object. Returns the
// object's info (from the Head) once every byte was consumed; on an error
// the consumer may have seen part of the object.
Result<ObjectInfo> ParallelGetTo(ObjectStore& store, std::string_view key, uint64_t part_size, int concurrency,
                                 const RangeConsumer& consume);

// One Put when data fits in one part; otherwise a multipart upload of
// `part_size` parts, `concurrency` at a time, aborted on any failure (the
// first error is returned). InvalidArgument if part_size is below the store's
// MinPartSize() for a multipart upload, or if it would need over 10000 parts.
Result<ObjectInfo> ParallelPut(ObjectStore& store, std::string_view key, Buffer data, uint64_t part_size,
                               int concurrency, const PutOptions& options = {});

// Produces bytes [offset, offset + length) of an upload (a local file read, a
// ranged GET of another store, ...). Called from several threads at once.
using PartSource = std::function<Result<Buffer>(uint64_t offset, uint64_t length)>;

struct StreamPutHooks {
  // Sees every part once, in offset order, before it is uploaded (e.g. to
  // hash the object as one stream while parts are read in parallel). A
  // non-OK Status aborts the upload.
  std::function<Status(uint64_t offset, const Buffer& part)> in_order;
  // Runs once every part is uploaded, just before the object is created
  // (the single Put, or completing the multipart upload). A non-OK Status
  // aborts instead, so the object never appears (e.g. a hash mismatch).
  std::function<Status()> before_commit;
};

// Uploads `size` bytes from `source` to `key` without ever holding them all:
// one Put when they fit in one part, else a multipart upload of `part_size`
// parts (raised to the store's MinPartSize() and so that at most 10000 parts
// are needed), `concurrency` in flight, so memory stays near concurrency x
// part_size. Aborted on any failure, the first error returned.
Result<ObjectInfo> ParallelPutFrom(ObjectStore& store, std::string_view key, uint64_t size, uint64_t part_size,
                                   int concurrency, const PartSource& source, const StreamPutHooks& hooks = {},
                                   const PutOptions& options = {});

// Copies `src_key` of `src` to `dst_key` of `dst` without ever holding the
// whole object: ranged GETs pinned to the source's ETag feed a multipart
// upload part by part, `concurrency` parts in flight, so memory stays near
// concurrency x part_size whatever the object's size. The part size is raised
// to the destination's MinPartSize() and so that at most 10000 parts are
// needed. An object that fits in one part is one Get and one Put. The upload
// is aborted on any failure and the first error returned.
Result<ObjectInfo> ParallelCopy(ObjectStore& src, std::string_view src_key, ObjectStore& dst, std::string_view dst_key,
                                uint64_t part_size, int concurrency, const PutOptions& options = {});

// Walks a listing page by page from `options` (its continuation token
// included), calling `on_page` with each until it returns false or the
// listing ends; the first failed List is returned. A truncated page without a
// new continuation token is an error (a store that does not advance would
// otherwise be listed forever).
Status ForEachListPage(ObjectStore& store, ListOptions options, const std::function<bool(ListResult& page)>& on_page);

// Every object under `prefix`, following continuation tokens. With a
// delimiter, the common prefixes of every page go to *prefixes (may be null).
Result<std::vector<ObjectInfo>> ListAll(ObjectStore& store, std::string_view prefix, std::string_view delimiter = {},
                                        std::vector<std::string>* prefixes = nullptr);

}  // namespace strata::object

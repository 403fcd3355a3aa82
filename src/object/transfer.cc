#include "object/transfer.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>

#include "base/executor.h"
#include "base/mutex.h"

namespace strata::object {
namespace {

// Collects the first error from parallel workers; later ones are dropped.
class FirstError {
 public:
  void Set(Status st) {
    MutexLock lock(mu_);
    if (status_.ok()) status_ = std::move(st);
    failed_ = true;
  }
  bool failed() const { return failed_.load(); }
  Status status() {
    MutexLock lock(mu_);
    return status_;
  }

 private:
  Mutex mu_;
  Status status_ GUARDED_BY(mu_);
  std::atomic<bool> failed_{false};
};

constexpr uint64_t kMaxParts = 10000;  // S3's limit per multipart upload

Status CheckArgs(std::string_view op, std::string_view key, uint64_t part_size, int concurrency) {
  if (part_size == 0 || concurrency < 1) {
    return InvalidArgumentError(std::string(op) + " of '" + std::string(key) +
                                "' needs part_size > 0 and concurrency >= 1");
  }
  return Status::Ok();
}

// Faults in the whole pages of [p, p + n) from the calling worker thread, so
// the page faults of a fresh buffer (costly on first touch) are spread over
// the workers and overlap the wait for the first byte, instead of landing on
// the store's single I/O thread that copies the bytes in. Best effort.
void Prefault(uint8_t* p, size_t n) {
#ifdef MADV_POPULATE_WRITE
  static const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  uintptr_t begin = (reinterpret_cast<uintptr_t>(p) + page - 1) / page * page;
  uintptr_t end = (reinterpret_cast<uintptr_t>(p) + n) / page * page;
  if (end > begin) ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_POPULATE_WRITE);
#else
  (void)p;
  (void)n;
#endif
}

// Reads every part of the object, `concurrency` at a time; `before(offset,
// length)` runs on the worker just before its part is requested.
Status ReadParts(ObjectStore& store, std::string_view key, const ObjectInfo& info, uint64_t part_size, int concurrency,
                 const std::function<void(uint64_t, uint64_t)>& before, const RangeConsumer& consume) {
  const uint64_t parts = (info.size + part_size - 1) / part_size;
  FirstError error;
  ParallelFor(parts, static_cast<size_t>(concurrency), [&](size_t i) {
    if (error.failed()) return;
    const uint64_t offset = i * part_size;
    const uint64_t length = std::min(part_size, info.size - offset);
    if (before) before(offset, length);
    Status st = store.ReadRangeTo(key, info.etag, offset, length, consume);
    if (!st.ok()) error.Set(std::move(st));
  });
  return error.status();
}

// One multipart upload of `parts` parts, `concurrency` at a time; part i is
// made by make_part(i) on the worker that uploads it, so no more than
// `concurrency` parts exist at once. hooks.in_order sees the parts in index
// order; hooks.before_commit runs before completing. Aborted on any failure;
// the first error is returned (the store's with `store_context` added, if not empty).
Result<ObjectInfo> UploadInParts(ObjectStore& store, std::string_view key, uint64_t parts, int concurrency,
                                 const PutOptions& options, const std::string& store_context,
                                 const std::function<Result<Buffer>(size_t)>& make_part,
                                 const std::function<Status(size_t, const Buffer&)>& in_order = nullptr,
                                 const std::function<Status()>& before_commit = nullptr) {
  auto in_context = [&](Status st) { return store_context.empty() ? st : st.WithContext(store_context); };
  auto upload_id = store.CreateMultipartUpload(key, options);
  if (!upload_id.ok()) return in_context(upload_id.status());
  std::vector<CompletedPart> completed(parts);
  FirstError error;
  Sequencer order;  // cancelled on the first error, so no worker waits for a part never made
  auto fail = [&](Status st) {
    error.Set(std::move(st));
    order.Cancel();
  };
  ParallelFor(parts, static_cast<size_t>(concurrency), [&](size_t i) {
    if (error.failed()) return;
    auto part = make_part(i);
    if (!part.ok()) return fail(part.status());
    if (in_order) {
      Status st;
      if (!order.RunInOrder(i, [&] { st = in_order(i, *part); })) return;
      if (!st.ok()) return fail(st);
    }
    int number = static_cast<int>(i) + 1;
    auto etag = store.UploadPart(key, *upload_id, number, std::move(*part));
    if (!etag.ok()) return fail(in_context(etag.status()));
    completed[i] = CompletedPart{number, std::move(*etag)};
  });
  Status st = error.status();
  if (st.ok() && before_commit) st = before_commit();
  if (st.ok()) {
    auto info = store.CompleteMultipartUpload(key, *upload_id, completed);
    if (info.ok()) return info;
    st = in_context(info.status());
  }
  // Best effort: the caller needs the original error, not the cleanup's.
  store.AbortMultipartUpload(key, *upload_id).IgnoreError();
  return st;
}

}  // namespace

Result<Buffer> ParallelGet(ObjectStore& store, std::string_view key, uint64_t part_size, int concurrency) {
  STRATA_RETURN_IF_ERROR(CheckArgs("ParallelGet", key, part_size, concurrency));
  STRATA_ASSIGN_OR_RETURN(ObjectInfo info, store.Head(key));
  if (info.size <= part_size) {
    GetOptions pinned;
    pinned.if_match = info.etag;
    STRATA_ASSIGN_OR_RETURN(GetResult whole, store.Get(key, pinned));
    return std::move(whole.data);
  }
  MutableBuffer out(info.size);
  uint8_t* dst = out.data();
  const uint64_t size = info.size;
  // Bytes are copied once, from the transport's buffer to their final place.
  RangeConsumer place = [&](uint64_t offset, const uint8_t* data, size_t n) -> Status {
    if (offset > size || n > size - offset) {
      return CorruptionError("bytes " + std::to_string(offset) + "+" + std::to_string(n) + " of '" + std::string(key) +
                             "' lie outside its " + std::to_string(size) + " bytes");
    }
    std::memcpy(dst + offset, data, n);
    return Status::Ok();
  };
  STRATA_RETURN_IF_ERROR(ReadParts(
      store, key, info, part_size, concurrency, [&](uint64_t offset, uint64_t n) { Prefault(dst + offset, n); },
      place));
  return std::move(out).Freeze();
}

Result<ObjectInfo> ParallelGetTo(ObjectStore& store, std::string_view key, uint64_t part_size, int concurrency,
                                 const RangeConsumer& consume) {
  STRATA_RETURN_IF_ERROR(CheckArgs("ParallelGetTo", key, part_size, concurrency));
  STRATA_ASSIGN_OR_RETURN(ObjectInfo info, store.Head(key));
  if (info.size == 0) return info;
  STRATA_RETURN_IF_ERROR(ReadParts(store, key, info, part_size, concurrency, nullptr, consume));
  return info;
}

Result<ObjectInfo> ParallelPut(ObjectStore& store, std::string_view key, Buffer data, uint64_t part_size,
                               int concurrency, const PutOptions& options) {
  STRATA_RETURN_IF_ERROR(CheckArgs("ParallelPut", key, part_size, concurrency));
  if (data.size() <= part_size) return store.Put(key, std::move(data), options);
  const std::string k(key);
  if (part_size < store.MinPartSize()) {
    return InvalidArgumentError("ParallelPut of '" + k + "': part size " + std::to_string(part_size) +
                                " is below the store's minimum of " + std::to_string(store.MinPartSize()));
  }
  const uint64_t parts = (data.size() + part_size - 1) / part_size;
  if (parts > kMaxParts) {
    return InvalidArgumentError("ParallelPut of '" + k + "' would need " + std::to_string(parts) +
                                " parts (max 10000); raise the part size");
  }
  return UploadInParts(store, key, parts, concurrency, options, "",
                       [&](size_t i) -> Result<Buffer> { return data.Slice(i * part_size, part_size); });
}

Result<ObjectInfo> ParallelPutFrom(ObjectStore& store, std::string_view key, uint64_t size, uint64_t part_size,
                                   int concurrency, const PartSource& source, const StreamPutHooks& hooks,
                                   const PutOptions& options) {
  STRATA_RETURN_IF_ERROR(CheckArgs("ParallelPutFrom", key, part_size, concurrency));
  part_size = std::max({part_size, store.MinPartSize(), (size + kMaxParts - 1) / kMaxParts});
  // Every part must be exactly what was asked for: a short one would shift the object.
  auto read = [&](uint64_t offset, uint64_t length) -> Result<Buffer> {
    STRATA_ASSIGN_OR_RETURN(Buffer part, source(offset, length));
    if (part.size() != length) {
      return InternalError("ParallelPutFrom of '" + std::string(key) + "': the source gave " +
                           std::to_string(part.size()) + " bytes for " + std::to_string(offset) + "+" +
                           std::to_string(length));
    }
    return part;
  };
  if (size <= part_size) {
    STRATA_ASSIGN_OR_RETURN(Buffer whole, read(0, size));
    if (hooks.in_order) STRATA_RETURN_IF_ERROR(hooks.in_order(0, whole));
    if (hooks.before_commit) STRATA_RETURN_IF_ERROR(hooks.before_commit());
    return store.Put(key, std::move(whole), options);
  }
  const uint64_t parts = (size + part_size - 1) / part_size;
  std::function<Status(size_t, const Buffer&)> in_order;
  if (hooks.in_order) {
    in_order = [&](size_t i, const Buffer& part) { return hooks.in_order(i * part_size, part); };
  }
  return UploadInParts(
      store, key, parts, concurrency, options, "",
      [&](size_t i) { return read(i * part_size, std::min(part_size, size - i * part_size)); }, in_order,
      hooks.before_commit);
}

Result<ObjectInfo> ParallelCopy(ObjectStore& src, std::string_view src_key, ObjectStore& dst, std::string_view dst_key,
                                uint64_t part_size, int concurrency, const PutOptions& options) {
  STRATA_RETURN_IF_ERROR(CheckArgs("ParallelCopy", src_key, part_size, concurrency));
  STRATA_ASSIGN_OR_RETURN(ObjectInfo info, src.Head(src_key));
  part_size = std::max({part_size, dst.MinPartSize(), (info.size + kMaxParts - 1) / kMaxParts});
  if (info.size <= part_size) {
    GetOptions pinned;
    pinned.if_match = info.etag;
    auto whole = src.Get(src_key, pinned);
    if (!whole.ok()) return whole.status().WithContext("read source '" + std::string(src_key) + "'");
    auto put = dst.Put(dst_key, std::move(whole->data), options);
    if (!put.ok()) return put.status().WithContext("write destination '" + std::string(dst_key) + "'");
    return put;
  }
  const uint64_t parts = (info.size + part_size - 1) / part_size;
  return UploadInParts(dst, dst_key, parts, concurrency, options, "write destination '" + std::string(dst_key) + "'",
                       [&](size_t i) -> Result<Buffer> {
                         const uint64_t offset = i * part_size;
                         const uint64_t length = std::min(part_size, info.size - offset);
                         MutableBuffer part(length);
                         RangeConsumer place = [&](uint64_t at, const uint8_t* data, size_t n) -> Status {
                           if (at < offset || at - offset > length || n > length - (at - offset)) {
                             return CorruptionError("bytes " + std::to_string(at) + "+" + std::to_string(n) + " of '" +
                                                    std::string(src_key) + "' lie outside part " +
                                                    std::to_string(i + 1));
                           }
                           std::memcpy(part.data() + (at - offset), data, n);
                           return Status::Ok();
                         };
                         Status read = src.ReadRangeTo(src_key, info.etag, offset, length, place);
                         if (!read.ok()) return read.WithContext("read source '" + std::string(src_key) + "'");
                         return std::move(part).Freeze();
                       });
}

Status ForEachListPage(ObjectStore& store, ListOptions options, const std::function<bool(ListResult& page)>& on_page) {
  for (;;) {
    STRATA_ASSIGN_OR_RETURN(ListResult page, store.List(options));
    if (!on_page(page) || !page.truncated) return Status::Ok();
    if (page.next_continuation_token.empty() || page.next_continuation_token == options.continuation_token) {
      return InternalError("listing '" + options.prefix + "' is truncated but gives no new continuation token");
    }
    options.continuation_token = std::move(page.next_continuation_token);
  }
}

Result<std::vector<ObjectInfo>> ListAll(ObjectStore& store, std::string_view prefix, std::string_view delimiter,
                                        std::vector<std::string>* prefixes) {
  std::vector<ObjectInfo> all;
  ListOptions options;
  options.prefix = std::string(prefix);
  options.delimiter = std::string(delimiter);
  STRATA_RETURN_IF_ERROR(ForEachListPage(store, std::move(options), [&](ListResult& page) {
    for (ObjectInfo& info : page.objects) all.push_back(std::move(info));
    if (prefixes) {
      for (std::string& p : page.common_prefixes) prefixes->push_back(std::move(p));
    }
    return true;
  }));
  return all;
}

}  // namespace strata::object

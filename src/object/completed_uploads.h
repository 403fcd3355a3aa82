// Completed multipart uploads, remembered so that a CompleteMultipartUpload
// sent again after it succeeded (an SDK retrying one whose answer was lost)
// gets S3's answer: 200 and the object that completion made. A store records
// each completion (upload id, key, a hash of the part list, the object) and
// keeps the most recent ones: in memory (CompletedUploads: mem://, s3://) or
// one file per completion in a directory (file://, durable as its objects).
#pragma once

#include <cstddef>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/mutex.h"
#include "base/status.h"
#include "io/file_system.h"
#include "object/object_store.h"

namespace strata::object {

inline constexpr size_t kCompletedUploadsKept = 1000;  // per store (per bucket)

struct CompletedUpload {
  std::string parts_hash;  // PartListHash of the parts it completed with
  // The object it made: key, size, ETag, mtime, and of the metadata only the
  // checksum (what Complete answers); part sizes are not kept.
  ObjectInfo info;
};

// A digest of the (part number, ETag) list in order; quotes around ETags do not count.
std::string PartListHash(const std::vector<CompletedPart>& parts);
// The record of a completion with `parts` that made `object` (trimmed as CompletedUpload says).
CompletedUpload CompletedWith(const std::vector<CompletedPart>& parts, const ObjectInfo& object);

// What Complete of `key` with `parts` answers for upload `upload_id` that
// completed as `done`: the object, or NotFound ("... (NoSuchUpload)") when
// the key or the part list differ (S3: the upload no longer exists).
Result<ObjectInfo> AnswerCompleted(const CompletedUpload& done, std::string_view key, std::string_view upload_id,
                                   const std::vector<CompletedPart>& parts);

// The most recent `kept` completions, in memory. Thread-safe.
class CompletedUploads {
 public:
  explicit CompletedUploads(size_t kept = kCompletedUploadsKept) : kept_(kept) {}
  void Record(const std::string& upload_id, CompletedUpload done);
  std::optional<CompletedUpload> Find(std::string_view upload_id) const;

 private:
  const size_t kept_;
  mutable Mutex mu_;
  std::map<std::string, CompletedUpload, std::less<>> by_id_ GUARDED_BY(mu_);
  std::deque<std::string> order_ GUARDED_BY(mu_);  // oldest first
};

// The record file's text (one value a line, the key last) and its parser:
// Corruption for anything else. Bounded by kMaxCompletedRecordBytes.
std::string EncodeCompletedUpload(const CompletedUpload& done);
Result<CompletedUpload> DecodeCompletedUpload(std::string_view text);
inline constexpr size_t kMaxCompletedRecordBytes = 4096;

// Durable records: the file `dir`/<upload_id> (temp, fsync, rename), then the
// oldest records past `kept` are removed. `upload_id` must be a plain file
// name (the caller validates it). Read: nullopt when there is none.
Status WriteCompletedRecord(io::FileSystem& fs, const std::string& dir, const std::string& upload_id,
                            const CompletedUpload& done, size_t kept);
Result<std::optional<CompletedUpload>> ReadCompletedRecord(io::FileSystem& fs, const std::string& dir,
                                                           const std::string& upload_id);

}  // namespace strata::object

// file://: a local directory as a bucket. Key "a/b/c" is the file
// <root>/a/b/c. Puts are atomic and durable (temp file in <root>/.strata-tmp/,
// fsync, rename, fsync directory); readers see the old or the new object.
// ETag = hex MD5 (multipart: S3's md5-N), kept in the xattr user.strata.etag
// together with the size and mtime it describes; when missing, stale (the
// file was changed by someone else) or xattrs are unsupported, it is
// recomputed from the content and remembered in memory. Object metadata
// (ObjectMetadata) is the xattr user.strata.meta, set on the temp file before
// the fsync and rename, so bytes and metadata are replaced together; without
// xattrs (use_xattrs false, or a file system without them) Capabilities()
// says metadata_kept = false and non-empty metadata is NotSupported.
//
// Limitations (documented, each a clear error rather than silent damage):
//  - Keys must be valid relative paths: no leading '/', no empty segments
//    ("a//b", "dir/"), no "." or ".." segments, segments of at most 255 bytes,
//    and not under ".strata-tmp" (InvalidArgument from every method).
//  - A key cannot be both an object and a directory prefix ("a" and "a/b"):
//    the second Put returns NotSupported naming the conflict.
//  - Conditional puts are atomic with respect to this process only.
// Empty directories left by deletes are removed; temp files of crashed puts
// are removed when a store is opened a day later. Abandoned multipart uploads
// stay in .strata-tmp/uploads until aborted (S3 needs a lifecycle rule too).
// Staging is created by the first write: reads and listings create nothing.
// Thread-safe.
#pragma once

#include <string>

#include "base/clock.h"
#include "io/file_system.h"
#include "object/object_store.h"

namespace strata {

struct FileStoreOptions {
  bool use_xattrs = true;               // false: ETags only cached in memory (recomputed after restart), no metadata
  bool fsync = true;                    // false: skip fsyncs (faster, not crash-safe; tests/bench only)
  uint64_t min_part_size = 5ull << 20;  // S3's
  // Every read, write, sync, rename and removal goes through `fs` (tests pass
  // a FaultFileSystem); listing walks the root directory itself. nullptr: DefaultFileSystem().
  FileSystem* fs = nullptr;
  Clock* clock = nullptr;  // ages staged temp files; nullptr: RealClock()
};

// Creates `root_dir` (and parents) if missing; `options.fs` must outlive the store. InvalidArgument if it is empty
// or not a directory.
Result<ObjectStorePtr> OpenFileStore(const std::string& root_dir);
Result<ObjectStorePtr> OpenFileStore(const std::string& root_dir, FileStoreOptions options);

// The key rules above (after ValidateKey's).
Status ValidateFileKey(std::string_view key);

// Removes the file store rooted at `root_dir` when it holds no keys; its
// staging directory (temp files, in-progress multipart uploads, which S3 also
// drops with their bucket) goes with it. PreconditionFailed when anything else
// is in it, NotFound when there is no such directory.
Status RemoveEmptyFileStore(const std::string& root_dir);

// The hidden staging directory inside the root, never listed.
inline constexpr std::string_view kFileStoreStagingDir = ".strata-tmp";

}  // namespace strata

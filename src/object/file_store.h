// file://: a local directory as a bucket. Key "a/b/c" is the file
// <root>/a/b/c, so a plain directory tree serves as a bucket with its files as
// keys. Keys a plain path cannot name are escaped (object/file_util.h has the
// layout): a segment that is empty ("dir/", "a//b", "/lead"), "." or "..", or
// starts with ".strata-" is stored as ".strata-x<segment>", and when key "a"
// and keys under "a/" both exist the object "a" is the file a/.strata-self
// (moved there atomically, inode and xattrs included, and back when the
// directory empties). Every other ".strata-*" name is internal and never
// listed. Puts are atomic and durable (temp file in <root>/.strata-tmp/,
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
//  - A key segment whose name (escaped when needed) is over 255 bytes is
//    InvalidArgument from every method.
//  - Conditional puts, and the file <-> directory moves, are atomic with
//    respect to this process only (one process serves a root).
// Empty directories left by deletes are removed; temp files of crashed puts
// are removed when a store is opened a day later. Abandoned multipart uploads
// stay in .strata-tmp/uploads until aborted (S3 needs a lifecycle rule too);
// the most recent completed ones are recorded in .strata-tmp/completed, so a
// Complete sent again answers as the first did.
// Staging is created by the first write: reads and listings create nothing.
// Thread-safe.
#pragma once

#include <string>

#include "base/clock.h"
#include "io/file_system.h"
#include "object/object_store.h"

namespace strata::object {

struct FileStoreOptions {
  bool use_xattrs = true;               // false: ETags only cached in memory (recomputed after restart), no metadata
  bool fsync = true;                    // false: skip fsyncs (faster, not crash-safe; tests/bench only)
  uint64_t min_part_size = 5ull << 20;  // S3's
  // Every read, write, sync, rename and removal goes through `fs` (tests pass
  // a FaultFileSystem); listing walks the root directory itself. nullptr: DefaultFileSystem().
  io::FileSystem* fs = nullptr;
  Clock* clock = nullptr;  // ages staged temp files; nullptr: RealClock()
  // Completed uploads remembered (.strata-tmp/completed/) for a Complete sent again.
  size_t completed_uploads_kept = 1000;  // kCompletedUploadsKept
};

// Creates `root_dir` (and parents) if missing; `options.fs` must outlive the store. InvalidArgument if it is empty
// or not a directory.
Result<ObjectStorePtr> OpenFileStore(const std::string& root_dir);
Result<ObjectStorePtr> OpenFileStore(const std::string& root_dir, FileStoreOptions options);

// Whether the key is a plain relative path (after ValidateKey's rules): no
// leading '/', no empty, "." or ".." segments, segments of at most 255 bytes,
// not under ".strata-tmp". What `strata cp` needs to write a key into a local
// directory; the file store itself takes every valid key.
Status ValidateFileKey(std::string_view key);

// Removes the file store rooted at `root_dir` when it holds no keys (empty
// directories and internal names do not count); its staging directory (temp files, in-progress multipart uploads, which
// S3 also drops with their bucket) goes with it. PreconditionFailed when anything else is in it, NotFound when there is
// no such directory.
Status RemoveEmptyFileStore(const std::string& root_dir, io::FileSystem& fs = io::DefaultFileSystem());

// The hidden staging directory inside the root, never listed.
inline constexpr std::string_view kFileStoreStagingDir = ".strata-tmp";

}  // namespace strata::object

// The mount's public value types: inode numbers, options, attributes, entries,
// open results, counters (ObjectFs's interface, object_fs.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/clock.h"
#include "io/file_system.h"

namespace strata::fs {

using Ino = uint64_t;
inline constexpr Ino kRootIno = 1;

struct FsOptions {
  Duration attr_ttl = std::chrono::seconds(10);   // file size/mtime trusted this long
  Duration entry_ttl = std::chrono::seconds(10);  // name -> inode (and "no such name") trusted this long
  Duration dir_ttl = std::chrono::seconds(30);    // a directory listing trusted this long
  bool read_only = false;
  // Where files being written are buffered until upload, in a subdirectory
  // per mount (strata-mount-<pid>-<random>, owned through an flock'd lock
  // file), so mounts sharing write_dir never touch each other's buffers.
  std::string write_dir = "/tmp";
  // Where the bytes of files that could not be uploaded are kept at unmount
  // (and those left by a mount that died); default write_dir/lost+found.
  std::string lost_found_dir;
  uint64_t multipart_threshold = 32ull << 20;  // larger files upload in parts...
  uint64_t part_size = 16ull << 20;            // ...of this size (raised if over 10000 parts)
  size_t upload_concurrency = 4;               // parts in flight per file
  size_t dir_prefetch = 8;                     // subdirectory listings fetched ahead after a readdir (0: off)
  // Files opened one after another in listing order (as `cat dir/*` does):
  // the next prefetch_files files of the directory are fetched into the
  // cache ahead of their opens, each up to prefetch_file_bytes, within
  // CachedStore's global read-ahead budget. Opens in any other order
  // prefetch nothing. 0: off.
  size_t prefetch_files = 8;
  uint64_t prefetch_file_bytes = 16ull << 20;
  uint32_t uid = 0, gid = 0;
  uint32_t file_mode = 0644, dir_mode = 0755;
  // Bounded waits when the backend misbehaves. Cached data never waits on
  // it: an expired attribute whose revalidation fails (other than "gone") or
  // takes longer than revalidate_timeout is served from the cached version
  // (logged, counted in stale_served; the revalidation goes on in the
  // background), unless strict_revalidate, which waits and fails instead.
  bool strict_revalidate = false;
  Duration revalidate_timeout = std::chrono::seconds(2);  // real time
  // An uncached read fails (EIO) after this long in total (real time; 0: no
  // bound)...
  Duration read_timeout = std::chrono::seconds(60);
  // ...and blocks whose read just failed fail at once for this long (the
  // kernel's next requests for them), then are tried again.
  Duration failed_read_backoff = std::chrono::seconds(5);
  Clock* clock = nullptr;           // default RealClock(); TTLs use Now()
  io::FileSystem* local = nullptr;  // for write buffers; default DefaultFileSystem()
};

struct Attr {
  Ino ino = 0;
  bool is_dir = false;
  uint64_t size = 0;
  WallTime mtime{};
  uint32_t mode = 0;  // type and permission bits (S_IFREG | 0644 ...)
  uint32_t nlink = 1;
  uint32_t uid = 0, gid = 0;
  uint64_t rdev = 0;  // a device node's
};

// The owner of a new file, directory, symlink or special file: the caller's
// uid and gid where other users share the mount (allow_other), as a local
// file system records them; unset, FsOptions' uid and gid.
struct Owner {
  uint32_t uid = 0, gid = 0;
};

struct Entry {
  Attr attr;
  Duration attr_ttl{0};
  Duration entry_ttl{0};
};

struct DirItem {
  std::string name;
  Attr attr;
};

// A consistent view of one directory taken at OpenDir; offsets index into it
// ("." and ".." first).
struct DirSnapshot {
  std::vector<DirItem> items;
};

struct OpenResult {
  uint64_t fh = 0;
  bool keep_cache = false;  // the content is unchanged since the last open: keep the page cache
  bool writable = false;
};

struct SetAttrRequest {
  std::optional<uint32_t> mode;  // permission bits only
  std::optional<uint32_t> uid, gid;
  std::optional<uint64_t> size;
  std::optional<WallTime> mtime;
};

struct FsCounters {
  uint64_t lists = 0;        // List requests for directories and lookups
  uint64_t heads = 0;        // attribute refreshes by HEAD (none since revalidation lists directories)
  uint64_t meta_heads = 0;   // HEADs reading POSIX attributes of versions new to the mount
  uint64_t meta_waits = 0;   // callers that waited for another's HEAD of the same attributes
  uint64_t meta_copies = 0;  // metadata changes by a server-side copy onto itself
  uint64_t uploads = 0;      // files uploaded (single PUT or multipart)
  uint64_t multipart_uploads = 0;
  uint64_t read_errors = 0;        // reads answered with IOError
  uint64_t refused = 0;            // operations refused as unsupported
  uint64_t prefetched_dirs = 0;    // listings fetched ahead
  uint64_t stale_served = 0;       // revalidations failed or too slow: the cached version served
  uint64_t read_timeouts = 0;      // uncached reads that gave up after read_timeout
  uint64_t fast_failed_reads = 0;  // reads failed at once: their blocks had just failed
  uint64_t prefetched_files = 0;   // files fetched ahead of their opens (opens in listing order)
  uint64_t new_versions = 0;       // files replaced while open: the new version got a new inode
};

}  // namespace strata::fs

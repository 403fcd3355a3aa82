// ObjectFs: a POSIX namespace over an object store, read through CachedStore.
// No FUSE types: fuse/ adapts it to libfuse, tests drive it directly.
//
// Model. A key "a/b/c" is the file c in directory a/b; directories are key
// prefixes, listed with delimiter "/" (an object "a/b/" is a directory
// marker, as mkdir writes). Names appear as soon as they are listed; bytes are
// fetched on first read (lazy loading). Inode numbers are stable for the
// mount's lifetime: a path keeps its number while the object exists (a
// renamed file keeps its number under the new name), except that a file
// replaced by another writer while open here moves to a new number (the
// kernel keeps page caches per inode: the open handles keep the old
// version's pages, later opens read the new version).
//
// Consistency (close-to-open). Within one mount, a file's bytes are visible
// to open() calls that start after the writer's close() (or fsync())
// returned; an upload failure is reported by that close()/fsync(). Changes by
// other writers are seen when a cached answer expires: attributes after
// attr_ttl, names after entry_ttl, directory listings after dir_ttl. An open
// file reads the one object version it opened (blocks are keyed by ETag):
// if the object is replaced underneath, further reads of bytes not cached
// fail with IOError instead of mixing versions.
//
// What S3 cannot honour fails, with one log line, never silently:
//  - writes into an existing non-empty object without O_TRUNC: NotSupported
//  - hard links, device nodes, FIFOs and sockets: PermissionDenied
//
// POSIX attributes (mode, uid, gid, mtime) are kept in the object's user
// metadata as s3fs keeps them (posix_meta.h), a directory's on its "dir/"
// marker (created when needed), and read back from objects written by s3fs
// or rclone. Metadata is not listed, so a listing is followed by one HEAD per
// object whose version (ETag, Last-Modified) is new to this mount, in
// parallel. chmod/chown/utimens of an object is a server-side copy onto
// itself replacing its metadata (no bytes move); on a file being written the
// change goes with the upload. Symlinks are objects whose body is the target
// and whose mode says S_IFLNK, as s3fs stores them. Objects without metadata
// show FsOptions' uid, gid, file_mode, dir_mode. A store that keeps no
// metadata (file:// without xattrs), or a directory of a store without
// markers (file://): changes are kept by this mount only for what it
// created, refused (PermissionDenied) for the rest; symlinks are refused.
//  - renaming a non-empty directory: NotSupported (the adapter reports EXDEV,
//    so mv(1) falls back to copy + delete)
// Rename of a file is a server-side copy then a delete: not atomic.
//
// Error codes returned: NotFound, AlreadyExists, NotSupported,
// PermissionDenied, PreconditionFailed (directory not empty), InvalidArgument,
// OutOfRange (name or key too long), NoSpace (local write buffer), IOError (any backend failure on a read or an
// upload; the message names the object). Thread-safe: every method may be
// called from many threads at once.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/buffer.h"
#include "base/clock.h"
#include "base/executor.h"
#include "base/mutex.h"
#include "base/status.h"
#include "cache/cached_store.h"
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

class ObjectFs {
 public:
  // `store` must outlive nothing here: it is shared.
  ObjectFs(std::shared_ptr<cache::CachedStore> store, FsOptions options);
  ~ObjectFs();  // call Shutdown() first to upload files still open for writing
  ObjectFs(const ObjectFs&) = delete;
  ObjectFs& operator=(const ObjectFs&) = delete;

  const FsOptions& options() const { return options_; }
  cache::CachedStore& store() { return *store_; }

  // Each successful Lookup (and each readdir item handed to the kernel with
  // attributes) adds one lookup reference, dropped by Forget.
  Result<Entry> Lookup(Ino parent, std::string_view name);
  void AddLookup(Ino ino);
  void Forget(Ino ino, uint64_t n);
  Result<Attr> GetAttr(Ino ino);
  // `fh`, when given, is a handle open on `ino` (truncating an open new file).
  Result<Attr> SetAttr(Ino ino, const SetAttrRequest& request, std::optional<uint64_t> fh = std::nullopt);

  Result<uint64_t> OpenDir(Ino ino);
  Result<std::shared_ptr<const DirSnapshot>> ReadDir(uint64_t dh);
  void ReleaseDir(uint64_t dh);

  // flags: O_RDONLY/O_WRONLY/O_RDWR, O_TRUNC, O_APPEND (from <fcntl.h>).
  Result<OpenResult> Open(Ino ino, int flags);
  Result<std::pair<Entry, OpenResult>> Create(Ino parent, std::string_view name, uint32_t mode, int flags);
  // Fewer bytes than asked only at end of file.
  Result<Buffer> Read(uint64_t fh, uint64_t offset, size_t size);
  Result<size_t> Write(uint64_t fh, uint64_t offset, const void* data, size_t size);
  Status Flush(uint64_t fh);  // uploads the file if written since the last upload
  Status Fsync(uint64_t fh);
  Status Release(uint64_t fh);

  Status Unlink(Ino parent, std::string_view name);
  Result<Entry> Mkdir(Ino parent, std::string_view name, uint32_t mode);
  Status Rmdir(Ino parent, std::string_view name);
  // flags: 0, or RENAME_NOREPLACE (1); RENAME_EXCHANGE (2) is InvalidArgument.
  Status Rename(Ino parent, std::string_view name, Ino new_parent, std::string_view new_name, unsigned flags);
  // Always refused (PermissionDenied), logged.
  Status Link(Ino ino, Ino new_parent, std::string_view new_name);
  Status Mknod(Ino parent, std::string_view name, uint32_t mode);
  // An object holding `target`, mode S_IFLNK | 0777 (PermissionDenied when
  // the store keeps no metadata).
  Result<Entry> Symlink(Ino parent, std::string_view name, std::string_view target);
  // InvalidArgument: not a symlink.
  Result<std::string> Readlink(Ino ino);

  // Uploads every file still open with unsaved writes (unmount).
  Status Shutdown();
  FsCounters counters() const;
  // The key (files) or prefix without its trailing '/' (directories).
  Result<std::string> PathOf(Ino ino) const;

 private:
  // The local buffer of a file open for writing. `mu` serialises writes,
  // truncation and uploads. Defined here (not in object_fs_internal.h) so
  // that UploadLocked can name `w.mu` in its REQUIRES.
  struct Writer {
    std::string temp_path;  // set before the writer is shared, then constant
    Mutex mu;
    std::unique_ptr<io::WritableFile> out PT_GUARDED_BY(mu);
    std::unique_ptr<io::RandomAccessFile> in;  // positional reads: any thread
    bool dirty GUARDED_BY(mu) = false;         // written (or truncated) since the last upload
    // Written with `mu` held, read without it by getattr and listings, which
    // hold ObjectFs::mu_ and so cannot wait for `mu` (an upload holds `mu`,
    // then takes ObjectFs::mu_): atomic.
    std::atomic<uint64_t> size{0};
    std::atomic<bool> uploaded{false};  // an object exists under the inode's key
    // Guarded by ObjectFs::mu_ (which an annotation here cannot name).
    bool unlinked = false;  // removed while open: never upload
    int refs = 0;
  };
  struct Inode;
  struct Handle;
  struct Reader;
  struct Listing;
  struct BackendCall;

  Attr AttrOf(const Inode& inode) const;
  Entry EntryOf(const Inode& inode) const;
  static std::string ChildPath(const std::string& dir, std::string_view name);
  Status CheckName(std::string_view name) const;
  Status CheckWritable(std::string_view op, const std::string& path);
  Status Refuse(Code code, std::string_view op, const std::string& path, std::string_view why);

  // Inode table (callers hold mu_).
  Inode* FindLocked(Ino ino) REQUIRES(mu_);
  const Inode* FindLocked(Ino ino) const REQUIRES(mu_);
  Inode& UpsertLocked(Inode& parent, const std::string& name, bool is_dir) REQUIRES(mu_);
  void DetachLocked(Inode& parent, const std::string& name) REQUIRES(mu_);
  bool ListingFreshLocked(const Inode& dir) const REQUIRES(mu_);
  bool AttrFreshLocked(const Inode& inode) const REQUIRES(mu_);

  // Backend probes (no lock held).
  // Lists `dir` unless its listing is fresh (dir_ttl) and younger than max_age.
  Status EnsureListed(Ino dir, bool user_initiated, std::optional<Duration> max_age = std::nullopt);
  Status ListNow(Ino dir);
  // Every page of a listing (ForEachListPage), each List counted; a failure is Backend(_, what).
  Status ListPages(const object::ListOptions& o, const std::string& what,
                   const std::function<bool(object::ListResult& page)>& on_page);
  Result<Entry> ProbeChild(Ino parent, const std::string& name);
  void PrefetchSubdirs(const std::vector<Ino>& dirs);
  // Files (object_fs_prefetch.cc). Records an open for reading of `inode`;
  // when its directory is being read in listing order, returns the files to
  // fetch ahead.
  std::vector<std::pair<std::string, object::ObjectInfo>> NoteOpenLocked(const Inode& inode) REQUIRES(mu_);
  void PrefetchFiles(const std::vector<std::pair<std::string, object::ObjectInfo>>& files);
  // A listing found `child`, open here, replaced by another version: the
  // path moves to a new inode so the kernel keeps the old version's pages
  // for its open handles (they read the version they opened).
  Inode& NewVersionLocked(Inode& parent, Inode& child) REQUIRES(mu_);
  // Expired attributes of a file refreshed by listing its directory (every
  // sibling refreshed too; one listing shared by concurrent callers), bounded
  // by revalidate_timeout (see FsOptions): OK when confirmed or when the
  // cached version is served; NotFound when gone.
  Status Revalidate(Ino ino);
  // A stream of the file's known version (no backend wait unless strict).
  Result<std::unique_ptr<cache::ReadStream>> OpenReader(Ino ino, const std::string& path);
  // A stream read bounded by read_timeout, with the failed-block backoff.
  Result<Buffer> ReadRemote(Handle& h, uint64_t offset, size_t size);
  Result<Ino> ResolveChild(Ino parent, std::string_view name);

  Result<bool> DirHasChildren(Ino ino, const std::string& path);

  // POSIX attributes (object_fs_attr.cc).
  bool MetaKept() const;
  bool NeedsMetaLocked(const Inode& inode) const REQUIRES(mu_);
  void ApplyMetaLocked(Inode& inode, const object::ObjectMetadata& meta, const std::string& version) REQUIRES(mu_);
  // HEADs the objects (a directory: its marker) of `inos` whose attributes
  // are not known for their version, in parallel. Failures leave defaults.
  void LoadMeta(const std::vector<Ino>& inos);
  void EnsureMeta(Ino ino);
  // The metadata an upload or marker carries: the inode's other keys and its POSIX attributes.
  object::ObjectMetadata MetaToStoreLocked(const Inode& inode) const REQUIRES(mu_);
  // Stores the inode's attributes on its existing object (or marker).
  Status StoreMeta(Ino ino);
  void MoveLocked(Inode& inode, Inode& new_parent, const std::string& new_name) REQUIRES(mu_);
  // Rename's last step: the inode takes its new name (mu_ taken here).
  Status MoveRenamed(Ino ino, Ino new_parent, const std::string& new_name, const std::string& from, bool is_dir,
                     bool local_dir);

  // Writes.
  Result<std::shared_ptr<Writer>> NewWriter(const std::string& path);
  // Sweeps the buffer directories of mounts that died (their lock is free):
  // empty buffers removed, the others moved to lost_found_dir.
  void SweepStaleWriteBuffers();
  // This mount's buffer directory, created and locked on first use.
  Result<std::string> BufferDir();
  // Moves a buffer that could not be uploaded to lost_found_dir; says where.
  void KeepLost(const std::string& buffer, const std::string& key);
  Status UploadLocked(Ino ino, Writer& w) REQUIRES(w.mu);
  Status UploadIfDirty(Ino ino, const std::shared_ptr<Writer>& writer);
  Result<object::ObjectInfo> UploadMultipart(const std::string& key, Writer& w, uint64_t size,
                                             const object::PutOptions& options);
  Result<Buffer> ReadLocal(Writer& w, uint64_t offset, size_t size);
  // IOError: the buffer holds fewer bytes than were written (logged).
  static Result<Buffer> ShortBuffer(const Writer& w, uint64_t got_to, uint64_t want_to);
  std::string LostFoundDir() const;

  std::shared_ptr<cache::CachedStore> store_;
  FsOptions options_;
  Clock& clock_;
  io::FileSystem& local_;
  const WallTime mount_time_;

  // Guards the inode table and everything reached through it (the Inode
  // records, Writer::refs/unlinked), the handles and the counters. Order:
  // a Writer's mu, then mu_, then a BackendCall's mu.
  mutable Mutex mu_;
  CondVar listed_cv_;
  CondVar meta_cv_;  // an Inode's meta_loading cleared
  std::unordered_map<Ino, std::unique_ptr<Inode>> inodes_ GUARDED_BY(mu_);
  std::unordered_map<std::string, Ino> by_path_ GUARDED_BY(mu_);  // files: key; dirs: prefix + "/"
  Ino next_ino_ GUARDED_BY(mu_) = kRootIno + 1;
  std::unordered_map<uint64_t, std::unique_ptr<Handle>> handles_ GUARDED_BY(mu_);
  std::unordered_map<uint64_t, std::shared_ptr<const DirSnapshot>> dirs_ GUARDED_BY(mu_);
  uint64_t next_fh_ GUARDED_BY(mu_) = 1;
  uint64_t next_temp_ GUARDED_BY(mu_) = 1;
  FsCounters counters_ GUARDED_BY(mu_);

  // Blocks (key@etag, index) whose read failed, until when they fail at once (clock_).
  std::map<std::pair<std::string, uint64_t>, std::pair<TimePoint, Status>> failed_blocks_ GUARDED_BY(mu_);

  Mutex buffer_dir_mu_;
  std::string buffer_dir_ GUARDED_BY(buffer_dir_mu_);  // empty until the first write
  // Held while the mount lives: the directory is ours.
  std::unique_ptr<io::FileLock> buffer_lock_ GUARDED_BY(buffer_dir_mu_);

  std::unique_ptr<ThreadPool> prefetch_pool_;  // last: drained first
  // Revalidations and uncached reads whose callers wait with a deadline. A
  // call stuck on the backend is waited for at destruction.
  std::unique_ptr<ThreadPool> backend_pool_;
};

}  // namespace strata::fs

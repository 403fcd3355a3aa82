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
//  - hard links: PermissionDenied (an object has one key; two keys sharing
//    bytes and attributes would need a link table every client honours)
//
// POSIX attributes (mode, uid, gid, mtime) are kept in the object's user
// metadata as s3fs keeps them (posix_meta.h), a directory's on its "dir/"
// marker (created when needed), and read back from objects written by s3fs
// or rclone. Metadata is not listed, so a listing is followed by one HEAD per
// object whose version (ETag, Last-Modified) is new to this mount, in
// parallel. chmod/chown/utimens of an object is a server-side copy onto
// itself replacing its metadata (no bytes move); on a file being written the
// change goes with the upload. Symlinks are objects whose body is the target
// and whose mode says S_IFLNK, as s3fs stores them; FIFOs, sockets and
// device nodes are empty objects whose mode says their type (a device's
// number in x-amz-meta-rdev). Objects without metadata
// show FsOptions' uid, gid, file_mode, dir_mode. A store that keeps no
// metadata (file:// without xattrs), or a directory of a store without
// markers (file://): changes are kept by this mount only for what it
// created, refused (PermissionDenied) for the rest; symlinks and special
// files are refused.
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

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "base/buffer.h"
#include "base/clock.h"
#include "base/executor.h"
#include "base/mutex.h"
#include "base/single_flight.h"
#include "base/status.h"
#include "cache/cached_store.h"
#include "fs/bounded_reads.h"
#include "fs/fs_counters.h"
#include "fs/inode_table.h"
#include "fs/types.h"
#include "fs/write_buffers.h"
#include "io/file_system.h"

namespace strata::fs {

// Where the parts of the mount live:
//   inode_table.h      inodes, names, per-file and per-directory state, the lock
//   object_fs.cc       lookups, getattr, readdir snapshots
//   object_fs_list.cc  listings and revalidation (one in flight per directory)
//   object_fs_attr.cc  POSIX attributes in object metadata, setattr, symlinks
//   object_fs_names.cc mkdir, rmdir, unlink, rename, link, mknod
//   object_fs_io.cc    open, create, read, write, upload, release
//   object_fs_prefetch.cc  files fetched ahead of opens in listing order
//   write_buffers.h    local buffers of files being written; bounded_reads.h timed reads
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
  Result<std::pair<Entry, OpenResult>> Create(Ino parent, std::string_view name, uint32_t mode, int flags,
                                              std::optional<Owner> owner = std::nullopt);
  // Fewer bytes than asked only at end of file.
  Result<Buffer> Read(uint64_t fh, uint64_t offset, size_t size);
  Result<size_t> Write(uint64_t fh, uint64_t offset, const void* data, size_t size);
  Status Flush(uint64_t fh);  // uploads the file if written since the last upload
  Status Fsync(uint64_t fh);
  Status Release(uint64_t fh);

  Status Unlink(Ino parent, std::string_view name);
  Result<Entry> Mkdir(Ino parent, std::string_view name, uint32_t mode, std::optional<Owner> owner = std::nullopt);
  Status Rmdir(Ino parent, std::string_view name);
  // flags: 0, or RENAME_NOREPLACE (1); RENAME_EXCHANGE (2) is InvalidArgument.
  Status Rename(Ino parent, std::string_view name, Ino new_parent, std::string_view new_name, unsigned flags);
  // Always refused (PermissionDenied), logged.
  Status Link(Ino ino, Ino new_parent, std::string_view new_name);
  // A FIFO, socket, device node (the kernel lets only root make those) or
  // empty regular file: an empty object whose mode carries the type, with
  // `rdev` in its metadata for a device, as s3fs stores them
  // (PermissionDenied when the store keeps no metadata; InvalidArgument for
  // another type).
  Result<Entry> Mknod(Ino parent, std::string_view name, uint32_t mode, uint64_t rdev = 0,
                      std::optional<Owner> owner = std::nullopt);
  // An object holding `target`, mode S_IFLNK | 0777 (PermissionDenied when
  // the store keeps no metadata).
  Result<Entry> Symlink(Ino parent, std::string_view name, std::string_view target,
                        std::optional<Owner> owner = std::nullopt);
  // InvalidArgument: not a symlink.
  Result<std::string> Readlink(Ino ino);

  // Uploads every file still open with unsaved writes (unmount).
  Status Shutdown();
  FsCounters counters() const;
  // The key (files) or prefix without its trailing '/' (directories).
  Result<std::string> PathOf(Ino ino) const;

 private:
  struct Handle;
  // A revalidation's outcome, kept for failed_read_backoff when it failed.
  struct Revalidation {
    Status status;
    TimePoint at{};
  };
  using Prefetches = std::vector<std::pair<std::string, object::ObjectInfo>>;

  Status CheckName(std::string_view name) const;
  Owner OwnerOf(std::optional<Owner> owner) const { return owner.value_or(Owner{options_.uid, options_.gid}); }
  Status CheckWritable(std::string_view op, const std::string& path);
  Status Refuse(Code code, std::string_view op, const std::string& path, std::string_view why);
  // The path of a new entry `name` in `parent` (mkdir, create, symlink,
  // mknod): a valid name in an existing directory of a writable mount, with
  // a key the store takes. Whether the name is taken is the caller's check.
  Result<std::string> NewEntryPath(Ino parent, std::string_view name, std::string_view op);

  // Lookups (object_fs.cc).
  Result<Entry> ProbeChild(Ino parent, const std::string& name);
  Result<Ino> ResolveChild(Ino parent, std::string_view name);  // no lookup reference added

  // Listings and revalidation (object_fs_list.cc).
  // Lists `dir` unless its listing is fresh (dir_ttl) and younger than max_age.
  Status EnsureListed(Ino dir, bool user_initiated, std::optional<Duration> max_age = std::nullopt);
  Status ListNow(Ino dir);
  // Every page of a listing (ForEachListPage), each List counted; a failure is IOError naming `what`.
  Status ListPages(const object::ListOptions& o, const std::string& what,
                   const std::function<bool(object::ListResult& page)>& on_page);
  void PrefetchSubdirs(const std::vector<Ino>& dirs);
  // Expired attributes of a file refreshed by listing its directory (every
  // sibling refreshed too; one listing shared by concurrent callers), bounded
  // by revalidate_timeout (see FsOptions): OK when confirmed or when the
  // cached version is served; NotFound when gone.
  Status Revalidate(Ino ino);

  // POSIX attributes (object_fs_attr.cc).
  bool MetaKept() const;
  bool NeedsMeta(const Inode& inode) const REQUIRES(kInodeLock);
  void ApplyMeta(Inode& inode, const object::ObjectMetadata& meta, const std::string& version) REQUIRES(kInodeLock);
  // HEADs the objects (a directory: its marker) of `inos` whose attributes
  // are not known for their version, in parallel, one flight per inode.
  // Failures leave defaults.
  void LoadMeta(const std::vector<Ino>& inos);
  bool LoadMetaOf(Ino ino);  // a flight's call: true when a HEAD was sent
  void EnsureMeta(Ino ino);
  // The metadata an upload or marker carries: the inode's other keys and its POSIX attributes.
  object::ObjectMetadata MetaToStore(const Inode& inode) const REQUIRES(kInodeLock);
  // Stores the inode's attributes on its existing object (or marker).
  Status StoreMeta(Ino ino);

  // Files fetched ahead (object_fs_prefetch.cc). Records an open for reading
  // of `inode`; when its directory is being read in listing order, returns
  // the files to fetch ahead.
  Prefetches NoteOpen(const Inode& inode) REQUIRES(kInodeLock);
  void PrefetchFiles(const Prefetches& files);

  // Data (object_fs_io.cc).
  // A stream of the file's known version (no backend wait unless strict).
  Result<std::unique_ptr<cache::ReadStream>> OpenReader(Ino ino, const std::string& path);
  uint64_t AddHandle(std::unique_ptr<Handle> handle);
  Status UploadLocked(Ino ino, Writer& w) REQUIRES(w.mu);
  Status UploadIfDirty(Ino ino, const std::shared_ptr<Writer>& writer);
  Result<object::ObjectInfo> UploadMultipart(const std::string& key, Writer& w, uint64_t size,
                                             const object::PutOptions& options);

  // Namespace changes (object_fs_names.cc).
  Result<bool> DirHasChildren(Ino ino, const std::string& path);
  // Rename's last step: the inode takes its new name.
  Status MoveRenamed(Ino ino, Ino new_parent, const std::string& new_name, const std::string& from, bool is_dir,
                     bool local_dir);

  std::shared_ptr<cache::CachedStore> store_;
  FsOptions options_;
  Clock& clock_;
  io::FileSystem& local_;
  const WallTime mount_time_;
  LiveCounters counters_;
  InodeTable inodes_;
  WriteBuffers buffers_;
  // One listing per directory, one metadata HEAD per inode, one revalidation
  // per directory (run on backend_pool_, waited for with a deadline).
  SingleFlight<Ino, Status> listings_;
  SingleFlight<Ino, bool> meta_loads_;
  SingleFlight<Ino, Revalidation> revalidations_;

  // Open file handles and directory snapshots; never held with the table's
  // lock or a Writer's.
  Mutex handles_mu_;
  std::unordered_map<uint64_t, std::unique_ptr<Handle>> handles_ GUARDED_BY(handles_mu_);
  std::unordered_map<uint64_t, std::shared_ptr<const DirSnapshot>> dirs_ GUARDED_BY(handles_mu_);
  uint64_t next_fh_ GUARDED_BY(handles_mu_) = 1;

  std::unique_ptr<ThreadPool> prefetch_pool_;
  // Revalidations and uncached reads whose callers wait with a deadline. A
  // call stuck on the backend is waited for at destruction.
  std::unique_ptr<ThreadPool> backend_pool_;
  std::unique_ptr<BoundedReads> reads_;  // on backend_pool_
};

}  // namespace strata::fs

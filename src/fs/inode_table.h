// InodeTable: the mount's inodes (numbers, names, the state of each file and
// directory) under one lock the table owns. It makes no backend call: ObjectFs
// decides what changed, the table records it and keeps the numbers stable (a
// path keeps its number while the mount lives, a renamed entry takes its
// number along).
//
// Locking. Every field of an Inode and of the table is GUARDED_BY(kInodeLock)
// and read or written with an InodeTable::Lock held; clang's analysis proves
// it (scripts/thread_safety.sh). kInodeLock is the name the analysis gives the
// lock: each table locks its own mutex, and a mount has one table. Order: a
// Writer's mu (write_buffers.h) before the table's lock; nothing is taken
// after it but a SingleFlight's internal mutex.
#pragma once

#include <sys/stat.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "base/clock.h"
#include "base/mutex.h"
#include "base/status.h"
#include "fs/types.h"
#include "object/metadata.h"

namespace strata::fs {

struct Writer;  // write_buffers.h

class CAPABILITY("mutex") InodeLockName {};
inline InodeLockName kInodeLock;
// Tells the analysis the table's lock is held where it cannot see so (a
// lambda called under the caller's lock).
inline void AssertInodeLockHeld() ASSERT_CAPABILITY(kInodeLock) {}

// What a file's object is known to be (from a listing, a HEAD, an open or an
// upload), and what this mount does with it.
struct FileState {
  uint64_t size GUARDED_BY(kInodeLock) = 0;
  WallTime mtime GUARDED_BY(kInodeLock){};  // the object's Last-Modified
  std::string etag GUARDED_BY(kInodeLock);
  // The file type its stored mode says: S_IFREG, S_IFLNK (its body is the
  // target), or a special file (S_IFIFO, S_IFSOCK, S_IFCHR, S_IFBLK: an empty
  // object; the kernel never opens it here).
  uint32_t type GUARDED_BY(kInodeLock) = S_IFREG;
  uint64_t rdev GUARDED_BY(kInodeLock) = 0;               // a device node's, from its metadata
  std::string link_target GUARDED_BY(kInodeLock);         // a symlink's target, once read...
  std::string link_version GUARDED_BY(kInodeLock);        // ...from this MetaVersion()
  std::string kept_etag GUARDED_BY(kInodeLock);           // the version whose pages the kernel may keep
  std::shared_ptr<Writer> writer GUARDED_BY(kInodeLock);  // open for writing here
  // Detached because its path moved to a newer version: still a valid file
  // for its handles and kernel references.
  bool superseded GUARDED_BY(kInodeLock) = false;
};

// Opens of a directory's files (object_fs_prefetch.cc): the last name opened,
// how many opens in a row followed listing order, the last name fetched ahead.
struct OpenOrder {
  std::string last_open;
  uint32_t in_order = 0;
  std::string prefetched_until;
};

struct DirState {
  std::map<std::string, Ino> children GUARDED_BY(kInodeLock);
  bool listed GUARDED_BY(kInodeLock) = false;
  TimePoint listed_at GUARDED_BY(kInodeLock){};
  // Bumped by local changes, so a listing racing one is retried.
  uint64_t generation GUARDED_BY(kInodeLock) = 0;
  // Made by mkdir on a backend that cannot store markers: this mount only.
  bool local_dir GUARDED_BY(kInodeLock) = false;
  OpenOrder opens GUARDED_BY(kInodeLock);
};

// POSIX attributes (posix_meta.h) as read from the object's metadata (a
// directory's from its "dir/" marker) or set here; the mount's defaults
// until then.
struct PosixState {
  uint32_t perm = 0;  // permission bits shown
  uint32_t uid = 0, gid = 0;
  std::optional<WallTime> mtime;  // the stored mtime; else the object's Last-Modified
  bool known = false;             // read (or written here) for `version`
  std::string version;            // MetaVersion() of the object version they were read from
  object::ObjectMetadata stored;  // all of it: a change keeps the other keys
};

struct Inode {
  Inode(Ino number, bool directory);
  const Ino ino;
  const bool is_dir;
  // Exactly one of the two, by is_dir.
  const std::unique_ptr<FileState> file;
  const std::unique_ptr<DirState> dir;

  Ino parent GUARDED_BY(kInodeLock) = 0;
  std::string name GUARDED_BY(kInodeLock);
  std::string path GUARDED_BY(kInodeLock);      // a file's key; a directory's prefix without '/' ("" for the root)
  bool attached GUARDED_BY(kInodeLock) = true;  // reachable by path (false once unlinked or replaced)
  uint64_t nlookup GUARDED_BY(kInodeLock) = 0;  // the kernel's references
  int open_handles GUARDED_BY(kInodeLock) = 0;
  // When size/mtime/etag (or a directory's existence) were last confirmed.
  TimePoint attr_time GUARDED_BY(kInodeLock){};
  // Created by this mount (a store that keeps no metadata: its mode lives here).
  bool made_here GUARDED_BY(kInodeLock) = false;
  PosixState posix GUARDED_BY(kInodeLock);
};

// The object behind an inode: a file's key, a directory's marker "path/".
std::string ObjectKey(const Inode& inode) REQUIRES(kInodeLock);

class InodeTable {
 public:
  // Holds the table's lock for its scope; Unlock/Relock drop it around a
  // slow call and take it back.
  class SCOPED_CAPABILITY Lock {
   public:
    explicit Lock(const InodeTable& table) ACQUIRE(kInodeLock) : mu_(table.mu_) { mu_.lock(); }
    ~Lock() RELEASE() {
      if (held_) mu_.unlock();
    }
    Lock(const Lock&) = delete;
    Lock& operator=(const Lock&) = delete;
    void Unlock() RELEASE() {
      held_ = false;
      mu_.unlock();
    }
    void Relock() ACQUIRE() {
      mu_.lock();
      held_ = true;
    }

   private:
    Mutex& mu_;
    bool held_ = true;
  };

  // `options` (modes, owners, TTLs) and `clock` must outlive the table.
  InodeTable(const FsOptions& options, Clock& clock, WallTime mount_time);
  InodeTable(const InodeTable&) = delete;
  InodeTable& operator=(const InodeTable&) = delete;

  Inode* Find(Ino ino) REQUIRES(kInodeLock);
  const Inode* Find(Ino ino) const REQUIRES(kInodeLock);
  Inode* FindDir(Ino ino) REQUIRES(kInodeLock);  // nullptr unless a directory

  // The child `name` of `parent`: the inode at its path, or a new number
  // with the mount's default attributes; attached under `parent` either way.
  Inode& Upsert(Inode& parent, const std::string& name, bool is_dir) REQUIRES(kInodeLock);
  // Takes `name` out of `parent`: the inode is no longer reachable by path
  // (kept while the kernel or a handle still holds it).
  void Detach(Inode& parent, const std::string& name) REQUIRES(kInodeLock);
  // A child a listing no longer shows: no longer reachable by its path (its
  // parent's children are rebuilt by the caller).
  void Unmap(Inode& inode) REQUIRES(kInodeLock);
  // Rename: the inode, with its number, takes `new_name` in `new_parent`
  // (an entry there is detached).
  void Move(Inode& inode, Inode& new_parent, const std::string& new_name) REQUIRES(kInodeLock);
  // `child`, open here, was replaced by another version: its path moves to
  // a new inode (same attributes until the new version's are read), so the
  // kernel keeps the old version's pages for its open handles.
  Inode& NewVersion(Inode& parent, Inode& child) REQUIRES(kInodeLock);
  // Drops an inode no path, handle or kernel reference reaches.
  void EraseIfUnused(Ino ino) REQUIRES(kInodeLock);

  bool ListingFresh(const Inode& dir) const REQUIRES(kInodeLock);  // dir_ttl
  bool AttrFresh(const Inode& inode) const REQUIRES(kInodeLock);   // attr_ttl, or being written here
  Attr AttrOf(const Inode& inode) const REQUIRES(kInodeLock);
  Entry EntryOf(const Inode& inode) const REQUIRES(kInodeLock);
  // Files with a write buffer (Shutdown uploads them).
  std::vector<std::pair<Ino, std::shared_ptr<Writer>>> Writers() const REQUIRES(kInodeLock);

  // These take the lock themselves.
  void AddLookup(Ino ino) EXCLUDES(kInodeLock);
  void Forget(Ino ino, uint64_t n) EXCLUDES(kInodeLock);
  Result<std::string> PathOf(Ino ino) const EXCLUDES(kInodeLock);

 private:
  const FsOptions& options_;
  Clock& clock_;
  const WallTime mount_time_;
  mutable Mutex mu_;
  std::unordered_map<Ino, std::unique_ptr<Inode>> inodes_ GUARDED_BY(kInodeLock);
  std::unordered_map<std::string, Ino> by_path_ GUARDED_BY(kInodeLock);  // ObjectKey -> number
  Ino next_ino_ GUARDED_BY(kInodeLock) = kRootIno + 1;
};

}  // namespace strata::fs

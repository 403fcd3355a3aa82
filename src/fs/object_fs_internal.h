// ObjectFs's private records, shared by its two source files. Not a public API.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "base/mutex.h"
#include "fs/object_fs.h"
#include "fs/posix_meta.h"
#include "object/metadata.h"

namespace strata::fs {

struct ObjectFs::Inode {
  Ino ino = 0;
  Ino parent = 0;
  std::string name;
  std::string path;  // key of a file; prefix without '/' of a directory ("" for the root)
  bool is_dir = false;
  bool attached = true;  // reachable by path (false once unlinked or replaced)
  uint64_t nlookup = 0;
  int open_handles = 0;
  // Detached because its path moved to a newer version: still a valid file
  // for its handles and kernel references.
  bool superseded = false;

  uint64_t size = 0;
  WallTime mtime{};
  std::string etag;
  TimePoint attr_time{};   // when size/mtime/etag (or a directory's existence) were last confirmed
  uint32_t perm = 0;       // permission bits shown
  bool made_here = false;  // created by this mount (a store that keeps no metadata: its mode lives here)

  // POSIX attributes (posix_meta.h), read from the object's metadata (a
  // directory's from its "dir/" marker); the mount's defaults until then.
  bool symlink = false;  // a file whose mode says S_IFLNK: its body is the target
  uint32_t uid = 0, gid = 0;
  std::optional<WallTime> meta_mtime;  // the stored mtime; else the object's Last-Modified
  bool meta_known = false;             // read (or written here) for meta_version
  bool meta_loading = false;           // a HEAD for them is in flight: others wait for it
  std::string meta_version;            // MetaVersion() of the object version they were read from
  object::ObjectMetadata meta;         // all of it: a change keeps the other keys
  std::string link_target;             // a symlink's target, once read...
  std::string link_version;            // ...from this MetaVersion()

  // Directories.
  std::map<std::string, Ino> children;
  bool listed = false;
  bool listing = false;  // a listing is in flight (others wait on listed_cv_)
  TimePoint listed_at{};
  uint64_t generation = 0;  // bumped by local changes, so a listing racing one is retried
  bool local_dir = false;   // made by mkdir on a backend that cannot store markers: this mount only
  // Opens of its files (object_fs_prefetch.cc): the last name opened, how
  // many opens in a row followed listing order, the last name fetched ahead.
  std::string last_open;
  uint32_t opens_in_order = 0;
  std::string prefetched_until;

  // Files.
  std::string kept_etag;  // the version whose pages the kernel may keep
  std::shared_ptr<Writer> writer;
  std::shared_ptr<BackendCall> revalidation;  // in flight: later callers wait on it too
};

// One backend call run on backend_pool_, which callers wait for with their
// own deadline (real time: it bounds how long a caller is kept waiting).
struct ObjectFs::BackendCall {
  Mutex mu;
  CondVar cv;
  bool done GUARDED_BY(mu) = false;
  Status status GUARDED_BY(mu);
  Buffer data GUARDED_BY(mu);
  bool stale_logged GUARDED_BY(mu) = false;  // the cached version was served (and said so) once
  const std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();
  TimePoint failed_at GUARDED_BY(mu){};  // a revalidation's failure, on the file system's clock

  void Finish(Status st, Buffer bytes = {}) {
    MutexLock lock(mu);
    done = true;
    status = std::move(st);
    data = std::move(bytes);
    cv.NotifyAll();
  }
  // False when `timeout` passed first.
  bool WaitFor(Duration timeout) {
    MutexLock lock(mu);
    return cv.WaitFor(lock, timeout, [&]() REQUIRES(mu) { return done; });
  }
};

// A handle's stream of one object version, shared with a bounded read still
// running after its caller gave up.
struct ObjectFs::Reader {
  explicit Reader(std::unique_ptr<cache::ReadStream> s) : stream(std::move(s)), view(stream.get()) {}
  // One sequential reader: Read() moves the stream's read-ahead window, so
  // the kernel's parallel requests queue here and reach it in order.
  Mutex mu;
  const std::unique_ptr<cache::ReadStream> stream PT_GUARDED_BY(mu);
  const cache::ReadStream* const view;  // its const side (info(), Cached()): any thread
};

struct ObjectFs::Handle {
  Ino ino = 0;
  bool writable = false;
  std::shared_ptr<Writer> writer;  // writers, and readers of a file being written here
  std::shared_ptr<Reader> reader;  // readers of a stored version
  std::string key, etag;
};

// Which version of an object its metadata was read from: ETag and
// Last-Modified in whole seconds (a listing has milliseconds, HEAD seconds).
// A server-side copy onto itself (chmod by any client) changes the latter.
inline std::string MetaVersion(const std::string& etag, WallTime mtime) {
  return etag + "@" +
         std::to_string(std::chrono::duration_cast<std::chrono::seconds>(mtime.time_since_epoch()).count());
}

// Directory key of a path: the listing prefix ("" for the root).
inline std::string DirKey(const std::string& path) { return path.empty() ? path : path + "/"; }

}  // namespace strata::fs

// ObjectFs: the cold path across files, and versions kept apart.
//
// A process that reads the files of a directory one after another (`cat
// dir/*`, cp -r, a tar of a tree) opens them in listing order. Each open
// waits a round trip for its first bytes, so reading them one at a time
// keeps few connections busy however fast each file is fetched. Opens are
// watched per directory, as read-ahead watches reads within a file: once
// an open follows the previous one in listing order, the next files are
// fetched into the cache ahead of their opens (within CachedStore's global
// read-ahead budget). Opens in any other order fetch nothing ahead.
#include <algorithm>

#include "base/log.h"
#include "fs/object_fs.h"
#include "fs/object_fs_internal.h"

namespace strata::fs {

std::vector<std::pair<std::string, object::ObjectInfo>> ObjectFs::NoteOpenLocked(const Inode& inode) {
  std::vector<std::pair<std::string, object::ObjectInfo>> ahead;
  if (options_.prefetch_files == 0 || inode.is_dir || !inode.attached) return ahead;
  Inode* dir = FindLocked(inode.parent);
  if (dir == nullptr || !dir->is_dir) return ahead;
  const std::string& name = inode.name;
  if (name == dir->last_open) return ahead;  // opened again: says nothing about the order
  auto is_file = [&](Ino ino) {
    mu_.AssertHeld();  // called right here, under the caller's lock
    const Inode* c = FindLocked(ino);
    return c != nullptr && !c->is_dir;
  };
  // In order: the next file after the last one opened, or one already
  // fetched ahead (the reader is catching up with the prefetch).
  bool in_order = false;
  if (!dir->last_open.empty() && name > dir->last_open) {
    if (!dir->prefetched_until.empty() && name <= dir->prefetched_until) {
      in_order = true;
    } else {
      for (auto it = dir->children.upper_bound(dir->last_open); it != dir->children.end(); ++it) {
        if (!is_file(it->second)) continue;
        in_order = it->first == name;
        break;
      }
    }
  }
  dir->last_open = name;
  dir->opens_in_order = in_order ? dir->opens_in_order + 1 : 0;
  if (!in_order) {
    dir->prefetched_until.clear();
    return ahead;
  }
  // The window: the next prefetch_files files after this one; those not
  // issued by an earlier open are fetched now.
  size_t seen = 0;
  std::string until = dir->prefetched_until;
  for (auto it = dir->children.upper_bound(name); it != dir->children.end() && seen < options_.prefetch_files; ++it) {
    const Inode* c = FindLocked(it->second);
    if (c == nullptr || c->is_dir) continue;
    ++seen;
    if (!dir->prefetched_until.empty() && it->first <= dir->prefetched_until) continue;
    until = it->first;
    if (c->symlink || c->writer || c->etag.empty() || c->size == 0) continue;
    object::ObjectInfo info;
    info.key = c->path;
    info.size = c->size;
    info.etag = c->etag;
    info.mtime = c->mtime;
    ahead.emplace_back(c->path, std::move(info));
  }
  dir->prefetched_until = until;
  return ahead;
}

void ObjectFs::PrefetchFiles(const std::vector<std::pair<std::string, object::ObjectInfo>>& files) {
  uint64_t issued = 0;
  for (const auto& [path, info] : files) {
    if (store_->Prefetch(path, info, options_.prefetch_file_bytes) > 0) ++issued;
  }
  if (issued == 0) return;
  MutexLock lock(mu_);
  counters_.prefetched_files += issued;
}

ObjectFs::Inode& ObjectFs::NewVersionLocked(Inode& parent, Inode& child) {
  ++counters_.new_versions;
  const std::string name = child.name;
  const uint32_t perm = child.perm, uid = child.uid, gid = child.gid;
  // The old inode stays, unattached, while its handles and kernel
  // references last: it keeps answering with the version they opened.
  DetachLocked(parent, name);
  child.superseded = true;
  Inode& fresh = UpsertLocked(parent, name, false);
  fresh.perm = perm;  // until the new version's own attributes are read
  fresh.uid = uid;
  fresh.gid = gid;
  STRATA_LOG_DEBUG("mount: /{} was replaced while open; the new version is inode {}", fresh.path, fresh.ino);
  return fresh;
}

}  // namespace strata::fs

// ObjectFs: files fetched ahead of their opens.
//
// A process that reads the files of a directory one after another (`cat
// dir/*`, cp -r, a tar of a tree) opens them in listing order. Each open
// waits a round trip for its first bytes, so reading them one at a time
// keeps few connections busy however fast each file is fetched. Opens are
// watched per directory, as read-ahead watches reads within a file: once
// an open follows the previous one in listing order, the next files are
// fetched into the cache ahead of their opens (within CachedStore's global
// read-ahead budget). Opens in any other order fetch nothing ahead.
#include <sys/stat.h>

#include <algorithm>

#include "base/log.h"
#include "fs/object_fs.h"
#include "fs/object_fs_internal.h"

namespace strata::fs {

ObjectFs::Prefetches ObjectFs::NoteOpen(const Inode& inode) {
  Prefetches ahead;
  if (options_.prefetch_files == 0 || inode.is_dir || !inode.attached) return ahead;
  Inode* dir = inodes_.FindDir(inode.parent);
  if (dir == nullptr) return ahead;
  OpenOrder& order = dir->dir->opens;
  const std::map<std::string, Ino>& children = dir->dir->children;
  const std::string& name = inode.name;
  if (name == order.last_open) return ahead;  // opened again: says nothing about the order
  auto is_file = [&](Ino ino) {
    AssertInodeLockHeld();  // called right here, under the caller's lock
    const Inode* c = inodes_.Find(ino);
    return c != nullptr && !c->is_dir;
  };
  // In order: the next file after the last one opened, or one already
  // fetched ahead (the reader is catching up with the prefetch).
  bool in_order = false;
  if (!order.last_open.empty() && name > order.last_open) {
    if (!order.prefetched_until.empty() && name <= order.prefetched_until) {
      in_order = true;
    } else {
      for (auto it = children.upper_bound(order.last_open); it != children.end(); ++it) {
        if (!is_file(it->second)) continue;
        in_order = it->first == name;
        break;
      }
    }
  }
  order.last_open = name;
  order.in_order = in_order ? order.in_order + 1 : 0;
  if (!in_order) {
    order.prefetched_until.clear();
    return ahead;
  }
  // The window: the next prefetch_files files after this one; those not
  // issued by an earlier open are fetched now.
  size_t seen = 0;
  std::string until = order.prefetched_until;
  for (auto it = children.upper_bound(name); it != children.end() && seen < options_.prefetch_files; ++it) {
    const Inode* c = inodes_.Find(it->second);
    if (c == nullptr || c->is_dir) continue;
    ++seen;
    if (!order.prefetched_until.empty() && it->first <= order.prefetched_until) continue;
    until = it->first;
    const FileState& f = *c->file;
    if (f.type != S_IFREG || f.writer || f.etag.empty() || f.size == 0) continue;
    object::ObjectInfo info;
    info.key = c->path;
    info.size = f.size;
    info.etag = f.etag;
    info.mtime = f.mtime;
    ahead.emplace_back(c->path, std::move(info));
  }
  order.prefetched_until = until;
  return ahead;
}

void ObjectFs::PrefetchFiles(const Prefetches& files) {
  uint64_t issued = 0;
  for (const auto& [path, info] : files) {
    if (store_->Prefetch(path, info, options_.prefetch_file_bytes) > 0) ++issued;
  }
  counters_.prefetched_files += issued;
}

}  // namespace strata::fs

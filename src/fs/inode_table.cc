#include "fs/inode_table.h"

#include <algorithm>

#include "base/log.h"
#include "fs/write_buffers.h"

namespace strata::fs {

Inode::Inode(Ino number, bool directory)
    : ino(number),
      is_dir(directory),
      file(directory ? nullptr : std::make_unique<FileState>()),
      dir(directory ? std::make_unique<DirState>() : nullptr) {}

std::string ObjectKey(const Inode& inode) { return inode.is_dir ? inode.path + "/" : inode.path; }

InodeTable::InodeTable(const FsOptions& options, Clock& clock, WallTime mount_time)
    : options_(options), clock_(clock), mount_time_(mount_time) {
  auto root = std::make_unique<Inode>(kRootIno, true);
  Lock lock(*this);
  root->parent = kRootIno;
  root->posix.perm = options_.dir_mode & 07777;
  root->posix.uid = options_.uid;
  root->posix.gid = options_.gid;
  root->nlookup = 1;
  by_path_[""] = kRootIno;
  inodes_[kRootIno] = std::move(root);
}

Inode* InodeTable::Find(Ino ino) {
  auto it = inodes_.find(ino);
  return it == inodes_.end() ? nullptr : it->second.get();
}

const Inode* InodeTable::Find(Ino ino) const {
  auto it = inodes_.find(ino);
  return it == inodes_.end() ? nullptr : it->second.get();
}

Inode* InodeTable::FindDir(Ino ino) {
  Inode* inode = Find(ino);
  return inode != nullptr && inode->is_dir ? inode : nullptr;
}

Inode& InodeTable::Upsert(Inode& parent, const std::string& name, bool is_dir) {
  const std::string path = parent.path.empty() ? name : parent.path + "/" + name;
  const std::string key = is_dir ? path + "/" : path;
  Inode* inode = nullptr;
  if (auto it = by_path_.find(key); it != by_path_.end()) inode = Find(it->second);
  if (inode == nullptr) {
    auto fresh = std::make_unique<Inode>(next_ino_++, is_dir);
    fresh->posix.perm = (is_dir ? options_.dir_mode : options_.file_mode) & 07777;
    fresh->posix.uid = options_.uid;
    fresh->posix.gid = options_.gid;
    inode = fresh.get();
    by_path_[key] = inode->ino;
    inodes_[inode->ino] = std::move(fresh);
  }
  inode->parent = parent.ino;
  inode->name = name;
  inode->path = path;
  inode->attached = true;
  parent.dir->children[name] = inode->ino;
  return *inode;
}

void InodeTable::Unmap(Inode& inode) {
  if (auto p = by_path_.find(ObjectKey(inode)); p != by_path_.end() && p->second == inode.ino) by_path_.erase(p);
  inode.attached = false;
}

void InodeTable::Detach(Inode& parent, const std::string& name) {
  auto it = parent.dir->children.find(name);
  if (it == parent.dir->children.end()) return;
  const Ino ino = it->second;
  parent.dir->children.erase(it);
  ++parent.dir->generation;
  Inode* inode = Find(ino);
  if (inode == nullptr) return;
  Unmap(*inode);
  if (inode->file && inode->file->writer) inode->file->writer->unlinked = true;
  EraseIfUnused(ino);
}

void InodeTable::Move(Inode& inode, Inode& new_parent, const std::string& new_name) {
  if (Inode* old_parent = FindDir(inode.parent)) {
    old_parent->dir->children.erase(inode.name);
    ++old_parent->dir->generation;
  }
  if (auto p = by_path_.find(ObjectKey(inode)); p != by_path_.end() && p->second == inode.ino) by_path_.erase(p);
  if (new_parent.dir->children.count(new_name)) Detach(new_parent, new_name);
  inode.parent = new_parent.ino;
  inode.name = new_name;
  inode.path = new_parent.path.empty() ? new_name : new_parent.path + "/" + new_name;
  inode.attached = true;
  by_path_[ObjectKey(inode)] = inode.ino;
  new_parent.dir->children[new_name] = inode.ino;
  ++new_parent.dir->generation;
}

Inode& InodeTable::NewVersion(Inode& parent, Inode& child) {
  const std::string name = child.name;
  const PosixState posix = child.posix;
  // The old inode stays, unattached, while its handles and kernel
  // references last: it keeps answering with the version they opened.
  Detach(parent, name);
  child.file->superseded = true;
  Inode& fresh = Upsert(parent, name, false);
  fresh.posix.perm = posix.perm;  // until the new version's own attributes are read
  fresh.posix.uid = posix.uid;
  fresh.posix.gid = posix.gid;
  STRATA_LOG_DEBUG("mount: /{} was replaced while open; the new version is inode {}", fresh.path, fresh.ino);
  return fresh;
}

void InodeTable::EraseIfUnused(Ino ino) {
  const Inode* inode = Find(ino);
  if (inode != nullptr && ino != kRootIno && !inode->attached && inode->nlookup == 0 && inode->open_handles == 0)
    inodes_.erase(ino);
}

bool InodeTable::ListingFresh(const Inode& dir) const {
  return dir.dir->listed && clock_.Now() - dir.dir->listed_at < options_.dir_ttl;
}

bool InodeTable::AttrFresh(const Inode& inode) const {
  return (inode.file && inode.file->writer != nullptr) || clock_.Now() - inode.attr_time < options_.attr_ttl;
}

Attr InodeTable::AttrOf(const Inode& inode) const {
  Attr a;
  a.ino = inode.ino;
  a.is_dir = inode.is_dir;
  a.uid = inode.posix.uid;
  a.gid = inode.posix.gid;
  if (inode.is_dir) {
    a.size = 4096;
    a.nlink = 2;
    a.mtime = inode.posix.mtime.value_or(mount_time_);
    a.mode = S_IFDIR | inode.posix.perm;
  } else {
    const FileState& f = *inode.file;
    a.size = f.writer ? f.writer->size.load() : f.size;
    a.nlink = 1;
    a.mtime = inode.posix.mtime.value_or(f.mtime);
    a.mode = f.type | inode.posix.perm;
    a.rdev = f.rdev;
  }
  return a;
}

Entry InodeTable::EntryOf(const Inode& inode) const {
  // A file being written here is authoritative locally; keep the kernel from
  // caching its growing size for long.
  const bool local = inode.file && inode.file->writer != nullptr;
  return Entry{AttrOf(inode), local ? Duration(0) : options_.attr_ttl, options_.entry_ttl};
}

std::vector<std::pair<Ino, std::shared_ptr<Writer>>> InodeTable::Writers() const {
  std::vector<std::pair<Ino, std::shared_ptr<Writer>>> out;
  for (const auto& [ino, inode] : inodes_)
    if (inode->file && inode->file->writer) out.emplace_back(ino, inode->file->writer);
  return out;
}

void InodeTable::AddLookup(Ino ino) {
  Lock lock(*this);
  if (Inode* inode = Find(ino)) ++inode->nlookup;
}

void InodeTable::Forget(Ino ino, uint64_t n) {
  if (ino == kRootIno) return;
  Lock lock(*this);
  Inode* inode = Find(ino);
  if (inode == nullptr) return;
  inode->nlookup -= std::min(n, inode->nlookup);
  // Attached inodes stay (their numbers are stable for the mount's life).
  EraseIfUnused(ino);
}

Result<std::string> InodeTable::PathOf(Ino ino) const {
  Lock lock(*this);
  const Inode* inode = Find(ino);
  if (inode == nullptr) return NotFoundError("no inode " + std::to_string(ino));
  return inode->path;
}

}  // namespace strata::fs

// ObjectFs: changes to the namespace: mkdir, rmdir, unlink, rename, and
// special files (mknod), and what is refused (link).
#include <sys/stat.h>

#include "base/log.h"
#include "fs/object_fs.h"
#include "fs/object_fs_internal.h"
#include "fs/posix_meta.h"

namespace strata::fs {

namespace {
constexpr unsigned kRenameNoReplace = 1, kRenameExchange = 2;
}  // namespace

Result<Entry> ObjectFs::Mkdir(Ino parent, std::string_view name, uint32_t mode, std::optional<Owner> owner) {
  const Owner who = OwnerOf(owner);
  STRATA_ASSIGN_OR_RETURN(std::string path, NewEntryPath(parent, name, "mkdir"));
  auto existing = ResolveChild(parent, name);
  if (existing.ok()) return AlreadyExistsError("/" + path + " already exists");
  if (existing.status().code() != Code::kNotFound) return existing.status();
  // The marker object keeps an empty directory visible to every client. A
  // store without markers (file://): the directory lives in this mount until
  // a file is written into it.
  const bool local_only = !store_->Capabilities().directory_markers;
  if (local_only) {
    STRATA_LOG_INFO("mount: backend stores no directory markers; /{} exists in this mount until it has files", path);
  }
  const uint32_t perm = mode & 07777 ? mode & 07777 : options_.dir_mode & 07777;
  const WallTime now = clock_.WallNow();
  object::ObjectMetadata meta;
  if (MetaKept()) EncodePosixMeta({S_IFDIR | perm, who.uid, who.gid, now, std::nullopt}, &meta.user);
  if (!local_only) {
    object::PutOptions po;
    po.metadata = meta;
    if (auto put = store_->Put(path + "/", Buffer(), po); !put.ok())
      return BackendError(put.status(), "mkdir /" + path);
  }
  InodeTable::Lock lock(inodes_);
  Inode* p = inodes_.FindDir(parent);
  if (p == nullptr) return NotFoundError("directory inode " + std::to_string(parent) + " is gone");
  ++p->dir->generation;
  Inode& dir = inodes_.Upsert(*p, std::string(name), true);
  dir.posix.perm = perm;
  dir.posix.uid = who.uid;
  dir.posix.gid = who.gid;
  dir.posix.mtime = now;
  dir.posix.stored = meta;
  dir.posix.known = true;
  dir.made_here = true;
  dir.attr_time = clock_.Now();
  dir.dir->local_dir = local_only;
  dir.dir->listed = true;
  dir.dir->listed_at = clock_.Now();
  dir.dir->children.clear();
  ++dir.nlookup;
  return inodes_.EntryOf(dir);
}

// Non-empty: a child here not yet uploaded, or anything under the prefix but its marker.
Result<bool> ObjectFs::DirHasChildren(Ino ino, const std::string& path) {
  {
    InodeTable::Lock lock(inodes_);
    const Inode* dir = inodes_.FindDir(ino);
    if (dir == nullptr) return NotFoundError("/" + path + " is gone");
    for (const auto& [name, child_ino] : dir->dir->children) {
      const Inode* child = inodes_.Find(child_ino);
      if (child && child->file && child->file->writer && !child->file->writer->uploaded &&
          !child->file->writer->unlinked)
        return true;
    }
  }
  object::ListOptions o;
  o.prefix = path + "/";
  o.delimiter = "/";
  o.max_keys = 2;
  auto page = store_->List(o);
  if (!page.ok()) return BackendError(page.status(), "listing /" + path);
  if (!page->common_prefixes.empty()) return true;
  for (const auto& obj : page->objects) {
    if (obj.key != o.prefix) return true;
  }
  return false;
}

Status ObjectFs::Rmdir(Ino parent, std::string_view name_view) {
  STRATA_RETURN_IF_ERROR(CheckName(name_view));
  std::string name(name_view);
  STRATA_ASSIGN_OR_RETURN(Ino ino, ResolveChild(parent, name));
  std::string path;
  bool local_dir;
  {
    InodeTable::Lock lock(inodes_);
    const Inode* dir = inodes_.Find(ino);
    if (dir == nullptr) return NotFoundError("inode " + std::to_string(ino) + " is gone");
    if (!dir->is_dir) return InvalidArgumentError("/" + dir->path + " is not a directory");
    path = dir->path;
    local_dir = dir->dir->local_dir;
  }
  STRATA_RETURN_IF_ERROR(CheckWritable("rmdir", path));
  STRATA_ASSIGN_OR_RETURN(bool busy, DirHasChildren(ino, path));
  if (busy) return PreconditionFailedError("/" + path + ": directory not empty");
  if (!local_dir && store_->Capabilities().directory_markers) {
    Status del = store_->Delete(path + "/");
    if (!del.ok()) return BackendError(del, "rmdir /" + path);
  }
  InodeTable::Lock lock(inodes_);
  if (Inode* p = inodes_.FindDir(parent)) inodes_.Detach(*p, name);
  return Status::Ok();
}

Status ObjectFs::Unlink(Ino parent, std::string_view name_view) {
  STRATA_RETURN_IF_ERROR(CheckName(name_view));
  std::string name(name_view);
  STRATA_ASSIGN_OR_RETURN(Ino ino, ResolveChild(parent, name));
  std::string path;
  std::shared_ptr<Writer> w;
  {
    InodeTable::Lock lock(inodes_);
    const Inode* inode = inodes_.Find(ino);
    if (inode == nullptr) return NotFoundError("inode " + std::to_string(ino) + " is gone");
    if (inode->is_dir) return InvalidArgumentError("/" + inode->path + " is a directory");
    path = inode->path;
    w = inode->file->writer;
  }
  STRATA_RETURN_IF_ERROR(CheckWritable("unlink", path));
  auto detach = [&] {
    InodeTable::Lock lock(inodes_);
    if (Inode* p = inodes_.FindDir(parent)) inodes_.Detach(*p, name);
    if (w) w->unlinked = true;
  };
  if (!w) {
    STRATA_RETURN_IF_ERROR(BackendError(store_->Delete(path), "unlink /" + path));
    detach();
    return Status::Ok();
  }
  MutexLock wl(w->mu);  // not while an upload of it runs
  if (w->uploaded) STRATA_RETURN_IF_ERROR(BackendError(store_->Delete(path), "unlink /" + path));
  detach();
  return Status::Ok();
}

Status ObjectFs::Rename(Ino parent, std::string_view name_view, Ino new_parent, std::string_view new_name_view,
                        unsigned flags) {
  STRATA_RETURN_IF_ERROR(CheckName(name_view));
  STRATA_RETURN_IF_ERROR(CheckName(new_name_view));
  std::string name(name_view), new_name(new_name_view);
  if (flags & kRenameExchange) return InvalidArgumentError("RENAME_EXCHANGE is not supported");
  STRATA_ASSIGN_OR_RETURN(Ino ino, ResolveChild(parent, name));
  auto target = ResolveChild(new_parent, new_name);
  if (!target.ok() && target.status().code() != Code::kNotFound) return target.status();
  if (target.ok() && *target == ino) return Status::Ok();
  if (target.ok() && (flags & kRenameNoReplace)) return AlreadyExistsError(new_name + " exists");
  std::string from, to;
  bool is_dir, target_dir = false, local_dir = false;
  std::shared_ptr<Writer> w;
  {
    InodeTable::Lock lock(inodes_);
    const Inode* inode = inodes_.Find(ino);
    const Inode* np = inodes_.FindDir(new_parent);
    if (inode == nullptr || np == nullptr) return NotFoundError("rename source or target directory is gone");
    from = inode->path;
    to = ChildPath(np->path, new_name);
    is_dir = inode->is_dir;
    if (is_dir) local_dir = inode->dir->local_dir;
    if (!is_dir) w = inode->file->writer;
    if (target.ok())
      if (const Inode* t = inodes_.Find(*target)) target_dir = t->is_dir;
  }
  STRATA_RETURN_IF_ERROR(CheckWritable("rename", from));
  if (Status st = object::ValidateKey(to + "/"); !st.ok()) return OutOfRangeError(st.message());
  if (target.ok() && target_dir != is_dir) {
    return InvalidArgumentError("cannot rename /" + from + " over /" + to + " (one is a directory)");
  }
  if (is_dir) {
    if (target.ok()) {
      STRATA_ASSIGN_OR_RETURN(bool busy, DirHasChildren(*target, to));
      if (busy) return PreconditionFailedError("/" + to + ": directory not empty");
    }
    STRATA_ASSIGN_OR_RETURN(bool busy, DirHasChildren(ino, from));
    if (busy) {
      return Refuse(Code::kNotSupported, "rename", from,
                    "renaming a non-empty directory is not supported (mv falls back to copy + delete)");
    }
    if (!store_->Capabilities().directory_markers) {
      local_dir = true;  // a backend without markers (file://): the directory stays local
    } else if (!local_dir) {
      object::PutOptions po;  // the marker keeps the directory's attributes
      {
        InodeTable::Lock lock(inodes_);
        if (const Inode* inode = inodes_.Find(ino); inode && MetaKept()) po.metadata = MetaToStore(*inode);
      }
      Status put = store_->Put(to + "/", Buffer(), po).status();
      if (!put.ok()) return BackendError(put, "rename /" + from + " to /" + to);
      Status del = store_->Delete(from + "/");
      if (!del.ok()) return BackendError(del, "rename: deleting /" + from);
    }
    return MoveRenamed(ino, new_parent, new_name, from, is_dir, local_dir);
  }
  // Not atomic: a server-side copy, then a delete.
  auto move_object = [&]() -> Status {
    auto copied = store_->Copy(from, to);
    if (!copied.ok()) return BackendError(copied.status(), "rename: copying /" + from + " to /" + to);
    Status del = store_->Delete(from);
    if (!del.ok()) {
      STRATA_LOG_WARN("mount: rename copied /{} to /{} but could not delete the source: {}", from, to, del.ToString());
      return BackendError(del, "rename: deleting /" + from + " after copying it to /" + to);
    }
    return Status::Ok();
  };
  if (!w) {
    STRATA_RETURN_IF_ERROR(move_object());
    return MoveRenamed(ino, new_parent, new_name, from, is_dir, local_dir);
  }
  // Held until the name has moved: an upload (flush) between the copy and
  // the move would recreate the old name with the newest bytes.
  MutexLock wl(w->mu);
  if (w->dirty && w->uploaded) STRATA_RETURN_IF_ERROR(UploadLocked(ino, *w));
  // Never uploaded: nothing to move, the next upload goes to the new name.
  if (w->uploaded) STRATA_RETURN_IF_ERROR(move_object());
  return MoveRenamed(ino, new_parent, new_name, from, is_dir, local_dir);
}

Status ObjectFs::MoveRenamed(Ino ino, Ino new_parent, const std::string& new_name, const std::string& from, bool is_dir,
                             bool local_dir) {
  InodeTable::Lock lock(inodes_);
  Inode* inode = inodes_.Find(ino);
  Inode* np = inodes_.FindDir(new_parent);
  if (inode == nullptr || np == nullptr) return NotFoundError("rename: /" + from + " is gone");
  inodes_.Move(*inode, *np, new_name);
  if (is_dir) {
    inode->dir->local_dir = local_dir;
    inode->dir->children.clear();
    inode->dir->listed = true;
    inode->dir->listed_at = clock_.Now();
  }
  return Status::Ok();
}

Status ObjectFs::Link(Ino, Ino, std::string_view new_name) {
  return Refuse(Code::kPermissionDenied, "link", std::string(new_name),
                "hard links cannot be stored in an object store");
}

Result<Entry> ObjectFs::Mknod(Ino parent, std::string_view name, uint32_t mode, uint64_t rdev,
                              std::optional<Owner> owner) {
  STRATA_ASSIGN_OR_RETURN(std::string path, NewEntryPath(parent, name, "mknod"));
  const uint32_t type = (mode & S_IFMT) == 0 ? S_IFREG : mode & S_IFMT;
  if (type != S_IFREG && type != S_IFIFO && type != S_IFSOCK && type != S_IFCHR && type != S_IFBLK)
    return InvalidArgumentError("mknod /" + path + ": not a file type mknod makes");
  if (!MetaKept()) return Refuse(Code::kPermissionDenied, "mknod", path, "the store keeps no metadata");
  auto existing = ResolveChild(parent, name);
  if (existing.ok()) return AlreadyExistsError("/" + path + " already exists");
  if (existing.status().code() != Code::kNotFound) return existing.status();
  const bool device = type == S_IFCHR || type == S_IFBLK;
  const uint32_t perm = mode & 07777;
  object::PutOptions po;
  EncodePosixMeta({type | perm, OwnerOf(owner).uid, OwnerOf(owner).gid, clock_.WallNow(),
                   device ? std::optional<uint64_t>(rdev) : std::nullopt},
                  &po.metadata.user);
  auto put = store_->Put(path, Buffer(), po);
  if (!put.ok()) return BackendError(put.status(), "mknod /" + path);
  InodeTable::Lock lock(inodes_);
  Inode* p = inodes_.FindDir(parent);
  if (p == nullptr) return NotFoundError("directory of /" + path + " is gone");
  ++p->dir->generation;
  Inode& inode = inodes_.Upsert(*p, std::string(name), false);
  FileState& f = *inode.file;
  f.size = 0;
  f.etag = put->etag;
  f.mtime = put->mtime;
  f.kept_etag.clear();
  inode.attr_time = clock_.Now();
  inode.made_here = true;
  ApplyMeta(inode, po.metadata, MetaVersion(put->etag, put->mtime));
  ++inode.nlookup;
  return inodes_.EntryOf(inode);
}

}  // namespace strata::fs

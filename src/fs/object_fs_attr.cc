// ObjectFs: POSIX attributes kept in object metadata (mode, owner, mtime,
// symlinks), as s3fs keeps them. See object_fs.h for the model.
#include <sys/stat.h>

#include <algorithm>

#include "base/executor.h"
#include "base/log.h"
#include "fs/object_fs.h"
#include "fs/object_fs_internal.h"
#include "fs/posix_meta.h"

namespace strata::fs {

namespace {
// HEADs in flight after a listing: a HEAD is ~all latency, so a 500-entry `ls -l` costs
// ~8 round trips, not ~30 (the S3 client allows 64 connections).
constexpr size_t kMetaParallelism = 64;
constexpr size_t kMaxLinkTarget = 4095;  // PATH_MAX less its NUL
}  // namespace

bool ObjectFs::MetaKept() const { return store_->Capabilities().metadata_kept; }

bool ObjectFs::NeedsMeta(const Inode& inode) const {
  if (inode.ino == kRootIno || !inode.attached || !MetaKept()) return false;
  if (inode.is_dir) return !inode.dir->local_dir && !inode.posix.known && store_->Capabilities().directory_markers;
  const FileState& f = *inode.file;
  return !f.writer && (!inode.posix.known || inode.posix.version != MetaVersion(f.etag, f.mtime));
}

void ObjectFs::ApplyMeta(Inode& inode, const object::ObjectMetadata& meta, const std::string& version) {
  const PosixMeta pm = DecodePosixMeta(meta.user);
  const uint32_t type = pm.mode ? *pm.mode & S_IFMT : 0;
  inode.posix.perm = pm.mode ? *pm.mode & 07777 : (inode.is_dir ? options_.dir_mode : options_.file_mode) & 07777;
  if (inode.file) {
    // A directory's mode on a file's object (another tool's) reads as a file.
    inode.file->type = type == 0 || type == S_IFDIR ? S_IFREG : type;
    inode.file->rdev = S_ISCHR(type) || S_ISBLK(type) ? pm.rdev.value_or(0) : 0;
  }
  inode.posix.uid = pm.uid.value_or(options_.uid);
  inode.posix.gid = pm.gid.value_or(options_.gid);
  inode.posix.mtime = pm.mtime;
  inode.posix.stored = meta;
  inode.posix.known = true;
  inode.posix.version = version;
}

void ObjectFs::LoadMeta(const std::vector<Ino>& inos) {
  std::vector<Ino> todo;
  {
    InodeTable::Lock lock(inodes_);
    for (Ino ino : inos) {
      const Inode* inode = inodes_.Find(ino);
      if (inode != nullptr && NeedsMeta(*inode)) todo.push_back(ino);
    }
  }
  // A listing's batch and a lookup of the same name race: one HEAD, the other waits for it.
  ParallelFor(todo.size(), std::min(kMetaParallelism, std::max<size_t>(todo.size(), 1)),
              [&](size_t i) { meta_loads_.Do(todo[i], [&] { return LoadMetaOf(todo[i]); }); });
}

bool ObjectFs::LoadMetaOf(Ino ino) {
  std::string key;
  bool is_dir;
  {
    InodeTable::Lock lock(inodes_);
    const Inode* inode = inodes_.Find(ino);
    // Read meanwhile (by a flight that landed as this one started): nothing to do.
    if (inode == nullptr || !NeedsMeta(*inode)) return false;
    key = ObjectKey(*inode);
    is_dir = inode->is_dir;
  }
  ++counters_.meta_heads;
  auto head = store_->Head(key);
  InodeTable::Lock lock(inodes_);
  Inode* inode = inodes_.Find(ino);
  if (inode == nullptr || (inode->file && inode->file->writer)) return true;
  if (head.ok()) {
    // The version read: a file's own (the listing's may lag a moment).
    ApplyMeta(*inode, head->metadata, MetaVersion(head->etag, head->mtime));
    if (!is_dir && head->etag != inode->file->etag) {
      inode->file->size = head->size;
      inode->file->etag = head->etag;
      inode->file->mtime = head->mtime;
    }
  } else if (is_dir && head.status().code() == Code::kNotFound) {
    ApplyMeta(*inode, object::ObjectMetadata{}, "");  // no marker: the defaults
  } else if (head.status().code() != Code::kNotFound) {
    STRATA_LOG_DEBUG("mount: reading the attributes of /{} failed: {}", key, head.status().ToString());
  }
  return true;
}

void ObjectFs::EnsureMeta(Ino ino) {
  {
    InodeTable::Lock lock(inodes_);
    const Inode* inode = inodes_.Find(ino);
    if (inode == nullptr || !NeedsMeta(*inode)) return;
  }
  LoadMeta({ino});
}

object::ObjectMetadata ObjectFs::MetaToStore(const Inode& inode) const {
  object::ObjectMetadata m = inode.posix.stored;
  const uint32_t type = inode.is_dir ? S_IFDIR : inode.file->type;
  const WallTime mtime = inode.posix.mtime.value_or(inode.is_dir ? mount_time_ : inode.file->mtime);
  std::optional<uint64_t> rdev;
  if (inode.file && (S_ISCHR(type) || S_ISBLK(type))) rdev = inode.file->rdev;
  EncodePosixMeta({type | inode.posix.perm, inode.posix.uid, inode.posix.gid, mtime, rdev}, &m.user);
  return m;
}

Status ObjectFs::StoreMeta(Ino ino) {
  EnsureMeta(ino);  // the other keys, so the copy keeps them
  std::string key;
  object::CopyOptions co;
  co.directive = object::MetadataDirective::kReplace;
  bool is_dir;
  {
    InodeTable::Lock lock(inodes_);
    const Inode* inode = inodes_.Find(ino);
    if (inode == nullptr) return NotFoundError("no inode " + std::to_string(ino));
    is_dir = inode->is_dir;
    key = ObjectKey(*inode);
    co.metadata = MetaToStore(*inode);
  }
  // A server-side copy onto itself: only the metadata changes, no bytes move.
  auto info = store_->Copy(key, key, co);
  if (!info.ok() && is_dir && info.status().code() == Code::kNotFound) {
    object::PutOptions po;  // a directory that exists only as a prefix gets its marker now
    po.metadata = co.metadata;
    info = store_->Put(key, Buffer(), po);
  }
  if (!info.ok()) return BackendError(info.status(), "storing the attributes of /" + key);
  ++counters_.meta_copies;
  InodeTable::Lock lock(inodes_);
  if (Inode* inode = inodes_.Find(ino)) {
    inode->posix.stored = co.metadata;
    inode->posix.known = true;
    inode->posix.version = MetaVersion(info->etag, info->mtime);
    if (!is_dir && !inode->file->writer) {
      FileState& f = *inode->file;
      if (f.etag != info->etag) f.kept_etag.clear();
      f.etag = info->etag;
      f.mtime = info->mtime;
      inode->attr_time = clock_.Now();
    }
  }
  return Status::Ok();
}

// ---- setattr ----

Result<Attr> ObjectFs::SetAttr(Ino ino, const SetAttrRequest& req, std::optional<uint64_t> fh) {
  (void)fh;
  std::string path;
  std::shared_ptr<Writer> w;
  uint64_t size = 0;
  bool attr_change, keep_here = false, refuse = false;
  {
    InodeTable::Lock lock(inodes_);
    Inode* inode = inodes_.Find(ino);
    if (inode == nullptr) return NotFoundError("no inode " + std::to_string(ino));
    path = inode->path;
    if (inode->file) {
      w = inode->file->writer;
      size = inode->file->size;
    }
    const Attr now = inodes_.AttrOf(*inode);
    const bool owner = (req.uid && *req.uid != now.uid) || (req.gid && *req.gid != now.gid);
    const bool mode = req.mode && (*req.mode & 07777) != inode->posix.perm;
    attr_change = owner || mode || (req.mtime && *req.mtime != now.mtime);
    // Where the attributes cannot be stored, what this mount made keeps them
    // in memory; a mode or owner change of anything else is refused (times
    // are accepted for the mount's life, as they always were).
    const bool storable =
        MetaKept() && !(inode->is_dir && (inode->dir->local_dir || !store_->Capabilities().directory_markers));
    keep_here = attr_change && !storable;
    refuse = keep_here && (owner || mode) && !inode->made_here;
    if (attr_change && !refuse) {
      if (req.mode) inode->posix.perm = *req.mode & 07777;
      if (req.uid) inode->posix.uid = *req.uid;
      if (req.gid) inode->posix.gid = *req.gid;
      if (req.mtime) inode->posix.mtime = *req.mtime;
    }
  }
  if (refuse) {
    return Refuse(Code::kPermissionDenied, "chmod/chown", path,
                  "the store keeps no metadata for it (only what this mount created keeps its attributes)");
  }
  if (attr_change && !keep_here) {
    STRATA_RETURN_IF_ERROR(CheckWritable("setattr", path));
    bool at_upload = false;
    if (w) {
      MutexLock wl(w->mu);
      at_upload = w->dirty || !w->uploaded;  // the upload carries them
    }
    if (!at_upload) {
      if (Status st = StoreMeta(ino); !st.ok()) {
        InodeTable::Lock lock(inodes_);
        if (Inode* inode = inodes_.Find(ino)) inode->posix.known = false;  // not stored: read the truth again
        return st;
      }
    }
  }
  if (req.size) {
    STRATA_RETURN_IF_ERROR(CheckWritable("truncate", path));
    if (w) {
      MutexLock wl(w->mu);
      STRATA_RETURN_IF_ERROR(buffers_.Truncate(*w, *req.size));
    } else if (*req.size == 0 && size != 0) {
      object::PutOptions po;
      {
        InodeTable::Lock lock(inodes_);
        if (const Inode* inode = inodes_.Find(ino); inode && MetaKept()) po.metadata = MetaToStore(*inode);
      }
      auto put = store_->Put(path, Buffer(), po);
      if (!put.ok()) return BackendError(put.status(), "truncating /" + path);
      InodeTable::Lock lock(inodes_);
      if (Inode* inode = inodes_.Find(ino); inode && inode->file) {
        inode->file->size = 0;
        inode->file->etag = put->etag;
        inode->file->mtime = put->mtime;
        inode->attr_time = clock_.Now();
        if (MetaKept()) inode->posix.version = MetaVersion(put->etag, put->mtime);
      }
    } else if (*req.size != size) {
      return Refuse(Code::kNotSupported, "truncate", path, "changing the size of an existing object is not supported");
    }
  }
  InodeTable::Lock lock(inodes_);
  const Inode* inode = inodes_.Find(ino);
  if (inode == nullptr) return NotFoundError("/" + path + " is gone");
  return inodes_.AttrOf(*inode);
}

// ---- symlinks ----

Result<Entry> ObjectFs::Symlink(Ino parent, std::string_view name, std::string_view target,
                                std::optional<Owner> owner) {
  STRATA_ASSIGN_OR_RETURN(std::string path, NewEntryPath(parent, name, "symlink"));
  if (!MetaKept()) return Refuse(Code::kPermissionDenied, "symlink", path, "the store keeps no metadata");
  if (target.empty() || target.size() > kMaxLinkTarget || target.find('\0') != std::string_view::npos)
    return InvalidArgumentError("symlink /" + path + ": bad target");
  auto existing = ResolveChild(parent, name);
  if (existing.ok()) return AlreadyExistsError("/" + path + " already exists");
  if (existing.status().code() != Code::kNotFound) return existing.status();
  const WallTime now = clock_.WallNow();
  object::PutOptions po;
  EncodePosixMeta({S_IFLNK | 0777, OwnerOf(owner).uid, OwnerOf(owner).gid, now, std::nullopt}, &po.metadata.user);
  auto put = store_->Put(path, Buffer::Copy(target), po);
  if (!put.ok()) return BackendError(put.status(), "symlink /" + path);
  InodeTable::Lock lock(inodes_);
  Inode* p = inodes_.FindDir(parent);
  if (p == nullptr) return NotFoundError("directory of /" + path + " is gone");
  ++p->dir->generation;
  Inode& inode = inodes_.Upsert(*p, std::string(name), false);
  FileState& f = *inode.file;
  f.size = target.size();
  f.etag = put->etag;
  f.mtime = put->mtime;
  inode.attr_time = clock_.Now();
  inode.made_here = true;
  ApplyMeta(inode, po.metadata, MetaVersion(put->etag, put->mtime));
  f.link_target = std::string(target);
  f.link_version = inode.posix.version;
  ++inode.nlookup;
  return inodes_.EntryOf(inode);
}

Result<std::string> ObjectFs::Readlink(Ino ino) {
  EnsureMeta(ino);
  std::string path, version;
  {
    InodeTable::Lock lock(inodes_);
    const Inode* inode = inodes_.Find(ino);
    if (inode == nullptr) return NotFoundError("no inode " + std::to_string(ino));
    if (inode->is_dir || inode->file->type != S_IFLNK)
      return InvalidArgumentError("/" + inode->path + " is not a symbolic link");
    const FileState& f = *inode->file;
    version = MetaVersion(f.etag, f.mtime);
    if (!f.link_target.empty() && f.link_version == version) return f.link_target;
    if (f.size > kMaxLinkTarget) return IOError("/" + inode->path + ": symbolic link target too long");
    path = inode->path;
  }
  auto got = store_->Get(path);
  if (!got.ok()) return BackendError(got.status(), "readlink /" + path);
  if (got->data.size() == 0 || got->data.size() > kMaxLinkTarget)
    return IOError("/" + path + ": symbolic link target of " + std::to_string(got->data.size()) + " bytes");
  std::string target = got->data.ToString();
  if (target.find('\0') != std::string::npos) return IOError("/" + path + ": symbolic link target holds NUL");
  InodeTable::Lock lock(inodes_);
  if (Inode* inode = inodes_.Find(ino); inode && inode->file) {
    inode->file->link_target = target;
    inode->file->link_version = version;
  }
  return target;
}

}  // namespace strata::fs

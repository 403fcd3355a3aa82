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

Status Backend(const Status& st, std::string_view what) {
  if (st.ok() || st.code() == Code::kNotFound) return st;
  return Status(Code::kIOError, std::string(what) + ": " + st.message(), st.cause(), st.retryable())
      .WithForeignCode(st.foreign_code());
}
}  // namespace

bool ObjectFs::MetaKept() const { return store_->Capabilities().metadata_kept; }

bool ObjectFs::NeedsMetaLocked(const Inode& inode) const {
  if (inode.ino == kRootIno || inode.writer || inode.local_dir || !inode.attached || !MetaKept()) return false;
  if (inode.is_dir) return !inode.meta_known && store_->Capabilities().directory_markers;
  return !inode.meta_known || inode.meta_version != MetaVersion(inode.etag, inode.mtime);
}

void ObjectFs::ApplyMetaLocked(Inode& inode, const object::ObjectMetadata& meta, const std::string& version) {
  const PosixMeta pm = DecodePosixMeta(meta.user);
  const uint32_t type = pm.mode ? *pm.mode & S_IFMT : 0;
  inode.perm = pm.mode ? *pm.mode & 07777 : (inode.is_dir ? options_.dir_mode : options_.file_mode) & 07777;
  inode.symlink = !inode.is_dir && type == S_IFLNK;
  inode.uid = pm.uid.value_or(options_.uid);
  inode.gid = pm.gid.value_or(options_.gid);
  inode.meta_mtime = pm.mtime;
  inode.meta = meta;
  inode.meta_known = true;
  inode.meta_version = version;
}

void ObjectFs::LoadMeta(const std::vector<Ino>& inos) {
  struct Job {
    Ino ino;
    std::string key;
    bool is_dir;
    Result<object::ObjectInfo> head = InternalError("not asked");
  };
  std::vector<Job> jobs;
  std::vector<Ino> loading_elsewhere;
  {
    MutexLock lock(mu_);
    for (Ino ino : inos) {
      Inode* inode = FindLocked(ino);
      if (inode == nullptr || !NeedsMetaLocked(*inode)) continue;
      // A listing's batch and a lookup of the same name race: one HEAD, the other waits for it.
      if (inode->meta_loading) {
        loading_elsewhere.push_back(ino);
        continue;
      }
      inode->meta_loading = true;
      jobs.push_back({ino, inode->is_dir ? inode->path + "/" : inode->path, inode->is_dir});
    }
    counters_.meta_heads += jobs.size();
    if (!loading_elsewhere.empty()) ++counters_.meta_waits;
  }
  ParallelFor(jobs.size(), std::min(kMetaParallelism, std::max<size_t>(jobs.size(), 1)),
              [&](size_t i) { jobs[i].head = store_->Head(jobs[i].key); });
  MutexLock lock(mu_);
  for (auto& job : jobs) {
    Inode* inode = FindLocked(job.ino);
    if (inode == nullptr) continue;
    inode->meta_loading = false;
    if (inode->writer) continue;
    if (job.head.ok()) {
      // The version read: a file's own (the listing's may lag a moment).
      ApplyMetaLocked(*inode, job.head->metadata, MetaVersion(job.head->etag, job.head->mtime));
      if (!job.is_dir && job.head->etag != inode->etag) {
        inode->size = job.head->size;
        inode->etag = job.head->etag;
        inode->mtime = job.head->mtime;
      }
    } else if (job.is_dir && job.head.status().code() == Code::kNotFound) {
      ApplyMetaLocked(*inode, object::ObjectMetadata{}, "");  // no marker: the defaults
    } else if (job.head.status().code() != Code::kNotFound) {
      STRATA_LOG_DEBUG("mount: reading the attributes of /{} failed: {}", job.key, job.head.status().ToString());
    }
  }
  if (!jobs.empty()) meta_cv_.NotifyAll();
  // The predicate runs with mu_ held (the analysis cannot see that through the lambda).
  meta_cv_.Wait(lock, [&]() NO_THREAD_SAFETY_ANALYSIS {
    for (Ino ino : loading_elsewhere) {
      const Inode* inode = FindLocked(ino);
      if (inode != nullptr && inode->meta_loading) return false;
    }
    return true;
  });
}

void ObjectFs::EnsureMeta(Ino ino) {
  {
    MutexLock lock(mu_);
    const Inode* inode = FindLocked(ino);
    if (inode == nullptr || !NeedsMetaLocked(*inode)) return;
  }
  LoadMeta({ino});
}

object::ObjectMetadata ObjectFs::MetaToStoreLocked(const Inode& inode) const {
  object::ObjectMetadata m = inode.meta;
  const uint32_t type = inode.is_dir ? S_IFDIR : inode.symlink ? S_IFLNK : S_IFREG;
  const WallTime mtime = inode.meta_mtime.value_or(inode.is_dir ? mount_time_ : inode.mtime);
  EncodePosixMeta({type | inode.perm, inode.uid, inode.gid, mtime}, &m.user);
  return m;
}

Status ObjectFs::StoreMeta(Ino ino) {
  EnsureMeta(ino);  // the other keys, so the copy keeps them
  std::string key;
  object::CopyOptions co;
  co.directive = object::MetadataDirective::kReplace;
  bool is_dir;
  {
    MutexLock lock(mu_);
    const Inode* inode = FindLocked(ino);
    if (inode == nullptr) return NotFoundError("no inode " + std::to_string(ino));
    is_dir = inode->is_dir;
    key = is_dir ? inode->path + "/" : inode->path;
    co.metadata = MetaToStoreLocked(*inode);
  }
  // A server-side copy onto itself: only the metadata changes, no bytes move.
  auto info = store_->Copy(key, key, co);
  if (!info.ok() && is_dir && info.status().code() == Code::kNotFound) {
    object::PutOptions po;  // a directory that exists only as a prefix gets its marker now
    po.metadata = co.metadata;
    info = store_->Put(key, Buffer(), po);
  }
  if (!info.ok()) return Backend(info.status(), "storing the attributes of /" + key);
  MutexLock lock(mu_);
  ++counters_.meta_copies;
  if (Inode* inode = FindLocked(ino)) {
    inode->meta = co.metadata;
    inode->meta_known = true;
    inode->meta_version = MetaVersion(info->etag, info->mtime);
    if (!is_dir && !inode->writer) {
      if (inode->etag != info->etag) inode->kept_etag.clear();
      inode->etag = info->etag;
      inode->mtime = info->mtime;
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
  uint64_t size;
  bool is_dir, attr_change, keep_here = false, refuse = false;
  {
    MutexLock lock(mu_);
    Inode* inode = FindLocked(ino);
    if (inode == nullptr) return NotFoundError("no inode " + std::to_string(ino));
    path = inode->path;
    w = inode->writer;
    size = inode->size;
    is_dir = inode->is_dir;
    const Attr now = AttrOf(*inode);
    const bool owner = (req.uid && *req.uid != now.uid) || (req.gid && *req.gid != now.gid);
    const bool mode = req.mode && (*req.mode & 07777) != inode->perm;
    attr_change = owner || mode || (req.mtime && *req.mtime != now.mtime);
    // Where the attributes cannot be stored, what this mount made keeps them
    // in memory; a mode or owner change of anything else is refused (times
    // are accepted for the mount's life, as they always were).
    const bool storable = MetaKept() && !(is_dir && (inode->local_dir || !store_->Capabilities().directory_markers));
    keep_here = attr_change && !storable;
    refuse = keep_here && (owner || mode) && !inode->made_here;
    if (attr_change && !refuse) {
      if (req.mode) inode->perm = *req.mode & 07777;
      if (req.uid) inode->uid = *req.uid;
      if (req.gid) inode->gid = *req.gid;
      if (req.mtime) inode->meta_mtime = *req.mtime;
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
        MutexLock lock(mu_);
        if (Inode* inode = FindLocked(ino)) inode->meta_known = false;  // not stored: read the truth again
        return st;
      }
    }
  }
  if (req.size) {
    STRATA_RETURN_IF_ERROR(CheckWritable("truncate", path));
    if (w) {
      MutexLock wl(w->mu);
      STRATA_RETURN_IF_ERROR(local_.Truncate(w->temp_path, *req.size));
      w->size = *req.size;
      w->dirty = true;
    } else if (*req.size == 0 && size != 0) {
      object::PutOptions po;
      {
        MutexLock lock(mu_);
        if (const Inode* inode = FindLocked(ino); inode && MetaKept()) po.metadata = MetaToStoreLocked(*inode);
      }
      auto put = store_->Put(path, Buffer(), po);
      if (!put.ok()) return Backend(put.status(), "truncating /" + path);
      MutexLock lock(mu_);
      if (Inode* inode = FindLocked(ino)) {
        inode->size = 0;
        inode->etag = put->etag;
        inode->mtime = put->mtime;
        inode->attr_time = clock_.Now();
        if (MetaKept()) inode->meta_version = MetaVersion(put->etag, put->mtime);
      }
    } else if (*req.size != size) {
      return Refuse(Code::kNotSupported, "truncate", path, "changing the size of an existing object is not supported");
    }
  }
  MutexLock lock(mu_);
  Inode* inode = FindLocked(ino);
  if (inode == nullptr) return NotFoundError("/" + path + " is gone");
  return AttrOf(*inode);
}

// ---- symlinks ----

Result<Entry> ObjectFs::Symlink(Ino parent, std::string_view name_view, std::string_view target) {
  STRATA_RETURN_IF_ERROR(CheckName(name_view));
  std::string name(name_view), path;
  {
    MutexLock lock(mu_);
    Inode* p = FindLocked(parent);
    if (p == nullptr || !p->is_dir) return NotFoundError("no directory inode " + std::to_string(parent));
    path = ChildPath(p->path, name);
  }
  STRATA_RETURN_IF_ERROR(CheckWritable("symlink", path));
  if (!MetaKept()) return Refuse(Code::kPermissionDenied, "symlink", path, "the store keeps no metadata");
  if (target.empty() || target.size() > kMaxLinkTarget || target.find('\0') != std::string_view::npos)
    return InvalidArgumentError("symlink /" + path + ": bad target");
  if (Status st = object::ValidateKey(path + "/"); !st.ok()) return OutOfRangeError(st.message());
  auto existing = ResolveChild(parent, name);
  if (existing.ok()) return AlreadyExistsError("/" + path + " already exists");
  if (existing.status().code() != Code::kNotFound) return existing.status();
  const WallTime now = clock_.WallNow();
  object::PutOptions po;
  EncodePosixMeta({S_IFLNK | 0777, options_.uid, options_.gid, now}, &po.metadata.user);
  auto put = store_->Put(path, Buffer::Copy(target), po);
  if (!put.ok()) return Backend(put.status(), "symlink /" + path);
  MutexLock lock(mu_);
  Inode* p = FindLocked(parent);
  if (p == nullptr) return NotFoundError("directory of /" + path + " is gone");
  ++p->generation;
  Inode& inode = UpsertLocked(*p, name, false);
  inode.size = target.size();
  inode.etag = put->etag;
  inode.mtime = put->mtime;
  inode.attr_time = clock_.Now();
  inode.made_here = true;
  ApplyMetaLocked(inode, po.metadata, MetaVersion(put->etag, put->mtime));
  inode.link_target = std::string(target);
  inode.link_version = inode.meta_version;
  ++inode.nlookup;
  return EntryOf(inode);
}

Result<std::string> ObjectFs::Readlink(Ino ino) {
  EnsureMeta(ino);
  std::string path, version;
  {
    MutexLock lock(mu_);
    const Inode* inode = FindLocked(ino);
    if (inode == nullptr) return NotFoundError("no inode " + std::to_string(ino));
    if (!inode->symlink) return InvalidArgumentError("/" + inode->path + " is not a symbolic link");
    version = MetaVersion(inode->etag, inode->mtime);
    if (!inode->link_target.empty() && inode->link_version == version) return inode->link_target;
    if (inode->size > kMaxLinkTarget) return IOError("/" + inode->path + ": symbolic link target too long");
    path = inode->path;
  }
  auto got = store_->Get(path);
  if (!got.ok()) return Backend(got.status(), "readlink /" + path);
  if (got->data.size() == 0 || got->data.size() > kMaxLinkTarget)
    return IOError("/" + path + ": symbolic link target of " + std::to_string(got->data.size()) + " bytes");
  std::string target = got->data.ToString();
  if (target.find('\0') != std::string::npos) return IOError("/" + path + ": symbolic link target holds NUL");
  MutexLock lock(mu_);
  if (Inode* inode = FindLocked(ino)) {
    inode->link_target = target;
    inode->link_version = version;
  }
  return target;
}

}  // namespace strata::fs

// ObjectFs: construction, name checks, lookups, getattr and directory
// snapshots. Listings and revalidation are in object_fs_list.cc.
#include "fs/object_fs.h"

#include <sys/stat.h>

#include <algorithm>
#include <utility>

#include "base/log.h"
#include "fs/object_fs_internal.h"
#include "object/transfer.h"

namespace strata::fs {

namespace {
constexpr size_t kMaxName = 255;
}  // namespace

ObjectFs::ObjectFs(std::shared_ptr<cache::CachedStore> store, FsOptions options)
    : store_(std::move(store)),
      options_(std::move(options)),
      clock_(options_.clock ? *options_.clock : RealClock()),
      local_(options_.local ? *options_.local : io::DefaultFileSystem()),
      mount_time_(clock_.WallNow()),
      inodes_(options_, clock_, mount_time_),
      buffers_(options_, local_, clock_) {
  buffers_.SweepStale();
  if (options_.dir_prefetch > 0) prefetch_pool_ = std::make_unique<ThreadPool>(options_.dir_prefetch, "strata-fs-list");
  backend_pool_ = std::make_unique<ThreadPool>(16, "strata-fs-wait");
  reads_ =
      std::make_unique<BoundedReads>(options_, clock_, *backend_pool_, store_->cache().options().block_size, counters_);
}

ObjectFs::~ObjectFs() {
  reads_.reset();
  backend_pool_.reset();
  prefetch_pool_.reset();
}

// ---- checks ----

Status ObjectFs::CheckName(std::string_view name) const {
  if (name.empty() || name == "." || name == ".." || name.find('/') != std::string_view::npos ||
      name.find('\0') != std::string_view::npos) {
    return InvalidArgumentError("invalid file name \"" + std::string(name) + "\"");
  }
  if (name.size() > kMaxName) {
    return OutOfRangeError("file name longer than " + std::to_string(kMaxName) + " bytes");
  }
  return Status::Ok();
}

Status ObjectFs::Refuse(Code code, std::string_view op, const std::string& path, std::string_view why) {
  ++counters_.refused;
  STRATA_LOG_WARN("mount: {} /{} refused: {}", op, path, why);
  return Status(code, std::string(op) + " /" + path + ": " + std::string(why));
}

Status ObjectFs::CheckWritable(std::string_view op, const std::string& path) {
  if (!options_.read_only) return Status::Ok();
  return Refuse(Code::kPermissionDenied, op, path, "the mount is read-only");
}

Result<std::string> ObjectFs::NewEntryPath(Ino parent, std::string_view name, std::string_view op) {
  STRATA_RETURN_IF_ERROR(CheckName(name));
  std::string path;
  {
    InodeTable::Lock lock(inodes_);
    const Inode* p = inodes_.FindDir(parent);
    if (p == nullptr) return NotFoundError("no directory inode " + std::to_string(parent));
    path = ChildPath(p->path, name);
  }
  STRATA_RETURN_IF_ERROR(CheckWritable(op, path));
  if (Status st = object::ValidateKey(path + "/"); !st.ok()) return OutOfRangeError(st.message());
  return path;
}

// ---- the table's own ----

Result<std::string> ObjectFs::PathOf(Ino ino) const { return inodes_.PathOf(ino); }

FsCounters ObjectFs::counters() const { return counters_.Snapshot(meta_loads_.Joins()); }

void ObjectFs::AddLookup(Ino ino) { inodes_.AddLookup(ino); }

void ObjectFs::Forget(Ino ino, uint64_t n) { inodes_.Forget(ino, n); }

// ---- lookups ----

Result<Entry> ObjectFs::ProbeChild(Ino parent, const std::string& name) {
  std::string parent_path;
  {
    InodeTable::Lock lock(inodes_);
    const Inode* p = inodes_.FindDir(parent);
    if (p == nullptr) return NotFoundError("no directory inode " + std::to_string(parent));
    parent_path = p->path;
  }
  const std::string path = ChildPath(parent_path, name);
  if (Status st = object::ValidateKey(path + "/"); !st.ok()) return OutOfRangeError(st.message());
  // One List answers both "is there an object named path" and "is path/ a prefix".
  object::ListOptions o;
  o.prefix = path;
  o.delimiter = "/";
  std::optional<object::ObjectInfo> file;
  bool is_dir = false;
  STRATA_RETURN_IF_ERROR(ListPages(o, "looking up /" + path, [&](object::ListResult& page) {
    for (auto& obj : page.objects) {
      if (obj.key == path) file = std::move(obj);
    }
    for (const auto& p : page.common_prefixes) {
      if (p.size() == path.size() + 1) is_dir = true;
    }
    const std::string& last = page.objects.empty() ? std::string() : page.objects.back().key;
    bool passed = (!last.empty() && last > path + "/") ||
                  (!page.common_prefixes.empty() && page.common_prefixes.back() >= path + "/");
    return !passed && !is_dir;  // past where path's entries sort: the answer is known
  }));
  InodeTable::Lock lock(inodes_);
  Inode* p = inodes_.FindDir(parent);
  if (p == nullptr) return NotFoundError("directory /" + parent_path + " is gone");
  if (!is_dir && !file) {
    auto it = p->dir->children.find(name);
    if (it != p->dir->children.end()) {
      const Inode* child = inodes_.Find(it->second);
      if (child && ((child->file && child->file->writer && !child->file->writer->uploaded) ||
                    (child->dir && child->dir->local_dir)))
        return inodes_.EntryOf(*child);
      inodes_.Detach(*p, name);
    }
    return NotFoundError("/" + path + ": no such file or directory");
  }
  Inode* found = &inodes_.Upsert(*p, name, is_dir);
  if (!is_dir) {
    FileState& f = *found->file;
    if (!f.writer && found->open_handles > 0 && !f.etag.empty() && f.etag != file->etag) {
      ++counters_.new_versions;
      found = &inodes_.NewVersion(*p, *found);
    }
  }
  Inode& child = *found;
  child.attr_time = clock_.Now();
  if (!is_dir && !child.file->writer) {
    child.file->size = file->size;
    child.file->mtime = file->mtime;
    child.file->etag = file->etag;
  }
  if (!NeedsMeta(child)) return inodes_.EntryOf(child);
  const Ino ino = child.ino;
  lock.Unlock();
  LoadMeta({ino});
  lock.Relock();
  const Inode* loaded = inodes_.Find(ino);
  if (loaded == nullptr) return NotFoundError("/" + path + " is gone");
  return inodes_.EntryOf(*loaded);
}

Result<Entry> ObjectFs::Lookup(Ino parent, std::string_view name_view) {
  STRATA_RETURN_IF_ERROR(CheckName(name_view));
  std::string name(name_view);
  Ino known = 0, known_meta = 0;
  {
    InodeTable::Lock lock(inodes_);
    Inode* p = inodes_.Find(parent);
    if (p == nullptr) return NotFoundError("no directory inode " + std::to_string(parent));
    if (!p->is_dir) return InvalidArgumentError("/" + p->path + " is not a directory");
    auto it = p->dir->children.find(name);
    const bool listing_fresh = inodes_.ListingFresh(*p);
    if (it != p->dir->children.end()) {
      Inode* child = inodes_.Find(it->second);
      const bool fresh = child && (listing_fresh || inodes_.AttrFresh(*child));
      if (fresh && !NeedsMeta(*child)) {
        ++child->nlookup;
        return inodes_.EntryOf(*child);
      }
      if (fresh) known_meta = child->ino;
      if (child && !child->is_dir && !options_.strict_revalidate) known = child->ino;
    } else if (listing_fresh) {
      return NotFoundError("/" + ChildPath(p->path, name) + ": no such file or directory");
    }
  }
  // Known, but its attributes could not be read yet (a HEAD failed): try again.
  if (known_meta != 0) {
    EnsureMeta(known_meta);
    InodeTable::Lock lock(inodes_);
    if (Inode* child = inodes_.Find(known_meta); child && child->attached) {
      ++child->nlookup;
      return inodes_.EntryOf(*child);
    }
  }
  // A file seen before: revalidated with its whole directory (one LIST),
  // bounded (the cached entry when the backend fails or hangs); when the
  // fresh listing lacks it, it is gone; otherwise probe the name afresh.
  if (known != 0) {
    Status st = Revalidate(known);
    InodeTable::Lock lock(inodes_);
    Inode* child = inodes_.Find(known);
    if (st.ok() && child && child->attached && child->parent == parent && child->name == name) {
      ++child->nlookup;
      return inodes_.EntryOf(*child);
    }
    Inode* p = inodes_.FindDir(parent);
    if (p && inodes_.ListingFresh(*p)) {
      auto it = p->dir->children.find(name);
      if (it == p->dir->children.end())
        return NotFoundError("/" + ChildPath(p->path, name) + ": no such file or directory");
      if (Inode* now = inodes_.Find(it->second)) {
        ++now->nlookup;
        return inodes_.EntryOf(*now);
      }
    }
  }
  // Programs that open many files by path rarely list first: list the
  // directory in the background so the next lookups in it need no request.
  bool list_parent = false;
  if (prefetch_pool_) {
    InodeTable::Lock lock(inodes_);
    const Inode* p = inodes_.FindDir(parent);
    list_parent = p && !listings_.InFlight(parent) && !inodes_.ListingFresh(*p);
  }
  if (list_parent) PrefetchSubdirs({parent});
  STRATA_ASSIGN_OR_RETURN(Entry e, ProbeChild(parent, name));
  AddLookup(e.attr.ino);
  return e;
}

Result<Ino> ObjectFs::ResolveChild(Ino parent, std::string_view name) {
  STRATA_ASSIGN_OR_RETURN(Entry e, Lookup(parent, name));
  Forget(e.attr.ino, 1);
  return e.attr.ino;
}

Result<Attr> ObjectFs::GetAttr(Ino ino) {
  {
    InodeTable::Lock lock(inodes_);
    const Inode* inode = inodes_.Find(ino);
    if (inode == nullptr) return NotFoundError("no inode " + std::to_string(ino));
    if ((inode->is_dir || !inode->attached || inodes_.AttrFresh(*inode)) && !NeedsMeta(*inode))
      return inodes_.AttrOf(*inode);
  }
  STRATA_RETURN_IF_ERROR(Revalidate(ino));
  EnsureMeta(ino);
  InodeTable::Lock lock(inodes_);
  const Inode* inode = inodes_.Find(ino);
  if (inode == nullptr) return NotFoundError("no inode " + std::to_string(ino));
  return inodes_.AttrOf(*inode);
}

// ---- directory snapshots ----

Result<uint64_t> ObjectFs::OpenDir(Ino ino) {
  {
    InodeTable::Lock lock(inodes_);
    const Inode* dir = inodes_.Find(ino);
    if (dir == nullptr) return NotFoundError("no inode " + std::to_string(ino));
    if (!dir->is_dir) return InvalidArgumentError("/" + dir->path + " is not a directory");
  }
  STRATA_RETURN_IF_ERROR(EnsureListed(ino, true));
  auto snap = std::make_shared<DirSnapshot>();
  {
    InodeTable::Lock lock(inodes_);
    const Inode* dir = inodes_.FindDir(ino);
    if (dir == nullptr) return NotFoundError("directory inode " + std::to_string(ino) + " is gone");
    snap->items.reserve(dir->dir->children.size() + 2);
    snap->items.push_back({".", inodes_.AttrOf(*dir)});
    const Inode* parent = inodes_.Find(dir->parent);
    snap->items.push_back({"..", inodes_.AttrOf(parent ? *parent : *dir)});
    for (const auto& [name, child_ino] : dir->dir->children) {
      if (const Inode* child = inodes_.Find(child_ino)) snap->items.push_back({name, inodes_.AttrOf(*child)});
    }
  }
  MutexLock lock(handles_mu_);
  const uint64_t dh = next_fh_++;
  dirs_[dh] = std::move(snap);
  return dh;
}

Result<std::shared_ptr<const DirSnapshot>> ObjectFs::ReadDir(uint64_t dh) {
  MutexLock lock(handles_mu_);
  auto it = dirs_.find(dh);
  if (it == dirs_.end()) return InvalidArgumentError("no open directory handle " + std::to_string(dh));
  return it->second;
}

void ObjectFs::ReleaseDir(uint64_t dh) {
  MutexLock lock(handles_mu_);
  dirs_.erase(dh);
}

}  // namespace strata::fs

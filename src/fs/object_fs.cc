// ObjectFs: namespace operations (inodes, listings, lookups, directory
// changes). File data (open, read, write, upload) is in object_fs_io.cc.
#include "fs/object_fs.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <utility>

#include "base/log.h"
#include "fs/object_fs_internal.h"
#include "object/transfer.h"

namespace strata::fs {

namespace {
constexpr size_t kMaxName = 255;
constexpr size_t kMaxPrefetchPerListing = 1024;

// Backend failures below the namespace surface as IOError naming the object,
// except NotFound (ENOENT is the honest answer) and codes the caller set.
Status Backend(const Status& st, std::string_view what) {
  if (st.ok() || st.code() == Code::kNotFound) return st;
  return Status(Code::kIOError, std::string(what) + ": " + st.message(), st.cause(), st.retryable())
      .WithForeignCode(st.foreign_code());
}
}  // namespace

ObjectFs::ObjectFs(std::shared_ptr<cache::CachedStore> store, FsOptions options)
    : store_(std::move(store)),
      options_(std::move(options)),
      clock_(options_.clock ? *options_.clock : RealClock()),
      local_(options_.local ? *options_.local : io::DefaultFileSystem()),
      mount_time_(clock_.WallNow()) {
  auto root = std::make_unique<Inode>();
  root->ino = kRootIno;
  root->parent = kRootIno;
  root->is_dir = true;
  root->perm = options_.dir_mode & 07777;
  root->uid = options_.uid;
  root->gid = options_.gid;
  root->nlookup = 1;
  by_path_[""] = kRootIno;
  inodes_[kRootIno] = std::move(root);
  SweepStaleWriteBuffers();
  if (options_.dir_prefetch > 0) prefetch_pool_ = std::make_unique<ThreadPool>(options_.dir_prefetch, "strata-fs-list");
  backend_pool_ = std::make_unique<ThreadPool>(16, "strata-fs-wait");
}

ObjectFs::~ObjectFs() {
  backend_pool_.reset();
  prefetch_pool_.reset();
}

// ---- attributes ----

Attr ObjectFs::AttrOf(const Inode& inode) const {
  Attr a;
  a.ino = inode.ino;
  a.is_dir = inode.is_dir;
  a.uid = inode.uid;
  a.gid = inode.gid;
  if (inode.is_dir) {
    a.size = 4096;
    a.nlink = 2;
    a.mtime = inode.meta_mtime.value_or(mount_time_);
    a.mode = S_IFDIR | inode.perm;
  } else {
    a.size = inode.writer ? inode.writer->size.load() : inode.size;
    a.nlink = 1;
    a.mtime = inode.meta_mtime.value_or(inode.mtime);
    a.mode = (inode.symlink ? S_IFLNK : S_IFREG) | inode.perm;
  }
  return a;
}

Entry ObjectFs::EntryOf(const Inode& inode) const {
  // A file being written here is authoritative locally; keep the kernel from
  // caching its growing size for long.
  bool local = inode.writer != nullptr;
  return Entry{AttrOf(inode), local ? Duration(0) : options_.attr_ttl, options_.entry_ttl};
}

std::string ObjectFs::ChildPath(const std::string& dir, std::string_view name) {
  return dir.empty() ? std::string(name) : dir + "/" + std::string(name);
}

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
  {
    MutexLock lock(mu_);
    ++counters_.refused;
  }
  STRATA_LOG_WARN("mount: {} /{} refused: {}", op, path, why);
  return Status(code, std::string(op) + " /" + path + ": " + std::string(why));
}

Status ObjectFs::CheckWritable(std::string_view op, const std::string& path) {
  if (!options_.read_only) return Status::Ok();
  return Refuse(Code::kPermissionDenied, op, path, "the mount is read-only");
}

// ---- inode table ----

ObjectFs::Inode* ObjectFs::FindLocked(Ino ino) {
  auto it = inodes_.find(ino);
  return it == inodes_.end() ? nullptr : it->second.get();
}

const ObjectFs::Inode* ObjectFs::FindLocked(Ino ino) const {
  auto it = inodes_.find(ino);
  return it == inodes_.end() ? nullptr : it->second.get();
}

ObjectFs::Inode& ObjectFs::UpsertLocked(Inode& parent, const std::string& name, bool is_dir) {
  std::string path = ChildPath(parent.path, name);
  std::string key = is_dir ? path + "/" : path;
  Inode* inode = nullptr;
  if (auto it = by_path_.find(key); it != by_path_.end()) inode = FindLocked(it->second);
  if (inode == nullptr) {
    auto fresh = std::make_unique<Inode>();
    fresh->ino = next_ino_++;
    fresh->is_dir = is_dir;
    fresh->perm = (is_dir ? options_.dir_mode : options_.file_mode) & 07777;
    fresh->uid = options_.uid;
    fresh->gid = options_.gid;
    inode = fresh.get();
    by_path_[key] = inode->ino;
    inodes_[inode->ino] = std::move(fresh);
  }
  inode->parent = parent.ino;
  inode->name = name;
  inode->path = path;
  inode->attached = true;
  parent.children[name] = inode->ino;
  return *inode;
}

void ObjectFs::DetachLocked(Inode& parent, const std::string& name) {
  auto it = parent.children.find(name);
  if (it == parent.children.end()) return;
  Ino ino = it->second;
  parent.children.erase(it);
  ++parent.generation;
  Inode* inode = FindLocked(ino);
  if (inode == nullptr) return;
  std::string key = inode->is_dir ? inode->path + "/" : inode->path;
  if (auto p = by_path_.find(key); p != by_path_.end() && p->second == ino) by_path_.erase(p);
  inode->attached = false;
  if (inode->writer) inode->writer->unlinked = true;
  if (inode->nlookup == 0 && inode->open_handles == 0) inodes_.erase(ino);
}

bool ObjectFs::ListingFreshLocked(const Inode& dir) const {
  return dir.listed && clock_.Now() - dir.listed_at < options_.dir_ttl;
}

bool ObjectFs::AttrFreshLocked(const Inode& inode) const {
  return inode.writer != nullptr || clock_.Now() - inode.attr_time < options_.attr_ttl;
}

Result<std::string> ObjectFs::PathOf(Ino ino) const {
  MutexLock lock(mu_);
  const Inode* inode = FindLocked(ino);
  if (inode == nullptr) return NotFoundError("no inode " + std::to_string(ino));
  return inode->path;
}

FsCounters ObjectFs::counters() const {
  MutexLock lock(mu_);
  return counters_;
}

void ObjectFs::AddLookup(Ino ino) {
  MutexLock lock(mu_);
  if (Inode* inode = FindLocked(ino)) ++inode->nlookup;
}

void ObjectFs::Forget(Ino ino, uint64_t n) {
  if (ino == kRootIno) return;
  MutexLock lock(mu_);
  Inode* inode = FindLocked(ino);
  if (inode == nullptr) return;
  inode->nlookup -= std::min(n, inode->nlookup);
  // Attached inodes stay (their numbers are stable for the mount's life).
  if (!inode->attached && inode->nlookup == 0 && inode->open_handles == 0) inodes_.erase(ino);
}

// ---- listings ----

Status ObjectFs::ListPages(const object::ListOptions& o, const std::string& what,
                           const std::function<bool(object::ListResult& page)>& on_page) {
  auto count = [this] {
    MutexLock lock(mu_);
    ++counters_.lists;
  };
  Status st = object::ForEachListPage(*store_, o, [&](object::ListResult& page) {
    count();
    return on_page(page);
  });
  if (st.ok()) return st;
  count();  // the List that failed
  return Backend(st, what);
}

Status ObjectFs::ListNow(Ino dir_ino) {
  std::vector<Ino> need_meta;
  for (int attempt = 0;; ++attempt) {
    std::string prefix;
    uint64_t generation = 0;
    {
      MutexLock lock(mu_);
      Inode* dir = FindLocked(dir_ino);
      if (dir == nullptr || !dir->is_dir)
        return NotFoundError("directory inode " + std::to_string(dir_ino) + " is gone");
      prefix = DirKey(dir->path);
      generation = dir->generation;
    }
    std::map<std::string, object::ObjectInfo> files;
    std::vector<std::string> dirs;
    std::optional<object::ObjectInfo> marker;
    object::ListOptions o;
    o.prefix = prefix;
    o.delimiter = "/";
    STRATA_RETURN_IF_ERROR(ListPages(o, "listing /" + prefix, [&](object::ListResult& page) {
      for (auto& obj : page.objects) {
        std::string name = obj.key.substr(prefix.size());
        if (name.empty()) marker = obj;  // this directory's own marker: its attributes' version
        if (CheckName(name).ok()) files.emplace(std::move(name), std::move(obj));
      }
      for (const auto& p : page.common_prefixes) {
        if (p.size() <= prefix.size() + 1) continue;
        std::string name = p.substr(prefix.size(), p.size() - prefix.size() - 1);
        if (CheckName(name).ok()) dirs.push_back(std::move(name));
      }
      return true;
    }));

    MutexLock lock(mu_);
    Inode* dir = FindLocked(dir_ino);
    if (dir == nullptr) return NotFoundError("directory /" + prefix + " is gone");
    if (dir->generation != generation && attempt < 2) continue;  // changed here meanwhile: list again
    // The marker changed (a chmod by another client): read its attributes again.
    if (marker && dir->meta_known && dir->meta_version != MetaVersion(marker->etag, marker->mtime))
      dir->meta_known = false;
    const TimePoint now = clock_.Now();
    std::map<std::string, Ino> old = std::move(dir->children);
    dir->children.clear();
    for (const auto& name : dirs) {
      Inode& child = UpsertLocked(*dir, name, true);
      child.attr_time = now;
      child.local_dir = false;
    }
    for (auto& [name, info] : files) {
      if (dir->children.count(name)) {
        STRATA_LOG_DEBUG("mount: /{}{} is both an object and a prefix; showing the directory", prefix, name);
        continue;
      }
      Inode* found = &UpsertLocked(*dir, name, false);
      if (found->writer) continue;  // being written here: the local bytes win
      if (found->open_handles > 0 && !found->etag.empty() && found->etag != info.etag)
        found = &NewVersionLocked(*dir, *found);
      Inode& child = *found;
      child.size = info.size;
      child.mtime = info.mtime;
      child.etag = info.etag;
      child.attr_time = now;
    }
    // Files created here and not uploaded yet are not in the listing: keep them.
    for (const auto& [name, ino] : old) {
      if (dir->children.count(name)) continue;
      Inode* child = FindLocked(ino);
      if (child && ((child->writer && !child->writer->uploaded && !child->writer->unlinked) || child->local_dir)) {
        dir->children[name] = ino;
        continue;
      }
      if (child) {
        std::string key = child->is_dir ? child->path + "/" : child->path;
        if (auto p = by_path_.find(key); p != by_path_.end() && p->second == ino) by_path_.erase(p);
        child->attached = false;
      }
    }
    dir->listed = true;
    dir->listed_at = now;
    if (NeedsMetaLocked(*dir)) need_meta.push_back(dir_ino);
    for (const auto& [name, ino] : dir->children) {
      const Inode* child = FindLocked(ino);
      if (child && NeedsMetaLocked(*child)) need_meta.push_back(ino);
    }
    break;
  }
  // Metadata is not listed: the attributes of versions new here cost a HEAD each, in parallel.
  if (!need_meta.empty()) LoadMeta(need_meta);
  return Status::Ok();
}

Status ObjectFs::EnsureListed(Ino dir_ino, bool user_initiated, std::optional<Duration> max_age) {
  std::vector<Ino> subdirs;
  {
    MutexLock lock(mu_);
    // The predicate runs with mu_ held (the analysis cannot see that through the lambda).
    listed_cv_.Wait(lock, [&]() NO_THREAD_SAFETY_ANALYSIS {
      const Inode* dir = FindLocked(dir_ino);
      return dir == nullptr || !dir->listing;
    });
    Inode* dir = FindLocked(dir_ino);
    if (dir == nullptr) return NotFoundError("no directory inode " + std::to_string(dir_ino));
    if (ListingFreshLocked(*dir) && (!max_age || clock_.Now() - dir->listed_at < *max_age)) return Status::Ok();
    dir->listing = true;
  }
  Status st = ListNow(dir_ino);
  {
    MutexLock lock(mu_);
    if (Inode* dir = FindLocked(dir_ino)) {
      dir->listing = false;
      if (st.ok() && user_initiated) {
        for (const auto& [name, ino] : dir->children) {
          const Inode* child = FindLocked(ino);
          if (child && child->is_dir && !child->listing && !ListingFreshLocked(*child)) subdirs.push_back(ino);
          if (subdirs.size() >= kMaxPrefetchPerListing) break;
        }
      }
    }
    listed_cv_.NotifyAll();
  }
  if (!subdirs.empty()) PrefetchSubdirs(subdirs);
  return st;
}

// `find` and `ls -R` walk a tree one directory at a time; listing the next
// few ahead in parallel turns N round trips into N / dir_prefetch. Also used
// to list a directory in which names are being looked up one by one.
void ObjectFs::PrefetchSubdirs(const std::vector<Ino>& dirs) {
  if (!prefetch_pool_) return;
  for (Ino ino : dirs) {
    prefetch_pool_->Submit([this, ino] {
      Status st = EnsureListed(ino, false);
      MutexLock lock(mu_);
      ++counters_.prefetched_dirs;
      if (!st.ok()) STRATA_LOG_DEBUG("mount: listing ahead inode {} failed: {}", ino, st.ToString());
    });
  }
}

// ---- lookups ----

Result<Entry> ObjectFs::ProbeChild(Ino parent, const std::string& name) {
  std::string parent_path;
  {
    MutexLock lock(mu_);
    Inode* p = FindLocked(parent);
    if (p == nullptr || !p->is_dir) return NotFoundError("no directory inode " + std::to_string(parent));
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
  MutexLock lock(mu_);
  Inode* p = FindLocked(parent);
  if (p == nullptr) return NotFoundError("directory /" + parent_path + " is gone");
  if (!is_dir && !file) {
    auto it = p->children.find(name);
    if (it != p->children.end()) {
      Inode* child = FindLocked(it->second);
      if (child && ((child->writer && !child->writer->uploaded) || child->local_dir)) return EntryOf(*child);
      DetachLocked(*p, name);
    }
    return NotFoundError("/" + path + ": no such file or directory");
  }
  Inode* found = &UpsertLocked(*p, name, is_dir);
  if (!is_dir && !found->writer && found->open_handles > 0 && !found->etag.empty() && found->etag != file->etag)
    found = &NewVersionLocked(*p, *found);
  Inode& child = *found;
  child.attr_time = clock_.Now();
  if (!is_dir && !child.writer) {
    child.size = file->size;
    child.mtime = file->mtime;
    child.etag = file->etag;
  }
  if (!NeedsMetaLocked(child)) return EntryOf(child);
  const Ino ino = child.ino;
  lock.Unlock();
  LoadMeta({ino});
  lock.Lock();
  const Inode* loaded = FindLocked(ino);
  if (loaded == nullptr) return NotFoundError("/" + path + " is gone");
  return EntryOf(*loaded);
}

Result<Entry> ObjectFs::Lookup(Ino parent, std::string_view name_view) {
  STRATA_RETURN_IF_ERROR(CheckName(name_view));
  std::string name(name_view);
  Ino known = 0, known_meta = 0;
  {
    MutexLock lock(mu_);
    Inode* p = FindLocked(parent);
    if (p == nullptr) return NotFoundError("no directory inode " + std::to_string(parent));
    if (!p->is_dir) return InvalidArgumentError("/" + p->path + " is not a directory");
    auto it = p->children.find(name);
    bool listing_fresh = ListingFreshLocked(*p);
    if (it != p->children.end()) {
      Inode* child = FindLocked(it->second);
      if (child && (listing_fresh || AttrFreshLocked(*child)) && !NeedsMetaLocked(*child)) {
        ++child->nlookup;
        return EntryOf(*child);
      }
      if (child && (listing_fresh || AttrFreshLocked(*child))) known_meta = child->ino;
      if (child && !child->is_dir && !options_.strict_revalidate) known = child->ino;
    } else if (listing_fresh) {
      return NotFoundError("/" + ChildPath(p->path, name) + ": no such file or directory");
    }
  }
  // Known, but its attributes could not be read yet (a HEAD failed): try again.
  if (known_meta != 0) {
    EnsureMeta(known_meta);
    MutexLock lock(mu_);
    if (Inode* child = FindLocked(known_meta); child && child->attached) {
      ++child->nlookup;
      return EntryOf(*child);
    }
  }
  // A file seen before: revalidated with its whole directory (one LIST),
  // bounded (the cached entry when the backend fails or hangs); when the
  // fresh listing lacks it, it is gone; otherwise probe the name afresh.
  if (known != 0) {
    Status st = Revalidate(known);
    MutexLock lock(mu_);
    Inode* child = FindLocked(known);
    if (st.ok() && child && child->attached && child->parent == parent && child->name == name) {
      ++child->nlookup;
      return EntryOf(*child);
    }
    Inode* p = FindLocked(parent);
    if (p && ListingFreshLocked(*p)) {
      auto it = p->children.find(name);
      if (it == p->children.end()) return NotFoundError("/" + ChildPath(p->path, name) + ": no such file or directory");
      if (Inode* now = FindLocked(it->second)) {
        ++now->nlookup;
        return EntryOf(*now);
      }
    }
  }
  // Programs that open many files by path rarely list first: list the
  // directory in the background so the next lookups in it need no request.
  bool list_parent = false;
  if (prefetch_pool_) {
    MutexLock lock(mu_);
    Inode* p = FindLocked(parent);
    list_parent = p && !p->listing && !ListingFreshLocked(*p);
  }
  if (list_parent) PrefetchSubdirs({parent});
  STRATA_ASSIGN_OR_RETURN(Entry e, ProbeChild(parent, name));
  AddLookup(e.attr.ino);
  return e;
}

// The inode of an existing child, without adding a lookup reference.
Result<Ino> ObjectFs::ResolveChild(Ino parent, std::string_view name) {
  STRATA_ASSIGN_OR_RETURN(Entry e, Lookup(parent, name));
  Forget(e.attr.ino, 1);
  return e.attr.ino;
}

Status ObjectFs::Revalidate(Ino ino) {
  std::shared_ptr<BackendCall> call;
  bool start = false;
  std::string path;
  Ino parent = 0;
  {
    MutexLock lock(mu_);
    Inode* inode = FindLocked(ino);
    if (inode == nullptr) return NotFoundError("no inode " + std::to_string(ino));
    if (inode->is_dir || !inode->attached || AttrFreshLocked(*inode)) return Status::Ok();
    path = inode->path;
    parent = inode->parent;
    Inode* dir = FindLocked(parent);
    if (dir == nullptr) return NotFoundError("directory of /" + path + " is gone");
    if (!options_.strict_revalidate) {
      // Single flight per directory: the files of one directory expire
      // together, and their opens share one listing.
      call = dir->revalidation;
      if (call) {
        // A failed revalidation is kept for the read backoff, so the opens
        // after it serve the cached version at once instead of each waiting
        // on a backend that refuses; then the next one tries again.
        MutexLock cl(call->mu);
        if (call->done && clock_.Now() >= call->failed_at + options_.failed_read_backoff) call.reset();
      }
      if (!call) {
        call = dir->revalidation = std::make_shared<BackendCall>();
        start = true;
      }
    }
  }
  // The whole directory in one LIST (1,000 keys a page, with sizes and
  // ETags) refreshes every file in it, not a HEAD per file; a listing newer
  // than attr_ttl (another caller's) is taken as it is.
  auto revalidate = [this, parent] { return EnsureListed(parent, false, options_.attr_ttl); };
  // After the listing: a file missing from it is gone.
  auto outcome = [this, ino, path](Status st) {
    if (!st.ok()) return st;
    MutexLock lock(mu_);
    const Inode* inode = FindLocked(ino);
    // A newer version took the path: this inode still answers for the version its handles read.
    if (inode == nullptr || (!inode->attached && !inode->superseded))
      return NotFoundError("/" + path + ": no such file");
    return Status::Ok();
  };
  if (!call) return outcome(revalidate());  // strict: wait as long as the backend takes
  if (start) {
    backend_pool_->Submit([this, parent, call, revalidate] {
      Status st = RunGuarded("mount: revalidating attributes", revalidate);
      if (st.ok() || st.code() == Code::kNotFound) {  // a failure stays, remembered (above)
        MutexLock lock(mu_);
        if (Inode* dir = FindLocked(parent); dir && dir->revalidation == call) dir->revalidation.reset();
      } else {
        MutexLock cl(call->mu);
        call->failed_at = clock_.Now();
      }
      call->Finish(st);
    });
  }
  // A revalidation already overdue (the backend hangs) is not waited for again.
  const auto overdue = call->started + options_.revalidate_timeout;
  const bool answered = std::chrono::steady_clock::now() < overdue
                            ? call->WaitFor(overdue - std::chrono::steady_clock::now())
                            : call->WaitFor(Duration(0));
  Status st;
  bool log = false;
  {
    MutexLock lock(call->mu);
    if (answered) st = call->status;
    log = !std::exchange(call->stale_logged, true);  // one line per revalidation, not per caller
  }
  if (!answered) {
    st = DeadlineExceededError(
        "no answer within " +
        std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(options_.revalidate_timeout).count()) +
        " ms");
  }
  // Confirmed, or gone (the listing detached it): nothing cached to serve.
  if (st.ok() || st.code() == Code::kNotFound) return outcome(st);
  {
    MutexLock lock(mu_);
    ++counters_.stale_served;
  }
  if (log) STRATA_LOG_WARN("mount: could not revalidate /{} ({}); serving the cached version", path, st.ToString());
  return Status::Ok();
}

Result<Attr> ObjectFs::GetAttr(Ino ino) {
  {
    MutexLock lock(mu_);
    Inode* inode = FindLocked(ino);
    if (inode == nullptr) return NotFoundError("no inode " + std::to_string(ino));
    if ((inode->is_dir || !inode->attached || AttrFreshLocked(*inode)) && !NeedsMetaLocked(*inode))
      return AttrOf(*inode);
  }
  STRATA_RETURN_IF_ERROR(Revalidate(ino));
  EnsureMeta(ino);
  MutexLock lock(mu_);
  Inode* inode = FindLocked(ino);
  if (inode == nullptr) return NotFoundError("no inode " + std::to_string(ino));
  return AttrOf(*inode);
}

// ---- directories ----

Result<uint64_t> ObjectFs::OpenDir(Ino ino) {
  {
    MutexLock lock(mu_);
    Inode* dir = FindLocked(ino);
    if (dir == nullptr) return NotFoundError("no inode " + std::to_string(ino));
    if (!dir->is_dir) return InvalidArgumentError("/" + dir->path + " is not a directory");
  }
  STRATA_RETURN_IF_ERROR(EnsureListed(ino, true));
  auto snap = std::make_shared<DirSnapshot>();
  MutexLock lock(mu_);
  Inode* dir = FindLocked(ino);
  if (dir == nullptr) return NotFoundError("directory inode " + std::to_string(ino) + " is gone");
  snap->items.reserve(dir->children.size() + 2);
  snap->items.push_back({".", AttrOf(*dir)});
  const Inode* parent = FindLocked(dir->parent);
  snap->items.push_back({"..", AttrOf(parent ? *parent : *dir)});
  for (const auto& [name, child_ino] : dir->children) {
    if (const Inode* child = FindLocked(child_ino)) snap->items.push_back({name, AttrOf(*child)});
  }
  uint64_t dh = next_fh_++;
  dirs_[dh] = std::move(snap);
  return dh;
}

Result<std::shared_ptr<const DirSnapshot>> ObjectFs::ReadDir(uint64_t dh) {
  MutexLock lock(mu_);
  auto it = dirs_.find(dh);
  if (it == dirs_.end()) return InvalidArgumentError("no open directory handle " + std::to_string(dh));
  return it->second;
}

void ObjectFs::ReleaseDir(uint64_t dh) {
  MutexLock lock(mu_);
  dirs_.erase(dh);
}

Result<Entry> ObjectFs::Mkdir(Ino parent, std::string_view name_view, uint32_t mode) {
  STRATA_RETURN_IF_ERROR(CheckName(name_view));
  std::string name(name_view), path;
  {
    MutexLock lock(mu_);
    Inode* p = FindLocked(parent);
    if (p == nullptr || !p->is_dir) return NotFoundError("no directory inode " + std::to_string(parent));
    path = ChildPath(p->path, name);
  }
  STRATA_RETURN_IF_ERROR(CheckWritable("mkdir", path));
  auto existing = ResolveChild(parent, name);
  if (existing.ok()) return AlreadyExistsError("/" + path + " already exists");
  if (existing.status().code() != Code::kNotFound) return existing.status();
  if (Status st = object::ValidateKey(path + "/"); !st.ok()) return OutOfRangeError(st.message());
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
  if (MetaKept()) EncodePosixMeta({S_IFDIR | perm, options_.uid, options_.gid, now}, &meta.user);
  if (!local_only) {
    object::PutOptions po;
    po.metadata = meta;
    if (auto put = store_->Put(path + "/", Buffer(), po); !put.ok()) return Backend(put.status(), "mkdir /" + path);
  }
  MutexLock lock(mu_);
  Inode* p = FindLocked(parent);
  if (p == nullptr) return NotFoundError("directory inode " + std::to_string(parent) + " is gone");
  ++p->generation;
  Inode& dir = UpsertLocked(*p, name, true);
  dir.perm = perm;
  dir.uid = options_.uid;
  dir.gid = options_.gid;
  dir.meta_mtime = now;
  dir.meta = meta;
  dir.meta_known = true;
  dir.local_dir = local_only;
  dir.made_here = true;
  dir.attr_time = clock_.Now();
  dir.listed = true;
  dir.listed_at = clock_.Now();
  dir.children.clear();
  ++dir.nlookup;
  return EntryOf(dir);
}

// Non-empty: a child here not yet uploaded, or anything under the prefix but its marker.
Result<bool> ObjectFs::DirHasChildren(Ino ino, const std::string& path) {
  {
    MutexLock lock(mu_);
    Inode* dir = FindLocked(ino);
    if (dir == nullptr) return NotFoundError("/" + path + " is gone");
    for (const auto& [name, child_ino] : dir->children) {
      const Inode* child = FindLocked(child_ino);
      if (child && child->writer && !child->writer->uploaded && !child->writer->unlinked) return true;
    }
  }
  object::ListOptions o;
  o.prefix = path + "/";
  o.delimiter = "/";
  o.max_keys = 2;
  auto page = store_->List(o);
  if (!page.ok()) return Backend(page.status(), "listing /" + path);
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
    MutexLock lock(mu_);
    Inode* dir = FindLocked(ino);
    if (dir == nullptr) return NotFoundError("inode " + std::to_string(ino) + " is gone");
    if (!dir->is_dir) return InvalidArgumentError("/" + dir->path + " is not a directory");
    path = dir->path;
    local_dir = dir->local_dir;
  }
  STRATA_RETURN_IF_ERROR(CheckWritable("rmdir", path));
  STRATA_ASSIGN_OR_RETURN(bool busy, DirHasChildren(ino, path));
  if (busy) return PreconditionFailedError("/" + path + ": directory not empty");
  if (!local_dir && store_->Capabilities().directory_markers) {
    Status del = store_->Delete(path + "/");
    if (!del.ok()) return Backend(del, "rmdir /" + path);
  }
  MutexLock lock(mu_);
  if (Inode* p = FindLocked(parent)) DetachLocked(*p, name);
  return Status::Ok();
}

Status ObjectFs::Link(Ino ino, Ino, std::string_view new_name) {
  return Refuse(Code::kPermissionDenied, "link", std::string(new_name),
                "hard links cannot be stored in an object store");
}

Status ObjectFs::Mknod(Ino, std::string_view name, uint32_t) {
  return Refuse(Code::kPermissionDenied, "mknod", std::string(name),
                "only regular files, directories and symbolic links are stored");
}

}  // namespace strata::fs

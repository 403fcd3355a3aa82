// ObjectFs: directory listings (one in flight per directory), subdirectory
// listings fetched ahead, and the revalidation of expired attributes by
// listing (bounded in time, one in flight per directory).
#include <algorithm>
#include <utility>

#include "base/log.h"
#include "fs/object_fs.h"
#include "fs/object_fs_internal.h"
#include "object/transfer.h"

namespace strata::fs {

namespace {
constexpr size_t kMaxPrefetchPerListing = 1024;
}  // namespace

Status ObjectFs::ListPages(const object::ListOptions& o, const std::string& what,
                           const std::function<bool(object::ListResult& page)>& on_page) {
  Status st = object::ForEachListPage(*store_, o, [&](object::ListResult& page) {
    ++counters_.lists;
    return on_page(page);
  });
  if (st.ok()) return st;
  ++counters_.lists;  // the List that failed
  return BackendError(st, what);
}

Status ObjectFs::ListNow(Ino dir_ino) {
  std::vector<Ino> need_meta;
  for (int attempt = 0;; ++attempt) {
    std::string prefix;
    uint64_t generation = 0;
    {
      InodeTable::Lock lock(inodes_);
      const Inode* dir = inodes_.FindDir(dir_ino);
      if (dir == nullptr) return NotFoundError("directory inode " + std::to_string(dir_ino) + " is gone");
      prefix = DirKey(dir->path);
      generation = dir->dir->generation;
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

    InodeTable::Lock lock(inodes_);
    Inode* dir = inodes_.FindDir(dir_ino);
    if (dir == nullptr) return NotFoundError("directory /" + prefix + " is gone");
    if (dir->dir->generation != generation && attempt < 2) continue;  // changed here meanwhile: list again
    // The marker changed (a chmod by another client): read its attributes again.
    if (marker && dir->posix.known && dir->posix.version != MetaVersion(marker->etag, marker->mtime))
      dir->posix.known = false;
    const TimePoint now = clock_.Now();
    std::map<std::string, Ino> old = std::move(dir->dir->children);
    dir->dir->children.clear();
    for (const auto& name : dirs) {
      Inode& child = inodes_.Upsert(*dir, name, true);
      child.attr_time = now;
      child.dir->local_dir = false;
    }
    for (auto& [name, info] : files) {
      if (dir->dir->children.count(name)) {
        STRATA_LOG_DEBUG("mount: /{}{} is both an object and a prefix; showing the directory", prefix, name);
        continue;
      }
      Inode* found = &inodes_.Upsert(*dir, name, false);
      if (found->file->writer) continue;  // being written here: the local bytes win
      if (found->open_handles > 0 && !found->file->etag.empty() && found->file->etag != info.etag) {
        ++counters_.new_versions;
        found = &inodes_.NewVersion(*dir, *found);
      }
      FileState& f = *found->file;
      f.size = info.size;
      f.mtime = info.mtime;
      f.etag = info.etag;
      found->attr_time = now;
    }
    // Files created here and not uploaded yet are not in the listing: keep them.
    for (const auto& [name, ino] : old) {
      if (dir->dir->children.count(name)) continue;
      Inode* child = inodes_.Find(ino);
      if (child == nullptr) continue;
      const bool pending =
          child->file && child->file->writer && !child->file->writer->uploaded && !child->file->writer->unlinked;
      if (pending || (child->dir && child->dir->local_dir)) {
        dir->dir->children[name] = ino;
        continue;
      }
      inodes_.Unmap(*child);
    }
    dir->dir->listed = true;
    dir->dir->listed_at = now;
    if (NeedsMeta(*dir)) need_meta.push_back(dir_ino);
    for (const auto& [name, ino] : dir->dir->children) {
      const Inode* child = inodes_.Find(ino);
      if (child && NeedsMeta(*child)) need_meta.push_back(ino);
    }
    break;
  }
  // Metadata is not listed: the attributes of versions new here cost a HEAD each, in parallel.
  if (!need_meta.empty()) LoadMeta(need_meta);
  return Status::Ok();
}

Status ObjectFs::EnsureListed(Ino dir_ino, bool user_initiated, std::optional<Duration> max_age) {
  // Listed recently enough: nothing to do. A listing in flight is waited for
  // even when its names are in already: its attributes are still being read.
  // (Asked again inside the flight, so a caller arriving as another's listing
  // lands takes that one.)
  auto fresh = [&]() -> Result<bool> {
    InodeTable::Lock lock(inodes_);
    const Inode* dir = inodes_.FindDir(dir_ino);
    if (dir == nullptr) return NotFoundError("no directory inode " + std::to_string(dir_ino));
    return inodes_.ListingFresh(*dir) && (!max_age || clock_.Now() - dir->dir->listed_at < *max_age);
  };
  STRATA_ASSIGN_OR_RETURN(bool listed, fresh());
  if (listed && !listings_.InFlight(dir_ino)) return Status::Ok();
  bool listed_here = false;
  Status st = listings_.Do(dir_ino, [&]() -> Status {
    auto now_fresh = fresh();
    if (!now_fresh.ok() || *now_fresh) return now_fresh.status();
    listed_here = true;
    return ListNow(dir_ino);
  });
  // `find` and `ls -R` walk a tree one directory at a time: the caller that
  // listed lists the subdirectories ahead.
  if (!st.ok() || !listed_here || !user_initiated) return st;
  std::vector<Ino> subdirs;
  {
    InodeTable::Lock lock(inodes_);
    if (const Inode* dir = inodes_.FindDir(dir_ino)) {
      for (const auto& [name, ino] : dir->dir->children) {
        const Inode* child = inodes_.Find(ino);
        if (child && child->is_dir && !listings_.InFlight(ino) && !inodes_.ListingFresh(*child)) subdirs.push_back(ino);
        if (subdirs.size() >= kMaxPrefetchPerListing) break;
      }
    }
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
      ++counters_.prefetched_dirs;
      if (!st.ok()) STRATA_LOG_DEBUG("mount: listing ahead inode {} failed: {}", ino, st.ToString());
    });
  }
}

Status ObjectFs::Revalidate(Ino ino) {
  std::string path;
  Ino parent = 0;
  {
    InodeTable::Lock lock(inodes_);
    const Inode* inode = inodes_.Find(ino);
    if (inode == nullptr) return NotFoundError("no inode " + std::to_string(ino));
    if (inode->is_dir || !inode->attached || inodes_.AttrFresh(*inode)) return Status::Ok();
    path = inode->path;
    parent = inode->parent;
    if (inodes_.FindDir(parent) == nullptr) return NotFoundError("directory of /" + path + " is gone");
  }
  // The whole directory in one LIST (1,000 keys a page, with sizes and
  // ETags) refreshes every file in it, not a HEAD per file; a listing newer
  // than attr_ttl (another caller's) is taken as it is.
  auto revalidate = [this, parent] { return EnsureListed(parent, false, options_.attr_ttl); };
  // After the listing: a file missing from it is gone.
  auto outcome = [this, ino, &path](Status st) {
    if (!st.ok()) return st;
    InodeTable::Lock lock(inodes_);
    const Inode* inode = inodes_.Find(ino);
    // A newer version took the path: this inode still answers for the version its handles read.
    if (inode == nullptr || (!inode->attached && !inode->file->superseded))
      return NotFoundError("/" + path + ": no such file");
    return Status::Ok();
  };
  if (options_.strict_revalidate) return outcome(revalidate());  // waits as long as the backend takes
  // One revalidation per directory (the files of one directory expire
  // together, and their opens share one listing), run on backend_pool_ and
  // waited for until revalidate_timeout after it started: a revalidation
  // already overdue (the backend hangs) is not waited for again. A failure
  // is kept for the read backoff, so the opens after it serve the cached
  // version at once instead of each waiting on a backend that refuses; then
  // the next one tries again.
  auto failed = [](const Revalidation& r) { return !r.status.ok() && r.status.code() != Code::kNotFound; };
  revalidations_.ForgetIf(parent,
                          [&](const Revalidation& r) { return clock_.Now() >= r.at + options_.failed_read_backoff; });
  bool shared = false;
  auto done = revalidations_.DoAsync(
      parent,
      [this, revalidate] {
        Status st = RunGuarded("mount: revalidating attributes", revalidate);
        return Revalidation{st, clock_.Now()};
      },
      [this](std::function<void()> task) { backend_pool_->Submit(std::move(task)); }, options_.revalidate_timeout,
      &shared, failed);
  Status st =
      done ? done->status
           : DeadlineExceededError(
                 "no answer within " +
                 std::to_string(
                     std::chrono::duration_cast<std::chrono::milliseconds>(options_.revalidate_timeout).count()) +
                 " ms");
  // Confirmed, or gone (the listing detached it): nothing cached to serve.
  if (st.ok() || st.code() == Code::kNotFound) return outcome(st);
  ++counters_.stale_served;
  // One line per revalidation (by the caller that started it), not per caller.
  if (!shared) STRATA_LOG_WARN("mount: could not revalidate /{} ({}); serving the cached version", path, st.ToString());
  return Status::Ok();
}

}  // namespace strata::fs

// ObjectFs: file data. Reads go through one CachedStore ReadStream per
// handle (its own sequential detection and read-ahead), bounded in time
// (bounded_reads.h); writes go to a local buffer (write_buffers.h) and are
// uploaded on flush/fsync/release (multipart when large).
#include <fcntl.h>

#include <algorithm>
#include <mutex>

#include "base/log.h"
#include "fs/object_fs.h"
#include "fs/object_fs_internal.h"

namespace strata::fs {

// ---- uploads ----

Result<object::ObjectInfo> ObjectFs::UploadMultipart(const std::string& key, Writer& w, uint64_t size,
                                                     const object::PutOptions& options) {
  uint64_t part = std::max(options_.part_size, store_->MinPartSize());
  while ((size + part - 1) / part > 10000) part *= 2;
  const size_t parts = static_cast<size_t>((size + part - 1) / part);
  STRATA_ASSIGN_OR_RETURN(std::string upload_id, store_->CreateMultipartUpload(key, options));
  std::vector<object::CompletedPart> done(parts);
  std::mutex mu;
  Status first;
  ParallelFor(parts, std::max<size_t>(1, options_.upload_concurrency), [&](size_t i) {
    {
      std::lock_guard lock(mu);
      if (!first.ok()) return;
    }
    uint64_t off = i * part, len = std::min(part, size - off);
    MutableBuffer buf(len);
    auto got = w.in->ReadAt(off, len, buf.data());
    Result<std::string> etag =
        got.ok() ? store_->UploadPart(key, upload_id, static_cast<int>(i + 1), std::move(buf).Freeze())
                 : Result<std::string>(got.status());
    std::lock_guard lock(mu);
    if (got.ok() && *got != len && etag.ok()) etag = IOError("write buffer of /" + key + " shrank while uploading");
    if (!etag.ok()) {
      if (first.ok()) first = etag.status();
      return;
    }
    done[i] = object::CompletedPart{static_cast<int>(i + 1), *etag};
  });
  if (first.ok()) {
    auto info = store_->CompleteMultipartUpload(key, upload_id, done);
    if (info.ok()) return info;
    first = info.status();
  }
  store_->AbortMultipartUpload(key, upload_id).IgnoreError();
  return first;
}

Status ObjectFs::UploadLocked(Ino ino, Writer& w) {
  std::string path;
  object::PutOptions po;  // the file's attributes go with its bytes
  {
    InodeTable::Lock lock(inodes_);
    const Inode* inode = inodes_.Find(ino);
    if (inode == nullptr || w.unlinked || !inode->attached) return Status::Ok();  // removed: nothing to save
    path = inode->path;
    if (MetaKept()) po.metadata = MetaToStore(*inode);
  }
  const uint64_t size = w.size;
  Result<object::ObjectInfo> info = InternalError("not uploaded");
  bool multipart = size > options_.multipart_threshold;
  if (!multipart) {
    MutableBuffer buf(size);
    auto got = size ? w.in->ReadAt(0, size, buf.data()) : Result<size_t>(size_t{0});
    if (!got.ok()) return got.status().WithContext("uploading /" + path);
    // Never upload memory that was not read from the buffer.
    if (*got != size) return WriteBuffers::ShortBuffer(w, *got, size).status().WithContext("uploading /" + path);
    info = store_->Put(path, std::move(buf).Freeze(), po);
  } else {
    info = UploadMultipart(path, w, size, po);
  }
  if (!info.ok()) {
    STRATA_LOG_WARN("mount: upload of /{} ({} bytes) failed: {}", path, size, info.status().ToString());
    return Status(Code::kIOError, "uploading /" + path + ": " + info.status().message(), info.status().cause(),
                  info.status().retryable())
        .WithForeignCode(info.status().foreign_code());
  }
  if (info->etag.empty()) {  // some servers answer CompleteMultipartUpload without one
    if (auto head = store_->Head(path); head.ok()) info = head;
  }
  w.dirty = false;
  w.uploaded = true;
  ++counters_.uploads;
  if (multipart) ++counters_.multipart_uploads;
  InodeTable::Lock lock(inodes_);
  if (Inode* inode = inodes_.Find(ino); inode && inode->file) {
    FileState& f = *inode->file;
    f.size = size;
    f.etag = info->etag;
    f.mtime = info->mtime;
    inode->attr_time = clock_.Now();
    f.kept_etag.clear();  // the kernel's pages came from writes, not from this version
    if (MetaKept()) {
      inode->posix.stored = po.metadata;
      inode->posix.known = true;
      inode->posix.version = MetaVersion(info->etag, info->mtime);
    }
  }
  return Status::Ok();
}

Status ObjectFs::UploadIfDirty(Ino ino, const std::shared_ptr<Writer>& w) {
  MutexLock lock(w->mu);
  if (!w->dirty) return Status::Ok();
  return UploadLocked(ino, *w);
}

// ---- open / create ----

uint64_t ObjectFs::AddHandle(std::unique_ptr<Handle> handle) {
  MutexLock lock(handles_mu_);
  const uint64_t fh = next_fh_++;
  handles_[fh] = std::move(handle);
  return fh;
}

Result<OpenResult> ObjectFs::Open(Ino ino, int flags) {
  const int acc = flags & O_ACCMODE;
  const bool write = acc != O_RDONLY;
  std::string path;
  std::shared_ptr<Writer> writer;
  uint64_t size = 0;
  {
    InodeTable::Lock lock(inodes_);
    const Inode* inode = inodes_.Find(ino);
    if (inode == nullptr) return NotFoundError("no inode " + std::to_string(ino));
    if (inode->is_dir) return InvalidArgumentError("/" + inode->path + " is a directory");
    path = inode->path;
    writer = inode->file->writer;
    size = inode->file->size;
  }
  if (write) {
    STRATA_RETURN_IF_ERROR(CheckWritable("open for writing", path));
    if (writer) {
      if (flags & O_TRUNC) {
        MutexLock wl(writer->mu);
        STRATA_RETURN_IF_ERROR(buffers_.Truncate(*writer, 0));
      }
    } else {
      if (!(flags & O_TRUNC) && size > 0) {
        return Refuse(Code::kNotSupported, "open for writing", path,
                      "writing into an existing object is not supported (open with O_TRUNC to replace it)");
      }
      STRATA_ASSIGN_OR_RETURN(writer, buffers_.NewWriter(path));
      writer->uploaded = true;
      MutexLock wl(writer->mu);  // not shared yet: for the analysis
      writer->dirty = (flags & O_TRUNC) != 0;
    }
  }
  auto handle = std::make_unique<Handle>();
  handle->ino = ino;
  handle->writable = write;
  handle->key = path;
  OpenResult result;
  result.writable = write;
  if (!writer) {
    auto stream = OpenReader(ino, path);
    if (!stream.ok()) {
      if (stream.status().code() == Code::kNotFound) {
        InodeTable::Lock lock(inodes_);
        Inode* inode = inodes_.Find(ino);
        if (inode && inode->attached && !inode->file->writer)
          if (Inode* p = inodes_.FindDir(inode->parent)) inodes_.Detach(*p, inode->name);
      }
      return BackendError(stream.status(), "opening /" + path);
    }
    handle->reader = std::make_shared<Reader>(std::move(stream).value());
    handle->etag = handle->reader->view->info().etag;
  }
  Prefetches ahead;  // files fetched ahead of their opens
  {
    InodeTable::Lock lock(inodes_);
    Inode* inode = inodes_.Find(ino);
    if (inode == nullptr) return NotFoundError("/" + path + " is gone");
    FileState& f = *inode->file;
    if (write && !f.writer) f.writer = writer;  // (another opener may have raced: share theirs)
    if (f.writer) {
      handle->writer = f.writer;
      ++handle->writer->refs;
    } else if (handle->reader) {
      const object::ObjectInfo& info = handle->reader->view->info();
      // News from the store; the inode's own (known) version confirms nothing new.
      if (info.etag != f.etag || info.size != f.size) inode->attr_time = clock_.Now();
      f.size = info.size;
      f.mtime = info.mtime;
      f.etag = info.etag;
      result.keep_cache = !info.etag.empty() && f.kept_etag == info.etag;
      f.kept_etag = info.etag;
      ahead = NoteOpen(*inode);
    }
    ++inode->open_handles;
  }
  result.fh = AddHandle(std::move(handle));
  if (!ahead.empty()) PrefetchFiles(ahead);
  return result;
}

Result<std::pair<Entry, OpenResult>> ObjectFs::Create(Ino parent, std::string_view name, uint32_t mode, int flags,
                                                      std::optional<Owner> owner) {
  STRATA_ASSIGN_OR_RETURN(std::string path, NewEntryPath(parent, name, "create"));
  auto existing = ResolveChild(parent, name);
  if (existing.ok()) {
    if (flags & O_EXCL) return AlreadyExistsError("/" + path + " already exists");
    STRATA_ASSIGN_OR_RETURN(OpenResult opened, Open(*existing, flags));
    InodeTable::Lock lock(inodes_);
    Inode* inode = inodes_.Find(*existing);
    if (inode == nullptr) return NotFoundError("/" + path + " is gone");
    ++inode->nlookup;
    return std::make_pair(inodes_.EntryOf(*inode), opened);
  }
  if (existing.status().code() != Code::kNotFound) return existing.status();
  STRATA_ASSIGN_OR_RETURN(auto writer, buffers_.NewWriter(path));
  {
    MutexLock wl(writer->mu);  // not shared yet: for the analysis
    writer->dirty = true;      // even empty: close() creates the object
  }
  auto handle = std::make_unique<Handle>();
  handle->writable = true;
  handle->writer = writer;
  handle->key = path;
  Entry entry;
  {
    InodeTable::Lock lock(inodes_);
    writer->refs = 1;
    Inode* p = inodes_.FindDir(parent);
    if (p == nullptr) return NotFoundError("directory of /" + path + " is gone");
    ++p->dir->generation;
    Inode& inode = inodes_.Upsert(*p, std::string(name), false);
    FileState& f = *inode.file;
    f.writer = writer;
    f.size = 0;
    f.etag.clear();
    f.kept_etag.clear();
    f.mtime = clock_.WallNow();
    f.type = S_IFREG;
    inode.attr_time = clock_.Now();
    inode.made_here = true;
    inode.posix.perm = mode & 07777;
    inode.posix.uid = OwnerOf(owner).uid;
    inode.posix.gid = OwnerOf(owner).gid;
    inode.posix.mtime = f.mtime;
    inode.posix.stored = object::ObjectMetadata{};
    inode.posix.known = true;
    ++inode.nlookup;
    ++inode.open_handles;
    handle->ino = inode.ino;
    entry = inodes_.EntryOf(inode);
  }
  OpenResult result;
  result.fh = AddHandle(std::move(handle));
  result.writable = true;
  return std::make_pair(entry, result);
}

// ---- read / write ----

Result<std::unique_ptr<cache::ReadStream>> ObjectFs::OpenReader(Ino ino, const std::string& path) {
  if (options_.strict_revalidate) return store_->OpenStream(path);
  STRATA_RETURN_IF_ERROR(Revalidate(ino));  // bounded: the cached version when the backend fails
  object::ObjectInfo known;
  {
    InodeTable::Lock lock(inodes_);
    const Inode* inode = inodes_.Find(ino);
    if (inode == nullptr) return NotFoundError("/" + path + " is gone");
    known.key = path;
    known.size = inode->file->size;
    known.etag = inode->file->etag;
    known.mtime = inode->file->mtime;
  }
  if (known.etag.empty()) return store_->OpenStream(path);  // never confirmed: ask the store
  return store_->OpenStream(path, known);
}

Result<Buffer> ObjectFs::Read(uint64_t fh, uint64_t offset, size_t size) {
  Handle* h;
  {
    MutexLock lock(handles_mu_);
    auto it = handles_.find(fh);
    if (it == handles_.end()) return InvalidArgumentError("no open file handle " + std::to_string(fh));
    h = it->second.get();
  }
  // One stream per handle: the kernel's parallel read-ahead requests queue
  // there so the stream sees them in order and keeps its window growing
  // (they mostly hit blocks the stream already prefetched).
  Result<Buffer> data = h->writer ? buffers_.Read(*h->writer, offset, size)
                                  : reads_->Read(h->reader, h->key + "@" + h->etag, offset, size);
  if (!data.ok()) {
    ++counters_.read_errors;
    STRATA_LOG_WARN("mount: read of /{} at offset {} ({} bytes) failed: {}", h->key, offset, size,
                    data.status().ToString());
    return Status(Code::kIOError,
                  "reading /" + h->key + " at offset " + std::to_string(offset) + ": " + data.status().message(),
                  data.status().cause(), data.status().retryable())
        .WithForeignCode(data.status().foreign_code());
  }
  return data;
}

Result<size_t> ObjectFs::Write(uint64_t fh, uint64_t offset, const void* data, size_t size) {
  std::shared_ptr<Writer> w;
  Ino ino;
  {
    MutexLock lock(handles_mu_);
    auto it = handles_.find(fh);
    if (it == handles_.end()) return InvalidArgumentError("no open file handle " + std::to_string(fh));
    if (!it->second->writable) return InvalidArgumentError("file handle " + std::to_string(fh) + " is read-only");
    w = it->second->writer;
    ino = it->second->ino;
  }
  {
    MutexLock wl(w->mu);
    STRATA_RETURN_IF_ERROR(w->out->WriteAt(offset, data, size));
    w->size = std::max(w->size.load(), offset + size);
    w->dirty = true;
  }
  InodeTable::Lock lock(inodes_);
  if (Inode* inode = inodes_.Find(ino); inode && inode->file)
    inode->posix.mtime = inode->file->mtime = clock_.WallNow();
  return size;
}

Status ObjectFs::Flush(uint64_t fh) {
  std::shared_ptr<Writer> w;
  Ino ino;
  {
    MutexLock lock(handles_mu_);
    auto it = handles_.find(fh);
    if (it == handles_.end()) return InvalidArgumentError("no open file handle " + std::to_string(fh));
    if (!it->second->writable) return Status::Ok();
    w = it->second->writer;
    ino = it->second->ino;
  }
  return UploadIfDirty(ino, w);
}

Status ObjectFs::Fsync(uint64_t fh) { return Flush(fh); }

Status ObjectFs::Release(uint64_t fh) {
  std::unique_ptr<Handle> h;
  {
    MutexLock lock(handles_mu_);
    auto it = handles_.find(fh);
    if (it == handles_.end()) return InvalidArgumentError("no open file handle " + std::to_string(fh));
    h = std::move(it->second);
    handles_.erase(it);
  }
  Status st;
  if (h->writable) st = UploadIfDirty(h->ino, h->writer);
  bool clean = true;
  if (h->writer) {
    MutexLock wl(h->writer->mu);
    clean = !h->writer->dirty;
  }
  InodeTable::Lock lock(inodes_);
  Inode* inode = inodes_.Find(h->ino);
  if (h->writer && --h->writer->refs == 0) {
    const bool ours = inode && inode->file->writer == h->writer;
    if (clean || h->writer->unlinked || !ours) {
      buffers_.Remove(*h->writer);
      if (ours) inode->file->writer.reset();
    }  // else the upload failed: keep the bytes for a retry by the next flush or Shutdown
  }
  if (inode) {
    --inode->open_handles;
    inodes_.EraseIfUnused(h->ino);
  }
  return st;
}

Status ObjectFs::Shutdown() {
  std::vector<std::pair<Ino, std::shared_ptr<Writer>>> writers;
  {
    InodeTable::Lock lock(inodes_);
    writers = inodes_.Writers();
  }
  Status first;
  for (auto& [ino, w] : writers) {
    Status st = UploadIfDirty(ino, w);
    std::string key;
    bool lost = false;
    {
      InodeTable::Lock lock(inodes_);
      const Inode* inode = inodes_.Find(ino);
      key = inode ? inode->path : w->temp_path;
      lost = !st.ok() && !w->unlinked;
    }
    if (!st.ok() && first.ok()) first = st;
    // Nothing lost on the way out: bytes that could not be uploaded are kept.
    if (lost) {
      buffers_.KeepLost(w->temp_path, key);
    } else {
      buffers_.Remove(*w);
    }
  }
  buffers_.Close();
  return first;
}

}  // namespace strata::fs

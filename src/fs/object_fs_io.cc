// ObjectFs: file data. Reads go through one CachedStore ReadStream per
// handle (its own sequential detection and read-ahead); writes go to a local
// temp file and are uploaded on flush/fsync/release (multipart when large).
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <random>

#include "base/log.h"
#include "fs/object_fs.h"
#include "fs/object_fs_internal.h"

namespace strata::fs {

namespace {
Status Backend(const Status& st, std::string_view what) {
  if (st.ok() || st.code() == Code::kNotFound) return st;
  return Status(Code::kIOError, std::string(what) + ": " + st.message(), st.cause(), st.retryable())
      .WithForeignCode(st.foreign_code());
}
constexpr unsigned kRenameNoReplace = 1, kRenameExchange = 2;
std::string Ms(Duration d) {
  return std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(d).count()) + " ms";
}
}  // namespace

// ---- writers ----

namespace {
constexpr std::string_view kBufferDirPrefix = "strata-mount-";
constexpr std::string_view kLockName = "lock";

// A key as one file name: '%' and '/' escaped, long keys cut (with a hash so
// two long keys stay apart).
std::string EscapeKey(std::string_view key) {
  std::string out;
  for (char c : key) {
    if (c == '%')
      out += "%25";
    else if (c == '/')
      out += "%2F";
    else
      out += c;
  }
  if (out.size() > 200) out = out.substr(0, 180) + "-" + std::to_string(std::hash<std::string_view>()(key));
  return out;
}

std::string Timestamp(WallTime t) {
  std::time_t secs = std::chrono::system_clock::to_time_t(t);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%dT%H%M%SZ", &tm);
  return buf;
}
}  // namespace

std::string ObjectFs::LostFoundDir() const {
  return options_.lost_found_dir.empty() ? options_.write_dir + "/lost+found" : options_.lost_found_dir;
}

void ObjectFs::KeepLost(const std::string& buffer, const std::string& key) {
  const std::string dir = LostFoundDir();
  std::string to = dir + "/" + Timestamp(clock_.WallNow()) + "-" + EscapeKey(key);
  Status st = local_.CreateDirs(dir);
  for (int i = 1; st.ok() && local_.Exists(to).value_or(true); ++i) {
    if (i > 1000) st = AlreadyExistsError("no free name in " + dir);
    to = dir + "/" + Timestamp(clock_.WallNow()) + "-" + std::to_string(i) + "-" + EscapeKey(key);
  }
  if (st.ok()) st = local_.Rename(buffer, to);
  if (st.ok()) {
    STRATA_LOG_WARN("mount: /{} was not uploaded; its bytes are kept in {}", key, to);
  } else {  // never deleted: left where it is, and said so
    STRATA_LOG_WARN("mount: /{} was not uploaded; its bytes stay in {} (could not move them to {}: {})", key, buffer,
                    dir, st.ToString());
  }
}

void ObjectFs::SweepStaleWriteBuffers() {
  if (options_.read_only) return;
  auto entries = local_.ListDir(options_.write_dir);
  if (!entries.ok()) return;  // a missing dir holds nothing; mount setup reports real problems
  for (const auto& e : *entries) {
    if (!e.is_dir || !e.name.starts_with(kBufferDirPrefix)) continue;
    const std::string dir = options_.write_dir + "/" + e.name;
    // A live mount holds its lock: only the directories of dead mounts are ours to sweep.
    auto lock = local_.LockFile(dir + "/" + std::string(kLockName));
    if (!lock.ok()) continue;
    auto files = local_.ListDir(dir);
    if (!files.ok()) continue;
    size_t removed = 0, kept = 0;
    for (const auto& f : *files) {
      if (f.is_dir || f.name == kLockName) continue;
      const std::string path = dir + "/" + f.name;
      if (f.size == 0) {
        if (local_.Remove(path).ok()) ++removed;
        continue;
      }
      // Its key is not known (it may even be uploaded): kept, under the mount's name.
      KeepLost(path, e.name + "/" + f.name);
      ++kept;
    }
    local_.Remove(dir + "/" + std::string(kLockName)).IgnoreError();
    lock->reset();
    local_.RemoveDir(dir).IgnoreError();  // fails while a buffer could not be moved: kept
    STRATA_LOG_INFO("mount: swept {} of a mount that died: {} empty buffers removed, {} kept in {}", dir, removed, kept,
                    LostFoundDir());
  }
}

Result<std::string> ObjectFs::BufferDir() {
  MutexLock lock(buffer_dir_mu_);
  if (!buffer_dir_.empty()) return buffer_dir_;
  std::random_device rd;
  const uint64_t r = (uint64_t{rd()} << 32) | rd();
  char rnd[17];
  std::snprintf(rnd, sizeof rnd, "%016llx", static_cast<unsigned long long>(r));
  const std::string dir =
      options_.write_dir + "/" + std::string(kBufferDirPrefix) + std::to_string(getpid()) + "-" + rnd;
  STRATA_RETURN_IF_ERROR(local_.CreateDirs(dir));
  auto held = local_.LockFile(dir + "/" + std::string(kLockName));
  if (!held.ok()) return held.status().WithContext("locking write buffer directory " + dir);
  buffer_lock_ = std::move(held).value();
  buffer_dir_ = dir;
  return buffer_dir_;
}

Result<std::shared_ptr<ObjectFs::Writer>> ObjectFs::NewWriter(const std::string& path) {
  STRATA_ASSIGN_OR_RETURN(std::string dir, BufferDir());
  auto w = std::make_shared<Writer>();
  // O_EXCL: never opens a file that exists (someone else's, or a stale one).
  Result<std::unique_ptr<io::WritableFile>> out = InternalError("not created");
  for (int attempt = 0; attempt < 8; ++attempt) {
    uint64_t n;
    {
      MutexLock lock(mu_);
      n = next_temp_++;
    }
    w->temp_path = dir + "/w-" + std::to_string(n);
    out = local_.CreateExclusive(w->temp_path);
    if (out.ok() || out.status().code() != Code::kAlreadyExists) break;
  }
  if (!out.ok()) return out.status().WithContext("buffering /" + path);
  w->out = std::move(out).value();
  auto in = local_.OpenForRead(w->temp_path);
  if (!in.ok()) {
    local_.Remove(w->temp_path).IgnoreError();
    return in.status().WithContext("buffering /" + path);
  }
  w->in = std::move(in).value();
  return w;
}

Result<Buffer> ObjectFs::ReadLocal(Writer& w, uint64_t offset, size_t size) {
  const uint64_t end = w.size;
  if (offset >= end) return Buffer();
  size_t n = static_cast<size_t>(std::min<uint64_t>(size, end - offset));
  MutableBuffer buf(n);
  STRATA_ASSIGN_OR_RETURN(size_t got, w.in->ReadAt(offset, n, buf.data()));
  // The buffer file always spans the size (writes and truncation extend it):
  // less means it was cut underneath, and the bytes are not there to serve.
  if (got < n) return ShortBuffer(w, offset + got, offset + n);
  return std::move(buf).Freeze();
}

Result<Buffer> ObjectFs::ShortBuffer(const Writer& w, uint64_t got_to, uint64_t want_to) {
  STRATA_LOG_ERROR("mount: write buffer {} ends at byte {}, {} expected: it was cut underneath", w.temp_path, got_to,
                   want_to);
  return IOError("write buffer " + w.temp_path + " is shorter than what was written (" + std::to_string(got_to) +
                 " of " + std::to_string(want_to) + " bytes)");
}

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
    MutexLock lock(mu_);
    Inode* inode = FindLocked(ino);
    if (inode == nullptr || w.unlinked || !inode->attached) return Status::Ok();  // removed: nothing to save
    path = inode->path;
    if (MetaKept()) po.metadata = MetaToStoreLocked(*inode);
  }
  const uint64_t size = w.size;
  Result<object::ObjectInfo> info = InternalError("not uploaded");
  bool multipart = size > options_.multipart_threshold;
  if (!multipart) {
    MutableBuffer buf(size);
    auto got = size ? w.in->ReadAt(0, size, buf.data()) : Result<size_t>(size_t{0});
    if (!got.ok()) return got.status().WithContext("uploading /" + path);
    // Never upload memory that was not read from the buffer.
    if (*got != size) return ShortBuffer(w, *got, size).status().WithContext("uploading /" + path);
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
  MutexLock lock(mu_);
  ++counters_.uploads;
  if (multipart) ++counters_.multipart_uploads;
  if (Inode* inode = FindLocked(ino)) {
    inode->size = size;
    inode->etag = info->etag;
    inode->mtime = info->mtime;
    inode->attr_time = clock_.Now();
    inode->kept_etag.clear();  // the kernel's pages came from writes, not from this version
    if (MetaKept()) {
      inode->meta = po.metadata;
      inode->meta_known = true;
      inode->meta_version = MetaVersion(info->etag, info->mtime);
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

Result<OpenResult> ObjectFs::Open(Ino ino, int flags) {
  const int acc = flags & O_ACCMODE;
  const bool write = acc != O_RDONLY;
  std::string path;
  std::shared_ptr<Writer> writer;
  {
    MutexLock lock(mu_);
    Inode* inode = FindLocked(ino);
    if (inode == nullptr) return NotFoundError("no inode " + std::to_string(ino));
    if (inode->is_dir) return InvalidArgumentError("/" + inode->path + " is a directory");
    path = inode->path;
    writer = inode->writer;
  }
  if (write) {
    STRATA_RETURN_IF_ERROR(CheckWritable("open for writing", path));
    if (writer) {
      if (flags & O_TRUNC) {
        MutexLock wl(writer->mu);
        STRATA_RETURN_IF_ERROR(local_.Truncate(writer->temp_path, 0));
        writer->size = 0;
        writer->dirty = true;
      }
    } else {
      uint64_t size;
      {
        MutexLock lock(mu_);
        size = FindLocked(ino)->size;
      }
      if (!(flags & O_TRUNC) && size > 0) {
        return Refuse(Code::kNotSupported, "open for writing", path,
                      "writing into an existing object is not supported (open with O_TRUNC to replace it)");
      }
      STRATA_ASSIGN_OR_RETURN(writer, NewWriter(path));
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
        MutexLock lock(mu_);
        Inode* inode = FindLocked(ino);
        if (inode && inode->attached && !inode->writer)
          if (Inode* p = FindLocked(inode->parent)) DetachLocked(*p, inode->name);
      }
      return Backend(stream.status(), "opening /" + path);
    }
    handle->reader = std::make_shared<Reader>(std::move(stream).value());
    handle->etag = handle->reader->view->info().etag;
  }
  std::vector<std::pair<std::string, object::ObjectInfo>> ahead;  // files fetched ahead of their opens
  MutexLock lock(mu_);
  Inode* inode = FindLocked(ino);
  if (inode == nullptr) return NotFoundError("/" + path + " is gone");
  if (write && !inode->writer) inode->writer = writer;  // (another opener may have raced: share theirs)
  if (inode->writer) {
    handle->writer = inode->writer;
    ++handle->writer->refs;
  } else if (handle->reader) {
    const object::ObjectInfo& info = handle->reader->view->info();
    // News from the store; the inode's own (known) version confirms nothing new.
    if (info.etag != inode->etag || info.size != inode->size) inode->attr_time = clock_.Now();
    inode->size = info.size;
    inode->mtime = info.mtime;
    inode->etag = info.etag;
    result.keep_cache = !info.etag.empty() && inode->kept_etag == info.etag;
    inode->kept_etag = info.etag;
    ahead = NoteOpenLocked(*inode);
  }
  ++inode->open_handles;
  result.fh = next_fh_++;
  handles_[result.fh] = std::move(handle);
  lock.Unlock();
  if (!ahead.empty()) PrefetchFiles(ahead);
  return result;
}

Result<std::pair<Entry, OpenResult>> ObjectFs::Create(Ino parent, std::string_view name_view, uint32_t mode,
                                                      int flags) {
  STRATA_RETURN_IF_ERROR(CheckName(name_view));
  std::string name(name_view), path;
  {
    MutexLock lock(mu_);
    Inode* p = FindLocked(parent);
    if (p == nullptr || !p->is_dir) return NotFoundError("no directory inode " + std::to_string(parent));
    path = ChildPath(p->path, name);
  }
  STRATA_RETURN_IF_ERROR(CheckWritable("create", path));
  if (Status st = object::ValidateKey(path + "/"); !st.ok()) return OutOfRangeError(st.message());
  auto existing = ResolveChild(parent, name);
  if (existing.ok()) {
    if (flags & O_EXCL) return AlreadyExistsError("/" + path + " already exists");
    STRATA_ASSIGN_OR_RETURN(OpenResult opened, Open(*existing, flags));
    MutexLock lock(mu_);
    Inode* inode = FindLocked(*existing);
    if (inode == nullptr) return NotFoundError("/" + path + " is gone");
    ++inode->nlookup;
    return std::make_pair(EntryOf(*inode), opened);
  }
  if (existing.status().code() != Code::kNotFound) return existing.status();
  STRATA_ASSIGN_OR_RETURN(auto writer, NewWriter(path));
  {
    MutexLock wl(writer->mu);  // not shared yet: for the analysis
    writer->dirty = true;      // even empty: close() creates the object
  }
  MutexLock lock(mu_);
  writer->refs = 1;
  Inode* p = FindLocked(parent);
  if (p == nullptr) return NotFoundError("directory of /" + path + " is gone");
  ++p->generation;
  Inode& inode = UpsertLocked(*p, name, false);
  inode.writer = writer;
  inode.size = 0;
  inode.etag.clear();
  inode.kept_etag.clear();
  inode.mtime = clock_.WallNow();
  inode.attr_time = clock_.Now();
  inode.perm = mode & 07777;
  inode.made_here = true;
  inode.symlink = false;
  inode.uid = options_.uid;
  inode.gid = options_.gid;
  inode.meta_mtime = inode.mtime;
  inode.meta = object::ObjectMetadata{};
  inode.meta_known = true;
  ++inode.nlookup;
  ++inode.open_handles;
  auto handle = std::make_unique<Handle>();
  handle->ino = inode.ino;
  handle->writable = true;
  handle->writer = writer;
  handle->key = path;
  OpenResult result;
  result.fh = next_fh_++;
  result.writable = true;
  handles_[result.fh] = std::move(handle);
  return std::make_pair(EntryOf(inode), result);
}

// ---- read / write ----

Result<Buffer> ObjectFs::Read(uint64_t fh, uint64_t offset, size_t size) {
  Handle* h;
  std::shared_ptr<Writer> local;
  {
    MutexLock lock(mu_);
    auto it = handles_.find(fh);
    if (it == handles_.end()) return InvalidArgumentError("no open file handle " + std::to_string(fh));
    h = it->second.get();
    local = h->writer;
  }
  Result<Buffer> data = InternalError("not read");
  if (local) {
    data = ReadLocal(*local, offset, size);
  } else {
    // One stream per handle: the kernel's parallel read-ahead requests queue
    // here so the stream sees them in order and keeps its window growing
    // (they mostly hit blocks the stream already prefetched).
    data = ReadRemote(*h, offset, size);
  }
  if (!data.ok()) {
    {
      MutexLock lock(mu_);
      ++counters_.read_errors;
    }
    STRATA_LOG_WARN("mount: read of /{} at offset {} ({} bytes) failed: {}", h->key, offset, size,
                    data.status().ToString());
    return Status(Code::kIOError,
                  "reading /" + h->key + " at offset " + std::to_string(offset) + ": " + data.status().message(),
                  data.status().cause(), data.status().retryable())
        .WithForeignCode(data.status().foreign_code());
  }
  return data;
}

Result<std::unique_ptr<cache::ReadStream>> ObjectFs::OpenReader(Ino ino, const std::string& path) {
  if (options_.strict_revalidate) return store_->OpenStream(path);
  STRATA_RETURN_IF_ERROR(Revalidate(ino));  // bounded: the cached version when the backend fails
  object::ObjectInfo known;
  {
    MutexLock lock(mu_);
    const Inode* inode = FindLocked(ino);
    if (inode == nullptr) return NotFoundError("/" + path + " is gone");
    known.key = path;
    known.size = inode->size;
    known.etag = inode->etag;
    known.mtime = inode->mtime;
  }
  if (known.etag.empty()) return store_->OpenStream(path);  // never confirmed: ask the store
  return store_->OpenStream(path, known);
}

Result<Buffer> ObjectFs::ReadRemote(Handle& h, uint64_t offset, size_t size) {
  // Shared with a read that outlives its caller's deadline: it finishes (and
  // fills the cache) safely, even after release.
  std::shared_ptr<Reader> reader = h.reader;
  const uint64_t block = std::max<uint64_t>(store_->cache().options().block_size, 1);
  const uint64_t first = offset / block, last = (offset + std::max<size_t>(size, 1) - 1) / block;
  const std::string version = h.key + "@" + h.etag;
  // Bytes in the cache are served whatever the backoff says: a read given up
  // on may have filled them since, once the backend answered again.
  const bool cached = reader->view->Cached(offset, size);
  if (!cached) {
    MutexLock lock(mu_);
    const TimePoint now = clock_.Now();
    for (uint64_t b = first; b <= last; ++b) {
      auto it = failed_blocks_.find({version, b});
      if (it == failed_blocks_.end()) continue;
      if (now >= it->second.first) {
        failed_blocks_.erase(it);  // backoff over: tried again
        continue;
      }
      ++counters_.fast_failed_reads;
      return it->second.second.WithContext("failed moments ago (retried after a short backoff)");
    }
  }
  Result<Buffer> data = InternalError("not read");
  if (options_.read_timeout.count() <= 0 || cached) {
    MutexLock sl(reader->mu);  // cached: no backend wait (the kernel's requests in order)
    data = reader->stream->Read(offset, size);
  } else {
    auto call = std::make_shared<BackendCall>();
    backend_pool_->Submit([call, reader, offset, size] {
      Result<Buffer> got = InternalError("not read");
      Status st = RunGuarded("mount: reading", [&] {
        MutexLock sl(reader->mu);
        got = reader->stream->Read(offset, size);
      });
      if (!st.ok()) got = st;
      call->Finish(got.status(), got.ok() ? *got : Buffer());
    });
    if (call->WaitFor(options_.read_timeout)) {
      MutexLock lock(call->mu);
      data = call->status.ok() ? Result<Buffer>(call->data) : Result<Buffer>(call->status);
    } else {
      MutexLock lock(mu_);
      ++counters_.read_timeouts;
      data = DeadlineExceededError("no answer from the store within " + Ms(options_.read_timeout));
    }
  }
  MutexLock lock(mu_);
  if (data.ok()) {
    for (uint64_t b = first; b <= last; ++b) failed_blocks_.erase({version, b});
  } else if (options_.failed_read_backoff.count() > 0 && data.status().code() != Code::kPreconditionFailed) {
    if (failed_blocks_.size() > 4096) failed_blocks_.clear();  // bounded; a cleared block is merely retried
    const TimePoint until = clock_.Now() + options_.failed_read_backoff;
    for (uint64_t b = first; b <= last; ++b) failed_blocks_[{version, b}] = {until, data.status()};
  }
  return data;
}

Result<size_t> ObjectFs::Write(uint64_t fh, uint64_t offset, const void* data, size_t size) {
  std::shared_ptr<Writer> w;
  Ino ino;
  {
    MutexLock lock(mu_);
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
  MutexLock lock(mu_);
  if (Inode* inode = FindLocked(ino)) inode->meta_mtime = inode->mtime = clock_.WallNow();
  return size;
}

Status ObjectFs::Flush(uint64_t fh) {
  std::shared_ptr<Writer> w;
  Ino ino;
  {
    MutexLock lock(mu_);
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
    MutexLock lock(mu_);
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
  MutexLock lock(mu_);
  Inode* inode = FindLocked(h->ino);
  if (h->writer && --h->writer->refs == 0) {
    bool ours = inode && inode->writer == h->writer;
    if (clean || h->writer->unlinked || !ours) {
      local_.Remove(h->writer->temp_path).IgnoreError();
      if (ours) inode->writer.reset();
    }  // else the upload failed: keep the bytes for a retry by the next flush or Shutdown
  }
  if (inode && --inode->open_handles == 0 && !inode->attached && inode->nlookup == 0) inodes_.erase(h->ino);
  return st;
}

Status ObjectFs::Shutdown() {
  std::vector<std::pair<Ino, std::shared_ptr<Writer>>> writers;
  {
    MutexLock lock(mu_);
    for (auto& [ino, inode] : inodes_)
      if (inode->writer) writers.emplace_back(ino, inode->writer);
  }
  Status first;
  for (auto& [ino, w] : writers) {
    Status st = UploadIfDirty(ino, w);
    std::string key;
    bool lost = false;
    {
      MutexLock lock(mu_);
      const Inode* inode = FindLocked(ino);
      key = inode ? inode->path : w->temp_path;
      lost = !st.ok() && !w->unlinked;
    }
    if (!st.ok() && first.ok()) first = st;
    // Nothing lost on the way out: bytes that could not be uploaded are kept.
    if (lost) {
      KeepLost(w->temp_path, key);
    } else {
      local_.Remove(w->temp_path).IgnoreError();
    }
  }
  MutexLock lock(buffer_dir_mu_);
  if (buffer_lock_) {
    local_.Remove(buffer_dir_ + "/" + std::string(kLockName)).IgnoreError();
    buffer_lock_.reset();
    local_.RemoveDir(buffer_dir_).IgnoreError();  // not empty: a buffer that could not be moved stays
    buffer_dir_.clear();
  }
  return first;
}

// ---- unlink / rename ----

Status ObjectFs::Unlink(Ino parent, std::string_view name_view) {
  STRATA_RETURN_IF_ERROR(CheckName(name_view));
  std::string name(name_view);
  STRATA_ASSIGN_OR_RETURN(Ino ino, ResolveChild(parent, name));
  std::string path;
  std::shared_ptr<Writer> w;
  {
    MutexLock lock(mu_);
    Inode* inode = FindLocked(ino);
    if (inode == nullptr) return NotFoundError("inode " + std::to_string(ino) + " is gone");
    if (inode->is_dir) return InvalidArgumentError("/" + inode->path + " is a directory");
    path = inode->path;
    w = inode->writer;
  }
  STRATA_RETURN_IF_ERROR(CheckWritable("unlink", path));
  auto detach = [&] {
    MutexLock lock(mu_);
    if (Inode* p = FindLocked(parent)) DetachLocked(*p, name);
    if (w) w->unlinked = true;
  };
  if (!w) {
    STRATA_RETURN_IF_ERROR(Backend(store_->Delete(path), "unlink /" + path));
    detach();
    return Status::Ok();
  }
  MutexLock wl(w->mu);  // not while an upload of it runs
  if (w->uploaded) STRATA_RETURN_IF_ERROR(Backend(store_->Delete(path), "unlink /" + path));
  detach();
  return Status::Ok();
}

void ObjectFs::MoveLocked(Inode& inode, Inode& new_parent, const std::string& new_name) {
  if (Inode* old_parent = FindLocked(inode.parent)) {
    old_parent->children.erase(inode.name);
    ++old_parent->generation;
  }
  std::string old_key = inode.is_dir ? inode.path + "/" : inode.path;
  if (auto p = by_path_.find(old_key); p != by_path_.end() && p->second == inode.ino) by_path_.erase(p);
  if (new_parent.children.count(new_name)) DetachLocked(new_parent, new_name);
  inode.parent = new_parent.ino;
  inode.name = new_name;
  inode.path = ChildPath(new_parent.path, new_name);
  inode.attached = true;
  by_path_[inode.is_dir ? inode.path + "/" : inode.path] = inode.ino;
  new_parent.children[new_name] = inode.ino;
  ++new_parent.generation;
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
    MutexLock lock(mu_);
    Inode* inode = FindLocked(ino);
    Inode* np = FindLocked(new_parent);
    if (inode == nullptr || np == nullptr) return NotFoundError("rename source or target directory is gone");
    from = inode->path;
    to = ChildPath(np->path, new_name);
    is_dir = inode->is_dir;
    local_dir = inode->local_dir;
    w = inode->writer;
    if (target.ok())
      if (const Inode* t = FindLocked(*target)) target_dir = t->is_dir;
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
        MutexLock lock(mu_);
        if (const Inode* inode = FindLocked(ino); inode && MetaKept()) po.metadata = MetaToStoreLocked(*inode);
      }
      Status put = store_->Put(to + "/", Buffer(), po).status();
      if (!put.ok()) return Backend(put, "rename /" + from + " to /" + to);
      Status del = store_->Delete(from + "/");
      if (!del.ok()) return Backend(del, "rename: deleting /" + from);
    }
  } else {
    // Not atomic: a server-side copy, then a delete.
    auto move_object = [&]() -> Status {
      auto copied = store_->Copy(from, to);
      if (!copied.ok()) return Backend(copied.status(), "rename: copying /" + from + " to /" + to);
      Status del = store_->Delete(from);
      if (!del.ok()) {
        STRATA_LOG_WARN("mount: rename copied /{} to /{} but could not delete the source: {}", from, to,
                        del.ToString());
        return Backend(del, "rename: deleting /" + from + " after copying it to /" + to);
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
  return MoveRenamed(ino, new_parent, new_name, from, is_dir, local_dir);
}

Status ObjectFs::MoveRenamed(Ino ino, Ino new_parent, const std::string& new_name, const std::string& from, bool is_dir,
                             bool local_dir) {
  MutexLock lock(mu_);
  Inode* inode = FindLocked(ino);
  Inode* np = FindLocked(new_parent);
  if (inode == nullptr || np == nullptr) return NotFoundError("rename: /" + from + " is gone");
  MoveLocked(*inode, *np, new_name);
  if (is_dir) {
    inode->local_dir = local_dir;
    inode->children.clear();
    inode->listed = true;
    inode->listed_at = clock_.Now();
  }
  return Status::Ok();
}

}  // namespace strata::fs

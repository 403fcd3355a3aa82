#include "object/file_store.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <map>
#include <mutex>
#include <random>

#include "base/hash.h"
#include "net/uri.h"
#include "object/file_util.h"
#include "object/list_util.h"

namespace strata {
namespace {

constexpr char kEtagXattr[] = "user.strata.etag";
constexpr char kMetaXattr[] = "user.strata.meta";  // EncodeMetadata(); absent: no metadata
const std::string kStaging(kFileStoreStagingDir);
const std::string kUploads = kStaging + "/uploads";

int64_t MtimeNs(const struct stat& st) { return int64_t{st.st_mtim.tv_sec} * 1000000000 + st.st_mtim.tv_nsec; }

WallTime ToWallTime(const struct stat& st) {
  return WallTime(std::chrono::duration_cast<WallTime::duration>(std::chrono::nanoseconds(MtimeNs(st))));
}

std::string Quote(std::string_view key) { return "'" + std::string(key) + "'"; }

std::string ParentOf(const std::string& rel) {
  size_t slash = rel.rfind('/');
  return slash == std::string::npos ? std::string() : rel.substr(0, slash);
}

bool IsHex(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

Status Conflict(std::string_view key, const std::string& why) {
  return NotSupportedError("the file store cannot hold " + Quote(key) + ": " + why +
                           " (a key cannot be both an object and a directory prefix here)");
}

class FileStore : public ObjectStore {
 public:
  FileStore(std::string root, UniqueFd root_fd, FileStoreOptions options)
      : root_(std::move(root)), root_fd_(std::move(root_fd)), options_(options), xattrs_(options.use_xattrs) {
    std::random_device rd;
    tag_ = std::to_string(::getpid()) + "-" + ToHex(Md5(std::to_string(rd()) + std::to_string(rd()))).substr(0, 8);
  }

  Result<GetResult> Get(std::string_view key, const GetOptions& options) override {
    STRATA_RETURN_IF_ERROR(ValidateFileKey(key));
    const std::string rel(key);
    STRATA_ASSIGN_OR_RETURN(UniqueFd fd, OpenObject(rel));
    STRATA_ASSIGN_OR_RETURN(ObjectInfo info, InfoOf(fd.get(), rel, /*with_metadata=*/true));
    STRATA_RETURN_IF_ERROR(CheckGetConditions(options, info));
    uint64_t begin = 0, end = 0;
    STRATA_RETURN_IF_ERROR(ResolveRange(options.range, info.size, &begin, &end).WithContext("get " + Quote(key)));
    MutableBuffer buf(end - begin);
    STRATA_RETURN_IF_ERROR(PreadAll(fd.get(), buf.data(), buf.size(), begin, Quote(key)));
    GetResult result;
    result.info = std::move(info);
    result.offset = begin;
    result.data = std::move(buf).Freeze();
    return result;
  }

  Result<ObjectInfo> Head(std::string_view key) override {
    STRATA_RETURN_IF_ERROR(ValidateFileKey(key));
    const std::string rel(key);
    STRATA_ASSIGN_OR_RETURN(UniqueFd fd, OpenObject(rel));
    return InfoOf(fd.get(), rel, /*with_metadata=*/true);
  }

  Result<ListResult> List(const ListOptions& options) override {
    FileCursor cursor(root_fd_.get(), options.prefix, [this](const std::string& key) { return MaybeInfo(key); });
    return ListWithCursor(options, cursor);
  }

  Result<ObjectInfo> Put(std::string_view key, Buffer data, const PutOptions& options) override {
    STRATA_RETURN_IF_ERROR(ValidateFileKey(key));
    STRATA_RETURN_IF_ERROR(CheckMetadata(key, options.metadata));
    std::string etag = ToHex(Md5(data.data(), data.size()));
    STRATA_ASSIGN_OR_RETURN(std::string tmp, WriteTemp(key, [&](int fd) {
                              STRATA_RETURN_IF_ERROR(WriteAll(fd, data.data(), data.size(), Quote(key)));
                              return WriteMetadata(fd, key, options.metadata);
                            }));
    return Commit(tmp, key, etag, options);
  }

  Status Delete(std::string_view key) override {
    STRATA_RETURN_IF_ERROR(ValidateFileKey(key));
    const std::string rel(key);
    std::lock_guard lock(namespace_mu_);
    if (::unlinkat(root_fd_.get(), rel.c_str(), 0) != 0) {
      // Missing, under a file, or a directory prefix: no such object, which is fine.
      if (errno == ENOENT || errno == ENOTDIR || errno == EISDIR) return Status::Ok();
      return ErrnoToStatus(errno, "deleting " + Quote(key));
    }
    ForgetEtag(rel);
    if (options_.fsync) STRATA_RETURN_IF_ERROR(FsyncDir(root_fd_.get(), ParentOf(rel), Quote(key)));
    // Drop directories the delete emptied, so they do not block a later "a" key.
    for (std::string dir = ParentOf(rel); !dir.empty(); dir = ParentOf(dir)) {
      if (::unlinkat(root_fd_.get(), dir.c_str(), AT_REMOVEDIR) != 0) break;
    }
    return Status::Ok();
  }

  Result<std::string> CreateMultipartUpload(std::string_view key, const PutOptions& options) override;
  Result<std::string> UploadPart(std::string_view key, std::string_view upload_id, int part_number,
                                 Buffer data) override;
  Result<ObjectInfo> CompleteMultipartUpload(std::string_view key, std::string_view upload_id,
                                             const std::vector<CompletedPart>& parts) override;
  Status AbortMultipartUpload(std::string_view key, std::string_view upload_id) override;
  Result<std::vector<PartInfo>> ListParts(std::string_view key, std::string_view upload_id) override;
  StoreCapabilities Capabilities() const override {
    StoreCapabilities caps;
    caps.directory_markers = false;  // "dir/" would be a file and a directory at once
    caps.server_side_copy = true;
    caps.metadata_kept = xattrs_.load();  // without xattrs, non-empty metadata is NotSupported
    caps.min_part_size = options_.min_part_size;
    return caps;
  }
  Result<ObjectInfo> Copy(std::string_view src_key, std::string_view dst_key, const CopyOptions& options) override;
  std::string Url() const override { return "file://" + UriEncode(root_, /*encode_slash=*/false); }

 private:
  struct Upload {
    std::string dir;  // relative to the root
    PutOptions options;
  };
  struct CachedEtag {
    ino_t ino;
    uint64_t size;
    int64_t mtime_ns;
    std::string etag;
  };

  Result<UniqueFd> OpenObject(const std::string& rel) {
    UniqueFd fd(::openat(root_fd_.get(), rel.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd.valid()) {
      if (errno == ENOENT || errno == ENOTDIR || errno == ELOOP) return NotFoundError("no such key " + Quote(rel));
      return ErrnoToStatus(errno, "opening " + Quote(rel));
    }
    return fd;
  }

  Result<ObjectInfo> InfoOf(int fd, const std::string& rel, bool with_metadata = false) {
    struct stat st;
    if (::fstat(fd, &st) != 0) return ErrnoToStatus(errno, "stat of " + Quote(rel));
    if (!S_ISREG(st.st_mode)) return NotFoundError("no such key " + Quote(rel) + " (it is a directory prefix)");
    ObjectInfo info;
    info.key = rel;
    info.size = static_cast<uint64_t>(st.st_size);
    info.mtime = ToWallTime(st);
    STRATA_ASSIGN_OR_RETURN(info.etag, EtagOf(fd, st, rel));
    if (with_metadata) {
      STRATA_ASSIGN_OR_RETURN(info.metadata, ReadMetadata(fd, rel));
    }
    return info;
  }

  // Metadata lives in one xattr set on the temp file before its fsync and
  // rename, so new bytes never pair with old metadata, even after a crash.
  Status CheckMetadata(std::string_view key, const ObjectMetadata& m) {
    STRATA_RETURN_IF_ERROR(ValidateMetadata(m));
    if (!m.empty() && !xattrs_.load()) {
      return NotSupportedError("cannot keep metadata of " + Quote(key) + ": xattrs are off or unsupported under " +
                               root_);
    }
    return Status::Ok();
  }

  Status WriteMetadata(int fd, std::string_view key, const ObjectMetadata& m) {
    if (m.empty()) return Status::Ok();  // a fresh temp file has no stale record
    const std::string record = EncodeMetadata(m);
    if (::fsetxattr(fd, kMetaXattr, record.data(), record.size(), 0) == 0) return Status::Ok();
    if (errno == ENOTSUP) {
      xattrs_ = false;
      return NotSupportedError("cannot keep metadata of " + Quote(key) + ": " + root_ + " has no xattrs");
    }
    return ErrnoToStatus(errno, "storing the metadata of " + Quote(key));
  }

  Result<ObjectMetadata> ReadMetadata(int fd, const std::string& rel) {
    if (!xattrs_.load()) return ObjectMetadata{};
    std::string record(4096, '\0');
    for (int attempt = 0; attempt < 3; ++attempt) {
      ssize_t n = ::fgetxattr(fd, kMetaXattr, record.data(), record.size());
      if (n >= 0) {
        record.resize(static_cast<size_t>(n));
        auto m = DecodeMetadata(record);
        if (!m.ok()) return m.status().WithContext("metadata of " + Quote(rel));
        return m;
      }
      if (errno == ENODATA || errno == ENOTSUP) return ObjectMetadata{};
      if (errno != ERANGE) return ErrnoToStatus(errno, "reading the metadata of " + Quote(rel));
      ssize_t size = ::fgetxattr(fd, kMetaXattr, nullptr, 0);  // grown meanwhile: ask its size
      if (size > static_cast<ssize_t>(kMaxEncodedMetadataBytes)) {
        return CorruptionError("metadata of " + Quote(rel) + " is " + std::to_string(size) + " bytes");
      }
      record.resize(size > 0 ? static_cast<size_t>(size) : record.size());
    }
    return UnavailableError("metadata of " + Quote(rel) + " kept changing while read");
  }

  Result<std::optional<ObjectInfo>> MaybeInfo(const std::string& rel) {
    auto fd = OpenObject(rel);
    if (!fd.ok()) {
      if (fd.status().code() == Code::kNotFound) return std::optional<ObjectInfo>();
      return fd.status();
    }
    auto info = InfoOf(fd->get(), rel);
    if (!info.ok()) {
      if (info.status().code() == Code::kNotFound) return std::optional<ObjectInfo>();
      return info.status();
    }
    return std::optional<ObjectInfo>(std::move(*info));
  }

  // The xattr records which size and mtime its ETag describes, so a file
  // rewritten by another program is detected and rehashed.
  static std::string EtagRecord(const std::string& etag, const struct stat& st) {
    return etag + " " + std::to_string(st.st_size) + " " + std::to_string(MtimeNs(st));
  }

  Result<std::string> EtagOf(int fd, const struct stat& st, const std::string& rel) {
    if (xattrs_.load()) {
      char buf[256];
      ssize_t n = ::fgetxattr(fd, kEtagXattr, buf, sizeof(buf));
      if (n > 0) {
        std::string record(buf, static_cast<size_t>(n));
        size_t sp = record.find(' ');
        if (sp != std::string::npos && record.substr(sp) == EtagRecord("", st)) return record.substr(0, sp);
      } else if (n < 0 && errno == ENOTSUP) {
        xattrs_ = false;
      }
    }
    {
      std::lock_guard lock(cache_mu_);
      auto it = etag_cache_.find(rel);
      if (it != etag_cache_.end() && it->second.ino == st.st_ino &&
          it->second.size == static_cast<uint64_t>(st.st_size) && it->second.mtime_ns == MtimeNs(st)) {
        return it->second.etag;
      }
    }
    STRATA_ASSIGN_OR_RETURN(std::string etag, Md5HexOfFd(fd, static_cast<uint64_t>(st.st_size), Quote(rel)));
    RecordEtag(fd, st, rel, etag);
    return etag;
  }

  // Best effort: a missing record only costs a rehash later.
  void RecordEtag(int fd, const struct stat& st, const std::string& rel, const std::string& etag) {
    if (xattrs_.load()) {
      std::string record = EtagRecord(etag, st);
      if (::fsetxattr(fd, kEtagXattr, record.data(), record.size(), 0) != 0 && errno == ENOTSUP) xattrs_ = false;
    }
    std::lock_guard lock(cache_mu_);
    if (etag_cache_.size() > 100000) etag_cache_.clear();  // a bound, not an LRU: misses only rehash
    etag_cache_[rel] = CachedEtag{st.st_ino, static_cast<uint64_t>(st.st_size), MtimeNs(st), etag};
  }

  void ForgetEtag(const std::string& rel) {
    std::lock_guard lock(cache_mu_);
    etag_cache_.erase(rel);
  }

  std::string TempName(std::string_view kind) {
    return kStaging + "/" + std::string(kind) + "-" + tag_ + "-" + std::to_string(++temp_seq_);
  }

  // Writes a new temp file in the staging dir with `fill`, fsyncs it and
  // returns its relative path. The file is removed on failure.
  template <typename Fill>
  Result<std::string> WriteTemp(std::string_view key, Fill fill) {
    std::string tmp = TempName("put");
    UniqueFd fd(::openat(root_fd_.get(), tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
    if (!fd.valid()) return ErrnoToStatus(errno, "creating a temp file for " + Quote(key) + " in " + root_);
    Status st = fill(fd.get());
    if (st.ok() && options_.fsync && ::fsync(fd.get()) != 0) st = ErrnoToStatus(errno, "fsync of " + Quote(key));
    if (!st.ok()) {
      ::unlinkat(root_fd_.get(), tmp.c_str(), 0);
      return st;
    }
    return tmp;
  }

  // Creates the directories above `key`; a file in the way is a conflict.
  Status MakeParents(std::string_view key, std::vector<std::string>* created) {
    const std::string rel(key);
    for (size_t slash = rel.find('/'); slash != std::string::npos; slash = rel.find('/', slash + 1)) {
      std::string dir = rel.substr(0, slash);
      if (::mkdirat(root_fd_.get(), dir.c_str(), 0755) == 0) {
        created->push_back(dir);
        continue;
      }
      if (errno == EEXIST || errno == ENOTDIR) {
        struct stat st;
        if (::fstatat(root_fd_.get(), dir.c_str(), &st, 0) == 0 && S_ISDIR(st.st_mode)) continue;
        return Conflict(key, "key " + Quote(dir) + " is an object");
      }
      return ErrnoToStatus(errno, "creating directory '" + dir + "' for " + Quote(key));
    }
    return Status::Ok();
  }

  // Moves the finished temp file `tmp` to `key` under the Put conditions.
  Result<ObjectInfo> Commit(const std::string& tmp, std::string_view key, const std::string& etag,
                            const PutOptions& options) {
    const std::string rel(key);
    auto fail = [&](Status st) -> Result<ObjectInfo> {
      ::unlinkat(root_fd_.get(), tmp.c_str(), 0);
      return st;
    };
    UniqueFd fd(::openat(root_fd_.get(), tmp.c_str(), O_RDONLY | O_CLOEXEC));
    struct stat st;
    if (!fd.valid() || ::fstat(fd.get(), &st) != 0) return fail(ErrnoToStatus(errno, "reopening temp file"));
    RecordEtag(fd.get(), st, rel, etag);
    std::vector<std::string> created;
    {
      std::lock_guard lock(namespace_mu_);
      if (options.if_none_match || !options.if_match.empty()) {
        auto current = MaybeInfo(rel);
        if (!current.ok()) return fail(current.status());
        Status cond = CheckPutConditions(options, key, *current ? &**current : nullptr);
        if (!cond.ok()) return fail(cond);
      }
      Status parents = MakeParents(key, &created);
      if (!parents.ok()) return fail(parents);
      if (::renameat(root_fd_.get(), tmp.c_str(), root_fd_.get(), rel.c_str()) != 0) {
        if (errno == EISDIR || errno == ENOTEMPTY || errno == EEXIST) {
          return fail(Conflict(key, "it is a directory prefix of other keys"));
        }
        return fail(ErrnoToStatus(errno, "renaming the temp file onto " + Quote(key)));
      }
      // The etag cache is keyed by path; the renamed inode keeps its number.
      std::lock_guard cache_lock(cache_mu_);
      etag_cache_[rel] = CachedEtag{st.st_ino, static_cast<uint64_t>(st.st_size), MtimeNs(st), etag};
    }
    if (options_.fsync) {
      STRATA_RETURN_IF_ERROR(FsyncDir(root_fd_.get(), ParentOf(rel), Quote(key)));
      for (const auto& dir : created) STRATA_RETURN_IF_ERROR(FsyncDir(root_fd_.get(), ParentOf(dir), Quote(key)));
    }
    ObjectInfo info;
    info.key = rel;
    info.size = static_cast<uint64_t>(st.st_size);
    info.etag = etag;
    info.mtime = ToWallTime(st);
    info.metadata = options.metadata;
    return info;
  }

  Result<Upload> FindUpload(std::string_view key, std::string_view upload_id);

  std::string root_;
  UniqueFd root_fd_;
  FileStoreOptions options_;
  std::atomic<bool> xattrs_;
  std::string tag_;
  std::atomic<uint64_t> temp_seq_{0};
  std::mutex namespace_mu_;  // serialises mkdir/rename/unlink/rmdir and conditional checks
  std::mutex parts_mu_;      // serialises replacing a part
  std::mutex cache_mu_;
  std::map<std::string, CachedEtag> etag_cache_;
};

// ---- Multipart: parts live in .strata-tmp/uploads/<id>/NNNNN-<md5hex>; the
// upload's key and conditions in .strata-tmp/uploads/<id>/meta, its object
// metadata (when any) in .../metadata (EncodeMetadata), written before meta.

Result<FileStore::Upload> FileStore::FindUpload(std::string_view key, std::string_view upload_id) {
  Status missing =
      NotFoundError("no multipart upload '" + std::string(upload_id) + "' for " + Quote(key) + " (NoSuchUpload)");
  if (upload_id.size() != 32 || !IsHex(upload_id)) return missing;
  Upload upload;
  upload.dir = kUploads + "/" + std::string(upload_id);
  UniqueFd fd(::openat(root_fd_.get(), (upload.dir + "/meta").c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return errno == ENOENT ? missing : ErrnoToStatus(errno, "opening upload " + upload.dir);
  struct stat st;
  if (::fstat(fd.get(), &st) != 0 || st.st_size > 4096) return CorruptionError("bad upload record " + upload.dir);
  std::string meta(static_cast<size_t>(st.st_size), '\0');
  STRATA_RETURN_IF_ERROR(PreadAll(fd.get(), meta.data(), meta.size(), 0, upload.dir));
  // meta = if_none_match ('0'/'1') '\n' if_match '\n' key
  size_t nl1 = meta.find('\n'), nl2 = nl1 == std::string::npos ? nl1 : meta.find('\n', nl1 + 1);
  if (nl2 == std::string::npos) return CorruptionError("bad upload record " + upload.dir);
  if (meta.substr(nl2 + 1) != key) return missing;
  upload.options.if_none_match = meta[0] == '1';
  upload.options.if_match = meta.substr(nl1 + 1, nl2 - nl1 - 1);
  UniqueFd md(::openat(root_fd_.get(), (upload.dir + "/metadata").c_str(), O_RDONLY | O_CLOEXEC));
  if (!md.valid()) {
    if (errno == ENOENT) return upload;
    return ErrnoToStatus(errno, "opening the metadata of upload " + upload.dir);
  }
  if (::fstat(md.get(), &st) != 0 || static_cast<uint64_t>(st.st_size) > kMaxEncodedMetadataBytes) {
    return CorruptionError("bad upload metadata " + upload.dir);
  }
  std::string record(static_cast<size_t>(st.st_size), '\0');
  STRATA_RETURN_IF_ERROR(PreadAll(md.get(), record.data(), record.size(), 0, upload.dir));
  STRATA_ASSIGN_OR_RETURN(upload.options.metadata, DecodeMetadata(record));
  return upload;
}

Result<std::string> FileStore::CreateMultipartUpload(std::string_view key, const PutOptions& options) {
  STRATA_RETURN_IF_ERROR(ValidateFileKey(key));
  STRATA_RETURN_IF_ERROR(CheckMetadata(key, options.metadata));
  if (options.if_match.find('\n') != std::string::npos) return InvalidArgumentError("If-Match holds a newline");
  std::random_device rd;
  std::string id = ToHex(Md5(tag_ + std::to_string(++temp_seq_) + std::to_string(rd()) + std::to_string(rd())));
  std::string dir = kUploads + "/" + id;
  if (::mkdirat(root_fd_.get(), dir.c_str(), 0755) != 0) {
    return ErrnoToStatus(errno, "creating upload directory for " + Quote(key) + " in " + root_);
  }
  if (!options.metadata.empty()) {
    const std::string record = EncodeMetadata(options.metadata);
    UniqueFd md(::openat(root_fd_.get(), (dir + "/metadata").c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
    if (!md.valid()) return ErrnoToStatus(errno, "creating upload metadata for " + Quote(key));
    STRATA_RETURN_IF_ERROR(WriteAll(md.get(), record.data(), record.size(), "upload metadata"));
  }
  std::string meta = std::string(options.if_none_match ? "1" : "0") + "\n" + options.if_match + "\n" + std::string(key);
  UniqueFd fd(::openat(root_fd_.get(), (dir + "/meta").c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
  if (!fd.valid()) return ErrnoToStatus(errno, "creating upload record for " + Quote(key));
  STRATA_RETURN_IF_ERROR(WriteAll(fd.get(), meta.data(), meta.size(), "upload record"));
  return id;
}

Result<std::string> FileStore::UploadPart(std::string_view key, std::string_view upload_id, int part_number,
                                          Buffer data) {
  STRATA_RETURN_IF_ERROR(CheckPartNumber(key, part_number));
  STRATA_ASSIGN_OR_RETURN(Upload upload, FindUpload(key, upload_id));
  std::string etag = ToHex(Md5(data.data(), data.size()));
  char number[8];
  std::snprintf(number, sizeof(number), "%05d-", part_number);
  std::string tmp = upload.dir + "/tmp-" + std::to_string(++temp_seq_);
  UniqueFd fd(::openat(root_fd_.get(), tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
  if (!fd.valid()) {
    if (errno == ENOENT) return NotFoundError("multipart upload for " + Quote(key) + " was aborted (NoSuchUpload)");
    return ErrnoToStatus(errno, "staging part " + std::to_string(part_number) + " of " + Quote(key));
  }
  Status st = WriteAll(fd.get(), data.data(), data.size(), Quote(key));
  if (st.ok() && options_.fsync && ::fsync(fd.get()) != 0) st = ErrnoToStatus(errno, "fsync of a part");
  std::lock_guard lock(parts_mu_);
  auto entries = ReadSortedDir(root_fd_.get(), upload.dir);
  if (st.ok() && !entries.ok()) st = entries.status();
  if (st.ok() &&
      ::renameat(root_fd_.get(), tmp.c_str(), root_fd_.get(), (upload.dir + "/" + number + etag).c_str()) != 0) {
    st = ErrnoToStatus(errno, "storing part " + std::to_string(part_number) + " of " + Quote(key));
  }
  if (!st.ok()) {
    ::unlinkat(root_fd_.get(), tmp.c_str(), 0);
    return st;
  }
  for (const FileDirEntry& e : *entries) {  // an earlier upload of the same part number
    if (e.sort_name.compare(0, 6, number) == 0 && e.sort_name != number + etag) {
      ::unlinkat(root_fd_.get(), (upload.dir + "/" + e.sort_name).c_str(), 0);
    }
  }
  return etag;
}

Result<std::vector<PartInfo>> FileStore::ListParts(std::string_view key, std::string_view upload_id) {
  STRATA_ASSIGN_OR_RETURN(Upload upload, FindUpload(key, upload_id));
  std::lock_guard lock(parts_mu_);
  STRATA_ASSIGN_OR_RETURN(std::vector<FileDirEntry> entries, ReadSortedDir(root_fd_.get(), upload.dir));
  std::vector<PartInfo> parts;
  for (const FileDirEntry& e : entries) {
    const std::string& name = e.sort_name;
    if (e.is_dir || name.size() != 6 + 32 || name[5] != '-' || !IsHex(name.substr(6))) continue;
    struct stat st;
    if (::fstatat(root_fd_.get(), (upload.dir + "/" + name).c_str(), &st, 0) != 0) continue;
    parts.push_back({std::atoi(name.substr(0, 5).c_str()), name.substr(6), static_cast<uint64_t>(st.st_size)});
  }
  return parts;  // names sort by part number thanks to the zero padding
}

Result<ObjectInfo> FileStore::CompleteMultipartUpload(std::string_view key, std::string_view upload_id,
                                                      const std::vector<CompletedPart>& parts) {
  STRATA_ASSIGN_OR_RETURN(Upload upload, FindUpload(key, upload_id));
  STRATA_ASSIGN_OR_RETURN(std::vector<PartInfo> uploaded, ListParts(key, upload_id));
  STRATA_RETURN_IF_ERROR(CheckCompleteParts(key, parts, uploaded, options_.min_part_size));
  std::vector<std::string> md5s;
  STRATA_ASSIGN_OR_RETURN(std::string tmp, WriteTemp(key, [&](int out) -> Status {
                            for (const CompletedPart& part : parts) {
                              char name[48];
                              std::string etag(part.etag);
                              etag.erase(std::remove(etag.begin(), etag.end(), '"'), etag.end());
                              std::snprintf(name, sizeof(name), "/%05d-", part.part_number);
                              std::string path = upload.dir + name + etag;
                              UniqueFd in(::openat(root_fd_.get(), path.c_str(), O_RDONLY | O_CLOEXEC));
                              struct stat st;
                              if (!in.valid() || ::fstat(in.get(), &st) != 0) {
                                return NotFoundError("part " + std::to_string(part.part_number) + " of " + Quote(key) +
                                                     " vanished (upload aborted?)");
                              }
                              STRATA_RETURN_IF_ERROR(CopyFd(in.get(), out, st.st_size, Quote(key)));
                              md5s.push_back(etag);
                            }
                            return WriteMetadata(out, key, upload.options.metadata);
                          }));
  STRATA_ASSIGN_OR_RETURN(ObjectInfo info, Commit(tmp, key, MultipartEtag(md5s), upload.options));
  RemoveFlatDir(root_fd_.get(), upload.dir).IgnoreError();  // the object is committed either way
  return info;
}

Status FileStore::AbortMultipartUpload(std::string_view key, std::string_view upload_id) {
  STRATA_ASSIGN_OR_RETURN(Upload upload, FindUpload(key, upload_id));
  std::lock_guard lock(parts_mu_);
  return RemoveFlatDir(root_fd_.get(), upload.dir);
}

Result<ObjectInfo> FileStore::Copy(std::string_view src_key, std::string_view dst_key, const CopyOptions& options) {
  STRATA_RETURN_IF_ERROR(ValidateFileKey(src_key));
  STRATA_RETURN_IF_ERROR(ValidateFileKey(dst_key));
  STRATA_RETURN_IF_ERROR(CheckMetadata(dst_key, options.metadata));
  const std::string src(src_key);
  STRATA_ASSIGN_OR_RETURN(UniqueFd in, OpenObject(src));
  STRATA_ASSIGN_OR_RETURN(ObjectInfo info, InfoOf(in.get(), src, /*with_metadata=*/true));
  PutOptions put;
  put.metadata = options.directive == MetadataDirective::kReplace ? options.metadata : std::move(info.metadata);
  STRATA_ASSIGN_OR_RETURN(std::string tmp, WriteTemp(dst_key, [&](int out) {
                            STRATA_RETURN_IF_ERROR(CopyFd(in.get(), out, info.size, Quote(src_key)));
                            return WriteMetadata(out, dst_key, put.metadata);
                          }));
  return Commit(tmp, dst_key, info.etag, put);
}

// Temp files of puts that died with their process (a crash between write and
// rename). A day old is far beyond any live put.
void RemoveStaleTemps(int root_fd) {
  auto entries = ReadSortedDir(root_fd, kStaging);
  if (!entries.ok()) return;
  const auto now = std::chrono::system_clock::now();
  for (const FileDirEntry& e : *entries) {
    if (e.is_dir || e.sort_name.compare(0, 4, "put-") != 0) continue;
    std::string path = kStaging + "/" + e.sort_name;
    struct stat st;
    if (::fstatat(root_fd, path.c_str(), &st, 0) == 0 && now - ToWallTime(st) > std::chrono::hours(24)) {
      ::unlinkat(root_fd, path.c_str(), 0);
    }
  }
}

}  // namespace

Status ValidateFileKey(std::string_view key) {
  STRATA_RETURN_IF_ERROR(ValidateKey(key));
  auto bad = [&](const std::string& why) {
    return InvalidArgumentError("key " + Quote(key) + " cannot be stored in a file store: " + why);
  };
  if (key.front() == '/') return bad("it starts with '/'");
  size_t start = 0;
  for (;;) {
    size_t slash = key.find('/', start);
    std::string_view seg = key.substr(start, slash == std::string_view::npos ? key.npos : slash - start);
    if (seg.empty()) return bad("it has an empty path segment (\"//\" or a trailing '/')");
    if (seg == "." || seg == "..") return bad("it has a '.' or '..' segment");
    if (seg.size() > NAME_MAX) return bad("a path segment is longer than 255 bytes");
    if (start == 0 && seg == kFileStoreStagingDir) return bad("'.strata-tmp' is reserved for staging");
    if (slash == std::string_view::npos) break;
    start = slash + 1;
  }
  return Status::Ok();
}

Result<ObjectStorePtr> OpenFileStore(const std::string& root_dir) { return OpenFileStore(root_dir, {}); }

Result<ObjectStorePtr> OpenFileStore(const std::string& root_dir, FileStoreOptions options) {
  if (root_dir.empty()) return InvalidArgumentError("the file store root directory is empty");
  if (root_dir.find('\0') != std::string::npos) return InvalidArgumentError("the file store root holds a NUL byte");
  // mkdir -p
  for (size_t slash = root_dir.find('/', 1);; slash = root_dir.find('/', slash + 1)) {
    std::string dir = root_dir.substr(0, slash);
    if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
      return ErrnoToStatus(errno, "creating file store root '" + root_dir + "' (at '" + dir + "')");
    }
    if (slash == std::string::npos) break;
  }
  char resolved[PATH_MAX];
  if (!::realpath(root_dir.c_str(), resolved)) return ErrnoToStatus(errno, "resolving '" + root_dir + "'");
  UniqueFd fd(::open(resolved, O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd.valid()) {
    if (errno == ENOTDIR) return InvalidArgumentError("file store root '" + root_dir + "' is not a directory");
    return ErrnoToStatus(errno, "opening file store root '" + root_dir + "'");
  }
  for (const std::string& dir : {kStaging, kUploads}) {
    if (::mkdirat(fd.get(), dir.c_str(), 0755) != 0 && errno != EEXIST) {
      return ErrnoToStatus(errno, "creating '" + dir + "' in file store root '" + root_dir + "'");
    }
  }
  RemoveStaleTemps(fd.get());
  return ObjectStorePtr(std::make_shared<FileStore>(resolved, std::move(fd), options));
}

}  // namespace strata

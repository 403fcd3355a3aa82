#include "object/file_store.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <random>
#include <tuple>

#include "base/hash.h"
#include "base/mutex.h"
#include "io/durable.h"
#include "io/file_system.h"
#include "net/uri.h"
#include "object/completed_uploads.h"
#include "object/file_util.h"
#include "object/list_util.h"
#include "object/part_reader.h"

namespace strata::object {
namespace {

constexpr char kEtagXattr[] = "user.strata.etag";
constexpr char kMetaXattr[] = "user.strata.meta";              // EncodeMetadata(); absent: no metadata
constexpr char kPartsXattr[] = "user.strata.parts";            // EncodePartSizes(); absent: not multipart/unknown
constexpr char kPartChecksumXattr[] = "user.strata.checksum";  // a part's "<algorithm>:<base64>"; absent: none
const std::string kStaging(kFileStoreStagingDir);
const std::string kUploads = kStaging + "/uploads";
const std::string kCompleted = kStaging + "/completed";  // one record per completed upload
constexpr size_t kChunk = kFileChunk;

int64_t MtimeNs(const io::FileStat& st) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(st.mtime.time_since_epoch()).count();
}

std::string Quote(std::string_view key) { return "'" + std::string(key) + "'"; }

std::string ParentOf(const std::string& rel) {
  size_t slash = rel.rfind('/');
  return slash == std::string::npos ? std::string() : rel.substr(0, slash);
}

bool IsHex(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

class FileStore : public ObjectStore, public PartStreamer {
 public:
  FileStore(std::string root, UniqueFd root_fd, FileStoreOptions options)
      : root_(std::move(root)),
        root_fd_(std::move(root_fd)),
        options_(options),
        fs_(options_.fs ? *options_.fs : io::DefaultFileSystem()),
        xattrs_(options.use_xattrs) {
    std::random_device rd;
    tag_ = std::to_string(::getpid()) + "-" + ToHex(Md5(std::to_string(rd()) + std::to_string(rd()))).substr(0, 8);
  }

  Result<GetResult> Get(std::string_view key, const GetOptions& options) override {
    const std::string k(key);
    STRATA_ASSIGN_OR_RETURN(auto file, OpenObject(k));
    STRATA_ASSIGN_OR_RETURN(ObjectInfo info, InfoOf(*file, k, /*with_metadata=*/true));
    STRATA_RETURN_IF_ERROR(CheckGetConditions(options, info));
    uint64_t begin = 0, end = 0;
    STRATA_RETURN_IF_ERROR(ResolveRange(options.range, info.size, &begin, &end).WithContext("get " + Quote(key)));
    GetResult result;
    if (options.into.data && options.into.size == end - begin) {
      STRATA_RETURN_IF_ERROR(ReadExactly(*file, begin, end - begin, options.into.data, Quote(key)));
      result.data = Buffer::Wrap(options.into.owner, options.into.data, options.into.size);
    } else {
      MutableBuffer buf(end - begin);
      STRATA_RETURN_IF_ERROR(ReadExactly(*file, begin, buf.size(), buf.data(), Quote(key)));
      result.data = std::move(buf).Freeze();
    }
    result.info = std::move(info);
    result.offset = begin;
    return result;
  }

  Result<ObjectInfo> Head(std::string_view key) override {
    const std::string k(key);
    STRATA_ASSIGN_OR_RETURN(auto file, OpenObject(k));
    return InfoOf(*file, k, /*with_metadata=*/true);
  }

  Result<ListResult> List(const ListOptions& options) override {
    FileCursor cursor(root_fd_.get(), options.prefix, [this](const std::string& key) { return MaybeInfo(key); });
    return ListWithCursor(options, cursor);
  }

  Result<ObjectInfo> Put(std::string_view key, Buffer data, const PutOptions& options) override {
    STRATA_RETURN_IF_ERROR(Names(key).status());
    STRATA_RETURN_IF_ERROR(CheckMetadata(key, options.metadata));
    std::string etag = ToHex(Md5(data.data(), data.size()));
    STRATA_ASSIGN_OR_RETURN(std::string tmp, WriteTemp(key, [&](io::WritableFile& out) {
                              STRATA_RETURN_IF_ERROR(out.Append(data));
                              return WriteMetadata(out, key, options.metadata);
                            }));
    return Commit(tmp, key, etag, options);
  }

  Status Delete(std::string_view key) override {
    STRATA_ASSIGN_OR_RETURN(std::vector<std::string> names, Names(key));
    const std::string leaf = JoinNames(names, names.size());
    MutexLock lock(namespace_mu_);
    auto st = fs_.Stat(Abs(leaf));
    if (!st.ok()) {
      if (st.status().code() == Code::kNotFound) return Status::Ok();  // missing, or under a file
      return st.status().WithContext("deleting " + Quote(key));
    }
    const std::string target = st->is_dir ? SelfOf(leaf) : leaf;
    Status removed = fs_.Remove(Abs(target));
    if (removed.code() == Code::kNotFound) return Status::Ok();  // only keys below it
    STRATA_RETURN_IF_ERROR(removed.WithContext("deleting " + Quote(key)));
    ForgetEtag(std::string(key));
    if (options_.fsync)
      STRATA_RETURN_IF_ERROR(fs_.SyncDir(Abs(ParentOf(target))).WithContext("deleting " + Quote(key)));
    // Drop directories the delete emptied (never one holding a "dir/" marker:
    // that is a file in it), and turn a directory left holding only the
    // object named like it back into that plain file.
    for (size_t depth = st->is_dir ? names.size() : names.size() - 1; depth > 0; --depth) {
      const std::string dir = JoinNames(names, depth);
      if (fs_.RemoveDir(Abs(dir)).ok()) continue;
      auto self = fs_.Stat(Abs(SelfOf(dir)));
      if (self.ok() && !self->is_dir) {
        auto entries = fs_.ListDir(Abs(dir));
        if (entries.ok() && entries->size() == 1) {
          ConvertDirToFile(root_fd_.get(), dir, ConvName(dir), options_.fsync).IgnoreError();  // either layout is valid
        }
      }
      break;
    }
    return Status::Ok();
  }

  Result<std::string> CreateMultipartUpload(std::string_view key, const PutOptions& options) override;
  Result<std::string> UploadPart(std::string_view key, std::string_view upload_id, int part_number, Buffer data,
                                 const PartOptions& options) override;
  Result<std::string> UploadPartFrom(std::string_view key, std::string_view upload_id, int part_number,
                                     const PartReader& source, const PartOptions& options) override;
  // Stages a part written by `write` (which also yields its MD5 hex ETag).
  Result<std::string> StagePart(std::string_view key, std::string_view upload_id, int part_number,
                                const PartOptions& options,
                                const std::function<Status(io::WritableFile&, std::string*)>& write);
  Result<ObjectInfo> CompleteMultipartUpload(std::string_view key, std::string_view upload_id,
                                             const std::vector<CompletedPart>& parts,
                                             const CompleteOptions& options) override;
  Result<std::optional<ObjectInfo>> FindCompletedUpload(std::string_view key, std::string_view upload_id,
                                                        const std::vector<CompletedPart>& parts) override;
  Status AbortMultipartUpload(std::string_view key, std::string_view upload_id) override;
  Result<std::vector<PartInfo>> ListParts(std::string_view key, std::string_view upload_id) override;
  Result<std::vector<UploadInfo>> ListMultipartUploads(std::string_view prefix) override;
  StoreCapabilities Capabilities() const override {
    StoreCapabilities caps;
    caps.directory_markers = true;  // "dir/" is the file dir/.strata-x
    caps.server_side_copy = true;
    caps.metadata_kept = xattrs_.load();  // without xattrs, non-empty metadata is NotSupported
    caps.checksums_kept = caps.metadata_kept;
    caps.part_sizes_kept = caps.metadata_kept;  // an xattr too
    caps.min_part_size = options_.min_part_size;
    return caps;
  }
  Result<ObjectInfo> Copy(std::string_view src_key, std::string_view dst_key, const CopyOptions& options) override;
  std::string Url() const override { return "file://" + net::UriEncode(root_, /*encode_slash=*/false); }

 private:
  struct Upload {
    std::string dir;  // relative to the root
    std::string key;
    PutOptions options;
    WallTime initiated{};
  };
  struct CachedEtag {
    uint64_t inode;
    uint64_t size;
    int64_t mtime_ns;
    std::string etag;
  };

  // The path of `rel` (relative to the root) for the file system.
  std::string Abs(const std::string& rel) const { return rel.empty() ? root_ : root_ + "/" + rel; }

  // The on-disk names of the key's segments (see file_util.h for the layout).
  static Result<std::vector<std::string>> Names(std::string_view key) {
    STRATA_RETURN_IF_ERROR(ValidateKey(key));
    return EncodeKeyPath(key);
  }
  static std::string SelfOf(const std::string& dir) { return dir + "/" + std::string(kSelfName); }
  // A fresh internal name next to `rel`, for a conversion.
  std::string ConvName(const std::string& rel) {
    std::string parent = ParentOf(rel);
    return (parent.empty() ? "" : parent + "/") + std::string(kConvPrefix) + tag_ + "-" + std::to_string(++temp_seq_);
  }

  Result<std::unique_ptr<io::RandomAccessFile>> OpenPath(const std::string& path, const std::string& key) {
    auto file = fs_.OpenForRead(Abs(path));
    if (!file.ok()) {
      // ELOOP: a symlink cycle, treated like a dangling link.
      if (file.status().code() == Code::kNotFound || file.status().cause() == std::strerror(ELOOP)) {
        return NotFoundError("no such key " + Quote(key));
      }
      return file.status().WithContext("opening " + Quote(key));
    }
    return file;
  }

  // The object's file: <names> itself, or <names>/.strata-self when keys
  // below it exist. A conversion between the two opens is retried: the
  // directory opened first is no longer at <names> (each retry proves one).
  Result<std::unique_ptr<io::RandomAccessFile>> OpenObject(const std::string& key) {
    STRATA_ASSIGN_OR_RETURN(std::vector<std::string> names, Names(key));
    const std::string leaf = JoinNames(names, names.size());
    constexpr int kAttempts = 64;  // bounded even against a writer converting without pause
    for (int attempt = 1;; ++attempt) {
      STRATA_ASSIGN_OR_RETURN(auto file, OpenPath(leaf, key));
      STRATA_ASSIGN_OR_RETURN(io::FileStat st, file->Stat());
      if (!st.is_dir) return file;
      auto self = OpenPath(SelfOf(leaf), key);
      if (self.ok() || self.status().code() != Code::kNotFound || attempt == kAttempts) return self;
      auto again = fs_.Stat(Abs(leaf));
      if (!again.ok()) return self;
      if (again->is_dir && again->inode == st.inode) return self;  // no object, only keys below it
    }
  }

  Result<ObjectInfo> InfoOf(io::RandomAccessFile& file, const std::string& rel, bool with_metadata = false) {
    STRATA_ASSIGN_OR_RETURN(io::FileStat st, file.Stat());
    if (st.is_dir) return NotFoundError("no such key " + Quote(rel) + " (only keys below it)");
    ObjectInfo info;
    info.key = rel;
    info.size = st.size;
    info.mtime = st.mtime;
    STRATA_ASSIGN_OR_RETURN(info.etag, EtagOf(file, st, rel));
    if (with_metadata) {
      STRATA_ASSIGN_OR_RETURN(info.metadata, ReadMetadata(file, rel));
      // Only a multipart ETag ("<md5>-<parts>") can have part sizes: no extra read for the others.
      if (info.etag.find('-') != std::string::npos) info.part_sizes = ReadPartSizes(file, info.size);
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

  Status WriteMetadata(io::WritableFile& out, std::string_view key, const ObjectMetadata& m) {
    if (m.empty()) return Status::Ok();  // a fresh temp file has no stale record
    Status set = out.SetXattr(kMetaXattr, EncodeMetadata(m));
    if (set.code() == Code::kNotSupported) {
      xattrs_ = false;
      return NotSupportedError("cannot keep metadata of " + Quote(key) + ": " + root_ + " has no xattrs");
    }
    return set.WithContext("storing the metadata of " + Quote(key));
  }

  // The part sizes are an index, not data: failing to keep or read them only
  // makes ?partNumber= answer the whole object (as for a single PUT), so
  // neither fails the request. Set on the temp file with the metadata.
  void WritePartSizes(io::WritableFile& out, const std::vector<uint64_t>& sizes) {
    const std::string record = EncodePartSizes(sizes);  // "" when too many distinct sizes
    if (record.empty() || !xattrs_.load()) return;
    out.SetXattr(kPartsXattr, record).IgnoreError();
  }

  std::vector<uint64_t> ReadPartSizes(io::RandomAccessFile& file, uint64_t size) {
    if (!xattrs_.load()) return {};
    auto record = file.GetXattr(kPartsXattr);
    if (!record.ok()) return {};
    auto sizes = DecodePartSizes(*record);
    if (!sizes.ok()) return {};
    uint64_t total = 0;
    for (uint64_t s : *sizes) total += s;  // Decode bounds the sum
    if (total != size) return {};          // not this object's record
    return std::move(sizes).value();
  }

  Result<ObjectMetadata> ReadMetadata(io::RandomAccessFile& file, const std::string& rel) {
    if (!xattrs_.load()) return ObjectMetadata{};
    auto record = file.GetXattr(kMetaXattr);
    if (!record.ok()) {
      const Code code = record.status().code();
      if (code == Code::kNotFound || code == Code::kNotSupported) return ObjectMetadata{};
      return record.status().WithContext("reading the metadata of " + Quote(rel));
    }
    if (record->size() > kMaxEncodedMetadataBytes) {
      return CorruptionError("metadata of " + Quote(rel) + " is " + std::to_string(record->size()) + " bytes");
    }
    auto m = DecodeMetadata(*record);
    if (!m.ok()) return m.status().WithContext("metadata of " + Quote(rel));
    return m;
  }

  // A part's kept checksum; none when it has none or it cannot be read.
  PartChecksumInfo PartChecksumOf(const std::string& rel_path) {
    if (!xattrs_.load()) return {};
    auto in = fs_.OpenForRead(Abs(rel_path));
    if (!in.ok()) return {};
    auto record = (*in)->GetXattr(kPartChecksumXattr);
    if (!record.ok() || record->size() > 256) return {};
    size_t colon = record->find(':');
    if (colon == std::string::npos) return {};
    return {record->substr(0, colon), record->substr(colon + 1)};
  }

  Result<std::optional<ObjectInfo>> MaybeInfo(const std::string& rel) {
    auto file = OpenObject(rel);
    if (!file.ok()) {
      if (file.status().code() == Code::kNotFound) return std::optional<ObjectInfo>();
      return file.status();
    }
    auto info = InfoOf(**file, rel);
    if (!info.ok()) {
      if (info.status().code() == Code::kNotFound) return std::optional<ObjectInfo>();
      return info.status();
    }
    return std::optional<ObjectInfo>(std::move(*info));
  }

  // The xattr records which size and mtime its ETag describes, so a file
  // rewritten by another program is detected and rehashed.
  static std::string EtagRecord(const std::string& etag, const io::FileStat& st) {
    return etag + " " + std::to_string(st.size) + " " + std::to_string(MtimeNs(st));
  }

  Result<std::string> EtagOf(io::RandomAccessFile& file, const io::FileStat& st, const std::string& rel) {
    if (xattrs_.load()) {
      auto record = file.GetXattr(kEtagXattr);
      if (record.ok()) {
        size_t sp = record->find(' ');
        if (sp != std::string::npos && record->substr(sp) == EtagRecord("", st)) return record->substr(0, sp);
      } else if (record.status().code() == Code::kNotSupported) {
        xattrs_ = false;
      }
    }
    {
      MutexLock lock(cache_mu_);
      auto it = etag_cache_.find(rel);
      if (it != etag_cache_.end() && it->second.inode == st.inode && it->second.size == st.size &&
          it->second.mtime_ns == MtimeNs(st)) {
        return it->second.etag;
      }
    }
    STRATA_ASSIGN_OR_RETURN(std::string etag, Md5HexOf(file, st.size, Quote(rel)));
    RecordEtag(file, st, rel, etag);
    return etag;
  }

  // Best effort: a missing record only costs a rehash later.
  void RecordEtag(io::RandomAccessFile& file, const io::FileStat& st, const std::string& rel, const std::string& etag) {
    if (xattrs_.load()) {
      Status set = file.SetXattr(kEtagXattr, EtagRecord(etag, st));
      if (set.code() == Code::kNotSupported) xattrs_ = false;
    }
    MutexLock lock(cache_mu_);
    if (etag_cache_.size() > 100000) etag_cache_.clear();  // a bound, not an LRU: misses only rehash
    etag_cache_[rel] = CachedEtag{st.inode, st.size, MtimeNs(st), etag};
  }

  void ForgetEtag(const std::string& rel) {
    MutexLock lock(cache_mu_);
    etag_cache_.erase(rel);
  }

  std::string TempName(std::string_view kind) {
    return kStaging + "/" + std::string(kind) + "-" + tag_ + "-" + std::to_string(++temp_seq_);
  }

  // Writes a new temp file in the staging dir with `fill`, syncs it and
  // returns its relative path. The file is removed on failure.
  template <typename Fill>
  Result<std::string> WriteTemp(std::string_view key, Fill fill) {
    std::string tmp = TempName("put");
    auto file = fs_.CreateExclusive(Abs(tmp));
    if (file.status().code() == Code::kNotFound) {  // staging is made on the first write, never by a read
      STRATA_RETURN_IF_ERROR(fs_.CreateDirs(Abs(kStaging)).WithContext("creating the staging directory"));
      file = fs_.CreateExclusive(Abs(tmp));
    }
    if (!file.ok()) return file.status().WithContext("creating a temp file for " + Quote(key));
    Status st = fill(**file);
    if (st.ok() && options_.fsync) st = (*file)->Sync();
    if (st.ok()) st = (*file)->Close();
    if (!st.ok()) {
      fs_.Remove(Abs(tmp)).IgnoreError();
      return st.WithContext("writing " + Quote(key));
    }
    return tmp;
  }

  // Creates the directories above `key`; an object in the way (key "a" for
  // "a/b") moves into its directory as .strata-self.
  Status MakeParents(std::string_view key, const std::vector<std::string>& names, std::vector<std::string>* created)
      REQUIRES(namespace_mu_) {
    for (size_t depth = 1; depth < names.size(); ++depth) {
      const std::string dir = JoinNames(names, depth);
      auto st = fs_.Stat(Abs(dir));
      if (st.ok() && st->is_dir) continue;
      if (st.ok()) {
        STRATA_RETURN_IF_ERROR(
            ConvertFileToDir(root_fd_.get(), dir, ConvName(dir), options_.fsync).WithContext("storing " + Quote(key)));
        continue;
      }
      if (st.status().code() != Code::kNotFound) {
        return st.status().WithContext("creating directory '" + dir + "' for " + Quote(key));
      }
      STRATA_RETURN_IF_ERROR(
          fs_.CreateDirs(Abs(dir)).WithContext("creating directory '" + dir + "' for " + Quote(key)));
      created->push_back(dir);
    }
    return Status::Ok();
  }

  // Moves the finished temp file `tmp` to `key` under the Put conditions.
  Result<ObjectInfo> Commit(const std::string& tmp, std::string_view key, const std::string& etag,
                            const PutOptions& options, const CompleteOptions* complete = nullptr) {
    const std::string rel(key);  // the etag cache and messages go by key
    auto fail = [&](Status st) -> Result<ObjectInfo> {
      fs_.Remove(Abs(tmp)).IgnoreError();
      return st;
    };
    auto names = Names(key);
    if (!names.ok()) return fail(names.status());
    const std::string leaf = JoinNames(*names, names->size());
    std::string target = leaf;
    auto file = fs_.OpenForRead(Abs(tmp));
    if (!file.ok()) return fail(file.status().WithContext("reopening temp file"));
    auto st = (*file)->Stat();
    if (!st.ok()) return fail(st.status().WithContext("reopening temp file"));
    RecordEtag(**file, *st, rel, etag);
    std::vector<std::string> created;
    {
      MutexLock lock(namespace_mu_);
      const bool more = complete && (complete->if_none_match || !complete->if_match.empty());
      if (options.if_none_match || !options.if_match.empty() || more) {
        auto current = MaybeInfo(rel);
        if (!current.ok()) return fail(current.status());
        const ObjectInfo* now = *current ? &**current : nullptr;
        Status cond = CheckPutConditions(options, key, now);
        if (cond.ok() && more) cond = CheckCompleteConditions(*complete, key, now);
        if (!cond.ok()) return fail(cond);
      }
      Status parents = MakeParents(key, *names, &created);
      if (!parents.ok()) return fail(parents);
      auto existing = fs_.Stat(Abs(leaf));
      if (existing.ok() && existing->is_dir) target = SelfOf(leaf);  // keys below it exist
      Status renamed = fs_.Rename(Abs(tmp), Abs(target));
      if (!renamed.ok()) return fail(renamed.WithContext("renaming the temp file onto " + Quote(key)));
      // The etag cache is keyed by key; the renamed inode keeps its number.
      MutexLock cache_lock(cache_mu_);
      etag_cache_[rel] = CachedEtag{st->inode, st->size, MtimeNs(*st), etag};
    }
    if (options_.fsync) {
      STRATA_RETURN_IF_ERROR(fs_.SyncDir(Abs(ParentOf(target))).WithContext("committing " + Quote(key)));
      for (const auto& dir : created) {
        STRATA_RETURN_IF_ERROR(fs_.SyncDir(Abs(ParentOf(dir))).WithContext("committing " + Quote(key)));
      }
    }
    ObjectInfo info;
    info.key = rel;
    info.size = st->size;
    info.etag = etag;
    info.mtime = st->mtime;
    info.metadata = options.metadata;
    return info;
  }

  // Removes the directory `rel` and its files (one level).
  Status RemoveFlatDir(const std::string& rel) {
    auto entries = fs_.ListDir(Abs(rel));
    if (entries.ok()) {
      for (const io::DirEntry& e : *entries) fs_.Remove(Abs(rel + "/" + e.name)).IgnoreError();
    }
    Status removed = fs_.RemoveDir(Abs(rel));
    return removed.code() == Code::kNotFound ? Status::Ok() : removed.WithContext("removing " + rel);
  }

  Result<Upload> FindUpload(std::string_view key, std::string_view upload_id);
  Result<ObjectInfo> CompleteInProgress(std::string_view key, std::string_view upload_id,
                                        const std::vector<CompletedPart>& parts, const CompleteOptions& options);
  Result<Upload> ReadUpload(std::string_view upload_id, Status missing);

  std::string root_;
  UniqueFd root_fd_;  // for listing (FileCursor), which needs file types the FileSystem does not report
  FileStoreOptions options_;
  io::FileSystem& fs_;
  std::atomic<bool> xattrs_;
  std::string tag_;
  std::atomic<uint64_t> temp_seq_{0};
  Mutex namespace_mu_;  // serialises mkdir/rename/unlink/rmdir and conditional checks
  Mutex parts_mu_;      // serialises replacing a part
  Mutex cache_mu_;
  std::map<std::string, CachedEtag> etag_cache_ GUARDED_BY(cache_mu_);
};

// ---- Multipart: parts live in .strata-tmp/uploads/<id>/NNNNN-<md5hex>; the
// upload's key and conditions in .strata-tmp/uploads/<id>/meta, its object
// metadata (when any) in .../metadata (EncodeMetadata), written before meta.

Result<FileStore::Upload> FileStore::ReadUpload(std::string_view upload_id, Status missing) {
  if (upload_id.size() != 32 || !IsHex(upload_id)) return missing;
  Upload upload;
  upload.dir = kUploads + "/" + std::string(upload_id);
  auto meta = io::ReadFileToString(fs_, Abs(upload.dir + "/meta"), 4096);
  if (!meta.ok()) {
    if (meta.status().code() == Code::kNotFound) return missing;  // ENOENT and ENOTDIR
    if (meta.status().code() == Code::kInvalidArgument) return CorruptionError("bad upload record " + upload.dir);
    return meta.status().WithContext("opening upload " + upload.dir);
  }
  // meta = if_none_match ('0'/'1') '\n' if_match '\n' key
  size_t nl1 = meta->find('\n'), nl2 = nl1 == std::string::npos ? nl1 : meta->find('\n', nl1 + 1);
  if (nl2 == std::string::npos) return CorruptionError("bad upload record " + upload.dir);
  upload.key = meta->substr(nl2 + 1);
  upload.options.if_none_match = (*meta)[0] == '1';
  upload.options.if_match = meta->substr(nl1 + 1, nl2 - nl1 - 1);
  auto st = fs_.Stat(Abs(upload.dir + "/meta"));
  if (st.ok()) upload.initiated = st->mtime;
  auto record = io::ReadFileToString(fs_, Abs(upload.dir + "/metadata"), kMaxEncodedMetadataBytes);
  if (!record.ok()) {
    if (record.status().code() == Code::kNotFound) return upload;  // created without metadata
    if (record.status().code() == Code::kInvalidArgument) return CorruptionError("bad upload metadata " + upload.dir);
    return record.status().WithContext("reading the metadata of upload " + upload.dir);
  }
  STRATA_ASSIGN_OR_RETURN(upload.options.metadata, DecodeMetadata(*record));
  return upload;
}

Result<FileStore::Upload> FileStore::FindUpload(std::string_view key, std::string_view upload_id) {
  Status missing =
      NotFoundError("no multipart upload '" + std::string(upload_id) + "' for " + Quote(key) + " (NoSuchUpload)");
  STRATA_ASSIGN_OR_RETURN(Upload upload, ReadUpload(upload_id, missing));
  if (upload.key != key) return missing;
  return upload;
}

Result<std::vector<UploadInfo>> FileStore::ListMultipartUploads(std::string_view prefix) {
  std::vector<UploadInfo> uploads;
  auto entries = fs_.ListDir(Abs(kUploads));
  if (!entries.ok()) {
    if (entries.status().code() == Code::kNotFound) return uploads;  // nothing was ever uploaded
    return entries.status();
  }
  for (const io::DirEntry& e : *entries) {
    if (!e.is_dir) continue;
    auto upload = ReadUpload(e.name, NotFoundError("gone"));
    if (!upload.ok()) {
      if (upload.status().code() == Code::kNotFound) continue;  // not an upload, or finished meanwhile
      return upload.status();
    }
    if (!upload->key.starts_with(prefix)) continue;
    const ObjectMetadata& m = upload->options.metadata;
    uploads.push_back({upload->key, e.name, upload->initiated, m.checksum_algorithm, m.checksum_type});
  }
  std::stable_sort(uploads.begin(), uploads.end(), [](const UploadInfo& a, const UploadInfo& b) {
    return std::tie(a.key, a.initiated) < std::tie(b.key, b.initiated);
  });
  return uploads;
}

Result<std::string> FileStore::CreateMultipartUpload(std::string_view key, const PutOptions& options) {
  STRATA_RETURN_IF_ERROR(Names(key).status());
  STRATA_RETURN_IF_ERROR(CheckMetadata(key, options.metadata));
  if (options.if_match.find('\n') != std::string::npos) return InvalidArgumentError("If-Match holds a newline");
  std::random_device rd;
  std::string id = ToHex(Md5(tag_ + std::to_string(++temp_seq_) + std::to_string(rd()) + std::to_string(rd())));
  std::string dir = kUploads + "/" + id;
  STRATA_RETURN_IF_ERROR(fs_.CreateDirs(Abs(dir)).WithContext("creating upload directory for " + Quote(key)));
  if (!options.metadata.empty()) {
    STRATA_RETURN_IF_ERROR(io::WriteFileAtomic(fs_, Abs(dir + "/metadata"), EncodeMetadata(options.metadata))
                               .WithContext("creating upload metadata for " + Quote(key)));
  }
  std::string meta = std::string(options.if_none_match ? "1" : "0") + "\n" + options.if_match + "\n" + std::string(key);
  STRATA_RETURN_IF_ERROR(
      io::WriteFileAtomic(fs_, Abs(dir + "/meta"), meta).WithContext("creating upload record for " + Quote(key)));
  return id;
}

Result<std::string> FileStore::UploadPart(std::string_view key, std::string_view upload_id, int part_number,
                                          Buffer data, const PartOptions& options) {
  return StagePart(key, upload_id, part_number, options, [&](io::WritableFile& f, std::string* etag) {
    *etag = ToHex(Md5(data.data(), data.size()));
    return f.Append(data);
  });
}

// The part goes to its staging file in kChunk pieces, hashed on the way.
Result<std::string> FileStore::UploadPartFrom(std::string_view key, std::string_view upload_id, int part_number,
                                              const PartReader& source, const PartOptions& options) {
  return StagePart(key, upload_id, part_number, options, [&](io::WritableFile& f, std::string* etag) -> Status {
    Md5Hasher md5;
    std::string buf(static_cast<size_t>(std::min<uint64_t>(source.size, kChunk)), '\0');
    for (uint64_t off = 0; off < source.size;) {
      size_t n = static_cast<size_t>(std::min<uint64_t>(source.size - off, buf.size()));
      STRATA_RETURN_IF_ERROR(source.read(off, buf.data(), n));
      md5.Update(buf.data(), n);
      STRATA_RETURN_IF_ERROR(f.Append(buf.data(), n));
      off += n;
    }
    *etag = ToHex(md5.Finish());
    return Status::Ok();
  });
}

Result<std::string> FileStore::StagePart(std::string_view key, std::string_view upload_id, int part_number,
                                         const PartOptions& options,
                                         const std::function<Status(io::WritableFile&, std::string*)>& write) {
  STRATA_RETURN_IF_ERROR(CheckPartNumber(key, part_number));
  STRATA_ASSIGN_OR_RETURN(Upload upload, FindUpload(key, upload_id));
  std::string etag;
  char number[8];
  std::snprintf(number, sizeof(number), "%05d-", part_number);
  std::string tmp = upload.dir + "/tmp-" + std::to_string(++temp_seq_);
  auto file = fs_.CreateExclusive(Abs(tmp));
  if (!file.ok()) {
    if (file.status().code() == Code::kNotFound) {
      return NotFoundError("multipart upload for " + Quote(key) + " was aborted (NoSuchUpload)");
    }
    return file.status().WithContext("staging part " + std::to_string(part_number) + " of " + Quote(key));
  }
  Status st = write(**file, &etag);
  // The part's checksum rides on the part file (set before its rename), or is not kept without xattrs.
  const PartChecksumInfo& ck = options.checksum;
  if (st.ok() && !ck.algorithm.empty() && xattrs_.load()) {
    Status set = (*file)->SetXattr(kPartChecksumXattr, ck.algorithm + ":" + ck.value);
    if (set.code() != Code::kNotSupported) st = set;
  }
  if (st.ok() && options_.fsync) st = (*file)->Sync();
  if (st.ok()) st = (*file)->Close();
  MutexLock lock(parts_mu_);
  auto entries = ReadSortedDir(root_fd_.get(), upload.dir, /*raw=*/true);
  if (st.ok() && !entries.ok()) st = entries.status();
  if (st.ok()) {
    st = fs_.Rename(Abs(tmp), Abs(upload.dir + "/" + number + etag))
             .WithContext("storing part " + std::to_string(part_number) + " of " + Quote(key));
  }
  if (!st.ok()) {
    fs_.Remove(Abs(tmp)).IgnoreError();
    return st;
  }
  for (const FileDirEntry& e : *entries) {  // an earlier upload of the same part number
    if (e.sort_name.compare(0, 6, number) == 0 && e.sort_name != number + etag) {
      fs_.Remove(Abs(upload.dir + "/" + e.sort_name)).IgnoreError();
    }
  }
  return etag;
}

Result<std::vector<PartInfo>> FileStore::ListParts(std::string_view key, std::string_view upload_id) {
  STRATA_ASSIGN_OR_RETURN(Upload upload, FindUpload(key, upload_id));
  MutexLock lock(parts_mu_);
  STRATA_ASSIGN_OR_RETURN(std::vector<FileDirEntry> entries, ReadSortedDir(root_fd_.get(), upload.dir, /*raw=*/true));
  std::vector<PartInfo> parts;
  for (const FileDirEntry& e : entries) {
    const std::string& name = e.sort_name;
    if (e.is_dir || name.size() != 6 + 32 || name[5] != '-' || !IsHex(name.substr(6))) continue;
    auto st = fs_.Stat(Abs(upload.dir + "/" + name));
    if (!st.ok()) continue;
    parts.push_back(
        {std::atoi(name.substr(0, 5).c_str()), name.substr(6), st->size, PartChecksumOf(upload.dir + "/" + name)});
  }
  return parts;  // names sort by part number thanks to the zero padding
}

Result<ObjectInfo> FileStore::CompleteMultipartUpload(std::string_view key, std::string_view upload_id,
                                                      const std::vector<CompletedPart>& parts,
                                                      const CompleteOptions& options) {
  auto info = CompleteInProgress(key, upload_id, parts, options);
  if (info.ok() || info.status().code() != Code::kNotFound) return info;
  // No such upload (any more): a Complete sent again after it succeeded gets the same answer.
  STRATA_ASSIGN_OR_RETURN(std::optional<ObjectInfo> done, FindCompletedUpload(key, upload_id, parts));
  if (done) return std::move(*done);
  return info;
}

Result<std::optional<ObjectInfo>> FileStore::FindCompletedUpload(std::string_view key, std::string_view upload_id,
                                                                 const std::vector<CompletedPart>& parts) {
  if (upload_id.size() != 32 || !IsHex(upload_id)) return std::optional<ObjectInfo>();  // never one of ours
  STRATA_ASSIGN_OR_RETURN(auto done, ReadCompletedRecord(fs_, Abs(kCompleted), std::string(upload_id)));
  if (!done) return std::optional<ObjectInfo>();
  STRATA_ASSIGN_OR_RETURN(ObjectInfo info, AnswerCompleted(*done, key, upload_id, parts));
  return std::optional<ObjectInfo>(std::move(info));
}

Result<ObjectInfo> FileStore::CompleteInProgress(std::string_view key, std::string_view upload_id,
                                                 const std::vector<CompletedPart>& parts,
                                                 const CompleteOptions& options) {
  STRATA_ASSIGN_OR_RETURN(Upload upload, FindUpload(key, upload_id));
  STRATA_ASSIGN_OR_RETURN(std::vector<PartInfo> uploaded, ListParts(key, upload_id));
  STRATA_RETURN_IF_ERROR(CheckCompleteParts(key, parts, uploaded, options_.min_part_size));
  std::vector<PartInfo> done;  // the completed parts, for the object's checksum
  for (const CompletedPart& part : parts) {
    auto it = std::lower_bound(uploaded.begin(), uploaded.end(), part.part_number,
                               [](const PartInfo& p, int n) { return p.part_number < n; });
    if (it != uploaded.end() && it->part_number == part.part_number) done.push_back(*it);
  }
  CompleteChecksum(&upload.options.metadata, done);
  std::vector<std::string> md5s;
  std::vector<uint64_t> sizes;
  STRATA_ASSIGN_OR_RETURN(std::string tmp, WriteTemp(key, [&](io::WritableFile& out) -> Status {
                            for (const CompletedPart& part : parts) {
                              char name[48];
                              std::string etag(part.etag);
                              etag.erase(std::remove(etag.begin(), etag.end(), '"'), etag.end());
                              std::snprintf(name, sizeof(name), "/%05d-", part.part_number);
                              auto in = fs_.OpenForRead(Abs(upload.dir + name + etag));
                              auto size = in.ok() ? (*in)->Size() : Result<uint64_t>(in.status());
                              if (!size.ok()) {
                                return NotFoundError("part " + std::to_string(part.part_number) + " of " + Quote(key) +
                                                     " vanished (upload aborted?)");
                              }
                              STRATA_RETURN_IF_ERROR(CopyInto(**in, *size, out, Quote(key)));
                              md5s.push_back(etag);
                              sizes.push_back(*size);
                            }
                            WritePartSizes(out, sizes);
                            return WriteMetadata(out, key, upload.options.metadata);
                          }));
  // The conditions are checked under the namespace lock, with the rename.
  STRATA_ASSIGN_OR_RETURN(ObjectInfo info, Commit(tmp, key, MultipartEtag(md5s), upload.options, &options));
  info.part_sizes = std::move(sizes);
  // Recorded before the upload goes: until then a retry completes it again
  // from its parts (the same object), so a failure here only keeps it longer.
  Status recorded = WriteCompletedRecord(fs_, Abs(kCompleted), std::string(upload_id), CompletedWith(parts, info),
                                         options_.completed_uploads_kept);
  if (recorded.ok()) RemoveFlatDir(upload.dir).IgnoreError();  // the object is committed either way
  return info;
}

Status FileStore::AbortMultipartUpload(std::string_view key, std::string_view upload_id) {
  STRATA_ASSIGN_OR_RETURN(Upload upload, FindUpload(key, upload_id));
  MutexLock lock(parts_mu_);
  return RemoveFlatDir(upload.dir);
}

Result<ObjectInfo> FileStore::Copy(std::string_view src_key, std::string_view dst_key, const CopyOptions& options) {
  STRATA_RETURN_IF_ERROR(Names(dst_key).status());
  STRATA_RETURN_IF_ERROR(CheckMetadata(dst_key, options.metadata));
  const std::string src(src_key);
  STRATA_ASSIGN_OR_RETURN(auto in, OpenObject(src));
  STRATA_ASSIGN_OR_RETURN(ObjectInfo info, InfoOf(*in, src, /*with_metadata=*/true));
  PutOptions put;
  put.metadata = options.directive == MetadataDirective::kReplace ? options.metadata : std::move(info.metadata);
  STRATA_ASSIGN_OR_RETURN(std::string tmp, WriteTemp(dst_key, [&](io::WritableFile& out) {
                            STRATA_RETURN_IF_ERROR(CopyInto(*in, info.size, out, Quote(src_key)));
                            return WriteMetadata(out, dst_key, put.metadata);
                          }));
  return Commit(tmp, dst_key, info.etag, put);
}

// Temp files of puts that died with their process (a crash between write and
// rename). A day old is far beyond any live put.
void RemoveStaleTemps(io::FileSystem& fs, const std::string& root, Clock& clock) {
  const std::string staging = root + "/" + kStaging;
  auto entries = fs.ListDir(staging);
  if (!entries.ok()) return;
  const WallTime now = clock.WallNow();
  for (const io::DirEntry& e : *entries) {
    if (e.is_dir || e.name.compare(0, 4, "put-") != 0) continue;
    if (now - e.mtime > std::chrono::hours(24)) fs.Remove(staging + "/" + e.name).IgnoreError();
  }
}

}  // namespace

Result<ObjectStorePtr> OpenFileStore(const std::string& root_dir) { return OpenFileStore(root_dir, {}); }

Result<ObjectStorePtr> OpenFileStore(const std::string& root_dir, FileStoreOptions options) {
  if (root_dir.empty()) return InvalidArgumentError("the file store root directory is empty");
  if (root_dir.find('\0') != std::string::npos) return InvalidArgumentError("the file store root holds a NUL byte");
  io::FileSystem& fs = options.fs ? *options.fs : io::DefaultFileSystem();
  Status made = fs.CreateDirs(root_dir);
  if (made.code() == Code::kAlreadyExists) {
    return InvalidArgumentError("file store root '" + root_dir + "' is not a directory");
  }
  STRATA_RETURN_IF_ERROR(made.WithContext("creating file store root '" + root_dir + "'"));
  Result<std::string> resolved = fs.RealPath(root_dir);
  if (!resolved.ok()) return resolved.status().WithContext("resolving '" + root_dir + "'");
  Result<int> dir_fd = fs.OpenDirectory(*resolved);
  if (!dir_fd.ok()) {
    if (dir_fd.status().cause() == std::strerror(ENOTDIR)) {
      return InvalidArgumentError("file store root '" + root_dir + "' is not a directory");
    }
    return dir_fd.status().WithContext("opening file store root '" + root_dir + "'");
  }
  UniqueFd fd(*dir_fd);
  // The staging directory is made by the first write: opening (to list or
  // read) leaves the tree as it was.
  RemoveStaleTemps(fs, *resolved, options.clock ? *options.clock : RealClock());
  return ObjectStorePtr(std::make_shared<FileStore>(*resolved, std::move(fd), options));
}

}  // namespace strata::object

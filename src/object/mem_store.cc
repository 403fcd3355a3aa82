#include "object/mem_store.h"

#include <algorithm>
#include <atomic>
#include <map>
#include <tuple>

#include "base/hash.h"
#include "base/mutex.h"
#include "object/completed_uploads.h"
#include "object/list_util.h"

namespace strata::object {
namespace {

struct MemObject {
  Buffer data;
  ObjectInfo info;
};

struct MemPart {
  Buffer data;
  std::string etag;  // hex MD5
  PartChecksumInfo checksum;
};

struct MemUpload {
  std::string key;
  PutOptions options;
  std::map<int, MemPart> parts;
  WallTime initiated{};
  uint64_t seq = 0;  // creation order, for ties in `initiated`
};

// The shared state behind one store name.
struct MemBucket {
  Mutex mu;
  std::map<std::string, MemObject, std::less<>> objects GUARDED_BY(mu);
  std::map<std::string, MemUpload, std::less<>> uploads GUARDED_BY(mu);
  uint64_t next_upload GUARDED_BY(mu) = 1;
  CompletedUploads completed;  // for a Complete sent again (its own lock)
};

// Named buckets are held strongly (process-global); anonymous ones weakly, so
// their Url() can be reopened while a handle is alive.
struct RegistryEntry {
  std::shared_ptr<MemBucket> strong;
  std::weak_ptr<MemBucket> weak;
};
Mutex g_registry_mu;
std::map<std::string, RegistryEntry>& Registry() {
  static auto* registry = new std::map<std::string, RegistryEntry>();
  return *registry;
}

std::atomic<uint64_t> g_anonymous_id{1};

// Walks the bucket's ordered map; the caller holds bucket.mu throughout (the
// cursor interface cannot say so: its methods are not analysed).
class MemCursor : public ListCursor {
 public:
  MemCursor(const MemBucket& bucket, std::string prefix) NO_THREAD_SAFETY_ANALYSIS : bucket_(bucket),
                                                                                     prefix_(std::move(prefix)) {
    it_ = bucket_.objects.lower_bound(prefix_);
  }
  void Skip(const std::string& after, bool skip_prefix) override NO_THREAD_SAFETY_ANALYSIS {
    auto target = bucket_.objects.end();
    if (skip_prefix) {
      auto succ = PrefixSuccessor(after);
      if (succ) target = bucket_.objects.lower_bound(*succ);
    } else {
      target = bucket_.objects.upper_bound(after);
    }
    if (target == bucket_.objects.end() || (it_ != bucket_.objects.end() && target->first > it_->first)) {
      it_ = target;
    }
  }
  Result<std::optional<std::string>> Next() override NO_THREAD_SAFETY_ANALYSIS {
    if (it_ == bucket_.objects.end() || it_->first.compare(0, prefix_.size(), prefix_) != 0) {
      return std::optional<std::string>();
    }
    std::string key = it_->first;
    ++it_;
    return std::optional<std::string>(std::move(key));
  }
  Result<std::optional<ObjectInfo>> Info(const std::string& key) override NO_THREAD_SAFETY_ANALYSIS {
    auto it = bucket_.objects.find(key);
    if (it == bucket_.objects.end()) return std::optional<ObjectInfo>();
    return std::optional<ObjectInfo>(it->second.info);
  }

 private:
  const MemBucket& bucket_;
  std::string prefix_;
  std::map<std::string, MemObject, std::less<>>::const_iterator it_;
};

class MemStore : public ObjectStore {
 public:
  MemStore(std::string name, std::shared_ptr<MemBucket> bucket, MemStoreOptions options)
      : name_(std::move(name)),
        bucket_(std::move(bucket)),
        options_(options),
        clock_(options_.clock ? *options_.clock : RealClock()) {}

  Result<GetResult> Get(std::string_view key, const GetOptions& options) override {
    STRATA_RETURN_IF_ERROR(ValidateKey(key));
    MutexLock lock(bucket_->mu);
    auto it = bucket_->objects.find(key);
    if (it == bucket_->objects.end()) return Missing(key);
    const MemObject& obj = it->second;
    STRATA_RETURN_IF_ERROR(CheckGetConditions(options, obj.info));
    uint64_t begin = 0, end = 0;
    STRATA_RETURN_IF_ERROR(
        ResolveRange(options.range, obj.info.size, &begin, &end).WithContext("get '" + std::string(key) + "'"));
    GetResult result;
    result.info = obj.info;
    result.offset = begin;
    result.data = obj.data.Slice(begin, end - begin);
    return result;
  }

  Result<ObjectInfo> Head(std::string_view key) override {
    STRATA_RETURN_IF_ERROR(ValidateKey(key));
    MutexLock lock(bucket_->mu);
    auto it = bucket_->objects.find(key);
    if (it == bucket_->objects.end()) return Missing(key);
    return it->second.info;
  }

  Result<ListResult> List(const ListOptions& options) override {
    MutexLock lock(bucket_->mu);
    MemCursor cursor(*bucket_, options.prefix);
    return ListWithCursor(options, cursor);
  }

  Result<ObjectInfo> Put(std::string_view key, Buffer data, const PutOptions& options) override {
    STRATA_RETURN_IF_ERROR(ValidateKey(key));
    STRATA_RETURN_IF_ERROR(ValidateMetadata(options.metadata));
    std::string etag = ToHex(Md5(data.data(), data.size()));
    MutexLock lock(bucket_->mu);
    return Store(key, std::move(data), std::move(etag), options);
  }

  Status Delete(std::string_view key) override {
    STRATA_RETURN_IF_ERROR(ValidateKey(key));
    MutexLock lock(bucket_->mu);
    auto it = bucket_->objects.find(key);
    if (it != bucket_->objects.end()) bucket_->objects.erase(it);
    return Status::Ok();
  }

  Result<std::string> CreateMultipartUpload(std::string_view key, const PutOptions& options) override {
    STRATA_RETURN_IF_ERROR(ValidateKey(key));
    STRATA_RETURN_IF_ERROR(ValidateMetadata(options.metadata));
    MutexLock lock(bucket_->mu);
    // Ids are unique per bucket and never reused, so a stale id stays unknown.
    std::string id = "mem-" + std::to_string(bucket_->next_upload++) + "-" +
                     ToHex(Md5(std::string(key) + std::to_string(bucket_->next_upload))).substr(0, 8);
    bucket_->uploads[id] = MemUpload{std::string(key), options, {}, clock().WallNow(), bucket_->next_upload};
    return id;
  }

  Result<std::string> UploadPart(std::string_view key, std::string_view upload_id, int part_number, Buffer data,
                                 const PartOptions& options) override {
    STRATA_RETURN_IF_ERROR(CheckPartNumber(key, part_number));
    std::string etag = ToHex(Md5(data.data(), data.size()));
    MutexLock lock(bucket_->mu);
    STRATA_ASSIGN_OR_RETURN(MemUpload * upload, FindUpload(key, upload_id));
    upload->parts[part_number] = MemPart{std::move(data), etag, options.checksum};
    return etag;
  }

  Result<ObjectInfo> CompleteMultipartUpload(std::string_view key, std::string_view upload_id,
                                             const std::vector<CompletedPart>& parts,
                                             const CompleteOptions& complete) override {
    MutexLock lock(bucket_->mu);
    auto found = FindUpload(key, upload_id);
    if (!found.ok()) {
      auto done = bucket_->completed.Find(upload_id);
      return done ? AnswerCompleted(*done, key, upload_id, parts) : found.status();
    }
    MemUpload* upload = *found;
    STRATA_RETURN_IF_ERROR(CheckCompleteParts(key, parts, PartList(*upload), options_.min_part_size));
    {  // under the bucket's lock, as the commit below: atomic with it
      auto it = bucket_->objects.find(key);
      STRATA_RETURN_IF_ERROR(
          CheckCompleteConditions(complete, key, it == bucket_->objects.end() ? nullptr : &it->second.info));
    }
    std::vector<Buffer> buffers;
    std::vector<std::string> md5s;
    for (const CompletedPart& part : parts) {
      const MemPart& p = upload->parts.at(part.part_number);
      buffers.push_back(p.data);
      md5s.push_back(p.etag);
    }
    PutOptions options = upload->options;
    std::vector<PartInfo> done;
    for (const CompletedPart& part : parts) {
      const MemPart& p = upload->parts.at(part.part_number);
      done.push_back({part.part_number, p.etag, p.data.size(), p.checksum});
    }
    CompleteChecksum(&options.metadata, done);
    std::vector<uint64_t> sizes;
    for (const PartInfo& p : done) sizes.push_back(p.size);
    auto info = Store(key, Concat(buffers), MultipartEtag(md5s), options, std::move(sizes));
    // A failed precondition leaves the upload in place, as S3 does.
    if (info.ok()) {
      bucket_->uploads.erase(std::string(upload_id));
      bucket_->completed.Record(std::string(upload_id), CompletedWith(parts, *info));
    }
    return info;
  }

  Result<std::optional<ObjectInfo>> FindCompletedUpload(std::string_view key, std::string_view upload_id,
                                                        const std::vector<CompletedPart>& parts) override {
    auto done = bucket_->completed.Find(upload_id);
    if (!done) return std::optional<ObjectInfo>();
    STRATA_ASSIGN_OR_RETURN(ObjectInfo info, AnswerCompleted(*done, key, upload_id, parts));
    return std::optional<ObjectInfo>(std::move(info));
  }

  Status AbortMultipartUpload(std::string_view key, std::string_view upload_id) override {
    MutexLock lock(bucket_->mu);
    STRATA_ASSIGN_OR_RETURN(MemUpload * upload, FindUpload(key, upload_id));
    (void)upload;
    bucket_->uploads.erase(std::string(upload_id));
    return Status::Ok();
  }

  Result<std::vector<PartInfo>> ListParts(std::string_view key, std::string_view upload_id) override {
    MutexLock lock(bucket_->mu);
    STRATA_ASSIGN_OR_RETURN(MemUpload * upload, FindUpload(key, upload_id));
    return PartList(*upload);
  }

  StoreCapabilities Capabilities() const override {
    StoreCapabilities caps;
    caps.server_side_copy = true;
    caps.metadata_kept = true;
    caps.checksums_kept = true;
    caps.part_sizes_kept = true;
    caps.min_part_size = options_.min_part_size;
    return caps;
  }

  Result<std::vector<UploadInfo>> ListMultipartUploads(std::string_view prefix) override {
    MutexLock lock(bucket_->mu);
    std::vector<std::pair<uint64_t, UploadInfo>> found;
    for (const auto& [id, upload] : bucket_->uploads) {
      if (!upload.key.starts_with(prefix)) continue;
      const ObjectMetadata& m = upload.options.metadata;
      found.push_back({upload.seq, {upload.key, id, upload.initiated, m.checksum_algorithm, m.checksum_type}});
    }
    std::sort(found.begin(), found.end(), [](const auto& a, const auto& b) {
      return std::tie(a.second.key, a.first) < std::tie(b.second.key, b.first);
    });
    std::vector<UploadInfo> uploads;
    for (auto& f : found) uploads.push_back(std::move(f.second));
    return uploads;
  }

  Result<ObjectInfo> Copy(std::string_view src_key, std::string_view dst_key, const CopyOptions& options) override {
    STRATA_RETURN_IF_ERROR(ValidateKey(src_key));
    STRATA_RETURN_IF_ERROR(ValidateKey(dst_key));
    STRATA_RETURN_IF_ERROR(ValidateMetadata(options.metadata));
    MutexLock lock(bucket_->mu);
    auto it = bucket_->objects.find(src_key);
    if (it == bucket_->objects.end()) return Missing(src_key);
    MemObject src = it->second;
    PutOptions put;
    put.metadata = options.directive == MetadataDirective::kReplace ? options.metadata : std::move(src.info.metadata);
    return Store(dst_key, std::move(src.data), std::move(src.info.etag), put);
  }

  std::string Url() const override { return "mem://" + name_; }

 private:
  Clock& clock() const { return clock_; }

  static Status Missing(std::string_view key) { return NotFoundError("no such key '" + std::string(key) + "'"); }

  Result<ObjectInfo> Store(std::string_view key, Buffer data, std::string etag, const PutOptions& options,
                           std::vector<uint64_t> part_sizes = {}) REQUIRES(bucket_->mu) {
    auto it = bucket_->objects.find(key);
    const ObjectInfo* current = it == bucket_->objects.end() ? nullptr : &it->second.info;
    STRATA_RETURN_IF_ERROR(CheckPutConditions(options, key, current));
    MemObject obj;
    obj.info.key = std::string(key);
    obj.info.size = data.size();
    obj.info.etag = std::move(etag);
    obj.info.mtime = clock().WallNow();
    obj.info.metadata = options.metadata;
    obj.info.part_sizes = std::move(part_sizes);
    obj.data = std::move(data);
    ObjectInfo info = obj.info;
    bucket_->objects.insert_or_assign(std::string(key), std::move(obj));
    return info;
  }

  Result<MemUpload*> FindUpload(std::string_view key, std::string_view upload_id) REQUIRES(bucket_->mu) {
    auto it = bucket_->uploads.find(upload_id);
    if (it == bucket_->uploads.end() || it->second.key != key) {
      return NotFoundError("no multipart upload '" + std::string(upload_id) + "' for '" + std::string(key) +
                           "' (NoSuchUpload)");
    }
    return &it->second;
  }

  static std::vector<PartInfo> PartList(const MemUpload& upload) {
    std::vector<PartInfo> parts;
    for (const auto& [number, part] : upload.parts)
      parts.push_back({number, part.etag, part.data.size(), part.checksum});
    return parts;
  }

  std::string name_;
  std::shared_ptr<MemBucket> bucket_;
  MemStoreOptions options_;
  Clock& clock_;
};

}  // namespace

std::shared_ptr<ObjectStore> MakeMemStore(std::string name) { return MakeMemStore(std::move(name), {}); }

std::shared_ptr<ObjectStore> MakeMemStore(std::string name, MemStoreOptions options) {
  std::shared_ptr<MemBucket> bucket;
  MutexLock lock(g_registry_mu);
  std::erase_if(Registry(), [](const auto& kv) { return !kv.second.strong && kv.second.weak.expired(); });
  if (name.empty()) {
    name = "anonymous-" + std::to_string(g_anonymous_id++);
    bucket = std::make_shared<MemBucket>();
    Registry()[name].weak = bucket;
  } else {
    RegistryEntry& entry = Registry()[name];
    bucket = entry.strong ? entry.strong : entry.weak.lock();
    if (!bucket) entry.strong = bucket = std::make_shared<MemBucket>();
  }
  return std::make_shared<MemStore>(std::move(name), std::move(bucket), options);
}

bool DropMemStore(const std::string& name) {
  MutexLock lock(g_registry_mu);
  return Registry().erase(name) > 0;
}

}  // namespace strata::object

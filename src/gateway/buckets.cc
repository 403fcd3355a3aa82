#include "gateway/buckets.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>

#include "object/file_store.h"
#include "object/s3_config.h"
#include "object/store_url.h"

namespace strata::gateway {
namespace {

Status NoSuchBucket(const std::string& bucket) {
  return NotFoundError("bucket " + bucket + " does not exist").WithForeignCode("NoSuchBucket");
}

WallTime DirCreated(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return {};
  return WallTime(std::chrono::seconds(st.st_mtime));
}

}  // namespace

bool IsValidBucketName(std::string_view name) {
  if (name.size() < 3 || name.size() > 63) return false;
  auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  if (!alnum(name.front()) || !alnum(name.back())) return false;
  int dots = 0;
  bool all_digits_dots = true;
  for (size_t i = 0; i < name.size(); ++i) {
    char c = name[i];
    if (!alnum(c) && c != '.' && c != '-') return false;
    if (c == '.') {
      ++dots;
      if (i > 0 && (name[i - 1] == '.' || name[i - 1] == '-')) return false;
      if (name[i + 1] == '-') return false;
    }
    if (c != '.' && !(c >= '0' && c <= '9')) all_digits_dots = false;
  }
  return !(dots == 3 && all_digits_dots);  // looks like an IPv4 address
}

std::shared_ptr<cache::CachedStore> BucketSet::Wrap(object::ObjectStorePtr backend) {
  if (options_.emulate) {
    backend =
        object::EmulateCloud(std::move(backend), *options_.emulate, options_.clock ? *options_.clock : RealClock());
  }
  auto store = std::make_shared<cache::CachedStore>(std::move(backend), cache_, options_.cached);
  if (options_.on_store) options_.on_store(store);
  return store;
}

Result<std::unique_ptr<BucketSet>> BucketSet::Open(const std::vector<std::string>& urls,
                                                   std::shared_ptr<cache::BlockCache> cache, Options options) {
  std::unique_ptr<BucketSet> set(new BucketSet(std::move(cache), options));
  for (const auto& url : urls) {
    if (url == "s3://" || url.starts_with("s3://?")) {  // a whole endpoint
      if (set->upstream_ || !set->file_root_.empty()) {
        return InvalidArgumentError("only one of a file:// backend and an s3://?endpoint=... backend may be given (" +
                                    url + ")");
      }
      STRATA_ASSIGN_OR_RETURN(object::S3Config config, object::S3EndpointConfigFromUrl(url));
      if (options.clock) config.clock = options.clock;
      STRATA_ASSIGN_OR_RETURN(set->upstream_, object::S3Service::Open(config));
      continue;
    }
    STRATA_ASSIGN_OR_RETURN(object::StoreUrl parsed, object::ParseStoreUrl(url));
    if (parsed.scheme == "file") {
      if (set->upstream_) {
        return InvalidArgumentError("only one of a file:// backend and an s3://?endpoint=... backend may be given (" +
                                    url + ")");
      }
      if (!set->file_root_.empty()) {
        return InvalidArgumentError("only one file:// backend may be given (" + url + ")");
      }
      if (!parsed.params.empty()) {
        return InvalidArgumentError("a file:// gateway backend takes no parameters (" + url +
                                    "); use --emulate for cloud emulation");
      }
      std::error_code ec;
      std::filesystem::create_directories(parsed.path, ec);
      if (ec || !std::filesystem::is_directory(parsed.path, ec)) {
        return InvalidArgumentError("backend " + url + ": " + parsed.path + " is not a usable directory",
                                    ec ? ec.message() : "");
      }
      set->file_root_ = parsed.path;
      continue;
    }
    std::string name = parsed.authority;
    if (!IsValidBucketName(name)) {
      return InvalidArgumentError("backend " + url + ": \"" + name + "\" is not a valid S3 bucket name to serve");
    }
    if (set->fixed_.count(name)) return AlreadyExistsError("two backends are both bucket " + name);
    STRATA_ASSIGN_OR_RETURN(object::ObjectStorePtr store,
                            object::OpenStore(url, options.clock ? *options.clock : RealClock()));
    set->fixed_[name] = set->Wrap(std::move(store));
  }
  return set;
}

std::unique_ptr<BucketSet> BucketSet::FromStores(const std::map<std::string, object::ObjectStorePtr>& stores,
                                                 std::shared_ptr<cache::BlockCache> cache, Options options) {
  std::unique_ptr<BucketSet> set(new BucketSet(std::move(cache), options));
  for (const auto& [name, store] : stores) set->fixed_[name] = set->Wrap(store);
  return set;
}

Result<std::shared_ptr<cache::CachedStore>> BucketSet::OpenFileBucket(const std::string& bucket) {
  std::string dir = file_root_ + "/" + bucket;
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return NoSuchBucket(bucket);
  object::FileStoreOptions fo;
  STRATA_ASSIGN_OR_RETURN(object::ObjectStorePtr store, object::OpenFileStore(dir, fo));
  return Wrap(std::move(store));
}

Result<std::shared_ptr<cache::CachedStore>> BucketSet::GetUpstream(const std::string& bucket) {
  {
    MutexLock lock(mu_);
    if (auto it = upstream_open_.find(bucket); it != upstream_open_.end()) return it->second;
  }
  // First use: ask the upstream (outside the lock: a round trip).
  STRATA_RETURN_IF_ERROR(upstream_->HeadBucket(bucket));
  STRATA_ASSIGN_OR_RETURN(object::ObjectStorePtr store, upstream_->OpenBucket(bucket));
  auto wrapped = Wrap(std::move(store));
  MutexLock lock(mu_);
  return upstream_open_.emplace(bucket, std::move(wrapped)).first->second;  // a racing first use may have won
}

Result<std::shared_ptr<cache::CachedStore>> BucketSet::Get(const std::string& bucket) {
  MutexLock lock(mu_);
  if (auto it = fixed_.find(bucket); it != fixed_.end()) return it->second;
  if (upstream_) {
    lock.Unlock();
    if (!IsValidBucketName(bucket)) return NoSuchBucket(bucket);
    return GetUpstream(bucket);
  }
  if (file_root_.empty() || !IsValidBucketName(bucket)) return NoSuchBucket(bucket);
  if (auto it = file_open_.find(bucket); it != file_open_.end()) {
    // The directory may have been removed behind our back (or by DeleteBucket).
    struct stat st {};
    std::string dir = file_root_ + "/" + bucket;
    if (::stat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) return it->second;
    file_open_.erase(it);
    return NoSuchBucket(bucket);
  }
  STRATA_ASSIGN_OR_RETURN(auto store, OpenFileBucket(bucket));
  file_open_[bucket] = store;
  return store;
}

Status BucketSet::Head(const std::string& bucket) {
  bool fixed = false;
  {
    MutexLock lock(mu_);
    fixed = fixed_.count(bucket) > 0;
  }
  if (!upstream_ || fixed) return Get(bucket).status();
  if (!IsValidBucketName(bucket)) return NoSuchBucket(bucket);
  Status st = upstream_->HeadBucket(bucket);
  if (st.code() == Code::kNotFound) {
    MutexLock lock(mu_);
    upstream_open_.erase(bucket);  // deleted behind our back
    records_.erase(bucket);
  }
  return st;
}

Result<std::vector<BucketEntry>> BucketSet::List() {
  std::vector<BucketEntry> out;
  if (upstream_) {
    STRATA_ASSIGN_OR_RETURN(auto listed, upstream_->ListBuckets());
    for (auto& b : listed) out.push_back({std::move(b.name), b.created});
  }
  MutexLock lock(mu_);
  for (const auto& entry : fixed_) {
    const std::string& name = entry.first;  // not a structured binding: clang 14 cannot capture one
    if (std::none_of(out.begin(), out.end(), [&](const BucketEntry& e) { return e.name == name; })) {
      out.push_back({name, WallTime{}});
    }
  }
  if (!file_root_.empty()) {
    std::error_code ec;
    for (auto it = std::filesystem::directory_iterator(file_root_, ec); !ec && it != std::filesystem::end(it);
         it.increment(ec)) {
      std::string name = it->path().filename().string();
      if (!it->is_directory(ec) || !IsValidBucketName(name) || fixed_.count(name)) continue;
      out.push_back({name, DirCreated(it->path().string())});
    }
    if (ec) return ErrnoToStatus(ec.value(), "listing buckets in " + file_root_);
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  return out;
}

Status BucketSet::Create(const std::string& bucket, const BucketRecord& record) {
  if (!IsValidBucketName(bucket)) {
    return InvalidArgumentError("\"" + bucket + "\" is not a valid bucket name").WithForeignCode("InvalidBucketName");
  }
  auto exists = [&] { return AlreadyExistsError("bucket " + bucket + " already exists"); };
  MutexLock lock(mu_);
  if (fixed_.count(bucket)) return exists();
  if (upstream_) {
    lock.Unlock();
    // S3 (us-east-1) and RGW answer 200 to re-creating a bucket of the same
    // account, and every bucket upstream is the gateway's account: ask first,
    // so a bucket that exists is never taken over (one create at a time here).
    MutexLock creating(create_mu_);
    Status present = upstream_->HeadBucket(bucket);
    if (present.ok()) return exists();
    if (present.code() != Code::kNotFound) return present;
    Status st = upstream_->CreateBucket(bucket);
    if (st.code() == Code::kAlreadyExists) return exists();
    STRATA_RETURN_IF_ERROR(st);
    // A bucket without its record would be nobody's (shared): take it back rather than leave it so.
    Status recorded = WriteUpstreamRecord(bucket, record);
    if (!recorded.ok()) {
      Status removed = upstream_->DeleteBucket(bucket);
      return recorded.WithContext(
          removed.ok() ? "recording the new bucket's owner (the bucket was removed again)"
                       : "recording the new bucket's owner (removing it failed too: " + removed.message() + ")");
    }
    return Status::Ok();
  }
  if (file_root_.empty()) {
    return NotSupportedError("creating buckets needs a file:// backend; this gateway serves fixed buckets")
        .WithForeignCode("NotImplemented");
  }
  lock.Unlock();
  return CreateFileBucket(bucket, record);
}

Status BucketSet::Delete(const std::string& bucket) {
  MutexLock lock(mu_);
  if (fixed_.count(bucket)) {
    return NotSupportedError("bucket " + bucket + " is a fixed backend and cannot be deleted here")
        .WithForeignCode("MethodNotAllowed");
  }
  if (upstream_) {
    lock.Unlock();
    if (!IsValidBucketName(bucket)) return NoSuchBucket(bucket);
    Status st = upstream_->DeleteBucket(bucket);
    if (st.ok() || st.code() == Code::kNotFound) {
      lock.Lock();
      upstream_open_.erase(bucket);
      records_.erase(bucket);
    }
    return st;
  }
  if (file_root_.empty() || !IsValidBucketName(bucket)) return NoSuchBucket(bucket);
  // The file store's staging (temp files, in-progress uploads) is not content.
  Status st = object::RemoveEmptyFileStore(file_root_ + "/" + bucket);
  if (st.code() == Code::kNotFound) return NoSuchBucket(bucket);
  if (st.code() == Code::kPreconditionFailed) {
    return PreconditionFailedError("bucket " + bucket + " is not empty").WithForeignCode("BucketNotEmpty");
  }
  STRATA_RETURN_IF_ERROR(st);
  file_open_.erase(bucket);
  records_.erase(bucket);
  return Status::Ok();
}

}  // namespace strata::gateway

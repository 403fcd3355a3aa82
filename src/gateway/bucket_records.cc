// BucketSet's bucket records (owner, canned ACL; buckets.h): a hidden file in
// a file:// bucket's directory, bucket tags upstream, nothing for fixed buckets.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <random>

#include "gateway/buckets.h"
#include "io/durable.h"
#include "io/file_system.h"
#include "object/s3_service.h"

namespace strata::gateway {
namespace {

constexpr std::string_view kRecordFile = ".strata-bucket";  // an internal name: never listed as an object
constexpr uint64_t kMaxRecordBytes = 4096;
constexpr const char* kOwnerTag = "strata-owner";
constexpr const char* kAclTag = "strata-acl";

Status NoSuchBucket(const std::string& bucket) {
  return NotFoundError("bucket " + bucket + " does not exist").WithForeignCode("NoSuchBucket");
}

std::string EncodeRecord(const BucketRecord& r) {
  nlohmann::json j = {{"owner", r.owner}, {"acl", std::string(CannedAclName(r.acl))}};
  return j.dump() + "\n";
}

Result<BucketRecord> DecodeRecord(std::string_view text, const std::string& where) {
  auto bad = [&](std::string why) { return CorruptionError("bucket record " + where + ": " + why); };
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return bad("not a JSON object");
  BucketRecord r;
  auto owner = j.find("owner");
  auto acl = j.find("acl");
  if (owner == j.end() || !owner->is_string() || acl == j.end() || !acl->is_string()) {
    return bad("needs string \"owner\" and \"acl\"");
  }
  r.owner = owner->get<std::string>();
  auto parsed = ParseCannedAcl(acl->get<std::string>());
  if (!parsed.ok()) return bad(parsed.status().message());
  r.acl = *parsed;
  return r;
}

uint64_t DirInode(const std::string& dir) {
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return 0;
  return static_cast<uint64_t>(st.st_ino);
}

}  // namespace

// The directory and its record appear together: both are made under a
// hidden name (not a bucket) and renamed into place without replacing
// anything, so no crash leaves a bucket without its owner.
Status BucketSet::CreateFileBucket(const std::string& bucket, const BucketRecord& record) {
  io::FileSystem& fs = io::DefaultFileSystem();
  const std::string dir = file_root_ + "/" + bucket;
  std::string staged = file_root_ + "/.strata-newbucket-" + std::to_string(std::random_device{}());
  if (::mkdir(staged.c_str(), 0755) != 0) return ErrnoToStatus(errno, "creating bucket directory " + staged);
  Status st = io::WriteFileAtomic(fs, staged + "/" + std::string(kRecordFile), EncodeRecord(record));
  if (st.ok() && ::renameat2(AT_FDCWD, staged.c_str(), AT_FDCWD, dir.c_str(), RENAME_NOREPLACE) != 0) {
    st = errno == EEXIST ? AlreadyExistsError("bucket " + bucket + " already exists")
                         : ErrnoToStatus(errno, "creating bucket directory " + dir);
  }
  if (!st.ok()) {
    (void)io::RemoveAll(fs, staged);
    return st;
  }
  STRATA_RETURN_IF_ERROR(fs.SyncDir(file_root_));
  MutexLock lock(mu_);
  records_[bucket] = {record, DirInode(dir)};
  return Status::Ok();
}

Result<BucketRecord> BucketSet::ReadFileRecord(const std::string& bucket) {
  const std::string dir = file_root_ + "/" + bucket;
  uint64_t inode = DirInode(dir);
  if (inode == 0) return NoSuchBucket(bucket);
  {
    MutexLock lock(mu_);
    if (auto it = records_.find(bucket); it != records_.end() && it->second.inode == inode) return it->second.record;
  }
  BucketRecord record;  // a directory without one (made by hand, or before records): nobody's
  auto text = io::ReadFileToString(io::DefaultFileSystem(), dir + "/" + std::string(kRecordFile), kMaxRecordBytes);
  if (text.ok()) {
    STRATA_ASSIGN_OR_RETURN(record, DecodeRecord(*text, dir + "/" + std::string(kRecordFile)));
  } else if (text.status().code() != Code::kNotFound) {
    return text.status();
  }
  MutexLock lock(mu_);
  records_[bucket] = {record, inode};
  return record;
}

Status BucketSet::WriteFileRecord(const std::string& bucket, const BucketRecord& record) {
  const std::string dir = file_root_ + "/" + bucket;
  uint64_t inode = DirInode(dir);
  if (inode == 0) return NoSuchBucket(bucket);
  STRATA_RETURN_IF_ERROR(
      io::WriteFileAtomic(io::DefaultFileSystem(), dir + "/" + std::string(kRecordFile), EncodeRecord(record)));
  MutexLock lock(mu_);
  records_[bucket] = {record, inode};
  return Status::Ok();
}

Result<BucketRecord> BucketSet::ReadUpstreamRecord(const std::string& bucket) {
  {
    MutexLock lock(mu_);
    if (auto it = records_.find(bucket); it != records_.end()) return it->second.record;
  }
  STRATA_ASSIGN_OR_RETURN(auto tags, upstream_->GetBucketTags(bucket));
  BucketRecord record;
  if (auto it = tags.find(kOwnerTag); it != tags.end()) record.owner = it->second;
  if (auto it = tags.find(kAclTag); it != tags.end()) {
    auto acl = ParseCannedAcl(it->second);
    if (!acl.ok()) return CorruptionError("bucket " + bucket + ": tag " + kAclTag + ": " + acl.status().message());
    record.acl = *acl;
  }
  MutexLock lock(mu_);
  records_[bucket] = {record, 0};
  return record;
}

Status BucketSet::WriteUpstreamRecord(const std::string& bucket, const BucketRecord& record) {
  STRATA_ASSIGN_OR_RETURN(auto tags, upstream_->GetBucketTags(bucket));  // the bucket's other tags stay
  tags.erase(kOwnerTag);
  if (!record.owner.empty()) tags[kOwnerTag] = record.owner;
  tags[kAclTag] = std::string(CannedAclName(record.acl));
  STRATA_RETURN_IF_ERROR(upstream_->PutBucketTags(bucket, tags));
  MutexLock lock(mu_);
  records_[bucket] = {record, 0};
  return Status::Ok();
}

void BucketSet::ForgetRecord(const std::string& bucket) {
  MutexLock lock(mu_);
  records_.erase(bucket);
}

Result<BucketRecord> BucketSet::Record(const std::string& bucket) {
  {
    MutexLock lock(mu_);
    if (fixed_.count(bucket)) return BucketRecord{};
  }
  if (!IsValidBucketName(bucket)) return NoSuchBucket(bucket);
  if (upstream_) return ReadUpstreamRecord(bucket);
  if (!file_root_.empty()) return ReadFileRecord(bucket);
  return NoSuchBucket(bucket);
}

Status BucketSet::SetRecord(const std::string& bucket, const BucketRecord& record) {
  {
    MutexLock lock(mu_);
    if (fixed_.count(bucket)) {
      return NotSupportedError("bucket " + bucket +
                               " is a fixed backend: its owner and public access are set in the gateway's config "
                               "(\"buckets\")")
          .WithForeignCode("NotImplemented");
    }
  }
  if (!IsValidBucketName(bucket)) return NoSuchBucket(bucket);
  if (upstream_) return WriteUpstreamRecord(bucket, record);
  if (!file_root_.empty()) return WriteFileRecord(bucket, record);
  return NoSuchBucket(bucket);
}

}  // namespace strata::gateway

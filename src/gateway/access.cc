#include "gateway/access.h"

namespace strata::gateway {

Result<unsigned> ParsePermission(std::string_view name) {
  if (name == "read") return kPermRead;
  if (name == "list") return kPermList;
  if (name == "write") return kPermWrite;
  if (name == "delete") return kPermDelete;
  return InvalidArgumentError("unknown permission \"" + std::string(name.substr(0, 64)) +
                              "\" (use read, list, write, delete)");
}

Result<CannedAcl> ParseCannedAcl(std::string_view text) {
  if (text == "private") return CannedAcl::kPrivate;
  if (text == "public-read") return CannedAcl::kPublicRead;
  static constexpr std::string_view kOtherS3Acls[] = {
      "public-read-write", "authenticated-read",        "aws-exec-read",
      "bucket-owner-read", "bucket-owner-full-control", "log-delivery-write"};
  for (std::string_view other : kOtherS3Acls) {
    if (text == other) {
      return NotSupportedError("the canned ACL " + std::string(text) +
                               " is not implemented by this gateway (only private and public-read)")
          .WithForeignCode("NotImplemented");
    }
  }
  return InvalidArgumentError("unknown canned ACL \"" + std::string(text.substr(0, 64)) + "\"")
      .WithForeignCode("InvalidArgument");
}

std::string_view CannedAclName(CannedAcl acl) { return acl == CannedAcl::kPublicRead ? "public-read" : "private"; }

BucketRecord AccessPolicy::Effective(const std::string& bucket, BucketRecord stored) const {
  if (auto it = buckets_.find(bucket); it != buckets_.end() && !it->second.owner.empty()) {
    stored.owner = it->second.owner;
  }
  return stored;
}

const KeyAccess* AccessPolicy::Key(const Principal& who) const {
  static const KeyAccess kUnrestricted;
  if (who.anonymous()) return nullptr;
  auto it = keys_.find(who.access_key);
  return it == keys_.end() ? &kUnrestricted : &it->second;  // a key the handler knows, without settings
}

bool AccessPolicy::Owns(const Principal& who, const KeyAccess& key, const BucketRecord& record) const {
  if (record.owner.empty()) return !key.restricted;  // nobody's: shared by the unrestricted keys
  return record.owner == who.access_key;
}

bool AccessPolicy::PublicBucket(const std::string& bucket) const {
  auto it = buckets_.find(bucket);
  return it != buckets_.end() && it->second.public_read;
}

unsigned AccessPolicy::Permissions(const Principal& who, const std::string& bucket, const BucketRecord& record,
                                   std::string_view key) const {
  unsigned bits = 0;
  if (record.acl == CannedAcl::kPublicRead) bits |= kPermList;
  if (PublicBucket(bucket)) bits |= kPermList | kPermRead;
  const KeyAccess* k = Key(who);
  if (k == nullptr) return bits;
  if (Owns(who, *k, record)) bits |= kPermAll;
  for (const AccessGrant& g : k->grants) {
    if ((g.bucket == "*" || g.bucket == bucket) && key.starts_with(g.prefix)) bits |= g.permissions;
  }
  if (k->read_only) bits &= kPermRead | kPermList;
  return bits;
}

bool AccessPolicy::AnyPermission(const Principal& who, const std::string& bucket, const BucketRecord& record,
                                 unsigned bits) const {
  if (Permissions(who, bucket, record, "") & bits) return true;
  const KeyAccess* k = Key(who);
  if (k == nullptr) return false;
  const unsigned wanted = k->read_only ? bits & (kPermRead | kPermList) : bits;
  for (const AccessGrant& g : k->grants) {
    if ((g.bucket == "*" || g.bucket == bucket) && (g.permissions & wanted)) return true;
  }
  return false;
}

bool AccessPolicy::ObjectReadable(const std::string& bucket, CannedAcl object_acl) const {
  return object_acl == CannedAcl::kPublicRead || PublicBucket(bucket);
}

bool AccessPolicy::OwnerRights(const Principal& who, const BucketRecord& record) const {
  const KeyAccess* k = Key(who);
  return k != nullptr && !k->read_only && Owns(who, *k, record);
}

bool AccessPolicy::Lists(const Principal& who, const std::string& bucket, const BucketRecord& record) const {
  const KeyAccess* k = Key(who);
  if (k == nullptr) return false;
  if (Owns(who, *k, record)) return true;
  for (const AccessGrant& g : k->grants) {
    if (g.bucket == "*" || g.bucket == bucket) return true;
  }
  return false;
}

bool AccessPolicy::MayCreateBuckets(const Principal& who) const {
  const KeyAccess* k = Key(who);
  return k != nullptr && !k->read_only && !k->restricted;
}

}  // namespace strata::gateway

// Who may do what through the gateway. Three sources, combined here:
//
//  - keys: an unrestricted key (no "grants" in the config) may create
//    buckets, owns the buckets it creates and shares the buckets nobody owns
//    (those the backend already had); a key with "grants" has only those
//    (bucket, optional key prefix, permissions) and the buckets the config
//    says it owns, and creates none; a read-only key reads and lists, never
//    writes, deletes or changes an ACL.
//  - bucket records (kept with the bucket by BucketSet): the owner, the key
//    that created it, and a canned ACL; the config may set an owner and
//    public_read (anyone lists the bucket and reads every object) per bucket.
//  - object ACLs: a public-read object is readable by anyone, as in S3.
//
// Anonymous requests get only what public-read gives: list a public-read
// bucket, read a public-read object (or any object of a public_read bucket);
// never a write, a delete or an ACL. Pure decisions; thread-safe.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace strata::gateway {

// What a request does to a bucket's objects (bits).
enum Permission : unsigned {
  kPermRead = 1,    // GetObject, HeadObject, GetObjectAttributes, a copy's source
  kPermList = 2,    // ListObjects(V2), ListObjectVersions, ListMultipartUploads
  kPermWrite = 4,   // PutObject, a copy's destination, multipart uploads
  kPermDelete = 8,  // DeleteObject, DeleteObjects
};
inline constexpr unsigned kPermAll = kPermRead | kPermList | kPermWrite | kPermDelete;

// "read", "list", "write", "delete" -> bits; InvalidArgument for another name.
Result<unsigned> ParsePermission(std::string_view name);

struct AccessGrant {
  std::string bucket;  // "*": every bucket
  std::string prefix;  // object keys (and listing prefixes) starting with it; empty: all
  unsigned permissions = kPermAll;
};

// A key's scope, beside its secret (GatewayConfig::keys).
struct KeyAccess {
  bool read_only = false;
  bool restricted = false;  // it has a "grants" list (possibly empty)
  std::vector<AccessGrant> grants;
};

enum class CannedAcl { kPrivate, kPublicRead };

// x-amz-acl values: "private", "public-read". S3's other canned ACLs are
// NotSupported (foreign code NotImplemented), anything else InvalidArgument.
Result<CannedAcl> ParseCannedAcl(std::string_view text);
std::string_view CannedAclName(CannedAcl acl);

// What a bucket carries (kept by BucketSet): an empty owner means nobody's.
struct BucketRecord {
  std::string owner;
  CannedAcl acl = CannedAcl::kPrivate;
  bool operator==(const BucketRecord&) const = default;
};

// The operator's settings for one bucket (config "buckets").
struct BucketSettings {
  std::string owner;         // overrides the stored owner when set
  bool public_read = false;  // anyone lists the bucket and reads every object in it
};

// The requester: an access key, or anonymous (empty).
struct Principal {
  std::string access_key;
  bool anonymous() const { return access_key.empty(); }
};

class AccessPolicy {
 public:
  AccessPolicy() = default;
  AccessPolicy(std::map<std::string, KeyAccess> keys, std::map<std::string, BucketSettings> buckets)
      : keys_(std::move(keys)), buckets_(std::move(buckets)) {}

  // The record as decided: the config's owner over the stored one.
  BucketRecord Effective(const std::string& bucket, BucketRecord stored) const;

  // Bits `who` holds on object keys (or a listing prefix) `key` in `bucket`,
  // object ACLs aside (see ObjectReadable).
  unsigned Permissions(const Principal& who, const std::string& bucket, const BucketRecord& record,
                       std::string_view key) const;
  // Whether some key in `bucket` grants `who` `bits` (DeleteObjects checks each key after).
  bool AnyPermission(const Principal& who, const std::string& bucket, const BucketRecord& record, unsigned bits) const;
  // An object `who` has no read permission on is readable when its ACL (or the bucket's settings) makes it public.
  bool ObjectReadable(const std::string& bucket, CannedAcl object_acl) const;
  // ACL changes, DeleteBucket, PutBucketVersioning: the owner (or an
  // unrestricted key on a bucket nobody owns), never a read-only key.
  bool OwnerRights(const Principal& who, const BucketRecord& record) const;
  // Whether `bucket` is listed for `who` in ListBuckets: it owns it or holds a grant on it.
  bool Lists(const Principal& who, const std::string& bucket, const BucketRecord& record) const;
  bool MayCreateBuckets(const Principal& who) const;
  // The config's public_read for `bucket`.
  bool PublicBucket(const std::string& bucket) const;

 private:
  const KeyAccess* Key(const Principal& who) const;
  bool Owns(const Principal& who, const KeyAccess& key, const BucketRecord& record) const;

  std::map<std::string, KeyAccess> keys_;
  std::map<std::string, BucketSettings> buckets_;
};

}  // namespace strata::gateway

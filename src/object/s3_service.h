// An S3 endpoint as a whole (a Ceph RGW, a cloud account): its buckets.
// ListBuckets, CreateBucket, DeleteBucket and HeadBucket, and an s3://
// ObjectStore for any one bucket with the same endpoint, credentials and
// tuning. Bucket calls use path-style addressing (the bucket name is the
// first path segment), which every S3 server answers. Thread-safe.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/clock.h"
#include "object/object_store.h"
#include "object/s3_config.h"

namespace strata::object {

class S3Requester;

struct S3BucketListing {
  std::string name;
  WallTime created{};
};

class S3Service {
 public:
  // config.bucket and config.prefix must be empty (S3EndpointConfigFromUrl).
  // Does not contact the server.
  static Result<std::unique_ptr<S3Service>> Open(const S3Config& config);
  ~S3Service();

  Result<std::vector<S3BucketListing>> ListBuckets();
  // The server's answers, mapped as for objects: AlreadyExists
  // (BucketAlreadyOwnedByYou / BucketAlreadyExists), NotFound (NoSuchBucket),
  // PreconditionFailed (BucketNotEmpty).
  Status CreateBucket(const std::string& bucket);
  Status DeleteBucket(const std::string& bucket);
  Status HeadBucket(const std::string& bucket);
  // The bucket's tags (GetBucketTagging); empty when it has none.
  Result<std::map<std::string, std::string>> GetBucketTags(const std::string& bucket);
  // Replaces all of its tags (PutBucketTagging).
  Status PutBucketTags(const std::string& bucket, const std::map<std::string, std::string>& tags);
  // The store for `bucket` (not checked to exist; see HeadBucket).
  Result<ObjectStorePtr> OpenBucket(const std::string& bucket) const;
  // "s3://?endpoint=...", without credentials.
  std::string Url() const;

 private:
  S3Service(const S3Config& config, std::unique_ptr<S3Requester> r);
  S3Config config_;
  std::unique_ptr<S3Requester> r_;
};

}  // namespace strata::object

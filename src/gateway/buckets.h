// The gateway's bucket model: which S3 buckets it serves and the (cached)
// store behind each.
//
//   file:///data          every top-level directory of /data is a bucket:
//                         ListBuckets lists them, CreateBucket is mkdir,
//                         DeleteBucket removes an empty one. Hidden
//                         directories and names that are not valid S3 bucket
//                         names are not buckets.
//   s3://bucket[/prefix]?endpoint=..   that one bucket, served under its own
//                         name (repeat --backend for more).
//   s3://?endpoint=..     every bucket of that endpoint (no bucket in the
//                         URL): ListBuckets, CreateBucket, DeleteBucket and
//                         HeadBucket are passed through to it; object
//                         operations go to the bucket of the same name.
//   mem://name            one in-memory bucket called `name` (tests, demos).
//
// Each bucket carries a record (BucketRecord: its owner, the key that
// created it, and its canned ACL) that survives restarts: file:// keeps it in
// the bucket's directory (the hidden file .strata-bucket, made with the
// directory in one rename), an s3://?endpoint= backend as the bucket's tags
// strata-owner and strata-acl; fixed buckets (s3://bucket, mem://) have none
// (the config's "buckets" settings cover them).
//
// Each bucket's store is the backend, optionally wrapped in EmulateCloud
// (below the cache, so cache hits stay fast), then in a CachedStore; all
// buckets share one BlockCache. Thread-safe.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/mutex.h"
#include "base/status.h"
#include "cache/block_cache.h"
#include "cache/cached_store.h"
#include "gateway/access.h"
#include "object/cloud_store.h"
#include "object/object_store.h"
#include "object/s3_service.h"

namespace strata::gateway {

struct BucketEntry {
  std::string name;
  WallTime created{};
};

struct BucketSetOptions {
  std::optional<object::CloudProfile> emulate;
  cache::CachedStoreOptions cached;
  Clock* clock = nullptr;  // emulation sleeps; default RealClock()
  // Called with every CachedStore as it is made (at Open, or at a bucket's
  // first use), before it serves a read: e.g. to attach it to a cache group.
  std::function<void(const std::shared_ptr<cache::CachedStore>&)> on_store;
};

class BucketSet {
 public:
  using Options = BucketSetOptions;

  // Opens every backend URL (see above). InvalidArgument on a bad URL,
  // AlreadyExists when two backends claim the same bucket name.
  static Result<std::unique_ptr<BucketSet>> Open(const std::vector<std::string>& backend_urls,
                                                 std::shared_ptr<cache::BlockCache> cache, Options options);
  // Fixed buckets over given stores, e.g. mem:// ones (no file root: CreateBucket is NotSupported).
  static std::unique_ptr<BucketSet> FromStores(const std::map<std::string, object::ObjectStorePtr>& stores,
                                               std::shared_ptr<cache::BlockCache> cache, Options options = {});

  // The cached store for `bucket`. NotFound (foreign code NoSuchBucket) when absent.
  Result<std::shared_ptr<cache::CachedStore>> Get(const std::string& bucket);
  // Whether `bucket` exists: Get's answer, asked of the upstream endpoint each time.
  Status Head(const std::string& bucket);
  Result<std::vector<BucketEntry>> List();
  // NotSupported without a file:// root or an upstream endpoint; AlreadyExists
  // (BucketAlreadyOwnedByYou when `record.owner` owns it, else BucketAlreadyExists).
  Status Create(const std::string& bucket, const BucketRecord& record = {});
  // The bucket's record; NoSuchBucket when it does not exist, Corruption when
  // its record cannot be read (the bucket is then refused, never opened up).
  Result<BucketRecord> Record(const std::string& bucket);
  // Replaces it (PutBucketAcl). NotSupported (NotImplemented) for fixed buckets.
  Status SetRecord(const std::string& bucket, const BucketRecord& record);
  // PreconditionFailed (BucketNotEmpty), NotFound (NoSuchBucket).
  Status Delete(const std::string& bucket);

  cache::BlockCache& cache() { return *cache_; }

 private:
  BucketSet(std::shared_ptr<cache::BlockCache> cache, Options options) : cache_(std::move(cache)), options_(options) {}
  std::shared_ptr<cache::CachedStore> Wrap(object::ObjectStorePtr backend);
  Result<std::shared_ptr<cache::CachedStore>> OpenFileBucket(const std::string& bucket);

  Result<std::shared_ptr<cache::CachedStore>> GetUpstream(const std::string& bucket);
  // bucket_records.cc: the record's storage per kind of backend.
  Status CreateFileBucket(const std::string& bucket, const BucketRecord& record);
  Result<BucketRecord> ReadFileRecord(const std::string& bucket);
  Status WriteFileRecord(const std::string& bucket, const BucketRecord& record);
  Result<BucketRecord> ReadUpstreamRecord(const std::string& bucket);
  Status WriteUpstreamRecord(const std::string& bucket, const BucketRecord& record);
  void ForgetRecord(const std::string& bucket);

  std::shared_ptr<cache::BlockCache> cache_;
  Options options_;
  std::string file_root_;                        // empty: no file:// backend
  std::unique_ptr<object::S3Service> upstream_;  // null: no whole-endpoint backend
  Mutex mu_;
  Mutex create_mu_;  // upstream: a HeadBucket and the CreateBucket after it, one bucket at a time
  // s3/mem buckets: filled by Open/FromStores before the set is shared, read-only after.
  std::map<std::string, std::shared_ptr<cache::CachedStore>> fixed_;
  std::map<std::string, std::shared_ptr<cache::CachedStore>> file_open_ GUARDED_BY(mu_);  // file buckets opened so far
  // Upstream buckets seen so far.
  std::map<std::string, std::shared_ptr<cache::CachedStore>> upstream_open_ GUARDED_BY(mu_);
  // Records read so far (file:// with the directory's inode, so a directory
  // replaced behind our back is read afresh; 0 upstream).
  struct CachedRecord {
    BucketRecord record;
    uint64_t inode = 0;
  };
  std::map<std::string, CachedRecord> records_ GUARDED_BY(mu_);
};

// S3 bucket naming rules (3..63 of [a-z0-9.-], starting and ending with a
// letter or digit, no "..", not an IP address). Also what keeps a bucket
// name from escaping the file root.
bool IsValidBucketName(std::string_view name);

}  // namespace strata::gateway

// Authorization of S3 operations (s3_ops.h, Need): the access policy
// (access.h) applied to the request's principal, bucket record and key.
#include <strings.h>

#include "gateway/s3_ops.h"

namespace strata::gateway {
namespace {

const AccessPolicy& Policy(const Ctx& ctx) { return ctx.handler.options().access; }

Result<BucketRecord> RecordOf(const Ctx& ctx, const std::string& bucket) {
  STRATA_ASSIGN_OR_RETURN(BucketRecord stored, ctx.handler.buckets().Record(bucket));
  return Policy(ctx).Effective(bucket, std::move(stored));
}

std::string ListPrefix(const Ctx& ctx) {
  const std::string* p = ctx.Query("prefix");
  return p ? *p : std::string();
}

// A write's x-amz-acl: valid, and public-read only from someone with owner rights.
Status CheckRequestAcl(const Ctx& ctx) {
  STRATA_RETURN_IF_ERROR(NoExplicitGrants(ctx));
  const std::string* acl = ctx.Header("x-amz-acl");
  if (acl == nullptr) return Status::Ok();
  STRATA_ASSIGN_OR_RETURN(CannedAcl parsed, ParseCannedAcl(*acl));
  if (parsed != CannedAcl::kPrivate && !Policy(ctx).OwnerRights(ctx.who, ctx.bucket_record)) return AccessDenied();
  return Status::Ok();
}

}  // namespace

Status NoExplicitGrants(const Ctx& ctx) {
  for (const auto& [name, value] : ctx.req.headers) {
    if (name.size() > 12 && strncasecmp(name.c_str(), "x-amz-grant-", 12) == 0) {
      return S3Error(Code::kNotSupported, "NotImplemented",
                     "A header you provided implies functionality that is not implemented: " + name.substr(0, 64) +
                         " (use x-amz-acl: private or public-read)");
    }
  }
  return Status::Ok();
}

Status AccessDenied() { return PermissionDeniedError("Access Denied").WithForeignCode("AccessDenied"); }

CannedAcl ObjectAcl(const object::ObjectMetadata& m) {
  auto it = m.user.find(std::string(kObjectAclKey));
  return it != m.user.end() && it->second == "public-read" ? CannedAcl::kPublicRead : CannedAcl::kPrivate;
}

Status ApplyRequestAcl(const Ctx& ctx, object::ObjectStore& store, object::ObjectMetadata* m) {
  m->user.erase(std::string(kObjectAclKey));  // a copy's source ACL is not the copy's (as in S3)
  const std::string* acl = ctx.Header("x-amz-acl");
  if (acl == nullptr) return Status::Ok();
  STRATA_ASSIGN_OR_RETURN(CannedAcl parsed, ParseCannedAcl(*acl));
  if (parsed == CannedAcl::kPrivate) return Status::Ok();
  if (!store.Capabilities().metadata_kept) {
    return S3Error(Code::kNotSupported, "NotImplemented",
                   "this bucket's backend keeps no object metadata, so objects cannot be made public-read");
  }
  m->user[std::string(kObjectAclKey)] = std::string(CannedAclName(parsed));
  return Status::Ok();
}

Status Authorize(Ctx& ctx, Need need) {
  const AccessPolicy& policy = Policy(ctx);
  const std::string& bucket = ctx.target.bucket;
  if (need == Need::kAuthenticated) return ctx.who.anonymous() ? AccessDenied() : Status::Ok();
  if (need == Need::kCreateBucket) {
    if (!policy.MayCreateBuckets(ctx.who)) return AccessDenied();
    return CheckRequestAcl(ctx);  // the creator owns it: any canned ACL it names is allowed
  }
  STRATA_ASSIGN_OR_RETURN(ctx.bucket_record, RecordOf(ctx, bucket));
  const BucketRecord& record = ctx.bucket_record;
  switch (need) {
    case Need::kBucketAny:
      return policy.AnyPermission(ctx.who, bucket, record, kPermAll) ? Status::Ok() : AccessDenied();
    case Need::kRead:
      if (!(policy.Permissions(ctx.who, bucket, record, ctx.target.key) & kPermRead)) ctx.read_by_object_acl = true;
      return Status::Ok();
    case Need::kList:
      return policy.Permissions(ctx.who, bucket, record, ListPrefix(ctx)) & kPermList ? Status::Ok() : AccessDenied();
    case Need::kWrite:
      if (!(policy.Permissions(ctx.who, bucket, record, ctx.target.key) & kPermWrite)) return AccessDenied();
      return CheckRequestAcl(ctx);
    case Need::kDelete:
      if (ctx.target.key.empty()) {  // DeleteObjects: each key is checked as it is deleted
        return policy.AnyPermission(ctx.who, bucket, record, kPermDelete) ? Status::Ok() : AccessDenied();
      }
      return policy.Permissions(ctx.who, bucket, record, ctx.target.key) & kPermDelete ? Status::Ok() : AccessDenied();
    case Need::kOwner: return policy.OwnerRights(ctx.who, record) ? Status::Ok() : AccessDenied();
    default: return AccessDenied();
  }
}

Status ReadableObject(const Ctx& ctx, const Result<object::ObjectInfo>& info) {
  if (!ctx.read_by_object_acl) return Status::Ok();
  const AccessPolicy& policy = Policy(ctx);
  if (!info.ok()) {
    bool may_list = policy.Permissions(ctx.who, ctx.target.bucket, ctx.bucket_record, ctx.target.key) & kPermList;
    return may_list ? Status::Ok() : AccessDenied();  // the caller reports the store's error
  }
  return policy.ObjectReadable(ctx.target.bucket, ObjectAcl(info->metadata)) ? Status::Ok() : AccessDenied();
}

Status AuthorizeCopySource(const Ctx& ctx, const std::string& bucket, const std::string& key,
                           object::ObjectStore& store) {
  const AccessPolicy& policy = Policy(ctx);
  STRATA_ASSIGN_OR_RETURN(BucketRecord record, RecordOf(ctx, bucket));
  unsigned bits = policy.Permissions(ctx.who, bucket, record, key);
  if (bits & kPermRead) return Status::Ok();
  auto info = store.Head(key);
  if (!info.ok()) return bits & kPermList ? Status::Ok() : AccessDenied();  // the copy then reports NoSuchKey
  return policy.ObjectReadable(bucket, ObjectAcl(info->metadata)) ? Status::Ok() : AccessDenied();
}

bool MayDelete(const Ctx& ctx, const std::string& key) {
  return Policy(ctx).Permissions(ctx.who, ctx.target.bucket, ctx.bucket_record, key) & kPermDelete;
}

}  // namespace strata::gateway

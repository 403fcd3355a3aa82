// ACL operations: Get/PutBucketAcl and Get/PutObjectAcl with S3's canned
// private and public-read grants, as S3's AccessControlPolicy XML. A bucket's
// ACL lives in its record (BucketSet), an object's in its metadata.
#include "gateway/s3_ops.h"
#include "net/s3_xml.h"
#include "net/xml.h"

namespace strata::gateway {
namespace {

constexpr std::string_view kAllUsers = "http://acs.amazonaws.com/groups/global/AllUsers";
constexpr std::string_view kXsi = "http://www.w3.org/2001/XMLSchema-instance";
constexpr std::string_view kNobody = "strata";  // the owner shown for a bucket nobody owns

std::string OwnerId(const BucketRecord& r) { return r.owner.empty() ? std::string(kNobody) : r.owner; }

std::string PolicyXml(const std::string& owner, CannedAcl acl) {
  net::XmlWriter w;
  w.Open("AccessControlPolicy", {{"xmlns", std::string(net::kS3XmlNamespace)}});
  w.Open("Owner").Element("ID", owner).Element("DisplayName", owner).Close();
  w.Open("AccessControlList").Open("Grant");
  w.Open("Grantee", {{"xmlns:xsi", std::string(kXsi)}, {"xsi:type", "CanonicalUser"}})
      .Element("ID", owner)
      .Element("DisplayName", owner)
      .Close();
  w.Element("Permission", "FULL_CONTROL").Close();
  if (acl == CannedAcl::kPublicRead) {
    w.Open("Grant").Open("Grantee", {{"xmlns:xsi", std::string(kXsi)}, {"xsi:type", "Group"}});
    w.Element("URI", kAllUsers).Close().Element("Permission", "READ").Close();
  }
  return w.Finish();
}

Status MalformedAcl(std::string why) {
  return S3Error(
      Code::kInvalidArgument, "MalformedACLError",
      "The XML you provided was not well-formed or did not validate against our published schema: " + std::move(why));
}

Status UnsupportedGrant(std::string what) {
  return S3Error(Code::kNotSupported, "NotImplemented",
                 "only the grants of the canned ACLs private and public-read are supported: " + std::move(what));
}

// An AccessControlPolicy body as one of the two canned ACLs: the owner's
// FULL_CONTROL, with or without AllUsers READ.
Result<CannedAcl> AclFromPolicyXml(std::string_view body, const std::string& owner) {
  auto doc = net::ParseXml(body);
  if (!doc.ok() || doc->LocalName() != "AccessControlPolicy") return MalformedAcl("expected an AccessControlPolicy");
  const net::XmlElement* list = doc->Child("AccessControlList");
  if (list == nullptr) return MalformedAcl("no AccessControlList");
  bool owner_full = false, public_read = false;
  for (const net::XmlElement* grant : list->Children("Grant")) {
    const net::XmlElement* grantee = grant->Child("Grantee");
    std::string permission = grant->ChildText("Permission");
    if (grantee == nullptr || permission.empty()) return MalformedAcl("a Grant needs a Grantee and a Permission");
    if (const net::XmlElement* uri = grantee->Child("URI")) {
      if (uri->text != kAllUsers || permission != "READ") return UnsupportedGrant(permission + " to " + uri->text);
      public_read = true;
    } else if (const net::XmlElement* id = grantee->Child("ID")) {
      if (id->text != owner || permission != "FULL_CONTROL") return UnsupportedGrant(permission + " to " + id->text);
      owner_full = true;
    } else {
      return UnsupportedGrant("a grantee by e-mail address");
    }
  }
  if (!owner_full) return UnsupportedGrant("an ACL without the owner's FULL_CONTROL");
  return public_read ? CannedAcl::kPublicRead : CannedAcl::kPrivate;
}

// The ACL a Put*Acl request asks for: x-amz-acl, or the body's policy.
Result<CannedAcl> RequestedAcl(const Ctx& ctx, const std::string& owner) {
  STRATA_RETURN_IF_ERROR(NoExplicitGrants(ctx));
  const std::string* header = ctx.Header("x-amz-acl");
  if (header != nullptr && !ctx.body.empty()) {
    return S3Error(Code::kInvalidArgument, "UnexpectedContent",
                   "This request does not support content: give either x-amz-acl or an AccessControlPolicy");
  }
  if (header != nullptr) return ParseCannedAcl(*header);
  if (ctx.body.empty()) return MalformedAcl("neither x-amz-acl nor an AccessControlPolicy was given");
  return AclFromPolicyXml(ctx.body.view(), owner);
}

Status ReadError(Status s) {
  if (s.code() == Code::kInvalidArgument) return S3Error(Code::kNotFound, "NoSuchKey", "no such key");
  return s;
}

}  // namespace

Status GetAcl(Ctx& ctx) {
  STRATA_ASSIGN_OR_RETURN(auto store, ctx.buckets().Get(ctx.target.bucket));
  const std::string owner = OwnerId(ctx.bucket_record);
  CannedAcl acl = ctx.bucket_record.acl;
  if (ctx.handler.options().access.PublicBucket(ctx.target.bucket)) acl = CannedAcl::kPublicRead;
  if (!ctx.target.key.empty()) {
    auto info = store->Head(ctx.target.key);
    if (!info.ok()) return ReadError(info.status());
    acl = ObjectAcl(info->metadata);
  }
  ctx.Xml(PolicyXml(owner, acl));
  return Status::Ok();
}

Status PutBucketAcl(Ctx& ctx) {
  STRATA_RETURN_IF_ERROR(ctx.buckets().Get(ctx.target.bucket).status());
  BucketRecord record = ctx.bucket_record;
  STRATA_ASSIGN_OR_RETURN(record.acl, RequestedAcl(ctx, OwnerId(record)));
  // The stored record keeps its own owner: a config's owner is not written into it.
  STRATA_ASSIGN_OR_RETURN(BucketRecord stored, ctx.buckets().Record(ctx.target.bucket));
  stored.acl = record.acl;
  return ctx.buckets().SetRecord(ctx.target.bucket, stored);
}

Status PutObjectAcl(Ctx& ctx) {
  STRATA_ASSIGN_OR_RETURN(auto store, ctx.buckets().Get(ctx.target.bucket));
  STRATA_ASSIGN_OR_RETURN(CannedAcl acl, RequestedAcl(ctx, OwnerId(ctx.bucket_record)));
  auto info = store->Head(ctx.target.key);
  if (!info.ok()) return ReadError(info.status());
  if (ObjectAcl(info->metadata) == acl) return Status::Ok();
  if (!store->Capabilities().metadata_kept) {
    return S3Error(Code::kNotSupported, "NotImplemented",
                   "this bucket's backend keeps no object metadata, so objects cannot be made public-read");
  }
  // The bytes stay; the object is rewritten in place with its new metadata.
  object::CopyOptions co;
  co.directive = object::MetadataDirective::kReplace;
  co.metadata = info->metadata;
  co.metadata.user.erase(std::string(kObjectAclKey));
  if (acl == CannedAcl::kPublicRead) co.metadata.user[std::string(kObjectAclKey)] = "public-read";
  return store->Copy(ctx.target.key, ctx.target.key, co).status();
}

}  // namespace strata::gateway

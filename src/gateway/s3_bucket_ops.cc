// Bucket operations: ListBuckets, Head/Create/DeleteBucket, location,
// versioning, ACL stubs, ListObjects (V1 and V2).
#include <charconv>

#include "base/hash.h"
#include "base/log.h"
#include "gateway/s3_ops.h"
#include "net/s3_xml.h"
#include "net/uri.h"
#include "net/xml.h"

namespace strata::gateway {
namespace {

constexpr std::string_view kOwner = "strata";
// Sorts after every key that starts with the marker (U+10FFFF is the last code point).
constexpr std::string_view kAfterAll = "\xF4\x8F\xBF\xBF";

Status InvalidArg(std::string message) {
  return S3Error(Code::kInvalidArgument, "InvalidArgument", std::move(message));
}

Result<int> MaxKeys(const Ctx& ctx) {
  const std::string* v = ctx.Query("max-keys");
  if (!v) return 1000;
  int64_t n = 0;
  auto [p, ec] = std::from_chars(v->data(), v->data() + v->size(), n);
  if (ec != std::errc() || p != v->data() + v->size() || n < 0) {
    return InvalidArg("Provided max-keys not an integer or within integer range");
  }
  return static_cast<int>(std::min<int64_t>(n, 1000));
}

// Continuation tokens are the store's, base64url-encoded (opaque to clients, safe in a query).
std::string EncodeToken(const std::string& raw) {
  std::string t = Base64Encode(raw.data(), raw.size());
  for (auto& c : t) c = c == '+' ? '-' : c == '/' ? '_' : c;
  return t;
}
bool DecodeToken(std::string t, std::string* raw) {
  for (auto& c : t) c = c == '-' ? '+' : c == '_' ? '/' : c;
  return Base64Decode(t, raw) && !raw->empty();
}

std::string MaybeEncode(bool url, const std::string& s) { return url ? net::UriEncode(s, /*encode_slash=*/false) : s; }

void OwnerXml(net::XmlWriter& w) { w.Open("Owner").Element("ID", kOwner).Element("DisplayName", kOwner).Close(); }

// The last key or common prefix of a page (what the next page starts after).
std::string LastListed(const object::ListResult& r) {
  std::string next;
  if (!r.objects.empty()) next = r.objects.back().key;
  if (!r.common_prefixes.empty() && r.common_prefixes.back() > next) next = r.common_prefixes.back();
  return next;
}

std::string ListV1Xml(const std::string& bucket, const object::ListOptions& o, const std::string& marker, int max_keys,
                      bool url, const object::ListResult& r) {
  net::XmlWriter w;
  w.Open("ListBucketResult", {{"xmlns", std::string(net::kS3XmlNamespace)}});
  w.Element("Name", bucket).Element("Prefix", MaybeEncode(url, o.prefix)).Element("Marker", MaybeEncode(url, marker));
  w.Element("MaxKeys", std::to_string(max_keys));
  if (!o.delimiter.empty()) w.Element("Delimiter", MaybeEncode(url, o.delimiter));
  if (url) w.Element("EncodingType", "url");
  w.Element("IsTruncated", r.truncated ? "true" : "false");
  if (r.truncated) w.Element("NextMarker", MaybeEncode(url, LastListed(r)));
  for (const auto& obj : r.objects) {
    w.Open("Contents").Element("Key", MaybeEncode(url, obj.key)).Element("LastModified", net::FormatIso8601(obj.mtime));
    w.Element("ETag", Quote(obj.etag)).Element("Size", std::to_string(obj.size));
    OwnerXml(w);
    w.Element("StorageClass", "STANDARD").Close();
  }
  for (const auto& p : r.common_prefixes) w.Open("CommonPrefixes").Element("Prefix", MaybeEncode(url, p)).Close();
  return w.Finish();
}

Result<bool> UrlEncoding(const Ctx& ctx) {
  const std::string* e = ctx.Query("encoding-type");
  if (!e) return false;
  if (*e != "url") return InvalidArg("Invalid Encoding Method specified in Request");
  return true;
}

// Lists after `marker`; a marker that is a common prefix (a NextMarker)
// skips everything under it.
void StartAfterMarker(const std::string& marker, object::ListOptions* o) {
  o->start_after = marker;
  if (!o->delimiter.empty() && marker.ends_with(o->delimiter) && marker.starts_with(o->prefix)) {
    o->start_after += kAfterAll;
  }
}

Result<object::ListResult> ListPage(object::ObjectStore& store, object::ListOptions o, int max_keys) {
  if (max_keys <= 0) return object::ListResult{};
  o.max_keys = max_keys;
  auto listed = store.List(o);
  if (!listed.ok() && listed.status().code() == Code::kInvalidArgument) return InvalidArg(listed.status().message());
  return listed;
}

}  // namespace

// The buckets the requester owns or holds a grant on.
Status ListBuckets(Ctx& ctx) {
  STRATA_ASSIGN_OR_RETURN(auto buckets, ctx.buckets().List());
  const AccessPolicy& policy = ctx.handler.options().access;
  net::ListAllMyBucketsResult r;
  r.owner_id = ctx.who.access_key;
  r.owner_display_name = ctx.who.access_key;
  for (const auto& b : buckets) {
    auto record = ctx.buckets().Record(b.name);
    if (!record.ok()) {
      if (record.status().code() != Code::kNotFound) {
        STRATA_LOG_WARN("gateway: ListBuckets: bucket {} left out: {}", b.name, record.status().ToString());
      }
      continue;
    }
    if (policy.Lists(ctx.who, b.name, policy.Effective(b.name, *record))) r.buckets.push_back({b.name, b.created});
  }
  ctx.Xml(net::EncodeListAllMyBuckets(r));
  return Status::Ok();
}

Status HeadBucket(Ctx& ctx) {
  STRATA_RETURN_IF_ERROR(ctx.buckets().Head(ctx.target.bucket));
  ctx.resp.headers.emplace_back("x-amz-bucket-region", ctx.handler.options().region);
  return Status::Ok();
}

namespace {

// CreateBucket of a bucket that exists. Whose it is decides, as S3 answers:
// another's is BucketAlreadyExists; the requester's is BucketAlreadyOwnedByYou,
// except in us-east-1, where (for legacy compatibility) S3 answers 200 and
// resets the bucket's ACL to the request's.
Status RecreateBucket(Ctx& ctx, CannedAcl acl) {
  const AccessPolicy& policy = ctx.handler.options().access;
  auto existing = ctx.buckets().Record(ctx.target.bucket);
  if (!existing.ok() || !policy.OwnerRights(ctx.who, policy.Effective(ctx.target.bucket, *existing))) {
    return S3Error(Code::kAlreadyExists, "BucketAlreadyExists",
                   "The requested bucket name is not available. Please select a different name and try again.");
  }
  if (ctx.handler.options().region != "us-east-1") {
    return S3Error(Code::kAlreadyExists, "BucketAlreadyOwnedByYou",
                   "Your previous request to create the named bucket succeeded and you already own it.");
  }
  if (existing->acl == acl) return Status::Ok();
  BucketRecord reset = *existing;  // the owner stays
  reset.acl = acl;
  return ctx.buckets().SetRecord(ctx.target.bucket, reset);
}

}  // namespace

Status CreateBucket(Ctx& ctx) {
  BucketRecord record{ctx.who.access_key, CannedAcl::kPrivate};
  if (const std::string* acl = ctx.Header("x-amz-acl")) {
    STRATA_ASSIGN_OR_RETURN(record.acl, ParseCannedAcl(*acl));
  }
  Status st = ctx.buckets().Create(ctx.target.bucket, record);
  if (st.code() == Code::kAlreadyExists)
    STRATA_RETURN_IF_ERROR(RecreateBucket(ctx, record.acl));
  else
    STRATA_RETURN_IF_ERROR(st);
  ctx.resp.headers.emplace_back("Location", "/" + ctx.target.bucket);
  return Status::Ok();
}

Status DeleteBucket(Ctx& ctx) {
  STRATA_RETURN_IF_ERROR(ctx.buckets().Delete(ctx.target.bucket));
  ctx.resp.status = 204;
  return Status::Ok();
}

Status GetBucketLocation(Ctx& ctx) {
  STRATA_ASSIGN_OR_RETURN(auto store, ctx.buckets().Get(ctx.target.bucket));
  const std::string& region = ctx.handler.options().region;
  net::XmlWriter w;
  // us-east-1 is spelled as an empty constraint, as S3 does.
  w.Open("LocationConstraint", {{"xmlns", std::string(net::kS3XmlNamespace)}})
      .Text(region == "us-east-1" ? "" : region);
  ctx.Xml(w.Finish());
  return Status::Ok();
}

Status GetBucketVersioning(Ctx& ctx) {
  STRATA_ASSIGN_OR_RETURN(auto store, ctx.buckets().Get(ctx.target.bucket));
  net::XmlWriter w;
  w.Open("VersioningConfiguration", {{"xmlns", std::string(net::kS3XmlNamespace)}});  // never enabled
  ctx.Xml(w.Finish());
  return Status::Ok();
}

namespace {

// The prefix and delimiter every listing (objects, versions) takes.
object::ListOptions ListScope(Ctx& ctx) {
  object::ListOptions o;
  if (const std::string* p = ctx.Query("prefix")) o.prefix = *p;
  if (const std::string* d = ctx.Query("delimiter")) o.delimiter = *d;
  return o;
}

}  // namespace

Status ListObjects(Ctx& ctx, bool v2) {
  STRATA_ASSIGN_OR_RETURN(auto store, ctx.buckets().Get(ctx.target.bucket));
  STRATA_ASSIGN_OR_RETURN(int max_keys, MaxKeys(ctx));
  STRATA_ASSIGN_OR_RETURN(bool url, UrlEncoding(ctx));
  object::ListOptions o = ListScope(ctx);
  o.max_keys = std::max(max_keys, 1);
  std::string marker, start_after;
  std::optional<std::string> token;
  if (v2) {
    if (const std::string* t = ctx.Query("continuation-token")) {
      token = *t;  // echoed, even empty: an empty one is no token (S3 lists from the start)
      if (!t->empty() && !DecodeToken(*t, &o.continuation_token)) {
        return InvalidArg("The continuation token provided is incorrect");
      }
    }
    if (const std::string* s = ctx.Query("start-after")) start_after = o.start_after = *s;
  } else if (const std::string* m = ctx.Query("marker")) {
    marker = *m;
    StartAfterMarker(marker, &o);
  }
  STRATA_ASSIGN_OR_RETURN(object::ListResult r, ListPage(*store, o, max_keys));
  if (!v2) {
    ctx.Xml(ListV1Xml(ctx.target.bucket, o, marker, max_keys, url, r));
    return Status::Ok();
  }
  net::ListObjectsV2Result x;
  x.bucket = ctx.target.bucket;
  x.prefix = o.prefix;
  x.delimiter = o.delimiter;
  x.start_after = start_after;
  x.continuation_token = token;
  x.encoding_type = url ? "url" : "";
  x.max_keys = max_keys;
  x.is_truncated = r.truncated;
  if (r.truncated) x.next_continuation_token = EncodeToken(r.next_continuation_token);
  for (const auto& obj : r.objects) x.contents.push_back({obj.key, obj.size, Quote(obj.etag), obj.mtime, ""});
  x.common_prefixes = std::move(r.common_prefixes);
  x.key_count = static_cast<int>(x.contents.size() + x.common_prefixes.size());
  ctx.Xml(net::EncodeListObjectsV2(x));
  return Status::Ok();
}

// Unversioned buckets seen through the versioning API: every object is its
// one version, "null", and the latest.
Status ListObjectVersions(Ctx& ctx) {
  STRATA_ASSIGN_OR_RETURN(auto store, ctx.buckets().Get(ctx.target.bucket));
  STRATA_ASSIGN_OR_RETURN(int max_keys, MaxKeys(ctx));
  STRATA_ASSIGN_OR_RETURN(bool url, UrlEncoding(ctx));
  object::ListOptions o = ListScope(ctx);
  const std::string* km = ctx.Query("key-marker");
  const std::string* vm = ctx.Query("version-id-marker");
  std::string key_marker = km ? *km : "", version_marker = vm ? *vm : "";
  if (!version_marker.empty()) {
    if (key_marker.empty()) return InvalidArg("A version-id marker cannot be specified without a key marker.");
    if (version_marker != "null") return InvalidArg("Invalid version id specified");
  }
  // The only version of key-marker is "null", so both markers mean: after key-marker.
  if (!key_marker.empty()) StartAfterMarker(key_marker, &o);
  STRATA_ASSIGN_OR_RETURN(object::ListResult r, ListPage(*store, o, max_keys));
  net::XmlWriter w;
  w.Open("ListVersionsResult", {{"xmlns", std::string(net::kS3XmlNamespace)}});
  w.Element("Name", ctx.target.bucket).Element("Prefix", MaybeEncode(url, o.prefix));
  w.Element("KeyMarker", MaybeEncode(url, key_marker)).Element("VersionIdMarker", version_marker);
  w.Element("MaxKeys", std::to_string(max_keys));
  if (!o.delimiter.empty()) w.Element("Delimiter", MaybeEncode(url, o.delimiter));
  if (url) w.Element("EncodingType", "url");
  w.Element("IsTruncated", r.truncated ? "true" : "false");
  if (r.truncated) {
    std::string next = LastListed(r);
    w.Element("NextKeyMarker", MaybeEncode(url, next));
    if (!r.objects.empty() && r.objects.back().key == next) w.Element("NextVersionIdMarker", "null");
  }
  for (const auto& obj : r.objects) {
    w.Open("Version").Element("Key", MaybeEncode(url, obj.key)).Element("VersionId", "null");
    w.Element("IsLatest", "true").Element("LastModified", net::FormatIso8601(obj.mtime));
    w.Element("ETag", Quote(obj.etag)).Element("Size", std::to_string(obj.size));
    OwnerXml(w);
    w.Element("StorageClass", "STANDARD").Close();
  }
  for (const auto& p : r.common_prefixes) w.Open("CommonPrefixes").Element("Prefix", MaybeEncode(url, p)).Close();
  ctx.Xml(w.Finish());
  return Status::Ok();
}

// Versioning cannot be turned on: the stores keep one version per key.
// Suspended is what the bucket already is, so it is accepted.
Status PutBucketVersioning(Ctx& ctx) {
  STRATA_ASSIGN_OR_RETURN(auto store, ctx.buckets().Get(ctx.target.bucket));
  auto doc = net::ParseXml(ctx.body.view());
  if (!doc.ok() || doc->LocalName() != "VersioningConfiguration") {
    return S3Error(Code::kInvalidArgument, "MalformedXML",
                   "The XML you provided was not well-formed or did not validate against our published schema.");
  }
  std::string status = doc->ChildText("Status"), mfa = doc->ChildText("MfaDelete");
  if (status == "Enabled" || mfa == "Enabled") {
    return S3Error(Code::kNotSupported, "NotImplemented",
                   "Bucket versioning is not kept by this gateway: every object has one version, \"null\". "
                   "Only Suspended versioning is accepted.");
  }
  if (!status.empty() && status != "Suspended") {
    return S3Error(Code::kInvalidArgument, "MalformedXML", "Versioning Status must be Enabled or Suspended.");
  }
  return Status::Ok();
}

}  // namespace strata::gateway

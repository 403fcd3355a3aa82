// Bucket operations: ListBuckets, Head/Create/DeleteBucket, location,
// versioning, ACL stubs, ListObjects (V1 and V2).
#include <charconv>

#include "base/hash.h"
#include "gateway/s3_ops.h"
#include "net/s3_xml.h"
#include "net/uri.h"
#include "net/xml.h"

namespace strata::gw {
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

std::string MaybeEncode(bool url, const std::string& s) { return url ? UriEncode(s, /*encode_slash=*/false) : s; }

void OwnerXml(XmlWriter& w) { w.Open("Owner").Element("ID", kOwner).Element("DisplayName", kOwner).Close(); }

std::string ListV1Xml(const std::string& bucket, const ListOptions& o, const std::string& marker, int max_keys,
                      bool url, const ListResult& r) {
  XmlWriter w;
  w.Open("ListBucketResult", {{"xmlns", std::string(kS3XmlNamespace)}});
  w.Element("Name", bucket).Element("Prefix", MaybeEncode(url, o.prefix)).Element("Marker", MaybeEncode(url, marker));
  w.Element("MaxKeys", std::to_string(max_keys));
  if (!o.delimiter.empty()) w.Element("Delimiter", MaybeEncode(url, o.delimiter));
  if (url) w.Element("EncodingType", "url");
  w.Element("IsTruncated", r.truncated ? "true" : "false");
  if (r.truncated) {
    std::string next;
    if (!r.objects.empty()) next = r.objects.back().key;
    if (!r.common_prefixes.empty() && r.common_prefixes.back() > next) next = r.common_prefixes.back();
    w.Element("NextMarker", MaybeEncode(url, next));
  }
  for (const auto& obj : r.objects) {
    w.Open("Contents").Element("Key", MaybeEncode(url, obj.key)).Element("LastModified", FormatIso8601(obj.mtime));
    w.Element("ETag", Quote(obj.etag)).Element("Size", std::to_string(obj.size));
    OwnerXml(w);
    w.Element("StorageClass", "STANDARD").Close();
  }
  for (const auto& p : r.common_prefixes) w.Open("CommonPrefixes").Element("Prefix", MaybeEncode(url, p)).Close();
  return w.Finish();
}

}  // namespace

Status ListBuckets(Ctx& ctx) {
  STRATA_ASSIGN_OR_RETURN(auto buckets, ctx.buckets().List());
  ListAllMyBucketsResult r;
  r.owner_id = std::string(kOwner);
  r.owner_display_name = std::string(kOwner);
  for (const auto& b : buckets) r.buckets.push_back({b.name, b.created});
  ctx.Xml(EncodeListAllMyBuckets(r));
  return Status::Ok();
}

Status HeadBucket(Ctx& ctx) {
  STRATA_ASSIGN_OR_RETURN(auto store, ctx.buckets().Get(ctx.target.bucket));
  ctx.resp.headers.emplace_back("x-amz-bucket-region", ctx.handler.options().region);
  return Status::Ok();
}

Status CreateBucket(Ctx& ctx) {
  STRATA_RETURN_IF_ERROR(ctx.buckets().Create(ctx.target.bucket));
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
  XmlWriter w;
  // us-east-1 is spelled as an empty constraint, as S3 does.
  w.Open("LocationConstraint", {{"xmlns", std::string(kS3XmlNamespace)}}).Text(region == "us-east-1" ? "" : region);
  ctx.Xml(w.Finish());
  return Status::Ok();
}

Status GetBucketVersioning(Ctx& ctx) {
  STRATA_ASSIGN_OR_RETURN(auto store, ctx.buckets().Get(ctx.target.bucket));
  XmlWriter w;
  w.Open("VersioningConfiguration", {{"xmlns", std::string(kS3XmlNamespace)}});  // never enabled
  ctx.Xml(w.Finish());
  return Status::Ok();
}

Status GetAcl(Ctx& ctx) {
  STRATA_ASSIGN_OR_RETURN(auto store, ctx.buckets().Get(ctx.target.bucket));
  if (!ctx.target.key.empty()) {
    auto info = store->Head(ctx.target.key);
    if (!info.ok()) {
      if (info.status().code() == Code::kInvalidArgument) return S3Error(Code::kNotFound, "NoSuchKey", "no such key");
      return info.status();
    }
  }
  // The gateway has one owner and no per-object ACLs: the owner has FULL_CONTROL.
  XmlWriter w;
  w.Open("AccessControlPolicy", {{"xmlns", std::string(kS3XmlNamespace)}});
  OwnerXml(w);
  w.Open("AccessControlList").Open("Grant");
  w.Open("Grantee", {{"xmlns:xsi", "http://www.w3.org/2001/XMLSchema-instance"}, {"xsi:type", "CanonicalUser"}})
      .Element("ID", kOwner)
      .Element("DisplayName", kOwner)
      .Close();
  w.Element("Permission", "FULL_CONTROL");
  ctx.Xml(w.Finish());
  return Status::Ok();
}

Status ListObjects(Ctx& ctx, bool v2) {
  STRATA_ASSIGN_OR_RETURN(auto store, ctx.buckets().Get(ctx.target.bucket));
  STRATA_ASSIGN_OR_RETURN(int max_keys, MaxKeys(ctx));
  bool url = false;
  if (const std::string* e = ctx.Query("encoding-type")) {
    if (*e != "url") return InvalidArg("Invalid Encoding Method specified in Request");
    url = true;
  }
  ListOptions o;
  if (const std::string* p = ctx.Query("prefix")) o.prefix = *p;
  if (const std::string* d = ctx.Query("delimiter")) o.delimiter = *d;
  o.max_keys = std::max(max_keys, 1);
  std::string marker, token, start_after;
  if (v2) {
    if (const std::string* t = ctx.Query("continuation-token")) {
      token = *t;
      if (!DecodeToken(*t, &o.continuation_token)) {
        return InvalidArg("The continuation token provided is incorrect");
      }
    }
    if (const std::string* s = ctx.Query("start-after")) start_after = o.start_after = *s;
  } else if (const std::string* m = ctx.Query("marker")) {
    marker = o.start_after = *m;
    // A marker that is a common prefix (V1 NextMarker) skips everything under it.
    if (!o.delimiter.empty() && marker.ends_with(o.delimiter) && marker.starts_with(o.prefix)) {
      o.start_after += kAfterAll;
    }
  }
  ListResult r;
  if (max_keys > 0) {
    auto listed = store->List(o);
    if (!listed.ok()) {
      if (listed.status().code() == Code::kInvalidArgument) return InvalidArg(listed.status().message());
      return listed.status();
    }
    r = std::move(listed).value();
  }
  if (!v2) {
    ctx.Xml(ListV1Xml(ctx.target.bucket, o, marker, max_keys, url, r));
    return Status::Ok();
  }
  ListObjectsV2Result x;
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
  ctx.Xml(EncodeListObjectsV2(x));
  return Status::Ok();
}

}  // namespace strata::gw

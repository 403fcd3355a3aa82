// Object operations: GET/HEAD (streamed, ranged, conditional), PUT, copy,
// delete, multi-delete.
#include <algorithm>
#include <charconv>
#include <iterator>
#include <tuple>
#include <utility>

#include "base/log.h"
#include "base/utf8.h"
#include "gateway/s3_ops.h"
#include "net/s3_errors.h"
#include "net/s3_xml.h"
#include "net/uri.h"
#include "net/xml.h"

namespace strata::gateway {
namespace {

// Produces [begin, end) of one object version in block-aligned pieces, each
// a cache Buffer handed out without copying; the ReadStream's sequential
// detection drives the cache's read-ahead while the socket drains.
class StreamBody : public BodySource {
 public:
  // `first`: the bytes from `begin` already read (sent first).
  StreamBody(std::unique_ptr<cache::ReadStream> stream, uint64_t begin, uint64_t end, uint64_t chunk, Buffer first)
      : stream_(std::move(stream)),
        pos_(begin),
        end_(end),
        chunk_(std::max<uint64_t>(chunk, 4096)),
        first_(std::move(first)) {}

  Result<Buffer> Next() override {
    if (pos_ >= end_) return Buffer();
    if (!first_.empty()) {
      pos_ += first_.size();
      return std::exchange(first_, Buffer());
    }
    uint64_t len = std::min(chunk_ - pos_ % chunk_, end_ - pos_);
    STRATA_ASSIGN_OR_RETURN(Buffer b, stream_->Read(pos_, len));
    if (b.empty()) {
      return UnavailableError(stream_->info().key + " ended early at offset " + std::to_string(pos_));
    }
    pos_ += b.size();
    return b;
  }

 private:
  std::unique_ptr<cache::ReadStream> stream_;
  uint64_t pos_, end_, chunk_;
  Buffer first_;
};

bool EtagListMatches(std::string_view list, const std::string& etag) {
  while (!list.empty()) {
    size_t comma = list.find(',');
    std::string_view item = list.substr(0, comma);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    if (item == "*" || Unquote(item) == etag) return true;
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
  return false;
}

int64_t Secs(WallTime t) { return std::chrono::duration_cast<std::chrono::seconds>(t.time_since_epoch()).count(); }

}  // namespace

// RFC 7232 order: If-Match, else If-Unmodified-Since (412); then
// If-None-Match, else If-Modified-Since (304 for reads, 412 for writes).
// Unparseable dates are ignored, as HTTP requires. Returns 0 to proceed.
int EvaluateConditions(const Ctx& ctx, const object::ObjectInfo& info, std::string_view prefix, bool read) {
  auto h = [&](std::string_view name) { return ctx.Header(std::string(prefix) + std::string(name)); };
  if (const std::string* m = h("if-match")) {
    if (!EtagListMatches(*m, info.etag)) return 412;
  } else if (const std::string* d = h("if-unmodified-since")) {
    auto t = net::ParseHttpDate(*d);
    if (t.ok() && Secs(info.mtime) > Secs(*t)) return 412;
  }
  if (const std::string* n = h("if-none-match")) {
    if (EtagListMatches(*n, info.etag)) return read ? 304 : 412;
  } else if (const std::string* d = h("if-modified-since")) {
    auto t = net::ParseHttpDate(*d);
    if (t.ok() && Secs(info.mtime) <= Secs(*t)) return read ? 304 : 412;
  }
  return 0;
}

namespace {
constexpr std::pair<std::string_view, std::string object::ObjectMetadata::*> kStandardHeaders[] = {
    {"Content-Type", &object::ObjectMetadata::content_type},
    {"Content-Encoding", &object::ObjectMetadata::content_encoding},
    {"Content-Language", &object::ObjectMetadata::content_language},
    {"Content-Disposition", &object::ObjectMetadata::content_disposition},
    {"Cache-Control", &object::ObjectMetadata::cache_control},
    {"Expires", &object::ObjectMetadata::expires}};
constexpr std::string_view kUserPrefix = "x-amz-meta-";

// "aws-chunked" in Content-Encoding names the request's framing, which S3 does not keep.
std::string WithoutAwsChunked(std::string_view encoding) {
  std::string out;
  while (!encoding.empty()) {
    size_t comma = encoding.find(',');
    std::string_view item = encoding.substr(0, comma);
    encoding = comma == std::string_view::npos ? std::string_view() : encoding.substr(comma + 1);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    if (item.empty() || item == "aws-chunked") continue;
    if (!out.empty()) out += ",";
    out += item;
  }
  return out;
}
}  // namespace

Result<object::ObjectMetadata> RequestMetadata(const Ctx& ctx) {
  object::ObjectMetadata m;
  for (const auto& [header, field] : kStandardHeaders) {
    if (const std::string* v = ctx.Header(header)) m.*field = *v;
  }
  m.content_encoding = WithoutAwsChunked(m.content_encoding);
  for (const auto& [raw_name, value] : ctx.req.headers) {
    if (raw_name.size() <= kUserPrefix.size()) continue;
    std::string name = raw_name;
    std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
    if (!name.starts_with(kUserPrefix)) continue;
    if (name.substr(kUserPrefix.size()) == kObjectAclKey) {  // the object ACL's place: set with x-amz-acl
      return S3Error(Code::kInvalidArgument, "InvalidArgument",
                     std::string(name) + " is reserved by this gateway (use x-amz-acl)");
    }
    auto [it, fresh] = m.user.try_emplace(name.substr(kUserPrefix.size()), value);
    if (!fresh) it->second += "," + value;  // a repeated header, as HTTP joins them
  }
  if (object::UserMetadataBytes(m) > object::kMaxUserMetadataBytes) {
    return S3Error(Code::kInvalidArgument, "MetadataTooLarge",
                   "Your metadata headers exceed the maximum allowed metadata size");
  }
  Status valid = object::ValidateMetadata(m);
  if (!valid.ok()) return S3Error(Code::kInvalidArgument, "InvalidArgument", valid.message());
  return m;
}

void MetadataHeaders(Ctx& ctx, const object::ObjectMetadata& m) {
  auto& hs = ctx.resp.headers;
  // S3's default when none was stored.
  hs.emplace_back("Content-Type", m.content_type.empty() ? std::string("binary/octet-stream") : m.content_type);
  for (const auto& [header, field] : kStandardHeaders) {
    if (header != "Content-Type" && !(m.*field).empty()) hs.emplace_back(std::string(header), m.*field);
  }
  for (const auto& [name, value] : m.user) {
    if (name != kObjectAclKey) hs.emplace_back(std::string(kUserPrefix) + name, value);
  }
}

namespace {

void ObjectHeaders(Ctx& ctx, const object::ObjectInfo& info) {
  auto& hs = ctx.resp.headers;
  hs.emplace_back("ETag", Quote(info.etag));
  hs.emplace_back("Last-Modified", net::FormatHttpDate(info.mtime));
}

// response-content-type=... and friends (presigned URLs use them).
void ResponseOverrides(Ctx& ctx) {
  static constexpr std::pair<std::string_view, std::string_view> kOverrides[] = {
      {"response-content-type", "Content-Type"},
      {"response-content-language", "Content-Language"},
      {"response-expires", "Expires"},
      {"response-cache-control", "Cache-Control"},
      {"response-content-disposition", "Content-Disposition"},
      {"response-content-encoding", "Content-Encoding"}};
  for (const auto& [param, header] : kOverrides) {
    const std::string* v = ctx.Query(param);
    if (!v) continue;
    // Header values must not carry line breaks (response splitting).
    if (v->find_first_of("\r\n") != std::string::npos) continue;
    net::SetHeader(ctx.resp.headers, header, *v);
  }
}

// Keys a backend rejects (e.g. "a/../b" on file://) cannot exist: reads say NoSuchKey.
Status ReadError(Status s) {
  if (s.code() == Code::kInvalidArgument) return S3Error(Code::kNotFound, "NoSuchKey", s.message());
  return s;
}

// Buckets are unversioned: "null" names the one version of every object.
Status CheckVersionId(const std::string* version_id) {
  if (version_id && *version_id != "null") {
    return S3Error(Code::kInvalidArgument, "InvalidArgument", "Invalid version id specified");
  }
  return Status::Ok();
}
Status CheckVersionId(const Ctx& ctx) { return CheckVersionId(ctx.Query("versionId")); }

}  // namespace

// One rule for CopyObject and UploadPartCopy. The '?' is looked for before
// decoding, so a key's encoded %3F stays in the key.
Result<CopySource> ParseCopySource(const Ctx& ctx) {
  std::string_view raw = *ctx.Header("x-amz-copy-source");
  std::string_view params;
  if (size_t q = raw.find('?'); q != std::string_view::npos) {
    params = raw.substr(q + 1);
    raw = raw.substr(0, q);
  }
  auto bad = [](std::string why) { return S3Error(Code::kInvalidArgument, "InvalidArgument", std::move(why)); };
  auto query = net::ParseQueryString(params, /*plus_is_space=*/true);
  if (!query.ok()) return bad("x-amz-copy-source has a malformed query after '?'");
  for (const auto& [name, value] : *query) {
    if (name == "versionId") STRATA_RETURN_IF_ERROR(CheckVersionId(&value));
  }
  std::string decoded;
  if (!net::UriDecode(raw, &decoded)) return bad("x-amz-copy-source has a malformed percent-escape");
  if (!IsValidUtf8(decoded)) return bad("x-amz-copy-source names a key that is not UTF-8");
  std::string_view s = decoded;
  if (s.starts_with('/')) s.remove_prefix(1);
  size_t slash = s.find('/');
  if (slash == std::string_view::npos || slash == 0 || slash + 1 == s.size()) {
    return bad("Copy Source must mention the source bucket and key: sourcebucket/sourcekey");
  }
  return CopySource{std::string(s.substr(0, slash)), std::string(s.substr(slash + 1))};
}

Status GetObject(Ctx& ctx, bool head) {
  STRATA_RETURN_IF_ERROR(CheckVersionId(ctx));
  // ?partNumber=N of a multipart object is that part's byte range (the
  // store's GetPartRange: part sizes kept by file:// and mem://, learned by
  // the cache, or asked of an s3:// upstream), with x-amz-mp-parts-count.
  // Otherwise (a single PUT, or sizes unknown) it is answered as AWS does for
  // a single PUT: part 1 is the whole object (without x-amz-mp-parts-count),
  // any other part is not satisfiable. The bytes come through the cache.
  int part_number = 0;
  if (const std::string* p = ctx.Query("partNumber")) {
    auto [end, ec] = std::from_chars(p->data(), p->data() + p->size(), part_number);
    if (ec != std::errc() || end != p->data() + p->size() || part_number < 1 || part_number > 10000) {
      return S3Error(Code::kInvalidArgument, "InvalidArgument", "Part number must be an integer between 1 and 10000.");
    }
    if (ctx.Header("range")) {
      return S3Error(Code::kInvalidArgument, "InvalidRequest",
                     "Cannot specify both Range header and partNumber query parameter");
    }
  }
  STRATA_ASSIGN_OR_RETURN(auto store, ctx.buckets().Get(ctx.target.bucket));
  const std::string& key = ctx.target.key;
  std::unique_ptr<cache::ReadStream> stream;
  object::ObjectInfo info;
  if (head) {
    auto r = store->Head(key);
    STRATA_RETURN_IF_ERROR(ReadableObject(ctx, r));
    if (!r.ok()) return ReadError(r.status());
    info = std::move(r).value();
  } else {
    auto r = store->OpenStream(key);
    if (!r.ok()) {
      STRATA_RETURN_IF_ERROR(ReadableObject(ctx, r.status()));
      return ReadError(r.status());
    }
    stream = std::move(r).value();
    info = stream->info();
    STRATA_RETURN_IF_ERROR(ReadableObject(ctx, info));
  }
  GatewayResponse& resp = ctx.resp;
  if (int cond = EvaluateConditions(ctx, info, "", /*read=*/true)) {
    if (cond == 412)
      return S3Error(Code::kPreconditionFailed, "PreconditionFailed",
                     "At least one of the pre-conditions you specified did not hold");
    resp.status = 304;
    resp.send_body = false;
    ObjectHeaders(ctx, info);
    return Status::Ok();
  }
  uint64_t begin = 0, end = info.size;
  bool ranged = false;
  int parts_count = 0;
  if (part_number > 0) {
    auto part = store->GetPartRange(key, info.etag, part_number);
    if (!part.ok()) {
      if (part.status().code() == Code::kOutOfRange) {
        return S3Error(Code::kOutOfRange, "InvalidPartNumber", "The requested partnumber is not satisfiable");
      }
      if (part.status().code() == Code::kPreconditionFailed) {
        return UnavailableError(key + " changed while being read; retry");
      }
      return ReadError(part.status());
    }
    if (part->offset > info.size || part->length > info.size - part->offset) {
      return UnavailableError(key + " changed while being read; retry");  // stale sizes
    }
    begin = part->offset;
    end = begin + part->length;
    parts_count = part->parts_count;
    ranged = parts_count > 0 && end > begin;
  }
  if (const std::string* rh = ctx.Header("range")) {
    auto parsed = net::ParseRangeHeader(*rh);  // unparseable ranges are ignored (RFC 7233), as S3 does
    if (parsed.ok()) {
      object::ByteRange br{parsed->offset, parsed->length, parsed->suffix};
      Status st = object::ResolveRange(br, info.size, &begin, &end);
      if (!st.ok()) {
        ctx.error_headers.emplace_back("Content-Range", net::FormatUnsatisfiedContentRange(info.size));
        return S3Error(Code::kOutOfRange, "InvalidRange", "The requested range is not satisfiable");
      }
      ranged = info.size > 0;
    }
  }
  // The first chunk is read before the status line goes out: a backend that
  // does not answer makes a 503 (after the cache's backend_timeout), not a
  // 200 whose body then stalls.
  Buffer first;
  if (!head && end > begin) {
    const uint64_t chunk = std::max<uint64_t>(ctx.handler.options().stream_chunk, 4096);
    auto r = stream->Read(begin, std::min(chunk - begin % chunk, end - begin));
    if (r.ok()) {
      first = std::move(r).value();
    } else if (r.status().code() == Code::kPreconditionFailed) {  // replaced meanwhile: the client retries
      return UnavailableError(key + " changed while being read; retry");
    } else {
      return ReadError(r.status());
    }
  }
  resp.status = ranged ? 206 : 200;
  ObjectHeaders(ctx, info);
  MetadataHeaders(ctx, info.metadata);
  // The stored checksum describes the whole object: not sent with a range (as S3).
  if (!ranged && ChecksumModeEnabled(ctx)) ChecksumResponseHeaders(ctx, info.metadata);
  resp.headers.emplace_back("Accept-Ranges", "bytes");
  if (parts_count > 0) resp.headers.emplace_back("x-amz-mp-parts-count", std::to_string(parts_count));
  if (ranged) resp.headers.emplace_back("Content-Range", net::FormatContentRange(begin, end - 1, info.size));
  ResponseOverrides(ctx);
  resp.content_length = end - begin;
  resp.send_body = !head;
  if (!head && end > begin) {
    resp.stream = std::make_unique<StreamBody>(std::move(stream), begin, end, ctx.handler.options().stream_chunk,
                                               std::move(first));
  }
  return Status::Ok();
}

namespace {
Status PreconditionFailed() {
  return S3Error(Code::kPreconditionFailed, "PreconditionFailed",
                 "At least one of the pre-conditions you specified did not hold");
}

// A store's PreconditionFailed for a write, in AWS's terms.
Status WriteConditionFailed(const Ctx& ctx, object::ObjectStore& store, const object::PutOptions& o, Status failed) {
  if (failed.code() != Code::kPreconditionFailed) return failed;
  // AWS answers If-Match on a missing key with NoSuchKey, not 412.
  if (!o.if_match.empty()) {
    auto current = store.Head(ctx.target.key);
    if (!current.ok() && current.status().code() == Code::kNotFound) {
      return S3Error(Code::kNotFound, "NoSuchKey", "The specified key does not exist.");
    }
  }
  return PreconditionFailed();
}

}  // namespace

Result<object::PutOptions> WriteConditions(const Ctx& ctx) {
  object::PutOptions o;
  if (const std::string* m = ctx.Header("if-match")) o.if_match = Unquote(*m);
  if (const std::string* n = ctx.Header("if-none-match")) {
    if (*n != "*") {
      return S3Error(Code::kNotSupported, "NotImplemented",
                     "A header you provided implies functionality that is not implemented: If-None-Match on a "
                     "write supports only \"*\"");
    }
    o.if_none_match = true;
  }
  return o;
}

Status CheckWriteConditions(const Ctx& ctx, object::ObjectStore& store, const object::PutOptions& o) {
  if (o.if_match.empty() && !o.if_none_match) return Status::Ok();
  auto current = store.Head(ctx.target.key);
  if (!current.ok() && current.status().code() != Code::kNotFound) return current.status();
  if (o.if_none_match && current.ok()) return PreconditionFailed();
  if (!o.if_match.empty()) {
    if (!current.ok()) return S3Error(Code::kNotFound, "NoSuchKey", "The specified key does not exist.");
    if (!EtagListMatches(o.if_match, current->etag)) return PreconditionFailed();
  }
  return Status::Ok();
}

Status PutObject(Ctx& ctx) {
  STRATA_RETURN_IF_ERROR(CheckContentMd5(ctx));
  STRATA_ASSIGN_OR_RETURN(RequestChecksum checksum, VerifyRequestChecksum(ctx));
  STRATA_ASSIGN_OR_RETURN(auto store, ctx.buckets().Get(ctx.target.bucket));
  STRATA_ASSIGN_OR_RETURN(object::PutOptions o, WriteConditions(ctx));
  STRATA_ASSIGN_OR_RETURN(o.metadata, RequestMetadata(ctx));
  STRATA_RETURN_IF_ERROR(ApplyRequestAcl(ctx, *store, &o.metadata));
  KeepChecksum(checksum, *store, &o.metadata);
  auto info = store->Put(ctx.target.key, ctx.body, o);
  if (!info.ok()) return WriteConditionFailed(ctx, *store, o, info.status());
  ctx.resp.headers.emplace_back("ETag", Quote(info->etag));
  if (checksum.algorithm) {
    ctx.resp.headers.emplace_back(ChecksumHeader(*checksum.algorithm), checksum.value);
    ctx.resp.headers.emplace_back("x-amz-checksum-type", "FULL_OBJECT");
  }
  return Status::Ok();
}

Status CopyObject(Ctx& ctx) {
  STRATA_ASSIGN_OR_RETURN(CopySource src, ParseCopySource(ctx));
  const auto& [src_bucket, src_key] = src;
  STRATA_ASSIGN_OR_RETURN(auto src_store, ctx.buckets().Get(src_bucket));
  STRATA_RETURN_IF_ERROR(AuthorizeCopySource(ctx, src_bucket, src_key, *src_store));
  STRATA_ASSIGN_OR_RETURN(auto dst_store, ctx.buckets().Get(ctx.target.bucket));
  object::CopyOptions co;
  if (const std::string* directive = ctx.Header("x-amz-metadata-directive")) {
    if (*directive == "REPLACE") {
      co.directive = object::MetadataDirective::kReplace;
      STRATA_ASSIGN_OR_RETURN(co.metadata, RequestMetadata(ctx));
    } else if (*directive != "COPY") {
      return S3Error(Code::kInvalidArgument, "InvalidArgument", "Unknown metadata directive.");
    }
  }
  auto src_info = src_store->Head(src_key);
  if (!src_info.ok()) return ReadError(src_info.status());
  if (co.directive == object::MetadataDirective::kReplace) {  // the bytes are the same: so is their checksum
    co.metadata.checksum_algorithm = src_info->metadata.checksum_algorithm;
    co.metadata.checksum_type = src_info->metadata.checksum_type;
    co.metadata.checksum = src_info->metadata.checksum;
  }
  // The copy's ACL is its own (x-amz-acl, else private), never the source's:
  // a COPY that changes it is a REPLACE with the source's other metadata.
  const bool acl_only_change = co.directive == object::MetadataDirective::kCopy &&
                               (ObjectAcl(src_info->metadata) != CannedAcl::kPrivate || ctx.Header("x-amz-acl"));
  if (acl_only_change) {
    co.directive = object::MetadataDirective::kReplace;
    co.metadata = src_info->metadata;
  }
  if (co.directive == object::MetadataDirective::kReplace) {
    STRATA_RETURN_IF_ERROR(ApplyRequestAcl(ctx, *dst_store, &co.metadata));
  }
  if (EvaluateConditions(ctx, *src_info, "x-amz-copy-source-", /*read=*/false)) {
    return S3Error(Code::kPreconditionFailed, "PreconditionFailed",
                   "At least one of the pre-conditions you specified did not hold");
  }
  object::ObjectInfo info;
  if (src_store == dst_store && src_key == ctx.target.key &&
      (co.directive != object::MetadataDirective::kReplace || acl_only_change)) {
    return S3Error(Code::kInvalidArgument, "InvalidRequest",
                   "This copy request is illegal because it is trying to copy an object to itself without "
                   "changing the object's metadata.");
  } else if (src_store == dst_store) {
    STRATA_ASSIGN_OR_RETURN(info, dst_store->Copy(src_key, ctx.target.key, co));
  } else {
    if (src_info->size > ctx.handler.options().max_copy_bytes) {
      return S3Error(Code::kInvalidArgument, "InvalidRequest", "copy source is larger than this gateway copies");
    }
    object::GetOptions go;
    go.if_match = src_info->etag;
    auto got = src_store->Get(src_key, go);
    if (!got.ok()) return ReadError(got.status());
    object::PutOptions po;
    po.metadata = co.directive == object::MetadataDirective::kReplace ? co.metadata : got->info.metadata;
    STRATA_ASSIGN_OR_RETURN(info, dst_store->Put(ctx.target.key, got->data, po));
  }
  ctx.Xml(net::EncodeCopyObjectResult({Quote(info.etag), info.mtime}));
  return Status::Ok();
}

Status DeleteObject(Ctx& ctx) {
  STRATA_RETURN_IF_ERROR(CheckVersionId(ctx));
  STRATA_ASSIGN_OR_RETURN(auto store, ctx.buckets().Get(ctx.target.bucket));
  Status st = store->Delete(ctx.target.key);
  // A key the backend cannot hold cannot exist: deleting it succeeds, as for any missing key.
  if (!st.ok() && st.code() != Code::kInvalidArgument) return st;
  if (ctx.HasQuery("versionId")) ctx.resp.headers.emplace_back("x-amz-version-id", "null");
  ctx.resp.status = 204;
  return Status::Ok();
}

Status DeleteObjects(Ctx& ctx) {
  STRATA_RETURN_IF_ERROR(CheckContentMd5(ctx));
  STRATA_ASSIGN_OR_RETURN(auto store, ctx.buckets().Get(ctx.target.bucket));
  STRATA_ASSIGN_OR_RETURN(net::DeleteRequest request, net::DecodeDeleteRequest(ctx.body.view()));
  net::DeleteResult result;
  for (size_t i = 0; i < request.keys.size(); ++i) {
    const std::string& key = request.keys[i];
    const std::string& version = i < request.version_ids.size() ? request.version_ids[i] : std::string();
    if (!version.empty() && version != "null") {  // the only version an unversioned bucket has
      result.errors.push_back({key, "NoSuchVersion", "The specified version does not exist.", version});
      continue;
    }
    if (!MayDelete(ctx, key)) {
      result.errors.push_back({key, "AccessDenied", "Access Denied", version});
      continue;
    }
    Status st = store->Delete(key);
    if (st.ok() || st.code() == Code::kInvalidArgument || st.code() == Code::kNotFound) {
      if (!request.quiet) {
        result.deleted.push_back(key);
        result.deleted_version_ids.push_back(version);
      }
      continue;
    }
    net::S3ErrorInfo e = net::S3ErrorForStatus(st);
    result.errors.push_back({key, e.code, st.message(), version});
  }
  ctx.Xml(net::EncodeDeleteResult(result));
  return Status::Ok();
}

}  // namespace strata::gateway

namespace strata::gateway {

// GetObjectAttributes: what x-amz-object-attributes names, from a HEAD. The
// stores keep no part boundaries, so ObjectParts of a multipart object
// (ETag "md5-N") has PartsCount N and no Part elements (AWS too lists
// parts only for objects with checksums); a single-part object has none.
Status GetObjectAttributes(Ctx& ctx) {
  STRATA_RETURN_IF_ERROR(CheckVersionId(ctx));
  const std::string* names = ctx.Header("x-amz-object-attributes");
  if (!names || names->find_first_not_of(" ,") == std::string::npos) {
    return S3Error(Code::kInvalidArgument, "InvalidRequest",
                   "Missing required header for this request: x-amz-object-attributes");
  }
  static constexpr std::string_view kKnown[] = {"ETag", "Checksum", "ObjectParts", "StorageClass", "ObjectSize"};
  bool want[std::size(kKnown)] = {};
  for (std::string_view list = *names; !list.empty();) {
    size_t comma = list.find(',');
    std::string_view item = list.substr(0, comma);
    list = comma == std::string_view::npos ? std::string_view() : list.substr(comma + 1);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    if (item.empty()) continue;
    auto it = std::find(std::begin(kKnown), std::end(kKnown), item);
    if (it == std::end(kKnown))
      return S3Error(Code::kInvalidArgument, "InvalidArgument", "Invalid attribute name specified.");
    want[it - std::begin(kKnown)] = true;
  }
  int max_parts = 1000, marker = 0;
  for (auto [header, out, hi] :
       {std::tuple{"x-amz-max-parts", &max_parts, 1000}, std::tuple{"x-amz-part-number-marker", &marker, 10000}}) {
    const std::string* v = ctx.Header(header);
    if (!v) continue;
    int n = 0;
    auto [end, ec] = std::from_chars(v->data(), v->data() + v->size(), n);
    if (ec != std::errc() || end != v->data() + v->size() || n < 0) {
      return S3Error(Code::kInvalidArgument, "InvalidArgument",
                     std::string(header) + " must be a non-negative integer");
    }
    *out = std::min(n, hi);
  }
  STRATA_ASSIGN_OR_RETURN(auto store, ctx.buckets().Get(ctx.target.bucket));
  auto info = store->Head(ctx.target.key);
  STRATA_RETURN_IF_ERROR(ReadableObject(ctx, info));
  if (!info.ok()) return ReadError(info.status());
  const object::ObjectMetadata& m = info->metadata;
  net::XmlWriter w;
  w.Open("GetObjectAttributesResponse", {{"xmlns", std::string(net::kS3XmlNamespace)}});
  if (want[0]) w.Element("ETag", info->etag);  // unquoted, as AWS sends it here
  auto algorithm = ParseChecksumAlgorithm(m.checksum_algorithm);
  if (want[1] && algorithm && !m.checksum.empty()) {
    std::string value = m.checksum;  // a composite value without its "-N" here (N is PartsCount)
    if (size_t dash = value.find('-'); dash != std::string::npos) value.resize(dash);
    w.Open("Checksum").Element("Checksum" + std::string(ChecksumName(*algorithm)), value);
    if (!m.checksum_type.empty()) w.Element("ChecksumType", m.checksum_type);
    w.Close();
  }
  int parts = 0;
  if (size_t dash = info->etag.rfind('-'); dash != std::string::npos) {
    std::string_view count = std::string_view(info->etag).substr(dash + 1);
    if (std::from_chars(count.data(), count.data() + count.size(), parts).ec != std::errc()) parts = 0;
  }
  if (want[2] && parts > 0) {
    w.Open("ObjectParts").Element("PartsCount", std::to_string(parts));
    w.Element("PartNumberMarker", std::to_string(marker)).Element("MaxParts", std::to_string(max_parts));
    w.Element("IsTruncated", "false").Close();
  }
  if (want[3]) w.Element("StorageClass", "STANDARD");
  if (want[4]) w.Element("ObjectSize", std::to_string(info->size));
  ctx.resp.headers.emplace_back("Last-Modified", net::FormatHttpDate(info->mtime));
  ctx.Xml(w.Finish());
  return Status::Ok();
}

}  // namespace strata::gateway

#include "gateway/s3_handler.h"

#include <algorithm>
#include <cstdio>

#include "base/hash.h"
#include "base/log.h"
#include "base/utf8.h"
#include "gateway/s3_ops.h"
#include "gateway/sigv2.h"
#include "net/s3_errors.h"
#include "net/s3_xml.h"
#include "net/sigv4.h"
#include "net/uri.h"

namespace strata::gateway {
namespace {

// S3's answer to a URI it cannot read (a key that is not UTF-8 among them).
Status UnparseableUri() {
  return InvalidArgumentError("Couldn't parse the specified URI.").WithForeignCode("InvalidURI");
}

}  // namespace

Result<ParsedTarget> ParseTarget(std::string_view target) {
  auto bad = [&](std::string why) {  // the path only: a query may hold a presigned signature
    return InvalidArgumentError("request target " +
                                std::string(target.substr(0, std::min<size_t>(target.find('?'), 200))) + ": " + why)
        .WithForeignCode("InvalidURI");
  };
  if (target.empty() || target.front() != '/') return bad("must start with '/' (path-style addressing only)");
  ParsedTarget t;
  size_t q = target.find('?');
  t.raw_path = std::string(target.substr(0, q));
  if (q != std::string_view::npos) t.raw_query = std::string(target.substr(q + 1));
  std::string_view rest = std::string_view(t.raw_path).substr(1);
  size_t slash = rest.find('/');
  std::string_view raw_bucket = rest.substr(0, slash);
  if (!net::UriDecode(raw_bucket, &t.bucket)) return bad("malformed percent-escape in the bucket name");
  if (slash != std::string_view::npos) {
    if (!net::UriDecode(rest.substr(slash + 1), &t.key)) return bad("malformed percent-escape in the key");
  }
  // Keys are Unicode text (UTF-8 on the wire): other bytes name no object.
  if (!IsValidUtf8(t.bucket) || !IsValidUtf8(t.key)) return UnparseableUri();
  return t;
}

const std::string* Ctx::Query(std::string_view name) const {
  for (const auto& [k, v] : query)
    if (k == name) return &v;
  return nullptr;
}

void Ctx::Xml(std::string body, int status) {
  resp.status = status;
  if (!body.empty()) net::SetHeader(resp.headers, "Content-Type", "application/xml");
  resp.content_length = body.size();
  resp.body = std::move(body);
}

Status S3Error(Code code, std::string_view s3_code, std::string message) {
  return Status(code, std::move(message)).WithForeignCode(std::string(s3_code));
}

Status WithS3Code(Status s, Code code, std::string_view s3_code) {
  if (s.ok() || s.code() != code || net::HttpStatusForS3Code(s.foreign_code()) != 0) return s;
  return s.WithForeignCode(std::string(s3_code));
}

std::string Quote(std::string_view etag) { return "\"" + std::string(etag) + "\""; }

std::string Unquote(std::string_view etag) {
  if (etag.starts_with("W/")) etag.remove_prefix(2);
  if (etag.size() >= 2 && etag.front() == '"' && etag.back() == '"') etag = etag.substr(1, etag.size() - 2);
  return std::string(etag);
}

Status CheckContentMd5(const Ctx& ctx) {
  const std::string* md5 = ctx.Header("content-md5");
  if (!md5) return Status::Ok();
  std::string raw;
  if (!Base64Decode(*md5, &raw) || raw.size() != 16) {
    return S3Error(Code::kInvalidArgument, "InvalidDigest", "The Content-MD5 you specified is not valid.");
  }
  Md5Digest actual = Md5(ctx.body.data(), ctx.body.size());
  if (std::string_view(reinterpret_cast<const char*>(actual.data()), actual.size()) != raw) {
    return S3Error(Code::kCorruption, "BadDigest", "The Content-MD5 you specified did not match what we received.");
  }
  return Status::Ok();
}

namespace {

// Query parameters that never select a different operation.
bool IsPlainParam(std::string_view name) {
  static constexpr std::string_view kPlain[] = {"prefix",
                                                "delimiter",
                                                "marker",
                                                "max-keys",
                                                "encoding-type",
                                                "list-type",
                                                "continuation-token",
                                                "start-after",
                                                "fetch-owner",
                                                "x-id",
                                                "versionId",
                                                "partNumber",
                                                "uploadId",
                                                "max-parts",
                                                "part-number-marker",
                                                "key-marker",
                                                "version-id-marker",
                                                "upload-id-marker",
                                                "max-uploads",
                                                "response-content-type",
                                                "response-content-language",
                                                "response-expires",
                                                "response-cache-control",
                                                "response-content-disposition",
                                                "response-content-encoding",
                                                "allow-unordered",
                                                "optional-object-attributes",
                                                "AWSAccessKeyId",  // SigV2 presigned URLs
                                                "Signature",
                                                "Expires"};
  if (name.size() > 6 && (name.starts_with("X-Amz-") || name.starts_with("x-amz-"))) return true;
  return std::find(std::begin(kPlain), std::end(kPlain), name) != std::end(kPlain);
}

// The first query parameter that names a subresource we do not serve, if any.
const std::string* UnknownSubresource(const Ctx& ctx, std::initializer_list<std::string_view> served) {
  for (const auto& [k, v] : ctx.query) {
    if (IsPlainParam(k)) continue;
    if (std::find(served.begin(), served.end(), k) != served.end()) continue;
    return &k;
  }
  return nullptr;
}

Status NotImplemented(const Ctx&, std::string_view what) {
  return S3Error(Code::kNotSupported, "NotImplemented",
                 "A header or query you provided implies functionality that is not implemented: " + std::string(what));
}

Status MethodNotAllowed(const Ctx& ctx) {
  return S3Error(Code::kNotSupported, "MethodNotAllowed",
                 "The specified method " + ctx.req.method + " is not allowed against this resource.");
}

// An operation as routed: its name, what it needs of the requester, and its
// function; or the error the routing itself answers (NotImplemented, ...).
struct Route {
  const char* op = "Unknown";
  Need need = Need::kAuthenticated;
  Status (*fn)(Ctx&) = nullptr;
  Status error;
};

Route To(const char* op, Need need, Status (*fn)(Ctx&)) { return Route{op, need, fn, Status::Ok()}; }
Route Refused(Status error) { return Route{"Unknown", Need::kAuthenticated, nullptr, std::move(error)}; }

Route RouteObject(const Ctx& ctx) {
  const std::string& m = ctx.req.method;
  if (m == "GET" || m == "HEAD") {
    if (auto* sub = UnknownSubresource(ctx, {"acl", "attributes"})) return Refused(NotImplemented(ctx, *sub));
    if (ctx.HasQuery("acl")) return To("GetObjectAcl", Need::kOwner, GetAcl);
    if (m == "GET" && ctx.HasQuery("attributes")) return To("GetObjectAttributes", Need::kRead, GetObjectAttributes);
    if (m == "GET" && ctx.HasQuery("uploadId")) return To("ListParts", Need::kWrite, ListParts);
    if (m == "GET") return To("GetObject", Need::kRead, [](Ctx& c) { return GetObject(c, false); });
    return To("HeadObject", Need::kRead, [](Ctx& c) { return GetObject(c, true); });
  }
  if (m == "PUT") {
    if (auto* sub = UnknownSubresource(ctx, {"acl"})) return Refused(NotImplemented(ctx, *sub));
    if (ctx.HasQuery("acl")) return To("PutObjectAcl", Need::kOwner, PutObjectAcl);
    if (ctx.HasQuery("uploadId") || ctx.HasQuery("partNumber")) {
      return To(ctx.Header("x-amz-copy-source") ? "UploadPartCopy" : "UploadPart", Need::kWrite, UploadPart);
    }
    if (ctx.Header("x-amz-copy-source")) return To("CopyObject", Need::kWrite, CopyObject);
    if (ctx.body_file) return To("PutObject", Need::kWrite, PutObjectStreamed);
    return To("PutObject", Need::kWrite, PutObject);
  }
  if (m == "DELETE") {
    if (auto* sub = UnknownSubresource(ctx, {})) return Refused(NotImplemented(ctx, *sub));
    if (ctx.HasQuery("uploadId")) return To("AbortMultipartUpload", Need::kWrite, AbortMultipartUpload);
    return To("DeleteObject", Need::kDelete, DeleteObject);
  }
  if (m == "POST") {
    if (auto* sub = UnknownSubresource(ctx, {"uploads"})) return Refused(NotImplemented(ctx, *sub));
    if (ctx.HasQuery("uploads")) return To("CreateMultipartUpload", Need::kWrite, CreateMultipartUpload);
    if (ctx.HasQuery("uploadId")) return To("CompleteMultipartUpload", Need::kWrite, CompleteMultipartUpload);
    return Refused(NotImplemented(ctx, "POST to an object without ?uploads or ?uploadId"));
  }
  return Refused(MethodNotAllowed(ctx));
}

Route RouteBucket(const Ctx& ctx) {
  const std::string& m = ctx.req.method;
  if (m == "GET") {
    if (auto* sub = UnknownSubresource(ctx, {"location", "versioning", "versions", "uploads", "acl"})) {
      return Refused(NotImplemented(ctx, *sub));
    }
    if (ctx.HasQuery("location")) return To("GetBucketLocation", Need::kBucketAny, GetBucketLocation);
    if (ctx.HasQuery("versioning")) return To("GetBucketVersioning", Need::kBucketAny, GetBucketVersioning);
    if (ctx.HasQuery("versions")) return To("ListObjectVersions", Need::kList, ListObjectVersions);
    if (ctx.HasQuery("uploads")) return To("ListMultipartUploads", Need::kList, ListMultipartUploads);
    if (ctx.HasQuery("acl")) return To("GetBucketAcl", Need::kOwner, GetAcl);
    const std::string* lt = ctx.Query("list-type");
    if (lt && *lt == "2") return To("ListObjectsV2", Need::kList, [](Ctx& c) { return ListObjects(c, true); });
    return To("ListObjects", Need::kList, [](Ctx& c) { return ListObjects(c, false); });
  }
  if (m == "HEAD") return To("HeadBucket", Need::kBucketAny, HeadBucket);
  if (m == "PUT") {
    if (auto* sub = UnknownSubresource(ctx, {"versioning", "acl"})) return Refused(NotImplemented(ctx, *sub));
    if (ctx.HasQuery("versioning")) return To("PutBucketVersioning", Need::kOwner, PutBucketVersioning);
    if (ctx.HasQuery("acl")) return To("PutBucketAcl", Need::kOwner, PutBucketAcl);
    return To("CreateBucket", Need::kCreateBucket, CreateBucket);
  }
  if (m == "DELETE") {
    if (auto* sub = UnknownSubresource(ctx, {})) return Refused(NotImplemented(ctx, *sub));
    return To("DeleteBucket", Need::kOwner, DeleteBucket);
  }
  if (m == "POST") {
    if (auto* sub = UnknownSubresource(ctx, {"delete"})) return Refused(NotImplemented(ctx, *sub));
    if (ctx.HasQuery("delete")) return To("DeleteObjects", Need::kDelete, DeleteObjects);
    return Refused(NotImplemented(ctx, "POST to a bucket without ?delete"));
  }
  return Refused(MethodNotAllowed(ctx));
}

Route RouteFor(const Ctx& ctx) {
  if (ctx.target.bucket.empty()) {
    if (ctx.req.method != "GET") return Refused(MethodNotAllowed(ctx));
    return To("ListBuckets", Need::kAuthenticated, ListBuckets);
  }
  return ctx.target.key.empty() ? RouteBucket(ctx) : RouteObject(ctx);
}

// Runs the routed operation once the requester may do what it needs.
Status Dispatch(Ctx& ctx) {
  Route route = RouteFor(ctx);
  ctx.resp.op = route.op;
  STRATA_RETURN_IF_ERROR(route.error);
  STRATA_RETURN_IF_ERROR(Authorize(ctx, route.need));
  return route.fn(ctx);
}

// What S3 says for the common codes; other messages come from the Status
// (they name the object, never a local path: stores report keys).
std::string MessageFor(const std::string& code, const Status& status) {
  if (code == "NoSuchKey") return "The specified key does not exist.";
  if (code == "NoSuchBucket") return "The specified bucket does not exist.";
  if (code == "NoSuchUpload") return "The specified multipart upload does not exist.";
  if (code == "SignatureDoesNotMatch") {
    return "The request signature we calculated does not match the signature you provided. "
           "Check your key and signing method.";
  }
  if (code == "InvalidAccessKeyId") return "The AWS Access Key Id you provided does not exist in our records.";
  if (code == "InternalError") return "We encountered an internal error. Please try again.";
  if (code == "ServiceUnavailable" || code == "SlowDown") return "Please reduce your request rate or try again.";
  return status.message();
}

}  // namespace

S3Handler::S3Handler(BucketSet& buckets, S3HandlerOptions options)
    : buckets_(buckets), options_(std::move(options)), clock_(options_.clock ? *options_.clock : RealClock()) {}

std::string S3Handler::NextRequestId() {
  char buf[24];
  std::snprintf(buf, sizeof(buf), "%016llX", static_cast<unsigned long long>(++request_counter_));
  return buf;
}

GatewayResponse S3Handler::Error(int http_status, std::string_view s3_code, std::string_view message,
                                 std::string_view resource) {
  GatewayResponse r;
  r.status = http_status;
  r.error_code = std::string(s3_code);
  std::string id = NextRequestId();
  r.body = net::EncodeS3Error({std::string(s3_code), std::string(message), std::string(resource), id});
  r.content_length = r.body.size();
  r.headers = {{"Content-Type", "application/xml"},
               {"x-amz-request-id", id},
               {"Date", net::FormatHttpDate(clock_.WallNow())},
               {"Server", "strata"}};
  return r;
}

namespace {

// Authenticates the request; *anonymous when it carries no signature.
Result<net::VerifiedRequest> Authenticate(const S3Handler& h, Clock& clock, const GatewayRequest& req,
                                          const ParsedTarget& t, bool* anonymous) {
  *anonymous = false;
  const std::string* authz = net::FindHeader(req.headers, "authorization");
  bool presigned = t.raw_query.find("Signature=") != std::string::npos;  // X-Amz-Signature (v4) or Signature (v2)
  if (!authz && !presigned) {
    // A web page can make a browser send requests here; unsigned, they could
    // act with whatever the browser's network position allows. Refused.
    if (net::FindHeader(req.headers, "origin")) {
      return PermissionDeniedError("Access Denied (a browser request, with an Origin header, must be signed)")
          .WithForeignCode("AccessDenied");
    }
    *anonymous = true;  // what anonymous requests may do is decided per operation (Authorize)
    return net::VerifiedRequest{};
  }
  net::HttpRequestParts parts{req.method, t.raw_path, t.raw_query, req.headers};
  const auto& keys = h.options().keys;
  net::SecretLookup lookup = [&keys](std::string_view ak) -> std::optional<std::string> {
    auto it = keys.find(std::string(ak));
    if (it == keys.end()) return std::nullopt;
    return it->second;
  };
  if (IsSigV2Request(parts)) return VerifySigV2(parts, lookup, clock.WallNow(), h.options().max_skew);
  return net::VerifyRequest(parts, lookup, clock.WallNow(), h.options().max_skew);
}

// A size from a header: digits only (no sign, no space), at most S3's 5 GiB
// object size, so nothing is allocated from a lying value.
std::optional<uint64_t> ParseDecodedLength(std::string_view s) {
  constexpr uint64_t kMax = 5ull << 30;
  if (s.empty() || s.size() > 11) return std::nullopt;
  uint64_t n = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    n = n * 10 + static_cast<uint64_t>(c - '0');
  }
  if (n > kMax) return std::nullopt;
  return n;
}

bool IsHexSha256(std::string_view s) {
  if (s.size() != 64) return false;
  return std::all_of(s.begin(), s.end(), [](char c) { return std::isxdigit(static_cast<unsigned char>(c)); });
}

// The payload as the client meant it: aws-chunked decoded and/or its hash checked.
Status DecodePayload(Ctx& ctx, const net::VerifiedRequest& v, bool anonymous) {
  ctx.body_file = ctx.req.body_file;
  const uint64_t raw_size = ctx.body_file ? ctx.body_file->size() : ctx.req.body.size();
  std::string claimed = v.payload_sha256;
  if (anonymous) {
    const std::string* h = ctx.Header("x-amz-content-sha256");
    claimed = h ? *h : std::string(net::kUnsignedPayload);
    if (claimed != net::kStreamingUnsignedTrailer) return Status::Ok();  // nothing to hold an anonymous body to
  }
  bool streaming = claimed == net::kStreamingPayload || claimed == net::kStreamingPayloadTrailer ||
                   claimed == net::kStreamingUnsignedTrailer;
  if (streaming) {
    net::AwsChunkedOptions o;
    const std::string* d = ctx.Header("x-amz-decoded-content-length");
    if (!d) {
      return S3Error(Code::kInvalidArgument, "MissingContentLength",
                     "aws-chunked uploads need x-amz-decoded-content-length");
    }
    auto n = ParseDecodedLength(*d);
    if (!n) {
      return S3Error(Code::kInvalidArgument, "InvalidArgument",
                     "x-amz-decoded-content-length must be a decimal byte count up to 5 GiB");
    }
    // The payload is never longer than the framed body it came in.
    if (*n > raw_size) {
      return S3Error(Code::kInvalidArgument, "IncompleteBody",
                     "You did not provide the number of bytes specified by x-amz-decoded-content-length");
    }
    o.decoded_content_length = *n;
    net::VerifiedRequest vv = v;
    vv.payload_sha256 = claimed;
    net::AwsChunkedDecoder decoder = net::AwsChunkedDecoder::ForRequest(vv, o);
    if (ctx.body_file) {
      STRATA_ASSIGN_OR_RETURN(ctx.body_file, DecodeSpilledChunked(*ctx.body_file, decoder));
      ctx.trailers = decoder.trailers();
      return Status::Ok();
    }
    std::string out;
    out.reserve(*n);
    STRATA_RETURN_IF_ERROR(decoder.Feed(ctx.req.body.view(), &out));
    STRATA_RETURN_IF_ERROR(decoder.Finish());
    ctx.body = Buffer::FromString(std::move(out));
    ctx.trailers = decoder.trailers();
    return Status::Ok();
  }
  if (IsHexSha256(claimed)) {
    if (ctx.body_file) {
      std::string hex;
      STRATA_RETURN_IF_ERROR(CheckSpilledSha256(*ctx.body_file, &hex));
      return net::CheckPayloadSha256(v, hex);
    }
    if (claimed == net::kEmptyPayloadSha256 && ctx.req.body.empty()) return Status::Ok();
    return net::CheckPayloadSha256(v, ToHex(Sha256(ctx.req.body.data(), ctx.req.body.size())));
  }
  if (claimed == net::kUnsignedPayload) return Status::Ok();
  return S3Error(Code::kInvalidArgument, "InvalidArgument", "unsupported x-amz-content-sha256 value");
}

void AddCommonHeaders(GatewayResponse& r, const std::string& request_id, WallTime now) {
  r.headers.emplace_back("x-amz-request-id", request_id);
  r.headers.emplace_back("Date", net::FormatHttpDate(now));
  r.headers.emplace_back("Server", "strata");
}

}  // namespace

std::optional<GatewayResponse> S3Handler::PreCheck(GatewayRequest& req) {
  try {
    auto t = ParseTarget(req.target);
    if (!t.ok()) return Handle(req);  // Handle renders the error
    auto auth = std::make_shared<RequestAuth>();
    auto v = Authenticate(*this, clock_, req, *t, &auth->anonymous);
    if (!v.ok()) return Handle(req);
    auth->verified = std::move(v).value();
    req.auth = std::move(auth);
    // Authorized from the headers too: a body the requester may not send is never read.
    return Refusal(req);
  } catch (...) {
    return Internal(req, "PreCheck");
  }
}

GatewayResponse S3Handler::Handle(const GatewayRequest& req) {
  // The boundary: nothing a request does may end the process.
  try {
    return HandleUnguarded(req);
  } catch (...) {
    return Internal(req, "Handle");
  }
}

GatewayResponse S3Handler::Internal(const GatewayRequest& req, std::string_view where) {
  exceptions_caught_.fetch_add(1);
  std::string what = "unknown exception";
  try {
    throw;
  } catch (const std::bad_alloc&) {
    what = "out of memory";
  } catch (const std::exception& e) {
    what = e.what();
  } catch (...) {
  }
  try {
    STRATA_LOG_ERROR("gateway: {} {} from {}: {}: {} (answered 500)", req.method, net::RedactTarget(req.target),
                     req.remote, where, what);
  } catch (...) {
  }
  try {
    GatewayResponse r = Error(500, "InternalError", "We encountered an internal error. Please try again.",
                              req.target.substr(0, req.target.find('?')));
    r.close = true;  // the body may be half read
    return r;
  } catch (...) {
    GatewayResponse r;  // no memory even for the error body: a bare 500
    r.status = 500;
    r.close = true;
    return r;
  }
}

namespace {

// The target, the query and the requester (*auth), as Handle and PreCheck both need them.
Status Prepare(S3Handler& h, Clock& clock, Ctx& ctx, RequestAuth* auth) {
  const GatewayRequest& req = ctx.req;
  STRATA_ASSIGN_OR_RETURN(ctx.target, ParseTarget(req.target));
  ctx.resp.bucket = ctx.target.bucket;
  ctx.resp.key = ctx.target.key;
  auto q = net::ParseQueryString(ctx.target.raw_query, /*plus_is_space=*/true);
  if (!q.ok()) return S3Error(Code::kInvalidArgument, "InvalidURI", "malformed query string");
  ctx.query = std::move(q).value();
  for (const auto& [name, value] : ctx.query) {
    if (!IsValidUtf8(name) || !IsValidUtf8(value)) return UnparseableUri();  // prefixes, markers: keys too
  }
  if (req.auth) {
    *auth = *req.auth;  // decided when the headers arrived
  } else {
    STRATA_ASSIGN_OR_RETURN(auth->verified, Authenticate(h, clock, req, ctx.target, &auth->anonymous));
  }
  ctx.resp.access_key = auth->anonymous ? "-" : auth->verified.access_key_id;
  if (!auth->anonymous) ctx.who.access_key = auth->verified.access_key_id;
  return Status::Ok();
}

// Turns ctx.resp into the S3 error response for `st`.
void RenderError(Ctx& ctx, const Status& st) {
  const GatewayRequest& req = ctx.req;
  GatewayResponse& r = ctx.resp;
  net::S3ErrorInfo e = net::S3ErrorForStatus(st);
  if (e.http_status >= 500 && e.http_status != 501)
    STRATA_LOG_WARN("gateway: {} {}: {}", req.method, net::RedactTarget(req.target), st.ToString());
  r.status = e.http_status;
  r.error_code = e.code;
  r.stream.reset();
  r.headers.clear();
  r.body.clear();
  r.content_length = 0;
  for (auto& h : ctx.error_headers) r.headers.push_back(std::move(h));
  if (e.http_status != 304) {
    r.body = net::EncodeS3Error({e.code, MessageFor(e.code, st), ctx.target.raw_path, ctx.request_id});
    r.content_length = r.body.size();
    r.headers.emplace_back("Content-Type", "application/xml");
  }
  // A HEAD error has no body, but says how long the GET's would have been.
  r.send_body = req.method != "HEAD" && e.http_status != 304;
  // After refusing a body we did not read, the connection cannot be reused.
  if (e.http_status == 400 && (e.code == "IncompleteBody" || e.code == "EntityTooLarge")) r.close = true;
}

}  // namespace

std::optional<GatewayResponse> S3Handler::Refusal(const GatewayRequest& req) {
  Ctx ctx{*this, req, {}, {}, {}, {}, NextRequestId(), {}, {}, {}, {}, {}, false};
  RequestAuth auth;
  Status st = Prepare(*this, clock_, ctx, &auth);
  if (st.ok()) {
    Route route = RouteFor(ctx);
    if (!route.error.ok()) return std::nullopt;  // Handle answers it
    ctx.resp.op = route.op;
    st = Authorize(ctx, route.need);
  }
  if (st.ok()) return std::nullopt;
  RenderError(ctx, st);
  ctx.resp.close = true;  // its body is not read
  AddCommonHeaders(ctx.resp, ctx.request_id, clock_.WallNow());
  return std::move(ctx.resp);
}

GatewayResponse S3Handler::HandleUnguarded(const GatewayRequest& req) {
  Ctx ctx{*this, req, {}, {}, req.body, {}, NextRequestId(), {}, {}, {}, {}, {}, false};
  ctx.resp.bytes_in = req.body_file ? req.body_file->size() : req.body.size();
  ctx.resp.op = "Unknown";
  RequestAuth auth;
  Status st = Prepare(*this, clock_, ctx, &auth);
  if (st.ok()) st = DecodePayload(ctx, auth.verified, auth.anonymous);
  if (st.ok()) st = Dispatch(ctx);
  if (!st.ok()) RenderError(ctx, st);
  AddCommonHeaders(ctx.resp, ctx.request_id, clock_.WallNow());
  return std::move(ctx.resp);
}

}  // namespace strata::gateway

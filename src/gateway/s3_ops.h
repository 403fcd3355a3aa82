// Internal to the gateway: the per-request context and the S3 operations
// S3Handler dispatches to (s3_object_ops.cc, s3_bucket_ops.cc,
// s3_multipart_ops.cc). Each operation fills ctx.resp or returns an error
// Status that S3Handler turns into the S3 XML error.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "base/buffer.h"
#include "base/checksum.h"
#include "gateway/access.h"
#include "gateway/body_file.h"
#include "gateway/s3_handler.h"
#include "net/s3_xml.h"
#include "net/sigv4.h"

namespace strata::gateway {

struct Ctx {
  S3Handler& handler;
  const GatewayRequest& req;
  ParsedTarget target;
  std::vector<std::pair<std::string, std::string>> query;  // decoded
  Buffer body;                                             // decoded payload (aws-chunked removed)
  std::shared_ptr<const BodyFile> body_file;  // the same, when the server spilled it (see PutObjectStreamed)
  std::string request_id;
  GatewayResponse resp;
  net::HttpHeaders error_headers;  // kept on an error response (Content-Range of a 416)
  net::HttpHeaders trailers;       // aws-chunked trailers (x-amz-checksum-*), lower-case names
  Principal who;                   // the requester (anonymous: empty access key)
  BucketRecord bucket_record;      // the target bucket's, as Authorize found it (bucket operations)
  // Set by Authorize for a read the requester holds no read permission for:
  // the object's own ACL decides (ReadableObject), once the operation has it.
  bool read_by_object_acl = false;

  const std::string* Query(std::string_view name) const;
  bool HasQuery(std::string_view name) const { return Query(name) != nullptr; }
  const std::string* Header(std::string_view name) const { return net::FindHeader(req.headers, name); }
  BucketSet& buckets() { return handler.buckets(); }
  WallTime Now() { return handler.clock().WallNow(); }
  // Sets an XML (or empty) 200 body.
  void Xml(std::string body, int status = 200);
};

// A Status with an S3 error code as its foreign code (what S3ErrorForStatus reads).
Status S3Error(Code code, std::string_view s3_code, std::string message);
// When `s` has code `code` and no known S3 code as foreign code, gives it `s3_code`.
Status WithS3Code(Status s, Code code, std::string_view s3_code);

std::string Quote(std::string_view etag);    // "\"etag\""
std::string Unquote(std::string_view etag);  // strips quotes and a W/ prefix

// Checks Content-MD5 (when present) against ctx.body: InvalidDigest / BadDigest.
Status CheckContentMd5(const Ctx& ctx);

// Checksums (s3_checksum.cc). A write's x-amz-checksum-* from a header or
// the trailer x-amz-trailer names; InvalidRequest for several, a malformed
// value or an x-amz-sdk-checksum-algorithm without one. `multipart` allows
// a composite "<base64>-<parts>" value (CompleteMultipartUpload).
struct RequestChecksum {
  std::optional<ChecksumAlgorithm> algorithm;  // unset: none sent
  std::string value;                           // base64, as sent
};
Result<RequestChecksum> ReadRequestChecksum(const Ctx& ctx, bool multipart);
// ReadRequestChecksum, then checks it against ctx.body: BadDigest on a mismatch.
Result<RequestChecksum> VerifyRequestChecksum(const Ctx& ctx);
// Records a verified single-part checksum (FULL_OBJECT) in *m when `store` keeps metadata.
void KeepChecksum(const RequestChecksum& c, object::ObjectStore& store, object::ObjectMetadata* m);
// x-amz-checksum-<algorithm> and x-amz-checksum-type of a stored checksum.
void ChecksumResponseHeaders(Ctx& ctx, const object::ObjectMetadata& m);
bool ChecksumModeEnabled(const Ctx& ctx);  // x-amz-checksum-mode: ENABLED
// CreateMultipartUpload's x-amz-checksum-algorithm / -type into *m (InvalidRequest when S3 refuses the pair).
Status UploadChecksumOptions(const Ctx& ctx, object::ObjectStore& store, object::ObjectMetadata* m);
// CompleteMultipartUpload: each part's checksum in the request must be the
// one kept with the part (InvalidPart), and a whole-object checksum header
// must equal the parts' combination (BadDigest).
Status CheckCompleteChecksums(const Ctx& ctx, object::ObjectStore& store, const std::string& upload_id,
                              const std::vector<net::S3CompletedPart>& wire_parts);

// If-Match / If-None-Match of a write (PutObject, CompleteMultipartUpload):
// NotImplemented for If-None-Match other than "*".
Result<object::PutOptions> WriteConditions(const Ctx& ctx);
// Checks them against the current object, as AWS answers: PreconditionFailed,
// or NoSuchKey for If-Match on a missing key.
Status CheckWriteConditions(const Ctx& ctx, object::ObjectStore& store, const object::PutOptions& o);
// A store's PreconditionFailed from a commit whose conditions held when the
// request began (CheckWriteConditions): a concurrent write won, which AWS
// answers 409 ConditionalRequestConflict. Other statuses pass unchanged.
Status ConditionalConflict(Status s);
// Object metadata (s3_object_ops.cc): what a PUT, CreateMultipartUpload or
// REPLACE copy sends (standard headers and x-amz-meta-*; MetadataTooLarge
// past S3's 2 KiB), and the response headers for a GET/HEAD.
Result<object::ObjectMetadata> RequestMetadata(const Ctx& ctx);
void MetadataHeaders(Ctx& ctx, const object::ObjectMetadata& m);
// RFC 7232 conditions on `info` from headers named prefix + "if-match" etc.:
// 0 to proceed, else 412 or (reads only) 304.
int EvaluateConditions(const Ctx& ctx, const object::ObjectInfo& info, std::string_view prefix, bool read);

// Access (s3_access.cc). What an operation needs of the requester, checked
// by Authorize before it runs: AccessDenied otherwise, as S3 answers.
enum class Need {
  kAuthenticated,  // ListBuckets
  kCreateBucket,   // an unrestricted key that is not read-only
  kBucketAny,      // HeadBucket, location, versioning: any access to the bucket
  kRead,           // the object (or its ACL, see read_by_object_acl)
  kList,           // the listing's prefix
  kWrite,          // the object; a public-read x-amz-acl also needs owner rights
  kDelete,         // the object; DeleteObjects: some key, then each one
  kOwner,          // ACLs, DeleteBucket, PutBucketVersioning
};
Status Authorize(Ctx& ctx, Need need);
Status AccessDenied();
// The object ACL kept in its user metadata under this name (never sent back as x-amz-meta-*).
inline constexpr std::string_view kObjectAclKey = "strata-acl";
CannedAcl ObjectAcl(const object::ObjectMetadata& m);
// Records x-amz-acl in *m (private: nothing); NotImplemented where `store` keeps no metadata.
Status ApplyRequestAcl(const Ctx& ctx, object::ObjectStore& store, object::ObjectMetadata* m);
// For a read decided by the object's ACL: a readable object passes; a
// missing one is the store's error (NoSuchKey) only for a requester who may
// list the bucket, else AccessDenied, so nothing is learnt by probing.
Status ReadableObject(const Ctx& ctx, const Result<object::ObjectInfo>& info);
// x-amz-copy-source of CopyObject and UploadPartCopy: "[/]bucket/key",
// URL-encoded, optionally followed by "?versionId=V". Buckets are
// unversioned: no version or "null" names the object, another is
// InvalidArgument (as for GetObject); other parameters are ignored.
// InvalidArgument for a malformed value or a key that is not UTF-8.
struct CopySource {
  std::string bucket;
  std::string key;
};
Result<CopySource> ParseCopySource(const Ctx& ctx);
// A copy's source: read permission on it, or a public object.
Status AuthorizeCopySource(const Ctx& ctx, const std::string& bucket, const std::string& key,
                           object::ObjectStore& store);
// x-amz-grant-* headers name grantees this gateway has no notion of: NotImplemented.
Status NoExplicitGrants(const Ctx& ctx);
// DeleteObjects: whether the requester may delete this one key.
bool MayDelete(const Ctx& ctx, const std::string& key);

// ACLs (s3_acl_ops.cc): GetBucketAcl/GetObjectAcl, PutBucketAcl/PutObjectAcl
// with the canned private and public-read grants.
Status GetAcl(Ctx& ctx);
Status PutBucketAcl(Ctx& ctx);
Status PutObjectAcl(Ctx& ctx);

// Object operations (s3_object_ops.cc).
Status GetObject(Ctx& ctx, bool head);
Status PutObject(Ctx& ctx);

// s3_streamed_put.cc: bodies spilled to a temp file. Parts of this size are
// read back one at a time and uploaded to the backend.
inline constexpr size_t kStreamPartBytes = 8 << 20;
Status PutObjectStreamed(Ctx& ctx);
// A store's error with the S3 code its message names lifted into the
// foreign code (s3_multipart_ops.cc).
Status LiftS3Code(Status s, std::string_view fallback_for_not_found);
// UploadPart of a spilled body: verified in pieces, then streamed to the
// backend store (object::PartStreamer) or read into memory for one without.
Status UploadPartStreamed(Ctx& ctx, object::ObjectStore& backend, const std::string& upload_id, int part);
// Hex SHA-256 of a spilled body, read in pieces.
Status CheckSpilledSha256(const BodyFile& body, std::string* hex);
// aws-chunked decoding of a spilled body into a new temp file beside it.
Result<std::shared_ptr<const BodyFile>> DecodeSpilledChunked(const BodyFile& raw, net::AwsChunkedDecoder& decoder);
Status CopyObject(Ctx& ctx);
Status GetObjectAttributes(Ctx& ctx);
Status DeleteObject(Ctx& ctx);
Status DeleteObjects(Ctx& ctx);

// Multipart (s3_multipart_ops.cc).
Status CreateMultipartUpload(Ctx& ctx);
Status UploadPart(Ctx& ctx);
Status CompleteMultipartUpload(Ctx& ctx);
Status AbortMultipartUpload(Ctx& ctx);
Status ListParts(Ctx& ctx);
Status ListMultipartUploads(Ctx& ctx);

// Bucket operations (s3_bucket_ops.cc).
Status ListBuckets(Ctx& ctx);
Status HeadBucket(Ctx& ctx);
Status CreateBucket(Ctx& ctx);
Status DeleteBucket(Ctx& ctx);
Status GetBucketLocation(Ctx& ctx);
Status GetBucketVersioning(Ctx& ctx);
Status PutBucketVersioning(Ctx& ctx);
Status ListObjectVersions(Ctx& ctx);
Status ListObjects(Ctx& ctx, bool v2);

}  // namespace strata::gateway

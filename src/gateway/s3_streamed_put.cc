// PutObject and UploadPart with a body the server spilled to a temp file
// (BodyFile): the payload is decoded and verified in bounded pieces. A
// PutObject is then written to the backend as a multipart upload of
// kStreamPartBytes parts read back one at a time, so a single PUT of up to
// 5 GiB never sits in memory; the object's ETag is therefore a multipart one
// ("md5-N"), as S3 clients that upload large files in parts already see. An
// UploadPart streams to a backend that can take a part in pieces
// (object::PartStreamer: file://, s3://).
#include <algorithm>

#include "base/checksum.h"
#include "base/hash.h"
#include "gateway/s3_ops.h"
#include "object/part_reader.h"

namespace strata::gateway {
namespace {

constexpr size_t kPiece = 1 << 20;

Status BadChecksum(ChecksumAlgorithm a) {
  return S3Error(Code::kCorruption, "BadDigest",
                 "The " + std::string(ChecksumName(a)) + " you specified did not match the calculated checksum.");
}

// Content-MD5 and the x-amz-checksum-* in one pass over the payload; the
// verified MD5 (hex) goes to *md5_hex when Content-MD5 was sent.
Result<RequestChecksum> VerifyStreamedDigests(const Ctx& ctx, const BodyFile& body, std::string* md5_hex = nullptr) {
  STRATA_ASSIGN_OR_RETURN(RequestChecksum c, ReadRequestChecksum(ctx, /*multipart=*/false));
  const std::string* md5_header = ctx.Header("content-md5");
  std::string md5_raw;
  if (md5_header && (!Base64Decode(*md5_header, &md5_raw) || md5_raw.size() != 16)) {
    return S3Error(Code::kInvalidArgument, "InvalidDigest", "The Content-MD5 you specified is not valid.");
  }
  if (!md5_header && !c.algorithm) return c;
  Md5Hasher md5;
  std::optional<ChecksumHasher> sum;
  if (c.algorithm) sum.emplace(*c.algorithm);
  STRATA_RETURN_IF_ERROR(body.ForEachPiece(kPiece, [&](std::string_view p) {
    if (md5_header) md5.Update(p.data(), p.size());
    if (sum) sum->Update(p);
    return Status::Ok();
  }));
  if (md5_header) {
    Md5Digest d = md5.Finish();
    if (std::string_view(reinterpret_cast<const char*>(d.data()), d.size()) != md5_raw) {
      return S3Error(Code::kCorruption, "BadDigest", "The Content-MD5 you specified did not match what we received.");
    }
    if (md5_hex) *md5_hex = ToHex(d);
  }
  if (sum && sum->Finish() != *DecodeChecksum(*c.algorithm, c.value)) return BadChecksum(*c.algorithm);
  return c;
}

}  // namespace

Status CheckSpilledSha256(const BodyFile& body, std::string* hex) {
  Sha256Hasher h;
  STRATA_RETURN_IF_ERROR(body.ForEachPiece(kPiece, [&](std::string_view p) {
    h.Update(p);
    return Status::Ok();
  }));
  *hex = ToHex(h.Finish());
  return Status::Ok();
}

Result<std::shared_ptr<const BodyFile>> DecodeSpilledChunked(const BodyFile& raw, net::AwsChunkedDecoder& decoder) {
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<BodyFile> out, BodyFile::Create(raw.dir()));
  std::string decoded;
  STRATA_RETURN_IF_ERROR(raw.ForEachPiece(kPiece, [&](std::string_view p) {
    decoded.clear();
    STRATA_RETURN_IF_ERROR(decoder.Feed(p, &decoded));
    return out->Append(decoded.data(), decoded.size());
  }));
  STRATA_RETURN_IF_ERROR(decoder.Finish());
  return std::shared_ptr<const BodyFile>(std::move(out));
}

Status PutObjectStreamed(Ctx& ctx) {
  const BodyFile& body = *ctx.body_file;
  STRATA_ASSIGN_OR_RETURN(RequestChecksum checksum, VerifyStreamedDigests(ctx, body));
  STRATA_ASSIGN_OR_RETURN(auto store, ctx.buckets().Get(ctx.target.bucket));
  STRATA_ASSIGN_OR_RETURN(object::PutOptions o, WriteConditions(ctx));
  STRATA_ASSIGN_OR_RETURN(o.metadata, RequestMetadata(ctx));
  STRATA_RETURN_IF_ERROR(ApplyRequestAcl(ctx, *store, &o.metadata));
  KeepChecksum(checksum, *store, &o.metadata);
  // Conditions are checked before the upload (412 / 404 without sending a
  // byte) and by the store atomically with the Complete that commits it: a
  // write that won the race in between makes this one 409 (as on AWS).
  STRATA_RETURN_IF_ERROR(CheckWriteConditions(ctx, *store, o));
  object::CompleteOptions conditions;
  conditions.if_match = o.if_match;
  conditions.if_none_match = o.if_none_match;
  object::PutOptions create = o;
  create.if_match.clear();
  create.if_none_match = false;
  STRATA_ASSIGN_OR_RETURN(std::string upload_id, store->CreateMultipartUpload(ctx.target.key, create));
  std::vector<object::CompletedPart> parts;
  Result<object::ObjectInfo> done = [&]() -> Result<object::ObjectInfo> {
    for (uint64_t off = 0; off < body.size() || parts.empty(); off += kStreamPartBytes) {
      STRATA_ASSIGN_OR_RETURN(Buffer part, body.Read(off, kStreamPartBytes));  // the only copy in memory
      int number = static_cast<int>(parts.size()) + 1;
      STRATA_ASSIGN_OR_RETURN(std::string etag,
                              store->UploadPart(ctx.target.key, upload_id, number, std::move(part), {}));
      parts.push_back({number, std::move(etag)});
    }
    return store->CompleteMultipartUpload(ctx.target.key, upload_id, parts, conditions);
  }();
  if (!done.ok()) {
    store->AbortMultipartUpload(ctx.target.key, upload_id).IgnoreError();  // the error that matters is `done`
    return ConditionalConflict(done.status());
  }
  ctx.resp.headers.emplace_back("ETag", Quote(done->etag));
  if (checksum.algorithm) {
    ctx.resp.headers.emplace_back(ChecksumHeader(*checksum.algorithm), checksum.value);
    ctx.resp.headers.emplace_back("x-amz-checksum-type", "FULL_OBJECT");
  }
  return Status::Ok();
}

Status UploadPartStreamed(Ctx& ctx, object::ObjectStore& backend, const std::string& upload_id, int part) {
  const BodyFile& body = *ctx.body_file;
  object::PartReader source;
  STRATA_ASSIGN_OR_RETURN(RequestChecksum checksum, VerifyStreamedDigests(ctx, body, &source.md5_hex));
  object::PartOptions po;
  if (checksum.algorithm) {  // the store keeps it or passes it on (see UploadPart)
    po.checksum = {std::string(ChecksumName(*checksum.algorithm)), checksum.value};
  }
  source.size = body.size();
  source.read = [&body](uint64_t offset, void* dst, size_t n) { return body.ReadInto(offset, dst, n); };
  auto etag = object::UploadPartFromSource(backend, ctx.target.key, upload_id, part, source, po);
  if (!etag.ok()) return LiftS3Code(etag.status(), "NoSuchUpload");
  ctx.resp.headers.emplace_back("ETag", Quote(*etag));
  if (checksum.algorithm) ctx.resp.headers.emplace_back(ChecksumHeader(*checksum.algorithm), checksum.value);
  return Status::Ok();
}

}  // namespace strata::gateway

// Multipart upload: create, upload part (and part copy), complete, abort,
// list parts.
#include <algorithm>
#include <charconv>
#include <optional>

#include "gateway/s3_ops.h"
#include "net/s3_errors.h"
#include "net/s3_xml.h"
#include "net/uri.h"
#include "net/xml.h"

namespace strata::gateway {

// The file and mem stores name the S3 code at the end of their messages
// ("... (InvalidPart)") without setting it as the foreign code; lift it so
// the client sees the right code. A code we do not know is left alone.
Status LiftS3Code(Status s, std::string_view fallback_for_not_found) {
  // For an operation on an upload, anything missing but the bucket is the
  // upload (some backends, e.g. RGW, answer NoSuchKey for an aborted one).
  if (s.code() == Code::kNotFound && fallback_for_not_found == "NoSuchUpload" && s.foreign_code() != "NoSuchBucket") {
    return s.WithForeignCode("NoSuchUpload");
  }
  if (s.ok() || net::HttpStatusForS3Code(s.foreign_code()) != 0) return s;
  const std::string& m = s.message();
  if (m.size() > 2 && m.back() == ')') {
    size_t open = m.rfind('(');
    if (open != std::string::npos) {
      std::string code = m.substr(open + 1, m.size() - open - 2);
      if (net::HttpStatusForS3Code(code) != 0) return s.WithForeignCode(std::move(code));
    }
  }
  return WithS3Code(s, Code::kNotFound, fallback_for_not_found);
}

namespace {

Result<int> PartNumber(const Ctx& ctx) {
  const std::string* p = ctx.Query("partNumber");
  int n = 0;
  if (!p || std::from_chars(p->data(), p->data() + p->size(), n).ec != std::errc() || n < 1 || n > 10000) {
    return S3Error(Code::kInvalidArgument, "InvalidArgument", "Part number must be an integer between 1 and 10000.");
  }
  return n;
}

Result<std::string> UploadId(const Ctx& ctx) {
  const std::string* id = ctx.Query("uploadId");
  if (!id || id->empty()) return S3Error(Code::kInvalidArgument, "InvalidArgument", "uploadId is required");
  return *id;
}

// The bytes a part copy takes: x-amz-copy-source (+ -range) of a source object.
Result<Buffer> CopySourceBytes(Ctx& ctx) {
  STRATA_ASSIGN_OR_RETURN(CopySource src, ParseCopySource(ctx));
  STRATA_ASSIGN_OR_RETURN(auto store, ctx.buckets().Get(src.bucket));
  STRATA_RETURN_IF_ERROR(AuthorizeCopySource(ctx, src.bucket, src.key, *store));
  object::GetOptions o;
  if (const std::string* r = ctx.Header("x-amz-copy-source-range")) {
    auto parsed = net::ParseRangeHeader(*r);
    if (!parsed.ok() || !parsed->length) {
      return S3Error(Code::kInvalidArgument, "InvalidArgument", "x-amz-copy-source-range must be bytes=first-last");
    }
    o.range = object::ByteRange::Of(parsed->offset, *parsed->length);
  }
  if (const std::string* m = ctx.Header("x-amz-copy-source-if-match")) o.if_match = Unquote(*m);
  // The copied bytes are held in memory: the same bound as CopyObject.
  const uint64_t max_copy = ctx.handler.options().max_copy_bytes;
  uint64_t copy_bytes = 0;
  if (o.range) {
    copy_bytes = *o.range->length;
  } else {
    auto info = store->Head(src.key);
    if (!info.ok()) {
      if (info.status().code() == Code::kInvalidArgument)
        return S3Error(Code::kNotFound, "NoSuchKey", "no such source key");
      return info.status();
    }
    copy_bytes = info->size;
  }
  if (copy_bytes > max_copy) {
    return S3Error(Code::kInvalidArgument, "InvalidRequest",
                   "The specified copy source is larger than the maximum allowable size for a copy source: " +
                       std::to_string(max_copy));
  }
  auto got = store->Get(src.key, o);
  if (!got.ok()) {
    if (got.status().code() == Code::kInvalidArgument)
      return S3Error(Code::kNotFound, "NoSuchKey", "no such source key");
    return got.status();
  }
  if (EvaluateConditions(ctx, got->info, "x-amz-copy-source-", /*read=*/false)) {
    return S3Error(Code::kPreconditionFailed, "PreconditionFailed",
                   "At least one of the pre-conditions you specified did not hold");
  }
  if (o.range && got->offset + got->data.size() < o.range->offset + *o.range->length) {
    return S3Error(Code::kOutOfRange, "InvalidRange", "x-amz-copy-source-range is past the end of the source");
  }
  return got->data;
}

// The checksum algorithm the upload was created with, where the store keeps
// it (one that keeps no part checksums, s3://, does not report it either).
std::optional<ChecksumAlgorithm> UploadChecksumAlgorithm(object::ObjectStore& store, const std::string& key,
                                                         const std::string& upload_id) {
  if (!store.Capabilities().checksums_kept) return std::nullopt;
  auto uploads = store.ListMultipartUploads(key);
  if (!uploads.ok()) return std::nullopt;  // UploadPart itself reports a missing upload
  for (const object::UploadInfo& u : *uploads) {
    if (u.key == key && u.upload_id == upload_id) return ParseChecksumAlgorithm(u.checksum_algorithm);
  }
  return std::nullopt;
}

// CompleteMultipartUpload's answer for the object it made.
Status CompleteAnswer(Ctx& ctx, const object::ObjectInfo& info) {
  const std::string* host = ctx.Header("host");
  std::string location = "http://" + (host ? *host : std::string("localhost")) + ctx.target.raw_path;
  net::CompleteMultipartUploadResult result{location, ctx.target.bucket, ctx.target.key, Quote(info.etag), {}, {}};
  const object::ObjectMetadata& m = info.metadata;  // the stores combined the parts' checksums
  if (!m.checksum.empty()) {
    result.checksum = {m.checksum_algorithm, m.checksum};
    result.checksum_type = m.checksum_type;
  }
  ctx.Xml(net::EncodeCompleteMultipartUploadResult(result));
  return Status::Ok();
}

}  // namespace

Status ConditionalConflict(Status s) {
  if (s.code() != Code::kPreconditionFailed || s.foreign_code() == "ConditionalRequestConflict") return s;
  return S3Error(Code::kPreconditionFailed, "ConditionalRequestConflict",
                 "The conditional request cannot succeed due to a conflicting operation against this resource.");
}

Status CreateMultipartUpload(Ctx& ctx) {
  STRATA_ASSIGN_OR_RETURN(auto store, ctx.buckets().Get(ctx.target.bucket));
  object::PutOptions o;
  STRATA_ASSIGN_OR_RETURN(o.metadata, RequestMetadata(ctx));
  STRATA_RETURN_IF_ERROR(ApplyRequestAcl(ctx, *store, &o.metadata));
  STRATA_RETURN_IF_ERROR(UploadChecksumOptions(ctx, *store, &o.metadata));
  auto id = store->CreateMultipartUpload(ctx.target.key, o);
  if (!id.ok()) return LiftS3Code(id.status(), "NoSuchKey");
  if (!o.metadata.checksum_algorithm.empty()) {
    ctx.resp.headers.emplace_back("x-amz-checksum-algorithm", o.metadata.checksum_algorithm);
    ctx.resp.headers.emplace_back("x-amz-checksum-type", o.metadata.checksum_type);
  }
  ctx.Xml(net::EncodeInitiateMultipartUpload({ctx.target.bucket, ctx.target.key, *id}));
  return Status::Ok();
}

Status UploadPart(Ctx& ctx) {
  STRATA_ASSIGN_OR_RETURN(int part, PartNumber(ctx));
  STRATA_ASSIGN_OR_RETURN(std::string upload_id, UploadId(ctx));
  STRATA_ASSIGN_OR_RETURN(auto store, ctx.buckets().Get(ctx.target.bucket));
  bool copy = ctx.Header("x-amz-copy-source") != nullptr;
  // A spilled body goes past the cache (which keeps no parts) to its backend.
  if (ctx.body_file && !copy) return UploadPartStreamed(ctx, store->base(), upload_id, part);
  Buffer data = ctx.body;
  object::PartOptions po;
  RequestChecksum checksum;
  if (copy) {
    STRATA_ASSIGN_OR_RETURN(data, CopySourceBytes(ctx));
    // No client sends a checksum with a part copy: S3 computes the part's in
    // the upload's algorithm, so Complete can combine it with the others'.
    checksum.algorithm = UploadChecksumAlgorithm(*store, ctx.target.key, upload_id);
    if (checksum.algorithm) checksum.value = ChecksumBase64(*checksum.algorithm, data.view());
  } else {
    STRATA_RETURN_IF_ERROR(CheckContentMd5(ctx));
    STRATA_ASSIGN_OR_RETURN(checksum, VerifyRequestChecksum(ctx));
  }
  // Verified: the store keeps it (file://, mem://) or passes it on (s3://).
  if (checksum.algorithm) po.checksum = {std::string(ChecksumName(*checksum.algorithm)), checksum.value};
  auto etag = store->UploadPart(ctx.target.key, upload_id, part, data, po);
  if (!etag.ok()) return LiftS3Code(etag.status(), "NoSuchUpload");
  if (copy) {
    net::XmlWriter w;
    w.Open("CopyPartResult", {{"xmlns", std::string(net::kS3XmlNamespace)}})
        .Element("LastModified", net::FormatIso8601(ctx.Now()))
        .Element("ETag", Quote(*etag));
    if (checksum.algorithm) w.Element("Checksum" + std::string(ChecksumName(*checksum.algorithm)), checksum.value);
    ctx.Xml(w.Finish());
  } else {
    ctx.resp.headers.emplace_back("ETag", Quote(*etag));
    if (checksum.algorithm) ctx.resp.headers.emplace_back(ChecksumHeader(*checksum.algorithm), checksum.value);
  }
  return Status::Ok();
}

Status CompleteMultipartUpload(Ctx& ctx) {
  STRATA_ASSIGN_OR_RETURN(std::string upload_id, UploadId(ctx));
  STRATA_ASSIGN_OR_RETURN(auto store, ctx.buckets().Get(ctx.target.bucket));
  STRATA_ASSIGN_OR_RETURN(auto wire_parts, net::DecodeCompleteMultipartUpload(ctx.body.view()));
  std::vector<object::CompletedPart> parts;
  for (const auto& p : wire_parts) {
    if (!parts.empty() && p.part_number < parts.back().part_number) {
      return S3Error(Code::kInvalidArgument, "InvalidPartOrder",
                     "The list of parts was not in ascending order. Parts must be ordered by part number.");
    }
    // A part number listed again (a client that re-sent the part lists each
    // answer it got, the last one last): its last entry is the one that counts.
    if (!parts.empty() && p.part_number == parts.back().part_number) parts.pop_back();
    parts.push_back({p.part_number, Unquote(p.etag)});
  }
  // Sent again after it succeeded (an SDK retrying a lost answer): S3 answers
  // 200 with the same object, before any condition (it holds the object now).
  auto done = store->FindCompletedUpload(ctx.target.key, upload_id, parts);
  if (!done.ok()) return LiftS3Code(done.status(), "NoSuchUpload");
  if (*done) return CompleteAnswer(ctx, **done);
  // Checked first (412, or 404 for If-Match on a missing key), then again
  // by the store atomically with its commit: failing only there means a
  // write raced this one, which AWS answers 409 ConditionalRequestConflict.
  STRATA_ASSIGN_OR_RETURN(object::PutOptions conditions, WriteConditions(ctx));
  STRATA_RETURN_IF_ERROR(CheckWriteConditions(ctx, *store, conditions));
  STRATA_RETURN_IF_ERROR(CheckCompleteChecksums(ctx, *store, upload_id, wire_parts));
  object::CompleteOptions co;
  co.if_match = conditions.if_match;
  co.if_none_match = conditions.if_none_match;
  for (const auto& p : wire_parts) co.part_checksums.push_back({p.checksum.algorithm, p.checksum.value});
  if (auto whole = ReadRequestChecksum(ctx, /*multipart=*/true); whole.ok() && whole->algorithm) {
    co.checksum = {std::string(ChecksumName(*whole->algorithm)), whole->value};
    if (const std::string* type = ctx.Header("x-amz-checksum-type")) co.checksum_type = *type;
  }
  auto info = store->CompleteMultipartUpload(ctx.target.key, upload_id, parts, co);
  if (!info.ok()) return ConditionalConflict(LiftS3Code(info.status(), "NoSuchUpload"));
  return CompleteAnswer(ctx, *info);
}

Status AbortMultipartUpload(Ctx& ctx) {
  STRATA_ASSIGN_OR_RETURN(std::string upload_id, UploadId(ctx));
  STRATA_ASSIGN_OR_RETURN(auto store, ctx.buckets().Get(ctx.target.bucket));
  Status st = store->AbortMultipartUpload(ctx.target.key, upload_id);
  if (!st.ok()) return LiftS3Code(st, "NoSuchUpload");
  ctx.resp.status = 204;
  return Status::Ok();
}

Status ListParts(Ctx& ctx) {
  STRATA_ASSIGN_OR_RETURN(std::string upload_id, UploadId(ctx));
  STRATA_ASSIGN_OR_RETURN(auto store, ctx.buckets().Get(ctx.target.bucket));
  int max_parts = 1000, marker = 0;
  auto read_int = [&](const char* name, int* out, int lo, int hi) -> Status {
    const std::string* v = ctx.Query(name);
    if (!v) return Status::Ok();
    int n = 0;
    if (std::from_chars(v->data(), v->data() + v->size(), n).ec != std::errc() || n < lo) {
      return S3Error(Code::kInvalidArgument, "InvalidArgument",
                     std::string(name) + " must be an integer >= " + std::to_string(lo));
    }
    *out = std::min(n, hi);
    return Status::Ok();
  };
  STRATA_RETURN_IF_ERROR(read_int("max-parts", &max_parts, 0, 1000));
  STRATA_RETURN_IF_ERROR(read_int("part-number-marker", &marker, 0, 10000));
  auto parts = store->ListParts(ctx.target.key, upload_id);
  if (!parts.ok()) return LiftS3Code(parts.status(), "NoSuchUpload");
  net::ListPartsResult r;
  r.bucket = ctx.target.bucket;
  r.key = ctx.target.key;
  r.upload_id = upload_id;
  r.part_number_marker = marker;
  r.max_parts = max_parts;
  for (const auto& p : *parts) {
    if (p.part_number <= marker) continue;
    if (static_cast<int>(r.parts.size()) == max_parts) {
      r.is_truncated = true;
      break;
    }
    r.parts.push_back({p.part_number, Quote(p.etag), p.size, ctx.Now(), {p.checksum.algorithm, p.checksum.value}});
  }
  if (!r.parts.empty()) r.next_part_number_marker = r.parts.back().part_number;
  ctx.Xml(net::EncodeListParts(r));
  return Status::Ok();
}

}  // namespace strata::gateway

namespace strata::gateway {

// ListMultipartUploads over the store's sorted list of uploads: prefix,
// delimiter roll-up, key-marker / upload-id-marker and max-uploads as S3.
Status ListMultipartUploads(Ctx& ctx) {
  STRATA_ASSIGN_OR_RETURN(auto store, ctx.buckets().Get(ctx.target.bucket));
  auto q = [&](const char* name) {
    const std::string* v = ctx.Query(name);
    return v ? *v : std::string();
  };
  std::string prefix = q("prefix"), delimiter = q("delimiter"), key_marker = q("key-marker"),
              id_marker = q("upload-id-marker"), encoding = q("encoding-type");
  if (!encoding.empty() && encoding != "url") {
    return S3Error(Code::kInvalidArgument, "InvalidArgument", "Invalid Encoding Method specified in Request");
  }
  bool url = !encoding.empty();
  int max_uploads = 1000;
  if (const std::string* m = ctx.Query("max-uploads")) {
    int n = 0;
    auto [p, ec] = std::from_chars(m->data(), m->data() + m->size(), n);
    if (ec != std::errc() || p != m->data() + m->size() || n < 0) {
      return S3Error(Code::kInvalidArgument, "InvalidArgument",
                     "Provided max-uploads not an integer or within integer range");
    }
    max_uploads = std::min(n, 1000);
  }
  auto listed = store->ListMultipartUploads(prefix);
  if (!listed.ok()) {
    if (listed.status().code() == Code::kNotSupported) {
      return S3Error(Code::kNotSupported, "NotImplemented", listed.status().message());
    }
    return listed.status();
  }
  // Where to start: after (key-marker, upload-id-marker) in listing order, or
  // after every upload of key-marker (and under it, when it is a common prefix).
  std::vector<object::UploadInfo>& all = *listed;
  size_t start = 0;
  if (!key_marker.empty()) {
    bool marker_is_prefix = !delimiter.empty() && key_marker.ends_with(delimiter) && key_marker.starts_with(prefix);
    auto after_key = [&](const object::UploadInfo& u) {
      return u.key > key_marker && !(marker_is_prefix && u.key.starts_with(key_marker));
    };
    start = all.size();
    for (size_t i = 0; i < all.size(); ++i) {
      if (after_key(all[i])) {
        start = i;
        break;
      }
    }
    if (!id_marker.empty()) {
      for (size_t i = 0; i < all.size(); ++i) {
        if (all[i].key == key_marker && all[i].upload_id == id_marker) {
          start = i + 1;
          break;
        }
      }
    }
  }
  auto enc = [&](const std::string& s) { return url ? net::UriEncode(s, /*encode_slash=*/false) : s; };
  std::vector<const object::UploadInfo*> uploads;
  std::vector<std::string> prefixes;
  bool truncated = false;
  std::string next_key, next_id;
  for (size_t i = start; i < all.size(); ++i) {
    const object::UploadInfo& u = all[i];
    std::string rolled;
    if (!delimiter.empty()) {
      size_t d = u.key.find(delimiter, prefix.size());
      if (d != std::string::npos) rolled = u.key.substr(0, d + delimiter.size());
    }
    if (!rolled.empty() && !prefixes.empty() && prefixes.back() == rolled) continue;
    if (static_cast<int>(uploads.size() + prefixes.size()) >= max_uploads) {
      truncated = true;
      break;
    }
    if (!rolled.empty()) {
      prefixes.push_back(rolled);
      next_key = rolled;
      next_id.clear();
    } else {
      uploads.push_back(&u);
      next_key = u.key;
      next_id = u.upload_id;
    }
  }
  net::XmlWriter w;
  w.Open("ListMultipartUploadsResult", {{"xmlns", std::string(net::kS3XmlNamespace)}});
  w.Element("Bucket", ctx.target.bucket).Element("KeyMarker", enc(key_marker)).Element("UploadIdMarker", id_marker);
  if (truncated) w.Element("NextKeyMarker", enc(next_key)).Element("NextUploadIdMarker", next_id);
  if (!delimiter.empty()) w.Element("Delimiter", enc(delimiter));
  w.Element("Prefix", enc(prefix)).Element("MaxUploads", std::to_string(max_uploads));
  if (url) w.Element("EncodingType", "url");
  w.Element("IsTruncated", truncated ? "true" : "false");
  for (const object::UploadInfo* u : uploads) {
    w.Open("Upload").Element("Key", enc(u->key)).Element("UploadId", u->upload_id);
    w.Open("Initiator").Element("ID", "strata").Element("DisplayName", "strata").Close();
    w.Open("Owner").Element("ID", "strata").Element("DisplayName", "strata").Close();
    w.Element("StorageClass", "STANDARD").Element("Initiated", net::FormatIso8601(u->initiated)).Close();
  }
  for (const auto& p : prefixes) w.Open("CommonPrefixes").Element("Prefix", enc(p)).Close();
  ctx.Xml(w.Finish());
  return Status::Ok();
}

}  // namespace strata::gateway

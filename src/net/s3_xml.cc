#include "net/s3_xml.h"

#include <charconv>

#include "net/http.h"
#include "net/uri.h"
#include "net/xml.h"

namespace strata::net {
namespace {

using Attrs = std::vector<std::pair<std::string, std::string>>;

Status Malformed(std::string what) { return InvalidArgumentError("S3 XML: " + what).WithForeignCode("MalformedXML"); }

Result<XmlElement> ParseRoot(std::string_view xml, std::string_view root) {
  auto doc = ParseXml(xml);
  if (!doc.ok()) return InvalidArgumentError(doc.status().message()).WithForeignCode("MalformedXML");
  if (doc->LocalName() != root) {
    return Malformed("expected <" + std::string(root) + ">, got <" + doc->name.substr(0, 64) + ">");
  }
  return std::move(doc).value();
}

template <typename T>
Status ParseNumber(const XmlElement& e, std::string_view child, T* out, bool required = false) {
  const XmlElement* c = e.Child(child);
  if (c == nullptr) return required ? Malformed("missing <" + std::string(child) + ">") : Status::Ok();
  std::string_view s = c->text;
  while (!s.empty() && (s.front() == ' ' || s.front() == '\n' || s.front() == '\t' || s.front() == '\r'))
    s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\n' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  if (s.empty() || ec != std::errc() || p != s.data() + s.size()) {
    return Malformed("<" + std::string(child) + "> is not a valid number: '" + std::string(s.substr(0, 32)) + "'");
  }
  return Status::Ok();
}

Status ParseBool(const XmlElement& e, std::string_view child, bool* out) {
  const XmlElement* c = e.Child(child);
  if (c == nullptr) return Status::Ok();
  if (c->text == "true")
    *out = true;
  else if (c->text == "false")
    *out = false;
  else
    return Malformed("<" + std::string(child) + "> must be true or false");
  return Status::Ok();
}

Status ParseTime(const XmlElement& e, std::string_view child, WallTime* out) {
  const XmlElement* c = e.Child(child);
  if (c == nullptr || c->text.empty()) return Status::Ok();
  auto t = ParseIso8601(c->text);
  if (!t.ok()) return Malformed("<" + std::string(child) + ">: " + t.status().message());
  *out = *t;
  return Status::Ok();
}

// encoding-type=url: AWS encodes with '+' for spaces on some paths, so decode accepting both.
Status UrlDecodeField(bool url, std::string* s) {
  if (!url) return Status::Ok();
  std::string out;
  if (!UriDecode(*s, &out, /*plus_is_space=*/true)) return Malformed("bad URL encoding in '" + s->substr(0, 64) + "'");
  *s = std::move(out);
  return Status::Ok();
}

std::string UrlEncodeField(bool url, std::string_view s) { return url ? UriEncode(s, false) : std::string(s); }

XmlWriter Begin(std::string_view root) {
  XmlWriter w;
  w.Open(root, {{"xmlns", std::string(kS3XmlNamespace)}});
  return w;
}

}  // namespace

// ---- ListObjectsV2 ----

std::string EncodeListObjectsV2(const ListObjectsV2Result& r) {
  bool url = r.encoding_type == "url";
  XmlWriter w = Begin("ListBucketResult");
  w.Element("Name", r.bucket);
  w.Element("Prefix", UrlEncodeField(url, r.prefix));
  if (!r.delimiter.empty()) w.Element("Delimiter", UrlEncodeField(url, r.delimiter));
  w.Element("MaxKeys", std::to_string(r.max_keys));
  w.Element("KeyCount", std::to_string(r.contents.size() + r.common_prefixes.size()));
  w.Element("IsTruncated", r.is_truncated ? "true" : "false");
  if (!r.encoding_type.empty()) w.Element("EncodingType", r.encoding_type);
  if (r.continuation_token) w.Element("ContinuationToken", *r.continuation_token);
  if (!r.next_continuation_token.empty()) w.Element("NextContinuationToken", r.next_continuation_token);
  if (!r.start_after.empty()) w.Element("StartAfter", UrlEncodeField(url, r.start_after));
  for (const auto& o : r.contents) {
    w.Open("Contents");
    w.Element("Key", UrlEncodeField(url, o.key));
    w.Element("LastModified", FormatIso8601(o.last_modified));
    w.Element("ETag", o.etag);
    w.Element("Size", std::to_string(o.size));
    w.Element("StorageClass", o.storage_class.empty() ? "STANDARD" : o.storage_class);
    w.Close();
  }
  for (const auto& p : r.common_prefixes) {
    w.Open("CommonPrefixes").Element("Prefix", UrlEncodeField(url, p)).Close();
  }
  return w.Finish();
}

Result<ListObjectsV2Result> DecodeListObjectsV2(std::string_view xml) {
  STRATA_ASSIGN_OR_RETURN(XmlElement root, ParseRoot(xml, "ListBucketResult"));
  ListObjectsV2Result r;
  r.bucket = root.ChildText("Name");
  r.prefix = root.ChildText("Prefix");
  r.delimiter = root.ChildText("Delimiter");
  r.start_after = root.ChildText("StartAfter");
  if (root.Child("ContinuationToken")) r.continuation_token = root.ChildText("ContinuationToken");
  r.next_continuation_token = root.ChildText("NextContinuationToken");
  r.encoding_type = root.ChildText("EncodingType");
  bool url = r.encoding_type == "url";
  STRATA_RETURN_IF_ERROR(ParseNumber(root, "MaxKeys", &r.max_keys));
  STRATA_RETURN_IF_ERROR(ParseNumber(root, "KeyCount", &r.key_count));
  STRATA_RETURN_IF_ERROR(ParseBool(root, "IsTruncated", &r.is_truncated));
  STRATA_RETURN_IF_ERROR(UrlDecodeField(url, &r.prefix));
  STRATA_RETURN_IF_ERROR(UrlDecodeField(url, &r.delimiter));
  STRATA_RETURN_IF_ERROR(UrlDecodeField(url, &r.start_after));
  for (const XmlElement* c : root.Children("Contents")) {
    S3ObjectEntry o;
    const XmlElement* key = c->Child("Key");
    if (key == nullptr) return Malformed("<Contents> without <Key>");
    o.key = key->text;
    STRATA_RETURN_IF_ERROR(UrlDecodeField(url, &o.key));
    o.etag = c->ChildText("ETag");
    o.storage_class = c->ChildText("StorageClass");
    STRATA_RETURN_IF_ERROR(ParseNumber(*c, "Size", &o.size));
    STRATA_RETURN_IF_ERROR(ParseTime(*c, "LastModified", &o.last_modified));
    r.contents.push_back(std::move(o));
  }
  for (const XmlElement* c : root.Children("CommonPrefixes")) {
    std::string p = c->ChildText("Prefix");
    STRATA_RETURN_IF_ERROR(UrlDecodeField(url, &p));
    r.common_prefixes.push_back(std::move(p));
  }
  return r;
}

// ---- ListAllMyBucketsResult ----

std::string EncodeListAllMyBuckets(const ListAllMyBucketsResult& r) {
  XmlWriter w = Begin("ListAllMyBucketsResult");
  w.Open("Owner").Element("ID", r.owner_id).Element("DisplayName", r.owner_display_name).Close();
  w.Open("Buckets");
  for (const auto& b : r.buckets) {
    w.Open("Bucket").Element("Name", b.name).Element("CreationDate", FormatIso8601(b.creation_date)).Close();
  }
  w.Close();
  return w.Finish();
}

Result<ListAllMyBucketsResult> DecodeListAllMyBuckets(std::string_view xml) {
  STRATA_ASSIGN_OR_RETURN(XmlElement root, ParseRoot(xml, "ListAllMyBucketsResult"));
  ListAllMyBucketsResult r;
  if (const XmlElement* owner = root.Child("Owner")) {
    r.owner_id = owner->ChildText("ID");
    r.owner_display_name = owner->ChildText("DisplayName");
  }
  if (const XmlElement* buckets = root.Child("Buckets")) {
    for (const XmlElement* b : buckets->Children("Bucket")) {
      S3Bucket bucket;
      bucket.name = b->ChildText("Name");
      if (bucket.name.empty()) return Malformed("<Bucket> without <Name>");
      STRATA_RETURN_IF_ERROR(ParseTime(*b, "CreationDate", &bucket.creation_date));
      r.buckets.push_back(std::move(bucket));
    }
  }
  return r;
}

// ---- Error ----

std::string EncodeS3Error(const S3ErrorBody& e) {
  XmlWriter w;
  w.Open("Error").Element("Code", e.code).Element("Message", e.message);
  if (!e.resource.empty()) w.Element("Resource", e.resource);
  if (!e.request_id.empty()) w.Element("RequestId", e.request_id);
  return w.Finish();
}

Result<S3ErrorBody> DecodeS3Error(std::string_view xml) {
  STRATA_ASSIGN_OR_RETURN(XmlElement root, ParseRoot(xml, "Error"));
  S3ErrorBody e;
  e.code = root.ChildText("Code");
  e.message = root.ChildText("Message");
  e.resource = root.ChildText("Resource");
  e.request_id = root.ChildText("RequestId");
  if (e.code.empty()) return Malformed("<Error> without <Code>");
  return e;
}

// ---- Multipart ----

std::string EncodeInitiateMultipartUpload(const InitiateMultipartUploadResult& r) {
  XmlWriter w = Begin("InitiateMultipartUploadResult");
  w.Element("Bucket", r.bucket).Element("Key", r.key).Element("UploadId", r.upload_id);
  return w.Finish();
}

Result<InitiateMultipartUploadResult> DecodeInitiateMultipartUpload(std::string_view xml) {
  STRATA_ASSIGN_OR_RETURN(XmlElement root, ParseRoot(xml, "InitiateMultipartUploadResult"));
  InitiateMultipartUploadResult r;
  r.bucket = root.ChildText("Bucket");
  r.key = root.ChildText("Key");
  r.upload_id = root.ChildText("UploadId");
  if (r.upload_id.empty()) return Malformed("<InitiateMultipartUploadResult> without <UploadId>");
  return r;
}

namespace {
constexpr std::string_view kChecksumAlgorithms[] = {"CRC32", "CRC32C", "CRC64NVME", "SHA1", "SHA256"};

void WriteChecksum(XmlWriter& w, const S3XmlChecksum& c) {
  if (!c.algorithm.empty()) w.Element("Checksum" + c.algorithm, c.value);
}

S3XmlChecksum ReadChecksum(const XmlElement& e) {
  for (std::string_view a : kChecksumAlgorithms) {
    if (const XmlElement* c = e.Child("Checksum" + std::string(a))) return {std::string(a), c->text};
  }
  return {};
}
}  // namespace

std::string EncodeCompleteMultipartUpload(const std::vector<S3CompletedPart>& parts) {
  XmlWriter w = Begin("CompleteMultipartUpload");
  for (const auto& p : parts) {
    w.Open("Part").Element("PartNumber", std::to_string(p.part_number)).Element("ETag", p.etag);
    WriteChecksum(w, p.checksum);
    w.Close();
  }
  return w.Finish();
}

Result<std::vector<S3CompletedPart>> DecodeCompleteMultipartUpload(std::string_view xml) {
  STRATA_ASSIGN_OR_RETURN(XmlElement root, ParseRoot(xml, "CompleteMultipartUpload"));
  std::vector<S3CompletedPart> parts;
  for (const XmlElement* p : root.Children("Part")) {
    S3CompletedPart part;
    STRATA_RETURN_IF_ERROR(ParseNumber(*p, "PartNumber", &part.part_number, /*required=*/true));
    if (part.part_number < 1 || part.part_number > 10000) return Malformed("PartNumber must be 1..10000");
    part.etag = p->ChildText("ETag");
    part.checksum = ReadChecksum(*p);
    parts.push_back(std::move(part));
  }
  return parts;
}

std::string EncodeCompleteMultipartUploadResult(const CompleteMultipartUploadResult& r) {
  XmlWriter w = Begin("CompleteMultipartUploadResult");
  w.Element("Location", r.location).Element("Bucket", r.bucket).Element("Key", r.key).Element("ETag", r.etag);
  WriteChecksum(w, r.checksum);
  if (!r.checksum_type.empty()) w.Element("ChecksumType", r.checksum_type);
  return w.Finish();
}

Result<CompleteMultipartUploadResult> DecodeCompleteMultipartUploadResult(std::string_view xml) {
  STRATA_ASSIGN_OR_RETURN(XmlElement root, ParseRoot(xml, "CompleteMultipartUploadResult"));
  CompleteMultipartUploadResult r;
  r.location = root.ChildText("Location");
  r.bucket = root.ChildText("Bucket");
  r.key = root.ChildText("Key");
  r.etag = root.ChildText("ETag");  // may be empty: Ceph RGW answers <ETag></ETag>
  r.checksum = ReadChecksum(root);
  r.checksum_type = root.ChildText("ChecksumType");
  return r;
}

std::string EncodeListParts(const ListPartsResult& r) {
  XmlWriter w = Begin("ListPartsResult");
  w.Element("Bucket", r.bucket).Element("Key", r.key).Element("UploadId", r.upload_id);
  w.Element("PartNumberMarker", std::to_string(r.part_number_marker));
  w.Element("NextPartNumberMarker", std::to_string(r.next_part_number_marker));
  w.Element("MaxParts", std::to_string(r.max_parts));
  w.Element("IsTruncated", r.is_truncated ? "true" : "false");
  for (const auto& p : r.parts) {
    w.Open("Part");
    w.Element("PartNumber", std::to_string(p.part_number));
    w.Element("LastModified", FormatIso8601(p.last_modified));
    w.Element("ETag", p.etag);
    w.Element("Size", std::to_string(p.size));
    WriteChecksum(w, p.checksum);
    w.Close();
  }
  return w.Finish();
}

Result<ListPartsResult> DecodeListParts(std::string_view xml) {
  STRATA_ASSIGN_OR_RETURN(XmlElement root, ParseRoot(xml, "ListPartsResult"));
  ListPartsResult r;
  r.bucket = root.ChildText("Bucket");
  r.key = root.ChildText("Key");
  r.upload_id = root.ChildText("UploadId");
  STRATA_RETURN_IF_ERROR(ParseNumber(root, "PartNumberMarker", &r.part_number_marker));
  STRATA_RETURN_IF_ERROR(ParseNumber(root, "NextPartNumberMarker", &r.next_part_number_marker));
  STRATA_RETURN_IF_ERROR(ParseNumber(root, "MaxParts", &r.max_parts));
  STRATA_RETURN_IF_ERROR(ParseBool(root, "IsTruncated", &r.is_truncated));
  for (const XmlElement* p : root.Children("Part")) {
    S3PartEntry part;
    STRATA_RETURN_IF_ERROR(ParseNumber(*p, "PartNumber", &part.part_number, /*required=*/true));
    STRATA_RETURN_IF_ERROR(ParseNumber(*p, "Size", &part.size));
    STRATA_RETURN_IF_ERROR(ParseTime(*p, "LastModified", &part.last_modified));
    part.etag = p->ChildText("ETag");
    part.checksum = ReadChecksum(*p);
    r.parts.push_back(std::move(part));
  }
  return r;
}

// ---- ListMultipartUploads ----

Result<ListMultipartUploadsResult> DecodeListMultipartUploads(std::string_view xml) {
  STRATA_ASSIGN_OR_RETURN(XmlElement root, ParseRoot(xml, "ListMultipartUploadsResult"));
  ListMultipartUploadsResult r;
  STRATA_RETURN_IF_ERROR(ParseBool(root, "IsTruncated", &r.is_truncated));
  r.next_key_marker = root.ChildText("NextKeyMarker");
  r.next_upload_id_marker = root.ChildText("NextUploadIdMarker");
  for (const XmlElement* u : root.Children("Upload")) {
    S3UploadEntry entry;
    entry.key = u->ChildText("Key");
    entry.upload_id = u->ChildText("UploadId");
    if (entry.key.empty() || entry.upload_id.empty()) return Malformed("<Upload> without a <Key> or <UploadId>");
    STRATA_RETURN_IF_ERROR(ParseTime(*u, "Initiated", &entry.initiated));
    r.uploads.push_back(std::move(entry));
  }
  return r;
}

// ---- DeleteObjects ----

std::string EncodeDeleteRequest(const DeleteRequest& req) {
  XmlWriter w = Begin("Delete");
  if (req.quiet) w.Element("Quiet", "true");
  for (size_t i = 0; i < req.keys.size(); ++i) {
    w.Open("Object").Element("Key", req.keys[i]);
    if (i < req.version_ids.size() && !req.version_ids[i].empty()) w.Element("VersionId", req.version_ids[i]);
    w.Close();
  }
  return w.Finish();
}

Result<DeleteRequest> DecodeDeleteRequest(std::string_view xml) {
  STRATA_ASSIGN_OR_RETURN(XmlElement root, ParseRoot(xml, "Delete"));
  DeleteRequest req;
  STRATA_RETURN_IF_ERROR(ParseBool(root, "Quiet", &req.quiet));
  for (const XmlElement* o : root.Children("Object")) {
    const XmlElement* key = o->Child("Key");
    if (key == nullptr || key->text.empty()) return Malformed("<Object> without a <Key>");
    if (req.keys.size() == 1000) return Malformed("DeleteObjects accepts at most 1000 keys");
    req.keys.push_back(key->text);
    req.version_ids.push_back(o->ChildText("VersionId"));
  }
  return req;
}

std::string EncodeDeleteResult(const DeleteResult& r) {
  XmlWriter w = Begin("DeleteResult");
  for (size_t i = 0; i < r.deleted.size(); ++i) {
    w.Open("Deleted").Element("Key", r.deleted[i]);
    if (i < r.deleted_version_ids.size() && !r.deleted_version_ids[i].empty()) {
      w.Element("VersionId", r.deleted_version_ids[i]);
    }
    w.Close();
  }
  for (const auto& e : r.errors) {
    w.Open("Error").Element("Key", e.key);
    if (!e.version_id.empty()) w.Element("VersionId", e.version_id);
    w.Element("Code", e.code).Element("Message", e.message).Close();
  }
  return w.Finish();
}

Result<DeleteResult> DecodeDeleteResult(std::string_view xml) {
  STRATA_ASSIGN_OR_RETURN(XmlElement root, ParseRoot(xml, "DeleteResult"));
  DeleteResult r;
  for (const XmlElement* d : root.Children("Deleted")) {
    r.deleted.push_back(d->ChildText("Key"));
    r.deleted_version_ids.push_back(d->ChildText("VersionId"));
  }
  for (const XmlElement* e : root.Children("Error")) {
    r.errors.push_back({e->ChildText("Key"), e->ChildText("Code"), e->ChildText("Message"), e->ChildText("VersionId")});
  }
  return r;
}

// ---- CopyObject ----

std::string EncodeCopyObjectResult(const CopyObjectResult& r) {
  XmlWriter w = Begin("CopyObjectResult");
  w.Element("LastModified", FormatIso8601(r.last_modified)).Element("ETag", r.etag);
  return w.Finish();
}

Result<CopyObjectResult> DecodeCopyObjectResult(std::string_view xml) {
  STRATA_ASSIGN_OR_RETURN(XmlElement root, ParseRoot(xml, "CopyObjectResult"));
  CopyObjectResult r;
  r.etag = root.ChildText("ETag");
  STRATA_RETURN_IF_ERROR(ParseTime(root, "LastModified", &r.last_modified));
  return r;
}

}  // namespace strata::net

// S3 XML bodies: the gateway encodes what the client decodes, with one
// implementation of each. Plain structs (no object/ types: net/ is below it).
// Decoders accept namespaced or un-namespaced documents and return
// InvalidArgument (foreign code "MalformedXML") on malformed input. Thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/clock.h"
#include "base/status.h"

namespace strata::net {

inline constexpr std::string_view kS3XmlNamespace = "http://s3.amazonaws.com/doc/2006-03-01/";

struct S3ObjectEntry {
  std::string key;
  uint64_t size = 0;
  std::string etag;  // as on the wire, usually with quotes
  WallTime last_modified{};
  std::string storage_class;  // empty: omitted (encoder writes STANDARD)
};

// ListObjectsV2 (ListBucketResult). With encoding_type "url", Key, Prefix,
// Delimiter, StartAfter and CommonPrefixes are URL-encoded on the wire; the
// struct always holds them decoded.
struct ListObjectsV2Result {
  std::string bucket;
  std::string prefix;
  std::string delimiter;
  std::string start_after;
  std::optional<std::string> continuation_token;  // the request's, echoed when it had one (empty or not)
  std::string next_continuation_token;
  std::string encoding_type;  // "" or "url"
  int max_keys = 1000;
  int key_count = 0;  // encoder writes contents+common_prefixes count
  bool is_truncated = false;
  std::vector<S3ObjectEntry> contents;
  std::vector<std::string> common_prefixes;
};
std::string EncodeListObjectsV2(const ListObjectsV2Result& result);
Result<ListObjectsV2Result> DecodeListObjectsV2(std::string_view xml);

struct S3Bucket {
  std::string name;
  WallTime creation_date{};
};
struct ListAllMyBucketsResult {
  std::string owner_id;
  std::string owner_display_name;
  std::vector<S3Bucket> buckets;
};
std::string EncodeListAllMyBuckets(const ListAllMyBucketsResult& result);
Result<ListAllMyBucketsResult> DecodeListAllMyBuckets(std::string_view xml);

struct S3ErrorBody {
  std::string code;
  std::string message;
  std::string resource;
  std::string request_id;
};
std::string EncodeS3Error(const S3ErrorBody& error);
Result<S3ErrorBody> DecodeS3Error(std::string_view xml);

struct InitiateMultipartUploadResult {
  std::string bucket;
  std::string key;
  std::string upload_id;
};
std::string EncodeInitiateMultipartUpload(const InitiateMultipartUploadResult& result);
Result<InitiateMultipartUploadResult> DecodeInitiateMultipartUpload(std::string_view xml);

// A checksum in S3's XML is one element named "Checksum" + algorithm
// ("ChecksumCRC32", ..., "ChecksumSHA256"); both fields empty: none.
struct S3XmlChecksum {
  std::string algorithm;  // "CRC32", "CRC32C", "CRC64NVME", "SHA1", "SHA256"
  std::string value;      // base64
};

struct S3CompletedPart {
  int part_number = 0;
  std::string etag;
  S3XmlChecksum checksum;
};
// CompleteMultipartUpload request body. Decode checks 1 <= PartNumber <= 10000.
std::string EncodeCompleteMultipartUpload(const std::vector<S3CompletedPart>& parts);
Result<std::vector<S3CompletedPart>> DecodeCompleteMultipartUpload(std::string_view xml);

struct CompleteMultipartUploadResult {
  std::string location;
  std::string bucket;
  std::string key;
  std::string etag;
  S3XmlChecksum checksum;
  std::string checksum_type;  // "COMPOSITE" / "FULL_OBJECT" when there is a checksum
};
std::string EncodeCompleteMultipartUploadResult(const CompleteMultipartUploadResult& result);
Result<CompleteMultipartUploadResult> DecodeCompleteMultipartUploadResult(std::string_view xml);

struct S3PartEntry {
  int part_number = 0;
  std::string etag;
  uint64_t size = 0;
  WallTime last_modified{};
  S3XmlChecksum checksum;
};
struct ListPartsResult {
  std::string bucket;
  std::string key;
  std::string upload_id;
  int part_number_marker = 0;
  int next_part_number_marker = 0;
  int max_parts = 1000;
  bool is_truncated = false;
  std::vector<S3PartEntry> parts;
};
std::string EncodeListParts(const ListPartsResult& result);
Result<ListPartsResult> DecodeListParts(std::string_view xml);

// ListMultipartUploads answer (the parts a client of it reads).
struct S3UploadEntry {
  std::string key;
  std::string upload_id;
  WallTime initiated{};
};
struct ListMultipartUploadsResult {
  bool is_truncated = false;
  std::string next_key_marker;
  std::string next_upload_id_marker;
  std::vector<S3UploadEntry> uploads;
};
Result<ListMultipartUploadsResult> DecodeListMultipartUploads(std::string_view xml);

// DeleteObjects request body.
struct DeleteRequest {
  bool quiet = false;
  std::vector<std::string> keys;
  std::vector<std::string> version_ids;  // decoded: parallel to keys, "" where none was given
};
std::string EncodeDeleteRequest(const DeleteRequest& request);
// Rejects more than 1000 keys (S3's limit) and empty keys.
Result<DeleteRequest> DecodeDeleteRequest(std::string_view xml);

struct DeleteError {
  std::string key;
  std::string code;
  std::string message;
  std::string version_id;  // "" when the request named none
};
struct DeleteResult {
  std::vector<std::string> deleted;
  std::vector<DeleteError> errors;
  std::vector<std::string> deleted_version_ids;  // parallel to deleted when not empty; "" where none
};
std::string EncodeDeleteResult(const DeleteResult& result);
Result<DeleteResult> DecodeDeleteResult(std::string_view xml);

struct CopyObjectResult {
  std::string etag;
  WallTime last_modified{};
};
std::string EncodeCopyObjectResult(const CopyObjectResult& result);
Result<CopyObjectResult> DecodeCopyObjectResult(std::string_view xml);

}  // namespace strata::net

// ObjectMetadata: what an object carries besides its bytes: the standard
// headers S3 keeps (Content-Type and friends) and user metadata
// (x-amz-meta-*). POSIX attributes of mounted files live in `user` under the
// names s3fs uses ("mode", "uid", "gid", "mtime"), so buckets move between
// tools intact. Plain values; the codec below is for stores that keep it as
// one blob (file:// in an xattr, multipart upload state).
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace strata::object {

struct ObjectMetadata {
  std::string content_type;  // empty: none stored (the gateway answers binary/octet-stream)
  std::string content_encoding;
  std::string content_language;
  std::string content_disposition;
  std::string cache_control;
  std::string expires;  // kept verbatim, as S3 does
  // x-amz-meta-<name>: lower-case name without the prefix -> value.
  std::map<std::string, std::string> user;
  // The object's S3 checksum (x-amz-checksum-*), all empty when none:
  // algorithm as S3 spells it ("CRC32", "CRC32C", "CRC64NVME", "SHA1",
  // "SHA256"), type ("FULL_OBJECT" or "COMPOSITE") and the value as S3 prints
  // it (base64; a composite one ends in "-<parts>"). A multipart upload's
  // record names the algorithm and type; the value is set at Complete.
  std::string checksum_algorithm;
  std::string checksum_type;
  std::string checksum;

  bool empty() const;
  bool operator==(const ObjectMetadata&) const = default;
};

// S3's limit on user metadata: the sum of the names' and values' bytes.
inline constexpr size_t kMaxUserMetadataBytes = 2048;

// Bytes of user metadata as S3 counts them.
size_t UserMetadataBytes(const ObjectMetadata& m);

// InvalidArgument when user metadata exceeds kMaxUserMetadataBytes (the
// message names MetadataTooLarge), a user name is empty, not lower-case or
// not an HTTP token, any value holds CR, LF or NUL (they could not be
// sent as a header), or the checksum names an unknown algorithm or type.
Status ValidateMetadata(const ObjectMetadata& m);

// A compact, versioned binary form (little-endian lengths). Version 1 has
// no checksum; Encode writes it when there is none (so older readers keep
// reading those records) and version 2 otherwise. Decode reads both and is
// bounds-checked: any malformed input is Corruption, never a crash.
std::string EncodeMetadata(const ObjectMetadata& m);
Result<ObjectMetadata> DecodeMetadata(std::string_view encoded);

// The largest encoding Decode accepts (every field bounded).
inline constexpr size_t kMaxEncodedMetadataBytes = 64 * 1024;

// A multipart object's part sizes (ObjectInfo::part_sizes), as file:// keeps
// them in an xattr beside the metadata record: version byte, run count, then
// runs of equal sizes (fixed64 size, fixed32 count). Runs keep it small (an
// upload's parts are equal but the last), so it fits ext4's xattr space.
// Encode answers "" for an empty list or more than kMaxPartRuns runs (the
// sizes are then not kept; ?partNumber= falls back to the whole object).
// Decode is bounds-checked: at most kMaxPartRuns runs and kMaxRecordedParts parts,
// every run non-empty; anything else is Corruption.
inline constexpr size_t kMaxRecordedParts = 10000;
inline constexpr size_t kMaxPartRuns = 256;
std::string EncodePartSizes(const std::vector<uint64_t>& sizes);
Result<std::vector<uint64_t>> DecodePartSizes(std::string_view encoded);

}  // namespace strata::object

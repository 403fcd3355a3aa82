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

#include "base/status.h"

namespace strata {

struct ObjectMetadata {
  std::string content_type;  // empty: none stored (the gateway answers binary/octet-stream)
  std::string content_encoding;
  std::string content_language;
  std::string content_disposition;
  std::string cache_control;
  std::string expires;  // kept verbatim, as S3 does
  // x-amz-meta-<name>: lower-case name without the prefix -> value.
  std::map<std::string, std::string> user;

  bool empty() const;
  bool operator==(const ObjectMetadata&) const = default;
};

// S3's limit on user metadata: the sum of the names' and values' bytes.
inline constexpr size_t kMaxUserMetadataBytes = 2048;

// Bytes of user metadata as S3 counts them.
size_t UserMetadataBytes(const ObjectMetadata& m);

// InvalidArgument when user metadata exceeds kMaxUserMetadataBytes (the
// message names MetadataTooLarge), a user name is empty, not lower-case or
// not an HTTP token, or any value holds CR, LF or NUL (they could not be
// sent as a header).
Status ValidateMetadata(const ObjectMetadata& m);

// A compact, versioned binary form (little-endian lengths). Decode is
// bounds-checked: any malformed input is Corruption, never a crash.
std::string EncodeMetadata(const ObjectMetadata& m);
Result<ObjectMetadata> DecodeMetadata(std::string_view encoded);

// The largest encoding Decode accepts (every field bounded).
inline constexpr size_t kMaxEncodedMetadataBytes = 64 * 1024;

}  // namespace strata

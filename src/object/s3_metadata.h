// ObjectMetadata <-> S3 request/response headers, for the s3:// store.
// The object's checksum goes to the upstream as x-amz-checksum-* (so an S3
// that keeps checksums verifies and keeps it) and, because some upstreams
// ignore those headers (Ceph RGW 16.2), also as the reserved user metadata
// x-amz-meta-strata-checksum ("<ALGORITHM> <TYPE> <base64>"). Reading back,
// the upstream's own x-amz-checksum-* wins; the reserved entry is the
// fallback and is never shown as user metadata. Internal to object/.
#pragma once

#include <string_view>

#include "net/http.h"
#include "object/metadata.h"

namespace strata::object {

// The reserved user-metadata name (without x-amz-meta-) that carries the checksum.
inline constexpr std::string_view kS3ChecksumMetaName = "strata-checksum";

// Request headers for `m` (PUT, CreateMultipartUpload, CopyObject REPLACE):
// the standard headers, x-amz-meta-* and, when m.checksum is set, the
// reserved checksum entry. A client's own user entry of the reserved name is
// dropped (it could otherwise forge a checksum).
void AddS3MetadataHeaders(net::HttpHeaders& h, const ObjectMetadata& m);

// x-amz-checksum-<algorithm> (+ x-amz-checksum-type) of a checksum value, for
// an upstream that verifies it (PUT, UploadPart, Complete). Nothing when
// `algorithm` is unknown or `value` empty.
void AddS3ChecksumHeaders(net::HttpHeaders& h, std::string_view algorithm, std::string_view type,
                          std::string_view value);

// The metadata a HEAD/GET answer carries (see above for the checksum). The
// server always names a Content-Type (its default when none was stored); it
// is kept as sent.
ObjectMetadata S3MetadataFromHeaders(const net::HttpHeaders& headers);

}  // namespace strata::object

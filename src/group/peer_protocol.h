// The cache group's peer protocol: what one member asks another, and how the
// request is authenticated. Beast-free and pure, so it is unit-tested and
// fuzzable on its own.
//
//   GET /strata/peer/v1/block?bs=<block size>&etag=<etag>&index=<n>&key=<key>&size=<object size>&store=<url>
//   x-strata-peer-time: <unix seconds>
//   x-strata-peer-auth: hex(HMAC-SHA256(secret, "GET\n" + target + "\n" + time))
//
// 200 carries the block and x-strata-block-xxh3 (16 hex digits of XxHash3 of
// the body), which the reader checks before using a byte. The MAC covers the
// whole target, so nothing in the request can be changed, and the time bounds
// replays to the allowed skew; the secret never crosses the wire. Errors: 403
// bad or stale signature, 400 malformed, 404 unknown store, 412 the object
// changed, 503 the owner's backend failed.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/clock.h"
#include "base/status.h"

namespace strata::group {

inline constexpr std::string_view kPeerBlockPath = "/strata/peer/v1/block";
// GET, signed the same way: a small JSON summary of the member (its caches'
// blocks and bytes, blocks served, its own peer hits/misses) for
// `strata cache group`; the checksum header covers it too.
inline constexpr std::string_view kPeerStatusPath = "/strata/peer/v1/status";
inline constexpr std::string_view kPeerTimeHeader = "x-strata-peer-time";
inline constexpr std::string_view kPeerAuthHeader = "x-strata-peer-auth";
inline constexpr std::string_view kBlockChecksumHeader = "x-strata-block-xxh3";
inline constexpr std::chrono::seconds kDefaultMaxSkew{60};

struct BlockRequest {
  std::string store;  // the backend's URL (cache::BlockId::store)
  std::string key;
  std::string etag;
  uint64_t block_size = 0;
  uint64_t index = 0;
  uint64_t object_size = 0;
};

std::string FormatBlockTarget(const BlockRequest& r);
// InvalidArgument for anything but a well-formed target with every field in bounds.
Result<BlockRequest> ParseBlockTarget(std::string_view target);

std::string SignPeerRequest(std::string_view secret, std::string_view method, std::string_view target,
                            int64_t unix_seconds);
// PermissionDenied for a missing, malformed, stale (beyond max_skew either
// way) or wrong signature. Compares in constant time.
Status VerifyPeerRequest(std::string_view secret, std::string_view method, std::string_view target,
                         std::string_view time_header, std::string_view auth_header, WallTime now,
                         std::chrono::seconds max_skew = kDefaultMaxSkew);

std::string FormatChecksum(uint64_t xxh3);
bool ParseChecksum(std::string_view s, uint64_t* out);

}  // namespace strata::group

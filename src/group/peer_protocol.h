// The cache group's peer protocol: what one member asks another, and how the
// request and the answer are authenticated. Beast-free and pure, so it is
// unit-tested and fuzzable on its own.
//
//   GET /strata/peer/v1/block?bs=<block size>&etag=<etag>&index=<n>&key=<key>&size=<object size>&store=<url>
//   x-strata-peer-time: <unix seconds>
//   x-strata-peer-auth: hex(HMAC-SHA256(secret, "GET\n" + target + "\n" + time))
//
// The request MAC covers the whole target, so nothing in the request can be
// changed, and the time bounds replays to the allowed skew; the secret never
// crosses the wire. A 200 carries the block and is authenticated too:
//
//   x-strata-peer-nonce:  32 hex digits, fresh random bytes of the answering member
//   x-strata-peer-answer: hex(GMAC(K, "strata peer answer v1\n" + target + "\n" + length + "\n" + body))
//   K = HMAC-SHA256(secret, "strata peer answer v1\n" + request MAC + "\n" + nonce)
//
// so an answer is bound to the request it answers (its MAC, which covers the
// block id and the time), to the block id and to every byte of the body: a
// stranger, or anyone on the path, cannot make a reader accept other bytes
// (an unkeyed checksum would let them send any bytes with a matching one).
// K is used once (the nonce is fresh), which GMAC's fixed nonce requires; it
// runs at several GB/s where a SHA-256 of the body would cost 4x more.
// Errors: 403 bad or stale signature (the body never says which, nor
// this member's clock), 400 malformed, 404 unknown store, 412 the object
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
// `strata cache group`, its answer authenticated as a block's is.
inline constexpr std::string_view kPeerStatusPath = "/strata/peer/v1/status";
inline constexpr std::string_view kPeerTimeHeader = "x-strata-peer-time";
inline constexpr std::string_view kPeerAuthHeader = "x-strata-peer-auth";
inline constexpr std::string_view kPeerNonceHeader = "x-strata-peer-nonce";
inline constexpr std::string_view kPeerAnswerHeader = "x-strata-peer-answer";
inline constexpr std::chrono::seconds kDefaultMaxSkew{60};
// The group secret is an HMAC-SHA256 key: anyone who sees one signed request
// can test guesses of it offline, as fast as they can compute HMACs, so it
// must be as hard to guess as the hash is wide (32 random bytes; 44 characters
// of `head -c 32 /dev/urandom | base64`). Shorter secrets are refused.
inline constexpr size_t kMinSecretBytes = 32;

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
// way) or wrong signature; its message is the same for each (what a stranger
// may be told), its cause says which (for this member's own log, never the
// MAC). Compares in constant time.
Status VerifyPeerRequest(std::string_view secret, std::string_view method, std::string_view target,
                         std::string_view time_header, std::string_view auth_header, WallTime now,
                         std::chrono::seconds max_skew = kDefaultMaxSkew);

struct AnswerSeal {
  std::string nonce;  // x-strata-peer-nonce
  std::string mac;    // x-strata-peer-answer
};
// Authenticates `body` as the answer to the request signed `request_mac` for
// `target`. Internal only when the system has no randomness.
Result<AnswerSeal> SealPeerAnswer(std::string_view secret, std::string_view request_mac, std::string_view target,
                                  std::string_view body);
// Corruption unless `nonce` and `mac` authenticate exactly `body` as the
// answer to that request. Compares in constant time.
Status VerifyPeerAnswer(std::string_view secret, std::string_view request_mac, std::string_view target,
                        std::string_view nonce, std::string_view mac, std::string_view body);

}  // namespace strata::group

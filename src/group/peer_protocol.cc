#include "group/peer_protocol.h"

#include <charconv>

#include "base/aead.h"
#include "base/constant_time.h"
#include "base/hash.h"
#include "cache/block_format.h"
#include "net/http.h"
#include "net/uri.h"

namespace strata::group {
namespace {

bool ParseU64(std::string_view s, uint64_t* out) {
  if (s.empty() || s.size() > 20) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && p == s.data() + s.size();
}

bool ParseI64(std::string_view s, int64_t* out) {
  if (s.empty() || s.size() > 20) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && p == s.data() + s.size();
}

}  // namespace

std::string FormatBlockTarget(const BlockRequest& r) {
  // Fields in sorted order, each encoded once: the MAC covers this exact string.
  return std::string(kPeerBlockPath) + "?bs=" + std::to_string(r.block_size) + "&etag=" + net::UriEncode(r.etag) +
         "&index=" + std::to_string(r.index) + "&key=" + net::UriEncode(r.key) +
         "&size=" + std::to_string(r.object_size) + "&store=" + net::UriEncode(r.store);
}

Result<BlockRequest> ParseBlockTarget(std::string_view target) {
  auto q = target.find('?');
  if (q == std::string_view::npos || target.substr(0, q) != kPeerBlockPath) {
    return InvalidArgumentError("not a peer block request");
  }
  STRATA_ASSIGN_OR_RETURN(auto params, net::ParseQueryString(target.substr(q + 1), /*plus_is_space=*/false));
  BlockRequest r;
  int seen = 0;
  for (const auto& [name, value] : params) {
    int bit = 0;
    bool ok = true;
    if (name == "bs") {
      bit = 1, ok = ParseU64(value, &r.block_size);
    } else if (name == "etag") {
      bit = 2, r.etag = value, ok = value.size() <= cache::kMaxEtagLength;
    } else if (name == "index") {
      bit = 4, ok = ParseU64(value, &r.index);
    } else if (name == "key") {
      bit = 8, r.key = value, ok = !value.empty() && value.size() <= cache::kMaxKeyLength;
    } else if (name == "size") {
      bit = 16, ok = ParseU64(value, &r.object_size);
    } else if (name == "store") {
      bit = 32, r.store = value, ok = !value.empty() && value.size() <= cache::kMaxStoreUrlLength;
    } else {
      return InvalidArgumentError("unknown peer request field \"" + name.substr(0, 64) + "\"");
    }
    if (!ok || (seen & bit)) return InvalidArgumentError("bad or repeated peer request field \"" + name + "\"");
    seen |= bit;
  }
  if (seen != 63) return InvalidArgumentError("peer request lacks a field");
  if (r.block_size == 0 || r.index >= r.object_size / r.block_size + (r.object_size % r.block_size != 0)) {
    return InvalidArgumentError("peer request names a block past the end of its object");
  }
  return r;
}

std::string SignPeerRequest(std::string_view secret, std::string_view method, std::string_view target,
                            int64_t unix_seconds) {
  std::string msg;
  msg.reserve(method.size() + target.size() + 24);
  msg.append(method).append("\n").append(target).append("\n").append(std::to_string(unix_seconds));
  return ToHex(HmacSha256(secret, msg));
}

Status VerifyPeerRequest(std::string_view secret, std::string_view method, std::string_view target,
                         std::string_view time_header, std::string_view auth_header, WallTime now,
                         std::chrono::seconds max_skew) {
  // One message for every reason: a stranger learns neither which check
  // failed nor how far this member's clock is from theirs.
  const auto refuse = [](std::string why) {
    return PermissionDeniedError(
        "peer request refused: signature missing, wrong, or outside the allowed clock skew (another group "
        "secret, or clocks not synchronised?)",
        std::move(why));
  };
  int64_t t = 0;
  if (!ParseI64(time_header, &t)) return refuse("no valid time");
  const int64_t now_s = std::chrono::duration_cast<std::chrono::seconds>(now.time_since_epoch()).count();
  if (t < now_s - max_skew.count() || t > now_s + max_skew.count()) {
    return refuse("time " + std::to_string(now_s - t) + " s off this clock");
  }
  const std::string want = SignPeerRequest(secret, method, target, t);
  if (!ConstantTimeEquals(want, auth_header)) return refuse("MAC does not match");
  return Status::Ok();
}

namespace {

constexpr std::string_view kAnswerContext = "strata peer answer v1\n";

// The answer's one-time GMAC key.
AesKey AnswerKey(std::string_view secret, std::string_view request_mac, std::string_view nonce) {
  std::string msg;
  msg.reserve(kAnswerContext.size() + request_mac.size() + nonce.size() + 1);
  msg.append(kAnswerContext).append(request_mac).append("\n").append(nonce);
  return HmacSha256(secret, msg);
}

Result<std::string> AnswerMac(std::string_view secret, std::string_view request_mac, std::string_view target,
                              std::string_view nonce, std::string_view body) {
  const std::string length = std::to_string(body.size());
  STRATA_ASSIGN_OR_RETURN(
      GcmTag tag, Gmac(AnswerKey(secret, request_mac, nonce), {kAnswerContext, target, "\n", length, "\n", body}));
  return ToHex(tag);
}

}  // namespace

Result<AnswerSeal> SealPeerAnswer(std::string_view secret, std::string_view request_mac, std::string_view target,
                                  std::string_view body) {
  uint8_t raw[16];
  STRATA_RETURN_IF_ERROR(RandomBytes(raw, sizeof raw));
  AnswerSeal seal;
  seal.nonce = ToHex(raw, sizeof raw);
  STRATA_ASSIGN_OR_RETURN(seal.mac, AnswerMac(secret, request_mac, target, seal.nonce, body));
  return seal;
}

Status VerifyPeerAnswer(std::string_view secret, std::string_view request_mac, std::string_view target,
                        std::string_view nonce, std::string_view mac, std::string_view body) {
  if (nonce.size() != 32 || mac.size() != 2 * kGcmTagBytes) {
    return CorruptionError("peer answer without a group MAC");
  }
  STRATA_ASSIGN_OR_RETURN(std::string want, AnswerMac(secret, request_mac, target, nonce, body));
  if (!ConstantTimeEquals(want, mac)) return CorruptionError("peer answer fails its group MAC");
  return Status::Ok();
}

}  // namespace strata::group

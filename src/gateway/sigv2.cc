#include "gateway/sigv2.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <algorithm>
#include <charconv>
#include <map>

#include "base/hash.h"
#include "net/http.h"
#include "net/uri.h"

namespace strata::gateway {
namespace {

// The subresources SigV2 signs (AWS's list), sorted.
constexpr std::string_view kSubresources[] = {"acl",
                                              "cors",
                                              "delete",
                                              "lifecycle",
                                              "location",
                                              "logging",
                                              "notification",
                                              "partNumber",
                                              "policy",
                                              "requestPayment",
                                              "response-cache-control",
                                              "response-content-disposition",
                                              "response-content-encoding",
                                              "response-content-language",
                                              "response-content-type",
                                              "response-expires",
                                              "restore",
                                              "tagging",
                                              "torrent",
                                              "uploadId",
                                              "uploads",
                                              "versionId",
                                              "versioning",
                                              "versions",
                                              "website"};

bool IsSubresource(std::string_view name) {
  return std::find(std::begin(kSubresources), std::end(kSubresources), name) != std::end(kSubresources);
}

Status Denied(std::string code, std::string message) {
  return UnauthenticatedError(std::move(message)).WithForeignCode(std::move(code));
}

std::string Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return std::string(s);
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

const std::string* QueryParam(const std::vector<std::pair<std::string, std::string>>& q, std::string_view name) {
  for (const auto& [k, v] : q)
    if (k == name) return &v;
  return nullptr;
}

Result<net::VerifiedRequest> Check(const net::HttpRequestParts& req, std::string_view access_key,
                                   std::string_view signature, std::string_view date, const net::SecretLookup& lookup) {
  auto secret = lookup(access_key);
  if (!secret) return Denied("InvalidAccessKeyId", "The AWS Access Key Id you provided does not exist in our records.");
  std::string expected = SigV2Signature(*secret, SigV2StringToSign(req, date));
  if (expected.size() != signature.size() || CRYPTO_memcmp(expected.data(), signature.data(), expected.size()) != 0) {
    return Denied("SignatureDoesNotMatch", "SigV2 signature does not match");
  }
  net::VerifiedRequest v;
  v.access_key_id = std::string(access_key);
  v.payload_sha256 = std::string(net::kUnsignedPayload);
  return v;
}

}  // namespace

std::string SigV2CanonicalResource(std::string_view raw_path, std::string_view raw_query) {
  std::string out(raw_path);
  auto q = net::ParseQueryString(raw_query, /*plus_is_space=*/false);
  if (!q.ok()) return out;
  std::vector<std::pair<std::string, std::string>> subs;
  for (const auto& [k, v] : *q) {
    if (IsSubresource(k)) subs.emplace_back(k, v);
  }
  std::stable_sort(subs.begin(), subs.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  char sep = '?';
  for (const auto& [k, v] : subs) {
    out += sep;
    out += k;
    // Valueless subresources ("?uploads", "?acl") are signed without '='.
    if (!v.empty()) out += "=" + v;
    sep = '&';
  }
  return out;
}

std::string SigV2StringToSign(const net::HttpRequestParts& req, std::string_view date) {
  auto header = [&](std::string_view name) {
    const std::string* v = net::FindHeader(req.headers, name);
    return v ? Trim(*v) : std::string();
  };
  std::map<std::string, std::string> amz;
  for (const auto& [name, value] : req.headers) {
    std::string n = Lower(name);
    if (!n.starts_with("x-amz-")) continue;
    auto [it, fresh] = amz.emplace(n, Trim(value));
    if (!fresh) it->second += "," + Trim(value);
  }
  std::string s =
      req.method + "\n" + header("content-md5") + "\n" + header("content-type") + "\n" + std::string(date) + "\n";
  for (const auto& [n, v] : amz) s += n + ":" + v + "\n";
  return s + SigV2CanonicalResource(req.path, req.query);
}

std::string SigV2Signature(std::string_view secret, std::string_view string_to_sign) {
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(EVP_sha1(), secret.data(), static_cast<int>(secret.size()),
       reinterpret_cast<const unsigned char*>(string_to_sign.data()), string_to_sign.size(), mac, &len);
  return Base64Encode(mac, len);
}

bool IsSigV2Request(const net::HttpRequestParts& req) {
  if (const std::string* a = net::FindHeader(req.headers, "authorization")) return a->starts_with("AWS ");
  return req.query.find("AWSAccessKeyId=") != std::string::npos &&
         req.query.find("X-Amz-Signature=") == std::string::npos;
}

Result<net::VerifiedRequest> VerifySigV2(const net::HttpRequestParts& req, const net::SecretLookup& lookup,
                                         WallTime now, Duration max_skew) {
  if (const std::string* authz = net::FindHeader(req.headers, "authorization")) {
    std::string_view cred = std::string_view(*authz).substr(4);
    size_t colon = cred.rfind(':');
    if (!authz->starts_with("AWS ") || colon == std::string_view::npos || colon == 0) {
      return Denied("AuthorizationHeaderMalformed", "malformed SigV2 Authorization header");
    }
    // With x-amz-date, the Date line is empty and x-amz-date is signed among the amz headers.
    const std::string* amz_date = net::FindHeader(req.headers, "x-amz-date");
    const std::string* date = amz_date ? amz_date : net::FindHeader(req.headers, "date");
    if (!date)
      return PermissionDeniedError("SigV2 request without a Date or x-amz-date").WithForeignCode("AccessDenied");
    auto t = net::ParseHttpDate(Trim(*date));
    if (!t.ok()) return PermissionDeniedError("unparseable request date " + *date).WithForeignCode("AccessDenied");
    if (*t > now + max_skew || *t < now - max_skew) {
      return Denied("RequestTimeTooSkewed",
                    "The difference between the request time and the current time is too large.");
    }
    return Check(req, Trim(cred.substr(0, colon)), cred.substr(colon + 1), amz_date ? "" : Trim(*date), lookup);
  }
  auto q = net::ParseQueryString(req.query, /*plus_is_space=*/false);
  if (!q.ok()) return Denied("AuthorizationQueryParametersError", "malformed query string");
  const std::string* ak = QueryParam(*q, "AWSAccessKeyId");
  const std::string* sig = QueryParam(*q, "Signature");
  const std::string* expires = QueryParam(*q, "Expires");
  if (!ak || !sig || !expires) {
    return Denied("AuthorizationQueryParametersError", "SigV2 query auth needs AWSAccessKeyId, Expires and Signature");
  }
  int64_t e = 0;
  auto [p, ec] = std::from_chars(expires->data(), expires->data() + expires->size(), e);
  if (ec != std::errc() || p != expires->data() + expires->size()) {
    return Denied("AuthorizationQueryParametersError", "Expires must be seconds since the epoch");
  }
  if (std::chrono::seconds(e) < std::chrono::duration_cast<std::chrono::seconds>(now.time_since_epoch())) {
    return PermissionDeniedError("Request has expired").WithForeignCode("AccessDenied");
  }
  return Check(req, *ak, *sig, *expires, lookup);
}

}  // namespace strata::gateway

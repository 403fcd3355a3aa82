#include "net/sigv4.h"

#include <algorithm>
#include <cctype>
#include <charconv>

#include "base/constant_time.h"
#include "base/hash.h"
#include "net/uri.h"

namespace strata::net {
namespace {

constexpr int64_t kMaxPresignSeconds = 7 * 24 * 3600;

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

// Trims and collapses runs of whitespace into one space, as SigV4 requires.
std::string CanonicalHeaderValue(std::string_view v) {
  std::string out;
  out.reserve(v.size());
  bool pending_space = false;
  for (char c : v) {
    if (IsSpace(c)) {
      pending_space = !out.empty();
      continue;
    }
    if (pending_space) out += ' ';
    pending_space = false;
    out += c;
  }
  return out;
}

bool IsLowerHex(std::string_view s, size_t n) {
  if (s.size() != n) return false;
  for (char c : s)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

Status AuthError(std::string_view s3_code, std::string message) {
  return UnauthenticatedError(std::move(message)).WithForeignCode(std::string(s3_code));
}

std::string JoinNames(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) {
    if (!out.empty()) out += ';';
    out += n;
  }
  return out;
}

std::string HexSha256(std::string_view s) { return ToHex(Sha256(s)); }

bool ValidPayloadHash(std::string_view h) {
  return IsLowerHex(h, 64) || h == kUnsignedPayload || h == kStreamingPayload || h == kStreamingPayloadTrailer ||
         h == kStreamingUnsignedTrailer;
}

// The part of the signature computation shared by header and query forms.
struct SigningInput {
  std::string access_key_id;
  std::string date8, region, service;
  std::string amz_date;
  std::vector<std::string> signed_names;
  std::string signature;  // claimed
};

Result<SigningInput> ParseCredential(std::string_view credential, std::string_view s3_code) {
  // AKID/20130524/us-east-1/s3/aws4_request; the key id itself may not contain '/'.
  std::vector<std::string_view> parts;
  size_t pos = 0;
  while (parts.size() < 6) {
    size_t slash = credential.find('/', pos);
    parts.push_back(credential.substr(pos, slash == std::string_view::npos ? slash : slash - pos));
    if (slash == std::string_view::npos) break;
    pos = slash + 1;
  }
  if (parts.size() != 5 || parts[0].empty() || parts[2].empty() || parts[3].empty() || parts[4] != "aws4_request") {
    return AuthError(s3_code, "malformed credential '" + std::string(credential.substr(0, 200)) +
                                  "': expected <key>/<yyyymmdd>/<region>/<service>/aws4_request");
  }
  if (parts[1].size() != 8 ||
      !std::all_of(parts[1].begin(), parts[1].end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return AuthError(s3_code, "malformed credential date '" + std::string(parts[1].substr(0, 32)) + "'");
  }
  SigningInput in;
  in.access_key_id = std::string(parts[0]);
  in.date8 = std::string(parts[1]);
  in.region = std::string(parts[2]);
  in.service = std::string(parts[3]);
  return in;
}

Status ParseSignedHeaders(std::string_view list, std::string_view s3_code, std::vector<std::string>* out) {
  size_t pos = 0;
  while (pos <= list.size()) {
    size_t semi = list.find(';', pos);
    if (semi == std::string_view::npos) semi = list.size();
    std::string_view name = list.substr(pos, semi - pos);
    if (name.empty() || name.size() > 256) return AuthError(s3_code, "malformed SignedHeaders list");
    out->push_back(Lower(name));
    if (out->size() > 256) return AuthError(s3_code, "too many signed headers");
    pos = semi + 1;
  }
  if (std::find(out->begin(), out->end(), "host") == out->end()) {
    return AuthError(s3_code, "SignedHeaders must include 'host'");
  }
  return Status::Ok();
}

// Parses "AWS4-HMAC-SHA256 Credential=..., SignedHeaders=..., Signature=...".
Result<SigningInput> ParseAuthorizationHeader(std::string_view h) {
  const std::string_view kMalformed = "AuthorizationHeaderMalformed";
  if (h.substr(0, kSigV4Algorithm.size()) != kSigV4Algorithm || h.size() == kSigV4Algorithm.size() ||
      h[kSigV4Algorithm.size()] != ' ') {
    return AuthError(kMalformed, "unsupported authorization scheme (only AWS4-HMAC-SHA256 is accepted)");
  }
  std::string_view rest = h.substr(kSigV4Algorithm.size());
  std::optional<std::string_view> credential, signed_headers, signature;
  size_t pos = 0;
  while (pos < rest.size()) {
    size_t comma = rest.find(',', pos);
    if (comma == std::string_view::npos) comma = rest.size();
    std::string_view item = rest.substr(pos, comma - pos);
    pos = comma + 1;
    while (!item.empty() && IsSpace(item.front())) item.remove_prefix(1);
    while (!item.empty() && IsSpace(item.back())) item.remove_suffix(1);
    if (item.empty()) continue;
    size_t eq = item.find('=');
    if (eq == std::string_view::npos) return AuthError(kMalformed, "malformed Authorization component");
    std::string_view key = item.substr(0, eq), value = item.substr(eq + 1);
    std::optional<std::string_view>* slot = key == "Credential"      ? &credential
                                            : key == "SignedHeaders" ? &signed_headers
                                            : key == "Signature"     ? &signature
                                                                     : nullptr;
    if (slot == nullptr) continue;  // unknown components are ignored, as AWS does
    if (slot->has_value()) return AuthError(kMalformed, "duplicate '" + std::string(key) + "' in Authorization");
    *slot = value;
  }
  if (!credential || !signed_headers || !signature) {
    return AuthError(kMalformed, "Authorization must have Credential, SignedHeaders and Signature");
  }
  STRATA_ASSIGN_OR_RETURN(SigningInput in, ParseCredential(*credential, kMalformed));
  STRATA_RETURN_IF_ERROR(ParseSignedHeaders(*signed_headers, kMalformed, &in.signed_names));
  if (!IsLowerHex(*signature, 64)) return AuthError(kMalformed, "Signature must be 64 lowercase hex digits");
  in.signature = std::string(*signature);
  return in;
}

// Shared tail of verification: time checks done by the caller; this looks up
// the secret, recomputes the signature and fills the VerifiedRequest.
Result<VerifiedRequest> CheckSignature(const HttpRequestParts& req, const SigningInput& in,
                                       const SecretLookup& secret_lookup, std::string_view payload_hash, bool presigned,
                                       const SigV4Options& options) {
  std::optional<std::string> secret = secret_lookup ? secret_lookup(in.access_key_id) : std::nullopt;
  if (!secret) {
    return AuthError("InvalidAccessKeyId",
                     "the access key id '" + in.access_key_id.substr(0, 128) + "' does not exist in our records");
  }
  for (const auto& name : in.signed_names) {
    if (FindHeader(req.headers, name) == nullptr) {
      return AuthError("SignatureDoesNotMatch", "signed header '" + name + "' is missing from the request");
    }
  }
  HttpRequestParts canonical_req = req;
  std::string creq;
  if (presigned) {
    canonical_req.query.clear();  // replaced below with the query minus X-Amz-Signature
    creq = CanonicalRequest(canonical_req, in.signed_names, payload_hash, options);
    // Splice in the canonical query without the signature.
    size_t first_nl = creq.find('\n');
    size_t second_nl = creq.find('\n', first_nl + 1);
    creq.insert(second_nl + 1, CanonicalQuery(req.query, /*exclude_signature=*/true));
  } else {
    creq = CanonicalRequest(req, in.signed_names, payload_hash, options);
  }
  std::string scope = CredentialScope(in.date8, in.region, in.service);
  std::string key = DeriveSigningKey(*secret, in.date8, in.region, in.service);
  std::string expected = SignatureHex(key, StringToSign(in.amz_date, scope, creq));
  if (!ConstantTimeEquals(expected, in.signature)) {
    return AuthError("SignatureDoesNotMatch",
                     "the request signature we calculated does not match the signature you provided; check your "
                     "key and signing method");
  }
  // Every x-amz-* header present must be signed, as AWS requires (checked
  // after the signature, so a wrong secret still reads SignatureDoesNotMatch): an
  // unsigned one (x-amz-copy-source on a presigned PUT) would change what a
  // signed request does.
  std::string unsigned_names;
  for (const auto& [name, value] : req.headers) {
    std::string n = Lower(name);
    if (!n.starts_with("x-amz-")) continue;
    if (std::find(in.signed_names.begin(), in.signed_names.end(), n) != in.signed_names.end()) continue;
    if (unsigned_names.find(n) != std::string::npos) continue;
    if (!unsigned_names.empty()) unsigned_names += ", ";
    unsigned_names += n.substr(0, 64);
    if (unsigned_names.size() > 512) break;
  }
  if (!unsigned_names.empty()) {
    return AuthError(
        "AccessDenied",
        "There were headers present in the request which were not signed (HeadersNotSigned: " + unsigned_names + ")");
  }
  VerifiedRequest v;
  v.access_key_id = in.access_key_id;
  v.presigned = presigned;
  v.payload_sha256 = std::string(payload_hash);
  v.amz_date = in.amz_date;
  v.region = in.region;
  v.service = in.service;
  v.scope = std::move(scope);
  v.signing_key = std::move(key);
  v.seed_signature = std::move(expected);
  return v;
}

Result<VerifiedRequest> VerifyHeaderForm(const HttpRequestParts& req, const std::string& authz,
                                         const SecretLookup& secret_lookup, WallTime now, Duration max_skew,
                                         const SigV4Options& options) {
  STRATA_ASSIGN_OR_RETURN(SigningInput in, ParseAuthorizationHeader(authz));
  const std::string* date = FindHeader(req.headers, "x-amz-date");
  if (date == nullptr) {
    if (const std::string* http_date = FindHeader(req.headers, "date")) {
      auto t = ParseHttpDate(*http_date);
      if (t.ok()) in.amz_date = FormatAmzDate(*t);
    }
    if (in.amz_date.empty()) return AuthError("AccessDenied", "AWS authentication requires a valid x-amz-date header");
  } else {
    if (!ParseAmzDate(*date).ok())
      return AuthError("AccessDenied", "malformed x-amz-date '" + date->substr(0, 32) + "'");
    in.amz_date = *date;
  }
  if (in.amz_date.substr(0, 8) != in.date8) {
    return AuthError("AuthorizationHeaderMalformed",
                     "credential scope date " + in.date8 + " does not match the request date " + in.amz_date);
  }
  WallTime t = *ParseAmzDate(in.amz_date);
  if (t > now + max_skew || t + max_skew < now) {
    // Neither the server's time nor the offset: a stranger learns nothing of this host's clock.
    return AuthError("RequestTimeTooSkewed",
                     "The difference between the request time and the current time is too large.");
  }
  std::string payload;
  if (const std::string* h = FindHeader(req.headers, "x-amz-content-sha256")) {
    payload = *h;
    if (!ValidPayloadHash(payload)) {
      return InvalidArgumentError(
                 "x-amz-content-sha256 must be a SHA-256 hex digest, UNSIGNED-PAYLOAD "
                 "or a STREAMING-* value")
          .WithForeignCode("InvalidArgument");
    }
  } else if (!options.content_sha256_header) {
    payload = options.verify_payload_sha256.empty() ? std::string(kEmptyPayloadSha256) : options.verify_payload_sha256;
  } else {
    return InvalidArgumentError("missing required header x-amz-content-sha256").WithForeignCode("InvalidRequest");
  }
  return CheckSignature(req, in, secret_lookup, payload, /*presigned=*/false, options);
}

Result<VerifiedRequest> VerifyQueryForm(const HttpRequestParts& req, const SecretLookup& secret_lookup, WallTime now,
                                        Duration max_skew, const SigV4Options& options) {
  const std::string_view kBad = "AuthorizationQueryParametersError";
  auto params = ParseQueryString(req.query, /*plus_is_space=*/false);
  if (!params.ok()) return AuthError(kBad, "malformed query string: " + params.status().message());
  std::optional<std::string> algorithm, credential, date, expires, signed_headers, signature;
  for (auto& [k, v] : *params) {
    std::optional<std::string>* slot = k == "X-Amz-Algorithm"       ? &algorithm
                                       : k == "X-Amz-Credential"    ? &credential
                                       : k == "X-Amz-Date"          ? &date
                                       : k == "X-Amz-Expires"       ? &expires
                                       : k == "X-Amz-SignedHeaders" ? &signed_headers
                                       : k == "X-Amz-Signature"     ? &signature
                                                                    : nullptr;
    if (slot == nullptr) continue;
    if (slot->has_value()) return AuthError(kBad, "duplicate query parameter " + k);
    *slot = v;
  }
  if (!algorithm || !credential || !date || !expires || !signed_headers || !signature) {
    return AuthError(kBad,
                     "presigned URLs need X-Amz-Algorithm, X-Amz-Credential, X-Amz-Date, X-Amz-Expires, "
                     "X-Amz-SignedHeaders and X-Amz-Signature");
  }
  if (*algorithm != kSigV4Algorithm) return AuthError(kBad, "X-Amz-Algorithm must be AWS4-HMAC-SHA256");
  STRATA_ASSIGN_OR_RETURN(SigningInput in, ParseCredential(*credential, kBad));
  STRATA_RETURN_IF_ERROR(ParseSignedHeaders(*signed_headers, kBad, &in.signed_names));
  if (!IsLowerHex(*signature, 64)) return AuthError(kBad, "X-Amz-Signature must be 64 lowercase hex digits");
  in.signature = *signature;
  auto t = ParseAmzDate(*date);
  if (!t.ok()) return AuthError(kBad, "malformed X-Amz-Date '" + date->substr(0, 32) + "'");
  in.amz_date = *date;
  if (in.amz_date.substr(0, 8) != in.date8) return AuthError(kBad, "credential date does not match X-Amz-Date");
  int64_t secs = -1;
  auto [p, ec] = std::from_chars(expires->data(), expires->data() + expires->size(), secs);
  if (ec != std::errc() || p != expires->data() + expires->size() || secs < 1 || secs > kMaxPresignSeconds) {
    return AuthError(kBad, "X-Amz-Expires must be between 1 and 604800 seconds");
  }
  if (*t > now + max_skew) return AuthError("AccessDenied", "request is not valid yet (X-Amz-Date in the future)");
  if (now > *t + std::chrono::seconds(secs)) return AuthError("AccessDenied", "request has expired");
  const std::string* h = FindHeader(req.headers, "x-amz-content-sha256");
  std::string payload = h ? *h : std::string(kUnsignedPayload);
  if (!ValidPayloadHash(payload)) {
    return InvalidArgumentError("malformed x-amz-content-sha256").WithForeignCode("InvalidArgument");
  }
  return CheckSignature(req, in, secret_lookup, payload, /*presigned=*/true, options);
}

}  // namespace

std::string CanonicalUri(std::string_view raw_path, bool normalize_path) {
  std::string decoded;
  if (!UriDecode(raw_path, &decoded, /*plus_is_space=*/false)) decoded = std::string(raw_path);
  if (normalize_path) {
    std::vector<std::string_view> stack;
    std::string_view p = decoded;
    bool trailing = false;
    size_t pos = 0;
    while (pos <= p.size()) {
      size_t slash = p.find('/', pos);
      if (slash == std::string_view::npos) slash = p.size();
      std::string_view seg = p.substr(pos, slash - pos);
      pos = slash + 1;
      trailing = seg.empty() || seg == "." || seg == "..";
      if (seg.empty() || seg == ".") continue;
      if (seg == "..") {
        if (!stack.empty()) stack.pop_back();
        continue;
      }
      stack.push_back(seg);
    }
    std::string out = "/";
    for (size_t i = 0; i < stack.size(); ++i) {
      if (i) out += '/';
      out += stack[i];
    }
    if (!stack.empty() && trailing) out += '/';
    decoded = std::move(out);
  }
  if (decoded.empty()) return "/";
  return UriEncode(decoded, /*encode_slash=*/false);
}

std::string CanonicalQuery(std::string_view raw_query, bool exclude_signature) {
  std::vector<std::pair<std::string, std::string>> pairs;
  for (const RawQueryParam& p : SplitQuery(raw_query)) {
    // Signing is lenient: a malformed escape is taken as it stands.
    std::string dk, dv;
    if (!UriDecode(p.name, &dk, false)) dk = std::string(p.name);
    if (!UriDecode(p.value, &dv, false)) dv = std::string(p.value);
    if (exclude_signature && dk == "X-Amz-Signature") continue;
    pairs.emplace_back(UriEncode(dk, true), UriEncode(dv, true));
  }
  std::sort(pairs.begin(), pairs.end());
  std::string out;
  for (const auto& [k, v] : pairs) {
    if (!out.empty()) out += '&';
    out += k;
    out += '=';
    out += v;
  }
  return out;
}

std::vector<std::string> SignableHeaderNames(const HttpHeaders& headers) {
  std::vector<std::string> names;
  for (const auto& [k, v] : headers) {
    std::string n = Lower(k);
    if (n == "authorization" || n == "user-agent" || n == "expect" || n == "x-amzn-trace-id") continue;
    names.push_back(std::move(n));
  }
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return names;
}

std::string CanonicalRequest(const HttpRequestParts& req, const std::vector<std::string>& signed_names,
                             std::string_view payload_sha256, const SigV4Options& options) {
  std::string out = req.method;
  out += '\n';
  out += CanonicalUri(req.path, options.normalize_path);
  out += '\n';
  out += CanonicalQuery(req.query);
  out += '\n';
  for (const auto& name : signed_names) {
    out += name;
    out += ':';
    bool first = true;
    for (const auto& [k, v] : req.headers) {
      if (!HeaderNameEquals(k, name)) continue;
      if (!first) out += ',';
      out += CanonicalHeaderValue(v);
      first = false;
    }
    out += '\n';
  }
  out += '\n';
  out += JoinNames(signed_names);
  out += '\n';
  out += payload_sha256;
  return out;
}

std::string CredentialScope(std::string_view date8, std::string_view region, std::string_view service) {
  std::string s(date8);
  s += '/';
  s += region;
  s += '/';
  s += service;
  s += "/aws4_request";
  return s;
}

std::string StringToSign(std::string_view amz_date, std::string_view scope, std::string_view canonical_request) {
  std::string s(kSigV4Algorithm);
  s += '\n';
  s += amz_date;
  s += '\n';
  s += scope;
  s += '\n';
  s += HexSha256(canonical_request);
  return s;
}

std::string DeriveSigningKey(std::string_view secret, std::string_view date8, std::string_view region,
                             std::string_view service) {
  auto mac = [](std::string_view key, std::string_view msg) {
    Sha256Digest d = HmacSha256(key, msg);
    return std::string(reinterpret_cast<const char*>(d.data()), d.size());
  };
  std::string k = mac("AWS4" + std::string(secret), date8);
  k = mac(k, region);
  k = mac(k, service);
  return mac(k, "aws4_request");
}

std::string SignatureHex(std::string_view signing_key, std::string_view string_to_sign) {
  return ToHex(HmacSha256(signing_key, string_to_sign));
}

Status SignRequest(HttpRequestParts& req, const AwsCredentials& creds, std::string_view region,
                   std::string_view service, WallTime now, std::string_view payload_sha256_hex,
                   const SigV4Options& options) {
  if (FindHeader(req.headers, "host") == nullptr) {
    return InvalidArgumentError("SigV4: the request to sign has no Host header");
  }
  if (creds.access_key_id.empty() || creds.secret_access_key.empty()) {
    return InvalidArgumentError("SigV4: empty access key id or secret");
  }
  if (!ValidPayloadHash(payload_sha256_hex)) {
    return InvalidArgumentError("SigV4: payload hash must be 64 lowercase hex digits or an UNSIGNED/STREAMING value");
  }
  RemoveHeader(req.headers, "authorization");
  std::string amz_date = FormatAmzDate(now);
  SetHeader(req.headers, "x-amz-date", amz_date);
  if (options.content_sha256_header) SetHeader(req.headers, "x-amz-content-sha256", std::string(payload_sha256_hex));
  if (!creds.session_token.empty()) SetHeader(req.headers, "x-amz-security-token", creds.session_token);
  std::vector<std::string> names = SignableHeaderNames(req.headers);
  std::string date8 = amz_date.substr(0, 8);
  std::string scope = CredentialScope(date8, region, service);
  std::string creq = CanonicalRequest(req, names, payload_sha256_hex, options);
  std::string key = DeriveSigningKey(creds.secret_access_key, date8, region, service);
  std::string sig = SignatureHex(key, StringToSign(amz_date, scope, creq));
  req.headers.emplace_back("Authorization", std::string(kSigV4Algorithm) + " Credential=" + creds.access_key_id + "/" +
                                                scope + ", SignedHeaders=" + JoinNames(names) + ", Signature=" + sig);
  return Status::Ok();
}

Result<std::string> PresignUrl(const HttpRequestParts& req, const AwsCredentials& creds, std::string_view region,
                               std::string_view service, WallTime now, Duration expires, const SigV4Options& options) {
  if (FindHeader(req.headers, "host") == nullptr)
    return InvalidArgumentError("presign: the request has no Host header");
  if (creds.access_key_id.empty() || creds.secret_access_key.empty()) {
    return InvalidArgumentError("presign: empty access key id or secret");
  }
  int64_t secs = std::chrono::duration_cast<std::chrono::seconds>(expires).count();
  if (secs < 1 || secs > kMaxPresignSeconds) {
    return InvalidArgumentError("presign: expiry must be between 1 second and 7 days, got " + std::to_string(secs) +
                                " s");
  }
  std::string amz_date = FormatAmzDate(now);
  std::string date8 = amz_date.substr(0, 8);
  std::string scope = CredentialScope(date8, region, service);
  std::vector<std::string> names = SignableHeaderNames(req.headers);
  std::string query = req.query;
  auto add = [&](std::string_view k, std::string_view v) {
    if (!query.empty()) query += '&';
    query += std::string(k) + "=" + UriEncode(v, true);
  };
  add("X-Amz-Algorithm", kSigV4Algorithm);
  add("X-Amz-Credential", creds.access_key_id + "/" + scope);
  add("X-Amz-Date", amz_date);
  add("X-Amz-Expires", std::to_string(secs));
  if (!creds.session_token.empty()) add("X-Amz-Security-Token", creds.session_token);
  add("X-Amz-SignedHeaders", JoinNames(names));
  HttpRequestParts to_sign = req;
  to_sign.query = query;
  const std::string* h = FindHeader(req.headers, "x-amz-content-sha256");
  std::string payload = h ? *h : std::string(kUnsignedPayload);
  std::string creq = CanonicalRequest(to_sign, names, payload, options);
  std::string key = DeriveSigningKey(creds.secret_access_key, date8, region, service);
  add("X-Amz-Signature", SignatureHex(key, StringToSign(amz_date, scope, creq)));
  return query;
}

bool VerifiedRequest::streaming() const {
  return payload_sha256 == kStreamingPayload || payload_sha256 == kStreamingPayloadTrailer ||
         payload_sha256 == kStreamingUnsignedTrailer;
}

Result<VerifiedRequest> VerifyRequest(const HttpRequestParts& req, const SecretLookup& secret_lookup, WallTime now,
                                      Duration max_skew, const SigV4Options& options) {
  if (const std::string* authz = FindHeader(req.headers, "authorization")) {
    return VerifyHeaderForm(req, *authz, secret_lookup, now, max_skew, options);
  }
  if (req.query.find("X-Amz-Signature=") != std::string::npos ||
      req.query.find("X-Amz-Algorithm=") != std::string::npos) {
    return VerifyQueryForm(req, secret_lookup, now, max_skew, options);
  }
  return AuthError("AccessDenied", "anonymous access is not allowed: the request is not signed");
}

Status CheckPayloadSha256(const VerifiedRequest& verified, std::string_view actual_sha256_hex) {
  if (!IsLowerHex(verified.payload_sha256, 64)) return Status::Ok();  // unsigned or streaming: nothing to compare
  if (verified.payload_sha256 != actual_sha256_hex) {
    return InvalidArgumentError(
               "the provided x-amz-content-sha256 header does not match what was computed for the body")
        .WithForeignCode("XAmzContentSHA256Mismatch");
  }
  return Status::Ok();
}

}  // namespace strata::net

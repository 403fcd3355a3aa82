// URI pieces shared by the S3 client and the gateway: RFC 3986 percent
// encoding as SigV4 requires it, and decoding. Pure functions.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace strata::net {

// Percent-encodes everything but unreserved characters (A-Z a-z 0-9 - . _ ~);
// '/' is kept when encode_slash is false (object key paths).
std::string UriEncode(std::string_view in, bool encode_slash = true);
// Decodes %XX escapes (and '+' as space when plus_is_space). Returns false on
// a malformed escape.
bool UriDecode(std::string_view in, std::string* out, bool plus_is_space = false);

// One parameter of a query string as it stands there (still encoded): all of
// it ("a=1"), the text before the first '=' and after it ("" without '=').
struct RawQueryParam {
  std::string_view text, name, value;
};
// "a=1&&b" -> {"a", "1"}, {"b", ""}: every parameter in order, empty
// segments skipped. Views into `query`; callers decode as their rules say.
std::vector<RawQueryParam> SplitQuery(std::string_view query);

// A request target fit for a log line: the values of query parameters that
// carry a credential (X-Amz-Signature, Signature, X-Amz-Security-Token; any
// case) become "REDACTED", and it is cut to `max_bytes`.
std::string RedactTarget(std::string_view target, size_t max_bytes = 300);

}  // namespace strata::net

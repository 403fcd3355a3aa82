// HTTP pieces shared by the S3 client and the gateway: dates (ISO 8601 basic
// and extended, RFC 1123), Range / Content-Range headers, URLs, query strings
// and header lookup. Pure functions, thread-safe; every parser is
// bounds-checked and returns InvalidArgument on malformed input.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/clock.h"
#include "base/status.h"

namespace strata::net {

using HttpHeaders = std::vector<std::pair<std::string, std::string>>;

// "20130524T000000Z" (SigV4 x-amz-date). Sub-second parts are truncated.
std::string FormatAmzDate(WallTime t);
Result<WallTime> ParseAmzDate(std::string_view s);
// "2013-05-24T00:00:00.000Z" (S3 XML LastModified). Parse also accepts no
// fraction, up to 9 fraction digits, a "+hh:mm" offset instead of Z, and the basic form above.
std::string FormatIso8601(WallTime t);
Result<WallTime> ParseIso8601(std::string_view s);
// RFC 1123: "Fri, 24 May 2013 00:00:00 GMT" (Last-Modified, Date, If-*-Since).
// Parsers accept years 1900..2261 (the range WallTime can hold).
std::string FormatHttpDate(WallTime t);
Result<WallTime> ParseHttpDate(std::string_view s);

// One byte range from a Range header; same shape as object/'s ByteRange:
// [offset, offset+length), length unset = to the end; suffix = last N bytes.
struct HttpByteRange {
  uint64_t offset = 0;
  std::optional<uint64_t> length;
  std::optional<uint64_t> suffix;
};
// Parses "bytes=a-b", "bytes=a-", "bytes=-n". Rejects multi-range, a > b,
// "bytes=-0", overflow and garbage with InvalidArgument.
Result<HttpByteRange> ParseRangeHeader(std::string_view value);
// Formats a range back into a Range header value.
std::string FormatRangeHeader(const HttpByteRange& range);

// Content-Range: "bytes first-last/total", or "bytes */total" (416 answers).
struct ContentRange {
  bool unsatisfied = false;  // "bytes */total": first/last meaningless
  uint64_t first = 0;
  uint64_t last = 0;              // inclusive
  std::optional<uint64_t> total;  // unset for "/*"
};
std::string FormatContentRange(uint64_t first, uint64_t last_inclusive, uint64_t total);
std::string FormatUnsatisfiedContentRange(uint64_t total);  // "bytes */total"
Result<ContentRange> ParseContentRange(std::string_view value);

// scheme://host[:port][/path][?query][#fragment dropped]. IPv6 hosts in
// brackets are kept with brackets. Port defaults from the scheme (http 80,
// https 443); path defaults to "/". Path and query stay raw (still encoded).
struct ParsedUrl {
  std::string scheme;  // lowercased
  std::string host;
  uint16_t port = 0;
  bool explicit_port = false;
  std::string path;
  std::string query;  // without '?'
  // "host" or "host:port" as a Host header carries it.
  std::string HostHeader() const;
};
Result<ParsedUrl> ParseUrl(std::string_view url);

// "a=1&b=x%20y&c" -> {{"a","1"},{"b","x y"},{"c",""}}, in order, decoded;
// empty segments skipped; '+' decodes to space when plus_is_space.
Result<std::vector<std::pair<std::string, std::string>>> ParseQueryString(std::string_view query,
                                                                          bool plus_is_space = true);

// ASCII case-insensitive equality for header names.
bool HeaderNameEquals(std::string_view a, std::string_view b);
// First header named `name` (case-insensitive), or nullptr.
const std::string* FindHeader(const HttpHeaders& headers, std::string_view name);
// Replaces every header named `name` with one `name: value`.
void SetHeader(HttpHeaders& headers, std::string_view name, std::string value);
void RemoveHeader(HttpHeaders& headers, std::string_view name);

}  // namespace strata::net

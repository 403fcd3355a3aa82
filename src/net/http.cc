#include "net/http.h"

#include <cctype>
#include <charconv>
#include <cstdio>

#include "net/uri.h"

namespace strata::net {
namespace {

using std::chrono::duration_cast;
using std::chrono::seconds;

// Howard Hinnant's civil-date algorithms: exact for the proleptic Gregorian calendar.
int64_t DaysFromCivil(int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<int64_t>(doe) - 719468;
}

struct Civil {
  int64_t year;
  unsigned month, day, hour, minute, second, weekday;  // weekday 0 = Sunday
  int64_t nanos;
};

Civil ToCivil(WallTime t) {
  int64_t ns = duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
  int64_t secs = ns >= 0 ? ns / 1000000000 : -((-ns + 999999999) / 1000000000);
  int64_t days = secs >= 0 ? secs / 86400 : -((-secs + 86399) / 86400);
  int64_t sod = secs - days * 86400;
  Civil c{};
  c.nanos = ns - secs * 1000000000;
  c.hour = static_cast<unsigned>(sod / 3600);
  c.minute = static_cast<unsigned>(sod / 60 % 60);
  c.second = static_cast<unsigned>(sod % 60);
  c.weekday = static_cast<unsigned>(((days % 7) + 7 + 4) % 7);
  int64_t z = days + 719468;
  const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const unsigned doe = static_cast<unsigned>(z - era * 146097);
  const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const unsigned mp = (5 * doy + 2) / 153;
  c.day = doy - (153 * mp + 2) / 5 + 1;
  c.month = mp < 10 ? mp + 3 : mp - 9;
  c.year = static_cast<int64_t>(yoe) + era * 400 + (c.month <= 2);
  return c;
}

bool ValidDate(int64_t y, unsigned mo, unsigned d, unsigned h, unsigned mi, unsigned s) {
  static const unsigned kDays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  // WallTime counts nanoseconds in 64 bits: it spans 1677..2262, so stay well inside.
  if (y < 1900 || y > 2261 || mo < 1 || mo > 12 || d < 1 || d > kDays[mo - 1]) return false;
  bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
  if (mo == 2 && d == 29 && !leap) return false;
  return h < 24 && mi < 60 && s < 61;  // allow a leap second; it folds into the next minute
}

WallTime FromCivil(int64_t y, unsigned mo, unsigned d, unsigned h, unsigned mi, unsigned s, int64_t nanos = 0) {
  int64_t secs = DaysFromCivil(y, mo, d) * 86400 + h * 3600 + mi * 60 + s;
  return WallTime(duration_cast<WallTime::duration>(std::chrono::seconds(secs) + std::chrono::nanoseconds(nanos)));
}

// Reads exactly n decimal digits at s[*pos].
bool Digits(std::string_view s, size_t* pos, size_t n, unsigned* out) {
  if (*pos + n > s.size()) return false;
  unsigned v = 0;
  for (size_t i = 0; i < n; ++i) {
    char c = s[*pos + i];
    if (c < '0' || c > '9') return false;
    v = v * 10 + static_cast<unsigned>(c - '0');
  }
  *pos += n;
  *out = v;
  return true;
}

bool Lit(std::string_view s, size_t* pos, char c) {
  if (*pos >= s.size() || s[*pos] != c) return false;
  ++*pos;
  return true;
}

const char* const kMonths[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
const char* const kWeekdays[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};

Status BadDate(std::string_view what, std::string_view s) {
  return InvalidArgumentError("malformed " + std::string(what) + " date '" + std::string(s.substr(0, 64)) + "'");
}

// Parses a non-negative decimal integer without overflow.
bool ParseU64(std::string_view s, uint64_t* out) {
  if (s.empty() || s.size() > 20) return false;
  for (char c : s)
    if (c < '0' || c > '9') return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && p == s.data() + s.size();
}

std::string_view TrimOws(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

}  // namespace

std::string FormatAmzDate(WallTime t) {
  Civil c = ToCivil(t);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%04lld%02u%02uT%02u%02u%02uZ", static_cast<long long>(c.year), c.month, c.day, c.hour,
                c.minute, c.second);
  return buf;
}

Result<WallTime> ParseAmzDate(std::string_view s) {
  size_t p = 0;
  unsigned y, mo, d, h, mi, se;
  if (s.size() != 16 || !Digits(s, &p, 4, &y) || !Digits(s, &p, 2, &mo) || !Digits(s, &p, 2, &d) || !Lit(s, &p, 'T') ||
      !Digits(s, &p, 2, &h) || !Digits(s, &p, 2, &mi) || !Digits(s, &p, 2, &se) || !Lit(s, &p, 'Z') ||
      !ValidDate(y, mo, d, h, mi, se)) {
    return BadDate("ISO 8601 basic", s);
  }
  return FromCivil(y, mo, d, h, mi, se);
}

std::string FormatIso8601(WallTime t) {
  Civil c = ToCivil(t);
  char buf[40];
  std::snprintf(buf, sizeof buf, "%04lld-%02u-%02uT%02u:%02u:%02u.%03lldZ", static_cast<long long>(c.year), c.month,
                c.day, c.hour, c.minute, c.second, static_cast<long long>(c.nanos / 1000000));
  return buf;
}

Result<WallTime> ParseIso8601(std::string_view s) {
  if (s.size() == 16 && s.find('-') == std::string_view::npos) return ParseAmzDate(s);
  size_t p = 0;
  unsigned y, mo, d, h, mi, se;
  if (!Digits(s, &p, 4, &y) || !Lit(s, &p, '-') || !Digits(s, &p, 2, &mo) || !Lit(s, &p, '-') ||
      !Digits(s, &p, 2, &d) || !Lit(s, &p, 'T') || !Digits(s, &p, 2, &h) || !Lit(s, &p, ':') ||
      !Digits(s, &p, 2, &mi) || !Lit(s, &p, ':') || !Digits(s, &p, 2, &se)) {
    return BadDate("ISO 8601", s);
  }
  int64_t nanos = 0;
  if (p < s.size() && s[p] == '.') {
    ++p;
    size_t n = 0;
    int64_t scale = 100000000;
    while (p < s.size() && s[p] >= '0' && s[p] <= '9') {
      if (++n > 9) return BadDate("ISO 8601", s);
      nanos += (s[p] - '0') * scale;
      scale /= 10;
      ++p;
    }
    if (n == 0) return BadDate("ISO 8601", s);
  }
  int64_t offset_secs = 0;  // "+hh:mm" / "-hh:mm" instead of "Z" (some servers write offsets)
  if (p < s.size() && (s[p] == '+' || s[p] == '-')) {
    int sign = s[p++] == '+' ? 1 : -1;
    unsigned oh, om;
    if (!Digits(s, &p, 2, &oh) || !Lit(s, &p, ':') || !Digits(s, &p, 2, &om) || oh > 23 || om > 59) {
      return BadDate("ISO 8601", s);
    }
    offset_secs = sign * static_cast<int64_t>(oh * 3600 + om * 60);
  } else if (!Lit(s, &p, 'Z')) {
    return BadDate("ISO 8601", s);
  }
  if (p != s.size() || !ValidDate(y, mo, d, h, mi, se)) return BadDate("ISO 8601", s);
  return FromCivil(y, mo, d, h, mi, se, nanos) - std::chrono::seconds(offset_secs);
}

std::string FormatHttpDate(WallTime t) {
  Civil c = ToCivil(t);
  char buf[40];
  std::snprintf(buf, sizeof buf, "%s, %02u %s %04lld %02u:%02u:%02u GMT", kWeekdays[c.weekday], c.day,
                kMonths[c.month - 1], static_cast<long long>(c.year), c.hour, c.minute, c.second);
  return buf;
}

Result<WallTime> ParseHttpDate(std::string_view s) {
  // "Fri, 24 May 2013 00:00:00 GMT"; the weekday is not cross-checked (clients get it wrong).
  size_t p = 0;
  if (s.size() != 29 || s[3] != ',' || s[4] != ' ') return BadDate("RFC 1123", s);
  bool weekday_ok = false;
  for (const char* w : kWeekdays) weekday_ok |= s.substr(0, 3) == w;
  p = 5;
  unsigned d, y, h, mi, se, mo = 0;
  if (!weekday_ok || !Digits(s, &p, 2, &d) || !Lit(s, &p, ' ')) return BadDate("RFC 1123", s);
  for (unsigned i = 0; i < 12; ++i)
    if (s.substr(p, 3) == kMonths[i]) mo = i + 1;
  p += 3;
  if (mo == 0 || !Lit(s, &p, ' ') || !Digits(s, &p, 4, &y) || !Lit(s, &p, ' ') || !Digits(s, &p, 2, &h) ||
      !Lit(s, &p, ':') || !Digits(s, &p, 2, &mi) || !Lit(s, &p, ':') || !Digits(s, &p, 2, &se) ||
      s.substr(p) != " GMT" || !ValidDate(y, mo, d, h, mi, se)) {
    return BadDate("RFC 1123", s);
  }
  return FromCivil(y, mo, d, h, mi, se);
}

Result<HttpByteRange> ParseRangeHeader(std::string_view value) {
  auto bad = [&](std::string_view why) {
    return InvalidArgumentError("invalid Range header '" + std::string(value.substr(0, 64)) + "': " + std::string(why))
        .WithForeignCode("InvalidArgument");
  };
  std::string_view v = TrimOws(value);
  if (v.substr(0, 6) != "bytes=") return bad("expected 'bytes='");
  v = TrimOws(v.substr(6));
  if (v.find(',') != std::string_view::npos) return bad("multiple ranges are not supported");
  size_t dash = v.find('-');
  if (dash == std::string_view::npos) return bad("missing '-'");
  std::string_view a = TrimOws(v.substr(0, dash)), b = TrimOws(v.substr(dash + 1));
  HttpByteRange r;
  uint64_t first = 0, last = 0;
  if (a.empty()) {
    if (!ParseU64(b, &last)) return bad("bad suffix length");
    if (last == 0) return bad("empty suffix range");
    r.suffix = last;
    return r;
  }
  if (!ParseU64(a, &first)) return bad("bad first byte");
  r.offset = first;
  if (b.empty()) return r;
  if (!ParseU64(b, &last)) return bad("bad last byte");
  if (last < first) return bad("last byte before first");
  if (last == UINT64_MAX) return bad("last byte too large");
  r.length = last - first + 1;
  return r;
}

std::string FormatRangeHeader(const HttpByteRange& range) {
  if (range.suffix) return "bytes=-" + std::to_string(*range.suffix);
  std::string s = "bytes=" + std::to_string(range.offset) + "-";
  if (range.length && *range.length > 0) s += std::to_string(range.offset + *range.length - 1);
  return s;
}

std::string FormatContentRange(uint64_t first, uint64_t last_inclusive, uint64_t total) {
  return "bytes " + std::to_string(first) + "-" + std::to_string(last_inclusive) + "/" + std::to_string(total);
}

std::string FormatUnsatisfiedContentRange(uint64_t total) { return "bytes */" + std::to_string(total); }

Result<ContentRange> ParseContentRange(std::string_view value) {
  auto bad = [&] { return InvalidArgumentError("invalid Content-Range '" + std::string(value.substr(0, 64)) + "'"); };
  std::string_view v = TrimOws(value);
  if (v.substr(0, 6) != "bytes ") return bad();
  v = TrimOws(v.substr(6));
  size_t slash = v.find('/');
  if (slash == std::string_view::npos) return bad();
  std::string_view range = v.substr(0, slash), total = v.substr(slash + 1);
  ContentRange cr;
  if (total != "*") {
    uint64_t t;
    if (!ParseU64(total, &t)) return bad();
    cr.total = t;
  }
  if (range == "*") {
    if (!cr.total) return bad();
    cr.unsatisfied = true;
    return cr;
  }
  size_t dash = range.find('-');
  if (dash == std::string_view::npos || !ParseU64(range.substr(0, dash), &cr.first) ||
      !ParseU64(range.substr(dash + 1), &cr.last) || cr.last < cr.first || (cr.total && cr.last >= *cr.total)) {
    return bad();
  }
  return cr;
}

std::string ParsedUrl::HostHeader() const {
  if (!explicit_port) return host;
  return host + ":" + std::to_string(port);
}

Result<ParsedUrl> ParseUrl(std::string_view url) {
  auto bad = [&](std::string_view why) {
    return InvalidArgumentError("invalid URL '" + std::string(url.substr(0, 200)) + "': " + std::string(why));
  };
  if (url.size() > 16384) return bad("too long");
  ParsedUrl u;
  size_t colon = url.find("://");
  if (colon == std::string_view::npos || colon == 0) return bad("missing scheme");
  for (char c : url.substr(0, colon)) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '+' && c != '-' && c != '.') return bad("bad scheme");
    u.scheme += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  std::string_view rest = url.substr(colon + 3);
  size_t frag = rest.find('#');
  if (frag != std::string_view::npos) rest = rest.substr(0, frag);
  size_t auth_end = rest.find_first_of("/?");
  std::string_view authority = rest.substr(0, auth_end);
  rest = auth_end == std::string_view::npos ? std::string_view() : rest.substr(auth_end);
  if (authority.find('@') != std::string_view::npos) return bad("credentials in URLs are not supported");
  std::string_view port_str;
  if (!authority.empty() && authority.front() == '[') {
    size_t close = authority.find(']');
    if (close == std::string_view::npos) return bad("unterminated IPv6 address");
    u.host = std::string(authority.substr(0, close + 1));
    std::string_view after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') return bad("garbage after IPv6 address");
      port_str = after.substr(1);
      u.explicit_port = true;
    }
  } else {
    size_t pc = authority.rfind(':');
    u.host = std::string(authority.substr(0, pc));
    if (pc != std::string_view::npos) {
      port_str = authority.substr(pc + 1);
      u.explicit_port = true;
    }
  }
  if (u.host.empty()) return bad("missing host");
  for (char c : u.host) {
    if (static_cast<unsigned char>(c) <= ' ' || c == '/' || c == '\\') return bad("bad character in host");
  }
  if (u.explicit_port) {
    uint64_t port;
    if (!ParseU64(port_str, &port) || port == 0 || port > 65535) return bad("bad port");
    u.port = static_cast<uint16_t>(port);
  } else if (u.scheme == "http") {
    u.port = 80;
  } else if (u.scheme == "https") {
    u.port = 443;
  }
  size_t q = rest.find('?');
  u.path = std::string(rest.substr(0, q));
  if (q != std::string_view::npos) u.query = std::string(rest.substr(q + 1));
  if (u.path.empty()) u.path = "/";
  return u;
}

Result<std::vector<std::pair<std::string, std::string>>> ParseQueryString(std::string_view query, bool plus_is_space) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const RawQueryParam& p : SplitQuery(query)) {
    std::string k, v;
    if (!UriDecode(p.name, &k, plus_is_space) || !UriDecode(p.value, &v, plus_is_space)) {
      return InvalidArgumentError("malformed percent-escape in query parameter '" + std::string(p.text.substr(0, 64)) +
                                  "'");
    }
    out.emplace_back(std::move(k), std::move(v));
  }
  return out;
}

bool HeaderNameEquals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) return false;
  }
  return true;
}

const std::string* FindHeader(const HttpHeaders& headers, std::string_view name) {
  for (const auto& [k, v] : headers)
    if (HeaderNameEquals(k, name)) return &v;
  return nullptr;
}

void RemoveHeader(HttpHeaders& headers, std::string_view name) {
  std::erase_if(headers, [&](const auto& kv) { return HeaderNameEquals(kv.first, name); });
}

void SetHeader(HttpHeaders& headers, std::string_view name, std::string value) {
  RemoveHeader(headers, name);
  headers.emplace_back(std::string(name), std::move(value));
}

}  // namespace strata::net

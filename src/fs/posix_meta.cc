#include "fs/posix_meta.h"

#include <sys/stat.h>

#include <chrono>
#include <cstdio>

namespace strata::fs {

namespace {
// 2255-03-14: far enough for any real mtime, small enough that the time in
// nanoseconds (how WallTime counts) fits int64.
constexpr int64_t kMaxSeconds = 9000000000;

bool Digits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (c < '0' || c > '9') return false;
  return true;
}

// Nanoseconds of a fraction's digits ("5" -> 500000000); digits past 9 are dropped.
int64_t FractionNanos(std::string_view f) {
  int64_t ns = 0;
  for (size_t i = 0; i < 9; ++i) ns = ns * 10 + (i < f.size() ? f[i] - '0' : 0);
  return ns;
}

WallTime FromParts(int64_t secs, int64_t nanos) {
  auto d = std::chrono::seconds(secs) + std::chrono::nanoseconds(nanos);
  return WallTime(std::chrono::duration_cast<WallTime::duration>(d));
}

// Days since 1970-01-01 of a civil date (Howard Hinnant's algorithm).
int64_t DaysFromCivil(int64_t y, int64_t m, int64_t d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const int64_t yoe = y - era * 400;
  const int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

std::optional<int64_t> Field(std::string_view s, size_t pos, size_t len) {
  if (pos + len > s.size()) return std::nullopt;
  auto v = ParseDecimal(s.substr(pos, len), 9999);
  if (!v) return std::nullopt;
  return static_cast<int64_t>(*v);
}

std::optional<WallTime> ParseRfc3339(std::string_view s) {
  // YYYY-MM-DDTHH:MM:SS[.frac](Z|+hh:mm|-hh:mm)
  if (s.size() < 20 || s[4] != '-' || s[7] != '-' || (s[10] != 'T' && s[10] != 't' && s[10] != ' ') || s[13] != ':' ||
      s[16] != ':')
    return std::nullopt;
  auto y = Field(s, 0, 4), mo = Field(s, 5, 2), d = Field(s, 8, 2);
  auto h = Field(s, 11, 2), mi = Field(s, 14, 2), se = Field(s, 17, 2);
  if (!y || !mo || !d || !h || !mi || !se) return std::nullopt;
  if (*mo < 1 || *mo > 12 || *d < 1 || *d > 31 || *h > 23 || *mi > 59 || *se > 60) return std::nullopt;
  size_t pos = 19;
  int64_t nanos = 0;
  if (pos < s.size() && s[pos] == '.') {
    size_t end = pos + 1;
    while (end < s.size() && s[end] >= '0' && s[end] <= '9') ++end;
    if (end == pos + 1) return std::nullopt;
    nanos = FractionNanos(s.substr(pos + 1, end - pos - 1));
    pos = end;
  }
  int64_t offset = 0;
  std::string_view zone = s.substr(pos);
  if (zone == "Z" || zone == "z") {
  } else if (zone.size() == 6 && (zone[0] == '+' || zone[0] == '-') && zone[3] == ':') {
    auto oh = Field(zone, 1, 2), om = Field(zone, 4, 2);
    if (!oh || !om || *oh > 23 || *om > 59) return std::nullopt;
    offset = (*oh * 3600 + *om * 60) * (zone[0] == '+' ? 1 : -1);
  } else {
    return std::nullopt;
  }
  const int64_t secs = DaysFromCivil(*y, *mo, *d) * 86400 + *h * 3600 + *mi * 60 + *se - offset;
  if (secs < 0 || secs > kMaxSeconds) return std::nullopt;
  return FromParts(secs, nanos);
}
}  // namespace

std::optional<uint64_t> ParseDecimal(std::string_view s, uint64_t max) {
  if (!Digits(s) || s.size() > 20) return std::nullopt;
  uint64_t v = 0;
  for (char c : s) {
    const uint64_t digit = static_cast<uint64_t>(c - '0');
    if (v > (max - digit) / 10) return std::nullopt;
    v = v * 10 + digit;
  }
  return v;
}

std::optional<uint32_t> ParseMode(std::string_view s) {
  auto v = ParseDecimal(s, 0177777);
  if (!v) return std::nullopt;
  const uint32_t type = static_cast<uint32_t>(*v) & S_IFMT;
  switch (type) {
    case 0:
    case S_IFREG:
    case S_IFDIR:
    case S_IFLNK:
    case S_IFIFO:
    case S_IFSOCK:
    case S_IFCHR:
    case S_IFBLK: return static_cast<uint32_t>(*v);
    default: return std::nullopt;
  }
}

std::optional<WallTime> ParseMtime(std::string_view s) {
  if (s.size() > 64) return std::nullopt;
  const size_t dot = s.find('.');
  std::string_view whole = s.substr(0, dot);
  if (Digits(whole)) {
    auto secs = ParseDecimal(whole, kMaxSeconds);
    if (!secs) return std::nullopt;
    int64_t nanos = 0;
    if (dot != std::string_view::npos) {
      std::string_view frac = s.substr(dot + 1);
      if (!Digits(frac)) return std::nullopt;
      nanos = FractionNanos(frac);
    }
    return FromParts(static_cast<int64_t>(*secs), nanos);
  }
  return ParseRfc3339(s);
}

std::string FormatMtime(WallTime t) {
  const int64_t ns = std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
  if (ns < 0) return "0";
  const int64_t secs = ns / 1000000000, frac = ns % 1000000000;
  char buf[40];
  if (frac == 0) {
    std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(secs));
  } else {
    std::snprintf(buf, sizeof buf, "%lld.%09lld", static_cast<long long>(secs), static_cast<long long>(frac));
  }
  return buf;
}

PosixMeta DecodePosixMeta(const std::map<std::string, std::string>& user) {
  PosixMeta m;
  auto get = [&](std::string_view key) -> const std::string* {
    auto it = user.find(std::string(key));
    return it == user.end() ? nullptr : &it->second;
  };
  if (const std::string* v = get(kMetaMode)) m.mode = ParseMode(*v);
  // 2^32 - 1 is (uid_t)-1, "no change" to chown: never an owner.
  if (const std::string* v = get(kMetaUid))
    if (auto n = ParseDecimal(*v, 0xfffffffe)) m.uid = static_cast<uint32_t>(*n);
  if (const std::string* v = get(kMetaGid))
    if (auto n = ParseDecimal(*v, 0xfffffffe)) m.gid = static_cast<uint32_t>(*n);
  if (const std::string* v = get(kMetaMtime)) m.mtime = ParseMtime(*v);
  if (const std::string* v = get(kMetaRdev)) m.rdev = ParseDecimal(*v, UINT32_MAX);
  return m;
}

void EncodePosixMeta(const PosixMeta& meta, std::map<std::string, std::string>* user) {
  if (meta.mode) (*user)[std::string(kMetaMode)] = std::to_string(*meta.mode);
  if (meta.uid) (*user)[std::string(kMetaUid)] = std::to_string(*meta.uid);
  if (meta.gid) (*user)[std::string(kMetaGid)] = std::to_string(*meta.gid);
  if (meta.mtime) (*user)[std::string(kMetaMtime)] = FormatMtime(*meta.mtime);
  if (meta.rdev) (*user)[std::string(kMetaRdev)] = std::to_string(*meta.rdev);
}

}  // namespace strata::fs

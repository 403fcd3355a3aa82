#include "group/member_record.h"

#include <charconv>

#include "base/constant_time.h"
#include "base/hash.h"
#include "group/address.h"

namespace strata::group {
namespace {

constexpr std::string_view kVersion = "strata-member-v1";

std::string Mac(std::string_view secret, std::string_view group, std::string_view id, std::string_view address,
                int64_t issued, int64_t expires) {
  std::string msg;
  msg.reserve(64 + group.size() + id.size() + address.size());
  msg.append(kVersion).append("\n").append(group).append("\n").append(id).append("\n").append(address);
  msg.append("\n").append(std::to_string(issued)).append("\n").append(std::to_string(expires));
  return ToHex(HmacSha256(secret, msg));
}

bool ParseTime(std::string_view s, int64_t* out) {
  if (s.empty() || s.size() > 12 || s[0] == '-' || s[0] == '+') return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && p == s.data() + s.size();
}

int64_t UnixSeconds(WallTime t) {
  return std::chrono::duration_cast<std::chrono::seconds>(t.time_since_epoch()).count();
}

}  // namespace

std::string FormatMemberRecord(std::string_view secret, std::string_view group, const MemberRecord& r) {
  return std::string(kVersion) + " " + r.address + " " + std::to_string(r.issued) + " " + std::to_string(r.expires) +
         " " + Mac(secret, group, r.id, r.address, r.issued, r.expires);
}

Result<MemberRecord> ParseMemberRecord(std::string_view secret, std::string_view group, std::string_view id,
                                       std::string_view value, WallTime now, std::chrono::seconds max_skew) {
  if (value.size() > kMaxMemberRecordBytes) return InvalidArgumentError("member record too long");
  if (id.empty() || id.size() > kMaxMemberIdLength) return InvalidArgumentError("member id empty or too long");
  std::string_view fields[5];
  size_t n = 0;
  for (size_t at = 0; at <= value.size(); ++n) {
    if (n == 5) return InvalidArgumentError("member record has extra fields");
    size_t sp = value.find(' ', at);
    if (sp == std::string_view::npos) sp = value.size();
    fields[n] = value.substr(at, sp - at);
    at = sp + 1;
  }
  if (n != 5 || fields[0] != kVersion) {
    return InvalidArgumentError("not a signed member record (" + std::string(kVersion) + ")");
  }
  MemberRecord r;
  r.id = std::string(id);
  r.address = std::string(fields[1]);
  if (!ParseTime(fields[2], &r.issued) || !ParseTime(fields[3], &r.expires) || r.expires < r.issued ||
      r.expires - r.issued > kMaxRecordValidity.count()) {
    return InvalidArgumentError("member record has a bad validity window");
  }
  STRATA_RETURN_IF_ERROR(ParseHostPort(r.address).status());
  const std::string want = Mac(secret, group, r.id, r.address, r.issued, r.expires);
  if (!ConstantTimeEquals(want, fields[4])) {
    return PermissionDeniedError("member record is not signed with this group's secret");
  }
  const int64_t now_s = UnixSeconds(now);
  if (r.issued > now_s + max_skew.count()) return DeadlineExceededError("member record issued in the future");
  if (!RecordLive(r, now, max_skew)) return DeadlineExceededError("member record expired");
  return r;
}

bool RecordLive(const MemberRecord& r, WallTime now, std::chrono::seconds max_skew) {
  return UnixSeconds(now) <= r.expires + max_skew.count();
}

namespace {

constexpr std::string_view kPublishedVersion = "strata-cached-v1";

std::string PublishedMac(std::string_view secret, std::string_view group, std::string_view id, int64_t issued,
                         int64_t expires, std::string_view payload) {
  std::string msg;
  msg.reserve(64 + group.size() + id.size() + payload.size());
  msg.append(kPublishedVersion).append("\n").append(group).append("\n").append(id);
  msg.append("\n").append(std::to_string(issued)).append("\n").append(std::to_string(expires));
  msg.append("\n").append(payload);
  return ToHex(HmacSha256(secret, msg));
}

}  // namespace

std::string FormatPublishedRecord(std::string_view secret, std::string_view group, std::string_view id,
                                  std::string_view payload, int64_t issued, int64_t expires) {
  return std::string(kPublishedVersion) + " " + std::to_string(issued) + " " + std::to_string(expires) + " " +
         PublishedMac(secret, group, id, issued, expires, payload) + " " + std::string(payload);
}

Result<std::string> ParsePublishedRecord(std::string_view secret, std::string_view group, std::string_view id,
                                         std::string_view value, WallTime now, std::chrono::seconds max_skew) {
  if (value.size() > kMaxPublishedRecordBytes) return InvalidArgumentError("published record too long");
  if (id.empty() || id.size() > kMaxMemberIdLength) return InvalidArgumentError("member id empty or too long");
  // Four fields, then the payload (which may hold spaces).
  std::string_view fields[4];
  std::string_view rest = value;
  for (auto& f : fields) {
    const size_t sp = rest.find(' ');
    if (sp == std::string_view::npos) return InvalidArgumentError("not a signed published record");
    f = rest.substr(0, sp);
    rest.remove_prefix(sp + 1);
  }
  if (fields[0] != kPublishedVersion) {
    return InvalidArgumentError("not a signed published record (" + std::string(kPublishedVersion) + ")");
  }
  int64_t issued = 0, expires = 0;
  if (!ParseTime(fields[1], &issued) || !ParseTime(fields[2], &expires) || expires < issued ||
      expires - issued > kMaxRecordValidity.count()) {
    return InvalidArgumentError("published record has a bad validity window");
  }
  const std::string want = PublishedMac(secret, group, id, issued, expires, rest);
  if (!ConstantTimeEquals(want, fields[3])) {
    return PermissionDeniedError("published record is not signed with this group's secret");
  }
  const int64_t now_s = UnixSeconds(now);
  if (issued > now_s + max_skew.count()) return DeadlineExceededError("published record issued in the future");
  if (now_s > expires + max_skew.count()) return DeadlineExceededError("published record expired");
  return std::string(rest);
}

}  // namespace strata::group

// A member's registration in etcd, signed with the group secret. Whoever can
// write the group's etcd prefix without the secret adds no member: a record
// is taken only if its MAC verifies, and the MAC covers the group, the
// member's id (its etcd key), its peer address and its validity window, so a
// record cannot be moved to another key, group or address. A record expires
// on its own (the member re-signs it every `validity`/3): one copied from a
// member that has left can be replayed until then only.
//
// Value under /strata/groups/<group>/members/<id>:
//   strata-member-v1 <address> <issued unix s> <expires unix s> <hex HMAC-SHA256>
//   MAC over "strata-member-v1\n" + group + "\n" + id + "\n" + address + "\n" + issued + "\n" + expires
// Pure functions; thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/clock.h"
#include "base/status.h"

namespace strata::group {

inline constexpr size_t kMaxMemberRecordBytes = 512;
inline constexpr size_t kMaxMemberIdLength = 261;  // ids are peer addresses
// A record may not claim to be valid for longer than this.
inline constexpr std::chrono::seconds kMaxRecordValidity{600};

struct MemberRecord {
  std::string id;
  std::string address;  // validated (group/address.h)
  int64_t issued = 0;   // unix seconds
  int64_t expires = 0;
};

std::string FormatMemberRecord(std::string_view secret, std::string_view group, const MemberRecord& r);

// The record stored as `value` under member id `id`. InvalidArgument for a
// malformed record or address, PermissionDenied when its MAC does not verify
// (not signed with this group's secret), DeadlineExceeded when it is not
// valid at `now` (expired, or issued in the future) give or take `max_skew`.
// Messages never quote the MAC.
Result<MemberRecord> ParseMemberRecord(std::string_view secret, std::string_view group, std::string_view id,
                                       std::string_view value, WallTime now, std::chrono::seconds max_skew);

// Whether `r` is still valid at `now` (its expiry plus the skew not passed).
bool RecordLive(const MemberRecord& r, WallTime now, std::chrono::seconds max_skew);

// What a member publishes beside its registration (the bytes it caches per
// dataset, read by the CSI scheduler extender), signed the same way so that a
// writer to etcd without the secret cannot steer pods to a node of its choice:
// Value under /strata/groups/<group>/cached/<id>:
//   strata-cached-v1 <issued unix s> <expires unix s> <hex HMAC-SHA256> <payload>
//   MAC over "strata-cached-v1\n" + group + "\n" + id + "\n" + issued + "\n" + expires + "\n" + payload
inline constexpr size_t kMaxPublishedRecordBytes = 1 << 20;
std::string FormatPublishedRecord(std::string_view secret, std::string_view group, std::string_view id,
                                  std::string_view payload, int64_t issued, int64_t expires);
// The payload of `value` stored under member id `id`, with ParseMemberRecord's errors.
Result<std::string> ParsePublishedRecord(std::string_view secret, std::string_view group, std::string_view id,
                                         std::string_view value, WallTime now, std::chrono::seconds max_skew);

}  // namespace strata::group

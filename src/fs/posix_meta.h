// PosixMeta: a mounted file's POSIX attributes as they are kept in an
// object's user metadata, in the form s3fs writes them (so one bucket moves
// between s3fs, rclone and strata intact):
//   x-amz-meta-mode   st_mode in decimal, type bits included (33188 = S_IFREG|0644;
//                     FIFOs, sockets and device nodes are empty objects whose mode says so)
//   x-amz-meta-rdev   a device node's st_rdev in decimal (s3fs 1.90 keeps none: 0 then)
//   x-amz-meta-uid    decimal
//   x-amz-meta-gid    decimal
//   x-amz-meta-mtime  seconds since the epoch: "1700000000" (s3fs) or
//                     "1700000000.123456789" (rclone, newer s3fs); an RFC 3339
//                     time ("2023-11-14T22:13:20.5Z") is read too.
// Every field is optional: a value that is missing or does not parse (out of
// range, junk, an unsupported file type) is left unset, and the mount shows
// its defaults instead. Parsing is bounds-checked and never throws.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "base/clock.h"

namespace strata::fs {

inline constexpr std::string_view kMetaMode = "mode";
inline constexpr std::string_view kMetaUid = "uid";
inline constexpr std::string_view kMetaGid = "gid";
inline constexpr std::string_view kMetaMtime = "mtime";
inline constexpr std::string_view kMetaRdev = "rdev";

struct PosixMeta {
  // Type (S_IFREG, S_IFDIR, S_IFLNK, S_IFIFO, S_IFSOCK, S_IFCHR or S_IFBLK;
  // 0 when the stored mode had none) and permission bits (07777).
  std::optional<uint32_t> mode;
  std::optional<uint32_t> uid, gid;
  std::optional<WallTime> mtime;
  std::optional<uint64_t> rdev;  // a device node's (new_encode_dev form, as st_rdev)
  bool operator==(const PosixMeta&) const = default;
};

// Reads the five keys out of user metadata (names without x-amz-meta-).
PosixMeta DecodePosixMeta(const std::map<std::string, std::string>& user);
// Sets the keys of the fields that are set; the others are left as they are.
void EncodePosixMeta(const PosixMeta& meta, std::map<std::string, std::string>* user);

// A decimal number of at most `max`; nullopt for anything else (empty, sign,
// junk, overflow).
std::optional<uint64_t> ParseDecimal(std::string_view s, uint64_t max);
// A mode as stored; nullopt when it is not a number below 0200000 or names no
// file type stat(2) knows.
std::optional<uint32_t> ParseMode(std::string_view s);
// "SECONDS[.FRACTION]" or RFC 3339 (UTC 'Z' or a +hh:mm offset).
std::optional<WallTime> ParseMtime(std::string_view s);
// "SECONDS" when whole, else "SECONDS.NNNNNNNNN" (what s3fs and rclone read).
std::string FormatMtime(WallTime t);

}  // namespace strata::fs

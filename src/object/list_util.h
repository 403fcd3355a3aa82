// Shared ListObjectsV2 semantics for stores that can walk their keys in byte
// order (mem, file): prefix, delimiter roll-up into common prefixes,
// start_after, opaque continuation tokens and max_keys (keys and common
// prefixes both count, as in S3). Internal to object/; not thread-safe itself
// (the caller holds whatever lock its cursor needs).
#pragma once

#include <optional>
#include <string>

#include "object/object_store.h"

namespace strata::object {

// Forward-only walk over a store's keys in byte order. The bound only moves
// forward: after Skip(after, skip_prefix), Next() returns the next key k that
// starts with the listing prefix, with k > after and, when skip_prefix, k not
// starting with `after`.
class ListCursor {
 public:
  virtual ~ListCursor() = default;
  virtual void Skip(const std::string& after, bool skip_prefix) = 0;
  virtual Result<std::optional<std::string>> Next() = 0;
  // Info for a key returned by Next(); nullopt if it vanished meanwhile.
  virtual Result<std::optional<ObjectInfo>> Info(const std::string& key) = 0;
};

// Validates options (max_keys >= 1; over 1000 is clamped to 1000 as S3 does;
// the token must be one this module produced) and runs the listing.
Result<ListResult> ListWithCursor(const ListOptions& options, ListCursor& cursor);

// The smallest string greater than every string starting with `prefix`
// (nullopt when there is none, i.e. the prefix is all 0xff bytes).
std::optional<std::string> PrefixSuccessor(std::string_view prefix);

// Matches an ETag condition ("*", a quoted or bare ETag, or a comma list).
bool EtagMatches(std::string_view condition, std::string_view etag);

// Evaluates Get conditions against the current object in RFC 7232 order:
// If-Match, If-Unmodified-Since (PreconditionFailed); If-None-Match,
// If-Modified-Since (NotModified).
Status CheckGetConditions(const GetOptions& options, const ObjectInfo& info);

// Put conditions: `current` is the existing object, if any.
Status CheckPutConditions(const PutOptions& options, std::string_view key, const ObjectInfo* current);
// CompleteMultipartUpload's own conditions, the same way.
Status CheckCompleteConditions(const CompleteOptions& options, std::string_view key, const ObjectInfo* current);

// Shared multipart validation at Complete: non-empty, ascending part numbers
// in 1..10000, each listed part uploaded with the listed ETag, and every part
// but the last at least `min_part_size` bytes (all InvalidArgument, like
// S3's InvalidPartOrder / InvalidPart / EntityTooSmall).
Status CheckCompleteParts(std::string_view key, const std::vector<CompletedPart>& parts,
                          const std::vector<PartInfo>& uploaded, uint64_t min_part_size);

// Rejects part numbers outside 1..10000.
Status CheckPartNumber(std::string_view key, int part_number);

}  // namespace strata::object

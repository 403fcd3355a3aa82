#include "object/list_util.h"

#include <algorithm>

#include "base/hash.h"

namespace strata::object {
namespace {

constexpr std::string_view kTokenMagic = "strata-list-v1:";

// Tokens are opaque to callers; inside: the position and whether the whole
// common prefix at that position was already reported.
std::string EncodeToken(const std::string& after, bool skip_prefix) {
  std::string raw(kTokenMagic);
  raw += skip_prefix ? 'p' : 'k';
  raw += after;
  return Base64Encode(raw.data(), raw.size());
}

Status DecodeToken(const std::string& token, std::string* after, bool* skip_prefix) {
  std::string raw;
  if (!Base64Decode(token, &raw) || raw.size() < kTokenMagic.size() + 1 ||
      raw.compare(0, kTokenMagic.size(), kTokenMagic) != 0) {
    return InvalidArgumentError("the list continuation token is not one this store issued");
  }
  char mode = raw[kTokenMagic.size()];
  if (mode != 'p' && mode != 'k') return InvalidArgumentError("the list continuation token is malformed");
  *skip_prefix = mode == 'p';
  *after = raw.substr(kTokenMagic.size() + 1);
  return Status::Ok();
}

std::string_view StripQuotes(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  if (s.size() >= 2 && s.substr(0, 2) == "W/") s.remove_prefix(2);
  if (s.size() >= 2 && s.front() == '"' && s.back() == '"') s = s.substr(1, s.size() - 2);
  return s;
}

}  // namespace

Result<ListResult> ListWithCursor(const ListOptions& options, ListCursor& cursor) {
  if (options.max_keys < 1) {
    return InvalidArgumentError("list max_keys must be at least 1, got " + std::to_string(options.max_keys));
  }
  const size_t max_keys = std::min(options.max_keys, 1000);
  std::string after = options.start_after;
  bool skip = false;
  if (!options.continuation_token.empty()) {
    STRATA_RETURN_IF_ERROR(DecodeToken(options.continuation_token, &after, &skip));
  }
  const std::string initial_after = after;
  cursor.Skip(after, skip);

  ListResult result;
  size_t count = 0;
  std::string last;
  bool last_skip = false;
  for (;;) {
    STRATA_ASSIGN_OR_RETURN(std::optional<std::string> next, cursor.Next());
    if (!next) break;
    if (count == max_keys) {
      result.truncated = true;
      result.next_continuation_token = EncodeToken(last, last_skip);
      break;
    }
    const std::string& key = *next;
    if (!options.delimiter.empty()) {
      size_t idx = key.find(options.delimiter, options.prefix.size());
      if (idx != std::string::npos) {
        std::string cp = key.substr(0, idx + options.delimiter.size());
        cursor.Skip(cp, true);
        // A start position equal to a common prefix means "already reported".
        if (cp == initial_after) continue;
        result.common_prefixes.push_back(cp);
        ++count;
        last = std::move(cp);
        last_skip = true;
        continue;
      }
    }
    STRATA_ASSIGN_OR_RETURN(std::optional<ObjectInfo> info, cursor.Info(key));
    if (!info) continue;
    result.objects.push_back(std::move(*info));
    ++count;
    last = key;
    last_skip = false;
  }
  return result;
}

std::optional<std::string> PrefixSuccessor(std::string_view prefix) {
  std::string s(prefix);
  while (!s.empty() && static_cast<unsigned char>(s.back()) == 0xff) s.pop_back();
  if (s.empty()) return std::nullopt;
  s.back() = static_cast<char>(static_cast<unsigned char>(s.back()) + 1);
  return s;
}

bool EtagMatches(std::string_view condition, std::string_view etag) {
  etag = StripQuotes(etag);
  while (!condition.empty()) {
    size_t comma = condition.find(',');
    std::string_view item = StripQuotes(condition.substr(0, comma));
    if (item == "*" || (!item.empty() && item == etag)) return true;
    if (comma == std::string_view::npos) break;
    condition.remove_prefix(comma + 1);
  }
  return false;
}

Status CheckGetConditions(const GetOptions& options, const ObjectInfo& info) {
  if (!options.if_match.empty()) {
    if (!EtagMatches(options.if_match, info.etag)) {
      return PreconditionFailedError("If-Match failed for '" + info.key + "': its ETag is " + info.etag);
    }
  } else if (options.if_unmodified_since && info.mtime > *options.if_unmodified_since) {
    return PreconditionFailedError("'" + info.key + "' was modified after If-Unmodified-Since");
  }
  if (!options.if_none_match.empty()) {
    if (EtagMatches(options.if_none_match, info.etag)) {
      return NotModifiedError("'" + info.key + "' still has ETag " + info.etag);
    }
  } else if (options.if_modified_since && info.mtime <= *options.if_modified_since) {
    return NotModifiedError("'" + info.key + "' was not modified since If-Modified-Since");
  }
  return Status::Ok();
}

Status CheckPutConditions(const PutOptions& options, std::string_view key, const ObjectInfo* current) {
  if (options.if_none_match && current) {
    return PreconditionFailedError("'" + std::string(key) + "' already exists (If-None-Match: *)");
  }
  if (!options.if_match.empty()) {
    if (!current) {
      return PreconditionFailedError("If-Match failed: '" + std::string(key) + "' does not exist");
    }
    if (!EtagMatches(options.if_match, current->etag)) {
      return PreconditionFailedError("If-Match failed for '" + std::string(key) + "': its ETag is " + current->etag);
    }
  }
  return Status::Ok();
}

Status CheckCompleteConditions(const CompleteOptions& options, std::string_view key, const ObjectInfo* current) {
  PutOptions put;
  put.if_match = options.if_match;
  put.if_none_match = options.if_none_match;
  return CheckPutConditions(put, key, current);
}

Status CheckPartNumber(std::string_view key, int part_number) {
  if (part_number < 1 || part_number > 10000) {
    return InvalidArgumentError("part number " + std::to_string(part_number) + " for '" + std::string(key) +
                                "' is outside 1..10000");
  }
  return Status::Ok();
}

Status CheckCompleteParts(std::string_view key, const std::vector<CompletedPart>& parts,
                          const std::vector<PartInfo>& uploaded, uint64_t min_part_size) {
  const std::string k(key);
  if (parts.empty()) return InvalidArgumentError("completing '" + k + "' needs at least one part");
  for (size_t i = 0; i < parts.size(); ++i) {
    const CompletedPart& part = parts[i];
    STRATA_RETURN_IF_ERROR(CheckPartNumber(key, part.part_number));
    if (i > 0 && part.part_number <= parts[i - 1].part_number) {
      return InvalidArgumentError("parts to complete '" + k + "' are not in ascending order (InvalidPartOrder)");
    }
    auto it = std::find_if(uploaded.begin(), uploaded.end(),
                           [&](const PartInfo& p) { return p.part_number == part.part_number; });
    if (it == uploaded.end()) {
      return InvalidArgumentError("part " + std::to_string(part.part_number) + " of '" + k +
                                  "' was never uploaded (InvalidPart)");
    }
    if (StripQuotes(part.etag) != StripQuotes(it->etag)) {
      return InvalidArgumentError("part " + std::to_string(part.part_number) + " of '" + k + "' has ETag " + it->etag +
                                  ", not " + part.etag + " (InvalidPart)");
    }
    if (i + 1 < parts.size() && it->size < min_part_size) {
      return InvalidArgumentError("part " + std::to_string(part.part_number) + " of '" + k + "' is " +
                                  std::to_string(it->size) + " bytes; every part but the last needs at least " +
                                  std::to_string(min_part_size) + " (EntityTooSmall)");
    }
  }
  return Status::Ok();
}

}  // namespace strata::object

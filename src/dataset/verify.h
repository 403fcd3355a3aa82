// Verifying a packed dataset against its manifest: every shard and file is
// read in full (large ranged GETs), its size and SHA-256 compared, and every
// shard parsed to count its samples; sidecars are decoded and must agree with
// their shard. With a key, the manifest's HMAC signature must match, so an
// attacker who can write the bucket cannot also rewrite the manifest to hide
// a poisoned shard. Thread-safe if the store is.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "dataset/manifest.h"
#include "object/object_store.h"

namespace strata::dataset {

struct VerifyOptions {
  // Shard names under the prefix (brace pattern, list). With names, or when
  // the prefix has no manifest.json but holds .tar/.tfrecord shards, only
  // their structure is checked: every tar header checksum, every TFRecord
  // CRC, a full parse (there are no sizes or SHA-256 to compare against).
  std::vector<std::string> shards;
  std::string sign_key;  // non-empty: the manifest must carry a matching signature
  int parallel = 4;      // shards checked at once
  uint64_t chunk_size = 8 << 20;
};

struct Problem {
  enum class Kind {
    kMissing,
    kTruncated,
    kSizeMismatch,
    kChecksumMismatch,
    kUnparseable,
    kCountMismatch,
    kSignature,
    kUnreadable
  };
  Kind kind;
  std::string name;  // the shard or file
  std::string detail;
};
std::string_view ProblemKindName(Problem::Kind kind);

struct VerifyReport {
  Manifest manifest;
  uint64_t shards_checked = 0;
  uint64_t files_checked = 0;
  uint64_t samples = 0;
  uint64_t bytes = 0;
  bool signature_checked = false;
  bool structure_only = false;        // no manifest: parsed, not compared (VerifyOptions::shards)
  std::vector<Problem> problems;      // empty: every shard matches
  std::vector<std::string> unlisted;  // objects under the prefix the manifest does not name (warning only)
  bool ok() const { return problems.empty(); }
  // A one-line-per-problem summary naming each bad shard.
  std::string Describe() const;
};

// NotFound if there is no manifest and no shard; Corruption if it cannot be parsed (that
// is itself a verification failure). Problems with shards are reported in
// the VerifyReport, not as an error.
Result<VerifyReport> Verify(object::ObjectStore& store, const std::string& prefix, const VerifyOptions& options = {});

}  // namespace strata::dataset

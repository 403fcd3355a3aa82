// The dataset's JSON records. One struct, two files:
//  - index.json: what readers need (format, fields, classes, and per shard
//    its name, sample count, size and sidecar), like MosaicML's index.json;
//  - manifest.json: the same plus SHA-256 of every shard and file, totals,
//    created_by, and optionally an HMAC-SHA256 signature, written last.
// The signature covers the canonical serialisation (nlohmann's sorted-key
// dump) of the manifest without its "signature" member, so it survives
// reformatting but not any change of content. Pure functions, thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "dataset/sample.h"

namespace strata::dataset {

inline constexpr std::string_view kManifestName = "manifest.json";
inline constexpr std::string_view kIndexName = "index.json";

struct ShardEntry {
  std::string name;  // relative to the dataset prefix
  uint64_t size = 0;
  uint64_t samples = 0;
  std::string sha256;   // hex; empty in index.json
  std::string sidecar;  // ".idx" name for tar/TFRecord, empty for indexed
  // Hex CRC-32C of the shard (big-endian, as S3's x-amz-checksum-crc32c);
  // empty in index.json and in manifests written before it was recorded.
  // 8x cheaper than SHA-256 (12 vs 1.5 GB/s here): what the loader checks
  // fetched bytes against by default (see loader::ShardVerify).
  std::string crc32c;
};

struct FileEntry {
  std::string name;
  uint64_t size = 0;
  std::string sha256;
};

struct Manifest {
  ShardFormat format = ShardFormat::kTar;
  std::string compression = "none";  // "none" or "zstd"
  std::string created_by;
  std::vector<std::string> fields;   // union over samples, sorted
  std::vector<std::string> classes;  // ImageFolder class names (index = label), if any
  std::vector<ShardEntry> shards;
  std::vector<FileEntry> files;  // sidecars and index.json (manifest only)
  std::string signature;         // hex HMAC-SHA256; set by Parse, ignored by Encode
  // Shard sets opened without an index: each shard's scanned version (ETag),
  // so a rewritten shard makes another dataset. Not serialised; else empty.
  std::vector<std::string> etags;

  uint64_t total_samples() const;
  uint64_t total_shard_bytes() const;
};

// index.json: no hashes, no files, no signature.
std::string EncodeIndex(const Manifest& m);
// manifest.json, signed when `sign_key` is non-empty.
std::string EncodeManifest(const Manifest& m, std::string_view sign_key = {});
// Parses either file. Corruption naming `name` on malformed JSON, missing or
// mistyped members, unsafe shard names ("..", absolute) or inconsistent totals.
Result<Manifest> ParseManifest(std::string_view json, const std::string& name);
// Corruption if the manifest is unsigned or the signature does not match.
Status CheckManifestSignature(std::string_view json, std::string_view key, const std::string& name);

}  // namespace strata::dataset

// Samples and shard formats shared by every codec. A Sample is one training
// example: a key plus named fields (WebDataset's "000123.jpg" is key "000123",
// field "jpg"). Plain value types; not synchronised.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/buffer.h"
#include "base/status.h"

namespace strata::dataset {

struct Field {
  std::string name;
  Buffer data;
};

struct Sample {
  std::string key;
  std::vector<Field> fields;  // writers emit them in this order; pack sorts by name

  const Buffer* Find(std::string_view name) const;
  uint64_t PayloadBytes() const;  // sum of field sizes
};

enum class ShardFormat { kTar, kTfRecord, kIndexed };

std::string_view FormatName(ShardFormat format);      // "tar", "tfrecord", "indexed"
std::string_view ShardExtension(ShardFormat format);  // ".tar", ".tfrecord", ".sds"
Result<ShardFormat> ParseShardFormat(std::string_view name);

// WebDataset's rule: the key is the path up to the first dot of the last path
// component, the field the rest ("a/b.seg.png" -> "a/b", "seg.png"). False when
// the last component has no dot (WebDataset skips such members) or an empty key.
bool SplitSampleName(std::string_view path, std::string_view* key, std::string_view* field);

// Limits every reader enforces before allocating, so a lying length in a
// corrupt or hostile shard is an error, never an allocation of that size.
struct ReadLimits {
  uint64_t max_field_bytes = 2ull << 30;  // one tar member / record / field
  uint64_t max_name_bytes = 64 << 10;     // member names, pax records, keys
  uint64_t max_fields = 1 << 16;          // fields per sample
  // Per-record payload checksums (indexed records, TFRecord payloads). False
  // only for bytes the caller already verified whole (the loader's disk cache
  // checks its XXH3 on every load): one verification per byte, not two.
  // Headers and lengths are still checked: they steer the parser.
  bool verify_checksums = true;
};

}  // namespace strata::dataset

// The ".idx" sidecar that gives tar and TFRecord shards random access: the
// byte offset where each sample starts, plus the end of the last one, so
// sample i is the ranged read [offsets[i], offsets[i+1]). Layout (LE):
// "STRIDX01" | u32 shard format | u32 0 | u64 count | u64 shard size |
// (count+1) x u64 offsets | u32 masked CRC32C of everything before it.
#pragma once

#include <cstdint>
#include <vector>

#include "base/buffer.h"
#include "base/status.h"
#include "dataset/sample.h"

namespace strata::dataset {

struct OffsetIndex {
  ShardFormat format = ShardFormat::kTar;
  uint64_t shard_size = 0;
  std::vector<uint64_t> offsets;  // count + 1 entries, non-decreasing, last <= shard_size

  uint64_t count() const { return offsets.empty() ? 0 : offsets.size() - 1; }
};

Buffer EncodeOffsetIndex(const OffsetIndex& index);
// Corruption (naming `name`) on a bad magic, size, CRC or offsets.
Result<OffsetIndex> DecodeOffsetIndex(const Buffer& data, const std::string& name);
std::string SidecarName(const std::string& shard_name);  // shard + ".idx"

}  // namespace strata::dataset

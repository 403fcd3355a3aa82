// The on-disk (and in-bucket) checkpoint format: tensor descriptions, the
// safetensors shard header, per-rank manifests, the global manifest and the
// commit markers. Pure functions and value types; every parser is
// bounds-checked (and fuzzed) and reports Corruption naming what is wrong.
//
// Layout of one checkpoint (in a local directory or under a store prefix):
//   step-000000123/rank-00000-shard-00000.safetensors   shards (safetensors)
//   step-000000123/rank-00000.manifest.json             tensors + shards of rank 0
//   step-000000123/rank-00000.COMMITTED                 sha256 of that manifest
//   step-000000123/manifest.json                        step, world size, rank manifests
//   step-000000123/COMMITTED                            sha256 of manifest.json (last)
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/buffer.h"
#include "base/clock.h"
#include "base/status.h"

namespace strata::ckpt {

// A tensor (or blob: dtype "U8", shape {n}) handed to Save. The bytes at
// `data` must stay unchanged until Save returns (they are copied then).
struct TensorView {
  std::string name;
  std::string dtype;           // safetensors names: F64 F32 F16 BF16 I64 I32 I16 I8 U8 BOOL ...
  std::vector<int64_t> shape;  // empty = scalar
  const void* data = nullptr;
  uint64_t size = 0;  // bytes; must equal numel * DTypeSize(dtype)
};

// Bytes per element of a safetensors dtype; 0 if unknown.
size_t DTypeSize(std::string_view dtype);
// Checks name, dtype, shape and size agree. InvalidArgument naming the tensor.
Status ValidateTensor(const TensorView& t);

// One tensor inside a shard, as recorded in the manifest.
struct TensorEntry {
  std::string name;
  std::string dtype;
  std::vector<int64_t> shape;
  uint32_t shard = 0;   // index into RankManifest::shards
  uint64_t offset = 0;  // absolute byte offset within the shard file
  uint64_t size = 0;
  uint64_t xxh3 = 0;  // XxHash3 of the tensor bytes: lets verify name the tensor
};

struct ShardEntry {
  std::string file;  // name within the step directory
  uint64_t size = 0;
  std::string sha256;  // hex
  // XxHash3 of the whole file: lets Load verify every byte at memory speed
  // (absent in manifests written before it existed).
  std::optional<uint64_t> xxh3;
};

struct RankManifest {
  int64_t step = 0;
  int rank = 0;
  int world_size = 1;
  std::string attempt;       // the save attempt this part belongs to (WriterOptions::attempt)
  int64_t wall_time_ms = 0;  // Unix epoch milliseconds
  std::string metadata;      // user metadata, JSON text
  std::vector<ShardEntry> shards;
  std::vector<TensorEntry> tensors;
};

struct RankRef {
  int rank = 0;
  std::string manifest;  // file name
  std::string sha256;    // of the manifest file
};

struct GlobalManifest {
  int64_t step = 0;
  int world_size = 1;
  std::string attempt;  // every rank part carries it
  int64_t wall_time_ms = 0;
  std::string metadata;  // rank 0's user metadata, JSON text
  std::vector<RankRef> ranks;
};

inline constexpr int kFormatVersion = 1;
inline constexpr uint64_t kMaxManifestBytes = 256ull << 20;
inline constexpr uint64_t kMaxHeaderBytes = 100ull << 20;  // safetensors' own limit
inline constexpr size_t kMaxAttemptBytes = 256;
inline constexpr std::string_view kCommitFile = "COMMITTED";
inline constexpr std::string_view kManifestFile = "manifest.json";

std::string StepDirName(int64_t step);  // "step-000000123"
// Parses "step-000000123" (exactly: prefix, digits only); nullopt otherwise.
std::optional<int64_t> ParseStepDirName(std::string_view name);
std::string ShardFileName(int rank, int shard);  // rank-00000-shard-00000.safetensors
std::string RankManifestName(int rank);          // rank-00000.manifest.json
std::string RankCommitName(int rank);            // rank-00000.COMMITTED

std::string EncodeRankManifest(const RankManifest& m);
Result<RankManifest> ParseRankManifest(std::string_view text);
std::string EncodeGlobalManifest(const GlobalManifest& m);
Result<GlobalManifest> ParseGlobalManifest(std::string_view text);

// A commit marker: "strata-ckpt v1 sha256=<hex of the manifest>\n".
std::string EncodeCommit(std::string_view manifest_sha256_hex);
Result<std::string> ParseCommit(std::string_view text);  // the hex digest

// safetensors: 8-byte little-endian header length N, N bytes of JSON (padded
// with spaces to a multiple of 8), then the data; data_offsets are relative
// to the end of the header.
struct SafetensorsTensor {
  std::string name;
  std::string dtype;
  std::vector<int64_t> shape;
  uint64_t begin = 0, end = 0;  // relative to the data section
};
struct SafetensorsHeader {
  uint64_t data_start = 0;                 // 8 + N
  std::vector<SafetensorsTensor> tensors;  // in data order
  std::string metadata_json;               // the __metadata__ object (string values), or empty
};
// The header bytes (length prefix included) for tensors laid out back to back in order.
std::string EncodeSafetensorsHeader(const std::vector<SafetensorsTensor>& tensors,
                                    const std::vector<std::pair<std::string, std::string>>& metadata);
// Parses the prefix of a shard file. `file_size` bounds every offset.
Result<SafetensorsHeader> ParseSafetensorsHeader(std::string_view bytes, uint64_t file_size);

}  // namespace strata::ckpt

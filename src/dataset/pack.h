// Packing a tree of small files (a local directory or a bucket prefix, via
// any ObjectStore) into shards. Input is listed and sorted, grouped into
// samples by WebDataset's key rule, planned into shards of about
// `shard_size` bytes before any data is read, then written `parallel` shards
// at a time, so the output is byte-identical for the same input whatever the
// parallelism. ImageFolder trees ("class/file.jpg") get a "cls" field holding
// the class index (classes sorted by name). index.json and the shard files
// come first; manifest.json is written last (one atomic Put), so its presence
// means the dataset is complete. Thread-safe if the stores are.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "dataset/manifest.h"
#include "dataset/sample.h"
#include "object/object_store.h"

namespace strata::dataset {

enum class ImageFolderMode { kAuto, kOn, kOff };

struct PackOptions {
  ShardFormat format = ShardFormat::kTar;
  uint64_t shard_size = 64ull << 20;  // target; a shard holds at least one sample
  bool zstd = false;                  // indexed format only
  int zstd_level = 3;
  int parallel = 4;            // shards written at once
  int fetch_concurrency = 16;  // input GETs in flight per shard
  uint64_t part_size = 16 << 20;
  ImageFolderMode imagefolder = ImageFolderMode::kAuto;
  std::string shard_prefix = "shard-";
  std::string sign_key;  // non-empty: HMAC-SHA256-sign the manifest
  std::string created_by = "strata";
  // Called once after planning, then after every sample (from worker threads).
  std::function<void(uint64_t samples, uint64_t bytes, uint64_t shards)> on_plan;
  std::function<void(uint64_t samples, uint64_t bytes)> on_progress;
};

struct PackResult {
  Manifest manifest;
  uint64_t input_files = 0;
  uint64_t input_bytes = 0;
  uint64_t output_bytes = 0;         // shards only
  std::vector<std::string> skipped;  // input keys that are not sample members (no extension, hidden)
  double seconds = 0;
};

// `dst_prefix` is prepended to every output name ("" or ending in '/').
// InvalidArgument for bad options or an input with no samples; errors from
// either store name the object.
Result<PackResult> Pack(object::ObjectStore& src, const std::string& src_prefix, object::ObjectStore& dst,
                        const std::string& dst_prefix, const PackOptions& options);

}  // namespace strata::dataset

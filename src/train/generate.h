// The datasets `strata bench train` and the demo read: pseudo-random samples
// of a workload's record size, as one file per sample and packed into shards,
// with a marker recording the parameters so a later run can reuse them.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "base/status.h"
#include "dataset/sample.h"
#include "object/object_store.h"

namespace strata::train {

// Writes `samples` files "<prefix>files/%08d.<field>" of `record_size`
// pseudo-random bytes (the sample's index in the first 8 bytes), then packs
// them with dataset::Pack into "<prefix>shards/" (`samples_per_file` per
// shard), so the same samples exist both as individual files and as shards.
// Without `write_files` the shards are packed from the same bytes made on
// the fly (half the disk; nothing under files/).
struct GenerateOptions {
  uint64_t samples = 0;
  uint64_t record_size = 0;
  uint64_t samples_per_file = 1;
  dataset::ShardFormat format = dataset::ShardFormat::kTfRecord;
  std::string field = "bin";
  int parallel = 4;
  uint64_t seed = 1;
  bool write_files = true;
};
struct GenerateResult {
  uint64_t samples = 0;
  uint64_t shards = 0;
  uint64_t file_bytes = 0;
  uint64_t shard_bytes = 0;
  double seconds = 0;
};
Result<GenerateResult> Generate(object::ObjectStore& store, const std::string& prefix, const GenerateOptions& options);

// The parameters `options` record in the marker "<prefix>bench-train.json".
nlohmann::json GeneratedWith(const GenerateOptions& options);
// Whether "<prefix>" holds shards generated with these parameters (its marker
// says so), so a run may reuse them instead of generating again.
bool GeneratedAlready(object::ObjectStore& store, const std::string& prefix, const GenerateOptions& options);
// Writes the marker, after Generate succeeded.
Status MarkGenerated(object::ObjectStore& store, const std::string& prefix, const GenerateOptions& options);

}  // namespace strata::train

// A packed dataset opened for reading: its index (index.json, else
// manifest.json), random access to global sample i (one ranged GET after the
// shard's sidecar/header is loaded once and cached), and sequential streams
// over whole shards. Thread-safe: Get may be called from many threads.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "dataset/byte_source.h"
#include "dataset/manifest.h"
#include "dataset/shard.h"
#include "object/object_store.h"

namespace strata::dataset {

class Dataset {
 public:
  // NotFound if neither index.json nor manifest.json exists under `prefix`.
  static Result<std::unique_ptr<Dataset>> Open(ObjectStorePtr store, std::string prefix);

  const Manifest& index() const { return index_; }
  uint64_t size() const { return cumulative_.back(); }
  // Which shard holds global sample i, and its index inside that shard.
  std::pair<size_t, uint64_t> Locate(uint64_t i) const;
  Result<Sample> Get(uint64_t i);
  // Global sample i's bytes as stored in its shard (ShardRandomReader::GetRecord).
  Result<Buffer> GetRecord(uint64_t i);
  // Reads shard `shard` front to back; call Next() on the returned stream.
  struct ShardStream {
    std::unique_ptr<ObjectSource> source;
    std::unique_ptr<SampleStream> samples;
  };
  Result<ShardStream> OpenShard(size_t shard, StreamOptions options = {}) const;
  std::string ShardKey(size_t shard) const { return prefix_ + index_.shards[shard].name; }

 private:
  Dataset(ObjectStorePtr store, std::string prefix) : store_(std::move(store)), prefix_(std::move(prefix)) {}
  Result<const ShardRandomReader*> Reader(size_t shard);
  // The reader of global sample i's shard and i's index in it; InvalidArgument past the end.
  Result<std::pair<const ShardRandomReader*, uint64_t>> ReaderOf(uint64_t i);

  ObjectStorePtr store_;
  std::string prefix_;
  Manifest index_;
  std::vector<uint64_t> cumulative_;  // cumulative_[k] = samples before shard k
  // One lock per shard: opening a shard (a GET) must not stall readers of others.
  std::unique_ptr<std::mutex[]> locks_;
  std::vector<std::unique_ptr<ShardRandomReader>> readers_;
};

// `strata inspect`: shards, counts, fields, and with `sample` set a summary of
// that sample's fields (sizes, detected type, a text or hex preview).
struct InspectOptions {
  std::optional<uint64_t> sample;
  size_t max_shards_listed = 20;
};
Result<std::string> Inspect(ObjectStorePtr store, const std::string& prefix, const InspectOptions& options = {});
// One line per field: "jpg  104857 bytes  JPEG image  ff d8 ff e0 ..."
std::string DescribeSample(const Sample& sample);

}  // namespace strata::dataset

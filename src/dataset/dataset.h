// A packed dataset opened for reading: its index (index.json, else
// manifest.json, else a scan of the tar/TFRecord shards found: shard_set.h),
// random access to global sample i (one ranged GET after the
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
#include "dataset/shard_set.h"
#include "object/object_store.h"

namespace strata::dataset {

struct OpenOptions {
  // Shard names under the prefix (a brace pattern's or a list's); empty: the
  // index, else every shard directly under the prefix.
  std::vector<std::string> shards;
  // How shards without an index are scanned (once per ETag; see shard_set.h).
  ScanOptions scan;
};

class Dataset {
 public:
  // NotFound if there is no index.json, manifest.json or shard under `prefix`.
  // Named shards listed in the prefix's index.json use it; otherwise they are
  // scanned (Corruption naming a bad shard unless options.scan.skip_corrupt).
  static Result<std::unique_ptr<Dataset>> Open(object::ObjectStorePtr store, std::string prefix,
                                               const OpenOptions& options = {});
  // This dataset again, reading through `store`: its index and scan as they
  // are, with no store request (a process that opened it already, or the one
  // a DataLoader worker was forked from, hands them on). Only the immutable
  // index is read from `this`, never its store or readers.
  std::unique_ptr<Dataset> Reopen(object::ObjectStorePtr store) const;
  // Opened by scanning shards (no index): how many were read now (not from a
  // cache) and which were skipped as corrupt.
  bool scanned() const { return scanned_; }
  uint64_t shards_scanned() const { return shards_scanned_; }
  const std::vector<std::string>& skipped_shards() const { return skipped_; }

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
  Dataset(object::ObjectStorePtr store, std::string prefix) : store_(std::move(store)), prefix_(std::move(prefix)) {}
  Result<const ShardRandomReader*> Reader(size_t shard);
  // The reader of global sample i's shard and i's index in it; InvalidArgument past the end.
  Result<std::pair<const ShardRandomReader*, uint64_t>> ReaderOf(uint64_t i);

  object::ObjectStorePtr store_;
  std::string prefix_;
  Manifest index_;
  std::vector<uint64_t> cumulative_;  // cumulative_[k] = samples before shard k
  // One lock per shard: opening a shard (a GET) must not stall readers of others.
  std::unique_ptr<std::mutex[]> locks_;
  std::vector<std::unique_ptr<ShardRandomReader>> readers_;
  std::vector<std::vector<uint64_t>> offsets_;  // per shard, when scanned
  bool scanned_ = false;
  uint64_t shards_scanned_ = 0;
  std::vector<std::string> skipped_;
};

// `strata inspect`: shards, counts, fields, and with `sample` set a summary of
// that sample's fields (sizes, detected type, a text or hex preview).
struct InspectOptions {
  OpenOptions open;
  std::optional<uint64_t> sample;
  size_t max_shards_listed = 20;
};
Result<std::string> Inspect(object::ObjectStorePtr store, const std::string& prefix,
                            const InspectOptions& options = {});
// One line per field: "jpg  104857 bytes  JPEG image  ff d8 ff e0 ..."
std::string DescribeSample(const Sample& sample);

}  // namespace strata::dataset

// Pieces shared by the loader's .cc files (not part of the public API).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "base/buffer_pool.h"
#include "base/mutex.h"
#include "dataset/dataset.h"
#include "dataset/tfrecord.h"
#include "loader/epoch_head.h"
#include "loader/plan.h"
#include "loader/shard_cache.h"
#include "loader/streaming_dataset.h"

namespace strata::loader {

// One shard parsed in memory: samples (and TFRecord Examples) whose field
// Buffers are slices of `bytes` where the format stores them uncompressed.
struct ParsedShard {
  Buffer bytes;
  std::vector<dataset::Sample> samples;
  std::vector<dataset::Example> examples;  // TFRecord shards only, parallel to samples
  uint64_t extra_bytes = 0;                // memory held beyond `bytes` (estimate, for the RAM bound)
};

// Corruption naming `key` if the bytes do not parse or hold another number
// of samples than `expected`. `verified`: the cache checked the bytes whole
// as it loaded them (ShardParser), so per-record checksums are skipped.
Result<std::shared_ptr<const ParsedShard>> ParseShard(dataset::ShardFormat format, Buffer bytes, const std::string& key,
                                                      uint64_t expected, uint64_t first_index, bool verified = false);

class DatasetImpl;

// The cache's parser for shard `shard` of `ds` (GetParsed): an exception while
// parsing (a hostile shard, bad_alloc) fails the shard, not the process.
ShardParser ShardParserFor(const DatasetImpl& ds, size_t shard);

// Decodes one sample's fields per the options. `example` is its TFRecord Example, if any.
Result<DecodedSample> DecodeSample(const StreamingOptions& options, uint64_t index, const dataset::Sample& sample,
                                   const dataset::Example* example);

std::unique_ptr<Iterator> MakeIterator(std::shared_ptr<DatasetImpl> ds, size_t worker, const State& state);

class DatasetImpl : public StreamingDataset, public std::enable_shared_from_this<DatasetImpl> {
 public:
  static Result<std::shared_ptr<DatasetImpl>> Make(object::ObjectStorePtr store, std::string prefix,
                                                   StreamingOptions options, std::vector<std::string> shards = {});

  const dataset::Manifest& index() const override { return ds_->index(); }
  const StreamingOptions& options() const override { return options_; }
  uint64_t size() const override { return ds_->size(); }
  uint64_t RankSize(size_t rank) const override;
  std::vector<uint64_t> EpochOrder(uint64_t epoch, uint64_t streams = 1) const override {
    return *Order(epoch, streams);
  }
  std::string fingerprint() const override { return fingerprint_; }
  Result<std::unique_ptr<Iterator>> Iterate(size_t worker, const State& state) override;
  Result<DecodedSample> Get(uint64_t index) override;
  void FlushCacheWrites() override { cache_->FlushDiskWrites(); }

  // Shared, memoised epoch order of `streams` (the last few are kept).
  std::shared_ptr<const std::vector<uint64_t>> Order(uint64_t epoch, uint64_t streams = 1) const;
  PartitionSpec Partition() const;
  std::pair<size_t, uint64_t> Locate(uint64_t index) const { return ds_->Locate(index); }
  uint64_t ShardFirst(size_t shard) const { return first_[shard]; }
  std::string ShardKey(size_t shard) const { return ds_->ShardKey(shard); }
  ShardCache& cache() { return *cache_; }
  EpochHead& head() { return *head_; }

 private:
  DatasetImpl() = default;

  object::ObjectStorePtr store_;
  std::string prefix_;
  StreamingOptions options_;
  std::unique_ptr<dataset::Dataset> ds_;
  // The index with the shards' content hashes (manifest.json's, when it has them): what the
  // fingerprint and the cache's checks are made of. Shared with handles reopened from this one.
  std::shared_ptr<const dataset::Manifest> hashed_;
  std::vector<uint64_t> shard_samples_;
  std::vector<uint64_t> first_;
  OrderSpec spec_;
  std::string fingerprint_;
  std::shared_ptr<ShardCache> cache_;
  // Lets the buffer pool keep what one step cycles (see Make).
  std::unique_ptr<BufferPoolReservation> pool_reserve_;
  mutable Mutex order_mu_;
  mutable std::vector<std::pair<std::pair<uint64_t, uint64_t>, std::shared_ptr<const std::vector<uint64_t>>>> orders_
      GUARDED_BY(order_mu_);  // ((epoch, streams), order)
  // Last: it goes first, while the cache and index its fetches use are still there.
  std::unique_ptr<EpochHead> head_;
};

}  // namespace strata::loader

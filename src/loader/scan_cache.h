// Scans of shards opened without an index (dataset/shard_set.h), kept on
// disk as one small CRC-checked file per shard version (ETag), so a second
// process (a DataLoader worker spawned later, the next job) never rescans.
// A damaged or unreadable file is a miss; a failed write is only a lost
// saving. Thread-safe.
#pragma once

#include <string>

#include "dataset/shard_set.h"

namespace strata::loader {

class DiskScanCache : public dataset::ScanCache {
 public:
  explicit DiskScanCache(std::string dir) : dir_(std::move(dir)) {}
  std::optional<dataset::ShardScan> Lookup(const std::string& id) override;
  void Store(const std::string& id, const dataset::ShardScan& scan) override;

 private:
  std::string dir_;
};

}  // namespace strata::loader

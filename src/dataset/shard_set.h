// Shard sets as users already have them: WebDataset tar shards or TFRecord
// files with no index.json, named by a prefix, a brace pattern
// ("train-{000000..000999}.tar", as WebDataset writes them) or a list. Each
// shard is scanned once for where its samples start (tar: the 512-byte
// headers, hopping over member bodies with ranged reads; TFRecord: the
// length framing, each length's CRC checked), and the scan is cached keyed
// by the shard's ETag, so a later open reuses it instead of reading again.
// Pure functions are thread-safe; ScanShardSet runs scans in parallel.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/buffer.h"
#include "base/status.h"
#include "dataset/manifest.h"
#include "dataset/sample.h"
#include "object/object_store.h"

namespace strata::dataset {

// Brace expansion as WebDataset's braceexpand: "{a,b}" alternatives and
// "{000..123}" numeric ranges (zero-padded to the wider bound when either
// has a leading zero), nested and repeated. InvalidArgument on unbalanced
// braces or more than 10^6 names.
Result<std::vector<std::string>> ExpandBraces(std::string_view pattern);

// The shard format a file name implies: ".tar" -> tar, ".tfrecord",
// ".tfrecords", ".tfrec" or TensorFlow's "x.tfrecord-00000-of-00010" ->
// TFRecord; nullopt for anything else.
std::optional<ShardFormat> FormatFromName(std::string_view name);

// What a scan of one shard found.
struct ShardScan {
  ShardFormat format = ShardFormat::kTar;
  uint64_t size = 0;
  std::string etag;
  std::vector<uint64_t> offsets;    // sample starts, then the end of the last sample
  std::vector<std::string> fields;  // sorted; tar: member suffixes; TFRecord: the first record's features
  uint64_t count() const { return offsets.empty() ? 0 : offsets.size() - 1; }
};

// Scans `key` (whose HEAD is `info`) with ranged reads carrying If-Match.
// Corruption naming the shard on a bad header, a bad length CRC or a
// truncated shard.
Result<ShardScan> ScanShard(object::ObjectStore& store, const std::string& key, ShardFormat format,
                            const object::ObjectInfo& info, ReadLimits limits = {});

Buffer EncodeShardScan(const ShardScan& scan);
Result<ShardScan> DecodeShardScan(const Buffer& data, const std::string& name);

// Where scans are kept between opens (the loader keeps them on disk beside
// its shard cache). `id` names (store, key, size, ETag). Thread-safe.
class ScanCache {
 public:
  virtual ~ScanCache() = default;
  virtual std::optional<ShardScan> Lookup(const std::string& id) = 0;
  virtual void Store(const std::string& id, const ShardScan& scan) = 0;
};

struct ScanOptions {
  size_t parallel = 16;        // shards scanned (and HEADs) at once
  bool skip_corrupt = false;   // drop shards whose scan fails with Corruption instead of failing
  ScanCache* cache = nullptr;  // besides the process-wide memory of scans
  ReadLimits limits;
};

struct ScannedSet {
  Manifest manifest;                           // shards with name, size and samples, their etags; no sidecars
  std::vector<std::vector<uint64_t>> offsets;  // per manifest shard
  std::vector<std::string> skipped;            // shards dropped by skip_corrupt, with the reason
  uint64_t scanned = 0;                        // shards actually read (not found in a cache)
};

// `names` relative to `prefix`; empty: every shard directly under `prefix`
// (NotFound when there is none). InvalidArgument when formats are mixed.
Result<ScannedSet> ScanShardSet(object::ObjectStore& store, const std::string& prefix, std::vector<std::string> names,
                                const ScanOptions& options = {});

// Forgets the process-wide memory of scans, as a new process starts (tests).
void ClearScanMemo();

// A process-wide id for a shard version: (store URL, key, size, ETag).
std::string ScanId(const object::ObjectStore& store, const std::string& key, const object::ObjectInfo& info);

}  // namespace strata::dataset

// Format-independent shard access: a writer for any format, a sequential
// sample stream over any ByteSource, and random access to sample i of a shard
// in an ObjectStore with one ranged GET (after loading the tar/TFRecord
// ".idx" sidecar or the indexed shard's header once). Writers and streams
// are not thread-safe; ShardRandomReader::Get is (it only reads immutable
// state and calls the thread-safe store).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "dataset/byte_source.h"
#include "dataset/indexed.h"
#include "dataset/offset_index.h"
#include "dataset/sample.h"
#include "dataset/tar.h"
#include "object/object_store.h"

namespace strata::dataset {

struct ShardWriteOptions {
  ShardFormat format = ShardFormat::kTar;
  bool zstd = false;  // indexed only
  int zstd_level = 3;
  TarWriteOptions tar;
};

class ShardWriter {
 public:
  virtual ~ShardWriter() = default;
  static std::unique_ptr<ShardWriter> Make(ByteSink& sink, const ShardWriteOptions& options);
  virtual Status Add(const Sample& sample) = 0;
  // Completes the shard in the sink. Returns the ".idx" sidecar bytes for
  // tar and TFRecord shards, an empty Buffer for indexed shards (they carry their own).
  virtual Result<Buffer> Finish() = 0;
  uint64_t samples() const { return samples_; }

 protected:
  uint64_t samples_ = 0;
};

// Bytes a sample with these field sizes adds to a shard (before compression),
// so shards can be planned before any data is read.
uint64_t EstimateSampleBytes(ShardFormat format, std::string_view key,
                             const std::vector<std::pair<std::string, uint64_t>>& fields);
uint64_t ShardOverheadBytes(ShardFormat format);

class SampleStream {
 public:
  virtual ~SampleStream() = default;
  virtual Result<std::optional<Sample>> Next() = 0;
};
std::unique_ptr<SampleStream> MakeSampleStream(ShardFormat format, ByteSource& source, ReadLimits limits = {});

class ShardRandomReader {
 public:
  // One GET for the sidecar (tar, TFRecord) or the header (indexed; a second
  // GET only if the header is larger than the first 64 KiB).
  static Result<std::unique_ptr<ShardRandomReader>> Open(object::ObjectStore& store, std::string key,
                                                         ShardFormat format, ReadLimits limits = {});
  // Over sample offsets already known (a scan of a shard without a sidecar): no GET.
  static std::unique_ptr<ShardRandomReader> FromOffsets(object::ObjectStore& store, std::string key, ShardFormat format,
                                                        std::vector<uint64_t> offsets, ReadLimits limits = {});
  uint64_t size() const { return offsets_.empty() ? 0 : offsets_.size() - 1; }
  // Sample i with one ranged GET. InvalidArgument if i >= size().
  Result<Sample> Get(uint64_t i) const;
  // Sample i's bytes as stored (a tar member group, a framed TFRecord
  // record, an indexed record), with one ranged GET.
  Result<Buffer> GetRecord(uint64_t i) const;
  const std::vector<std::string>& fields() const { return header_.fields; }

 private:
  ShardRandomReader(object::ObjectStore& store, std::string key, ShardFormat format, ReadLimits limits)
      : store_(store), key_(std::move(key)), format_(format), limits_(limits) {}
  object::ObjectStore& store_;
  std::string key_;
  ShardFormat format_;
  ReadLimits limits_;
  std::vector<uint64_t> offsets_;
  IndexedHeader header_;  // indexed only
};

}  // namespace strata::dataset

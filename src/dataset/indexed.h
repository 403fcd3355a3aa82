// strata's indexed shard format (".sds"), like MosaicML's MDS: O(1) random
// access to sample i with one ranged read once the header is loaded.
// Layout (little-endian):
//   0  "STRSDS01"            8  u32 version (1)      12 u32 flags (bit 0: zstd)
//   16 u64 sample count      24 u64 data offset      32 u64 largest decoded record
//   40 u32 field count       44 u32 masked CRC32C of [0, data offset) with this field as 0
//   48 schema: per field u32 length + name
//      offsets: (count + 1) x u64, absolute; record i is [off[i], off[i+1]); off[count] = shard size
//      CRCs: count x u32, masked CRC32C of each stored record
//   data offset: records. A record is u32 key length, key, u32 field count,
//      per field (u32 schema index, u64 length), then the field bytes; with the
//      zstd flag each record is one zstd frame (per record, not per shard, so
//      random access stays one ranged read).
// Writers buffer one shard in memory (the header needs every offset).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "dataset/byte_source.h"
#include "dataset/sample.h"

namespace strata::dataset {

inline constexpr uint64_t kIndexedFixedHeader = 48;
inline constexpr uint32_t kIndexedFlagZstd = 1;

struct IndexedHeader {
  uint32_t flags = 0;
  uint64_t sample_count = 0;
  uint64_t data_offset = 0;
  uint64_t max_record_size = 0;
  std::vector<std::string> fields;
  std::vector<uint64_t> offsets;  // sample_count + 1
  std::vector<uint32_t> crcs;     // sample_count
};

// From the first kIndexedFixedHeader bytes: how many bytes the full header
// (schema + tables) takes, after checking it against the shard's size.
Result<uint64_t> IndexedHeaderSize(const Buffer& fixed, uint64_t shard_size, const std::string& name,
                                   ReadLimits limits = {});
// Parses exactly the first IndexedHeaderSize() bytes of the shard.
Result<IndexedHeader> ParseIndexedHeader(const Buffer& header, uint64_t shard_size, const std::string& name,
                                         ReadLimits limits = {});
// Checks record `index`'s CRC, decompresses if needed, and decodes it.
Result<Sample> DecodeIndexedRecord(const Buffer& stored, const IndexedHeader& header, uint64_t index,
                                   const std::string& name, ReadLimits limits = {});

struct IndexedWriteOptions {
  bool zstd = false;
  int zstd_level = 3;
};

class IndexedWriter {
 public:
  explicit IndexedWriter(ByteSink& sink, IndexedWriteOptions options = {});
  ~IndexedWriter();
  Status Add(const Sample& sample);  // encodes (and compresses) now; bytes wait for Finish
  Status Finish();                   // header + tables + records to the sink
  uint64_t buffered_bytes() const { return buffered_; }

 private:
  struct ZstdCtx;
  ByteSink& sink_;
  IndexedWriteOptions options_;
  std::unique_ptr<ZstdCtx> zstd_;
  std::vector<std::string> fields_;
  std::vector<Buffer> records_;
  std::vector<uint32_t> crcs_;
  uint64_t buffered_ = 0;
  uint64_t max_record_ = 0;
};

// Reads the header, then records front to back.
class IndexedSampleReader {
 public:
  explicit IndexedSampleReader(ByteSource& source, ReadLimits limits = {}) : src_(source), limits_(limits) {}
  Result<std::optional<Sample>> Next();
  const IndexedHeader* header() const { return header_ ? &*header_ : nullptr; }

 private:
  ByteSource& src_;
  ReadLimits limits_;
  std::optional<IndexedHeader> header_;
  uint64_t next_ = 0;
};

// Largest record size the encoder produces for `sample` (uncompressed).
uint64_t IndexedRecordSize(const Sample& sample);

}  // namespace strata::dataset

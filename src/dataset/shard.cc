#include "dataset/shard.h"

#include "base/utf8.h"
#include "dataset/tfrecord.h"

namespace strata::dataset {
namespace {

// Tar and TFRecord writers record where each sample starts for the sidecar.
class TarShardWriter : public ShardWriter {
 public:
  TarShardWriter(ByteSink& sink, TarWriteOptions options) : sink_(sink), writer_(sink, options) {}
  Status Add(const Sample& sample) override {
    offsets_.push_back(sink_.bytes_written());
    STRATA_RETURN_IF_ERROR(writer_.AddSample(sample));
    ++samples_;
    return Status::Ok();
  }
  Result<Buffer> Finish() override {
    offsets_.push_back(sink_.bytes_written());
    STRATA_RETURN_IF_ERROR(writer_.Finish());
    return EncodeOffsetIndex({ShardFormat::kTar, sink_.bytes_written(), offsets_});
  }

 private:
  ByteSink& sink_;
  TarWriter writer_;
  std::vector<uint64_t> offsets_;
};

class TfRecordShardWriter : public ShardWriter {
 public:
  explicit TfRecordShardWriter(ByteSink& sink) : sink_(sink), writer_(sink) {}
  Status Add(const Sample& sample) override {
    for (const Field& f : sample.fields) {
      if (!IsValidUtf8(f.name)) {
        return InvalidArgumentError("sample '" + sample.key + "': field name '" + f.name +
                                    "' is not valid UTF-8, which a tf.train.Example feature name must be; "
                                    "rename it or pack as tar");
      }
    }
    offsets_.push_back(sink_.bytes_written());
    STRATA_RETURN_IF_ERROR(writer_.Write(Buffer::FromString(EncodeExample(SampleToExample(sample)))));
    ++samples_;
    return Status::Ok();
  }
  Result<Buffer> Finish() override {
    offsets_.push_back(sink_.bytes_written());
    return EncodeOffsetIndex({ShardFormat::kTfRecord, sink_.bytes_written(), offsets_});
  }

 private:
  ByteSink& sink_;
  TfRecordWriter writer_;
  std::vector<uint64_t> offsets_;
};

class IndexedShardWriter : public ShardWriter {
 public:
  IndexedShardWriter(ByteSink& sink, IndexedWriteOptions options) : writer_(sink, options) {}
  Status Add(const Sample& sample) override {
    STRATA_RETURN_IF_ERROR(writer_.Add(sample));
    ++samples_;
    return Status::Ok();
  }
  Result<Buffer> Finish() override {
    STRATA_RETURN_IF_ERROR(writer_.Finish());
    return Buffer();
  }

 private:
  IndexedWriter writer_;
};

template <typename Reader>
class Stream : public SampleStream {
 public:
  Stream(ByteSource& source, ReadLimits limits) : reader_(source, limits) {}
  Result<std::optional<Sample>> Next() override { return reader_.Next(); }

 private:
  Reader reader_;
};

uint64_t VarintSize(uint64_t v) {
  uint64_t n = 1;
  while (v >= 0x80) v >>= 7, ++n;
  return n;
}

}  // namespace

std::unique_ptr<ShardWriter> ShardWriter::Make(ByteSink& sink, const ShardWriteOptions& options) {
  switch (options.format) {
    case ShardFormat::kTar: return std::make_unique<TarShardWriter>(sink, options.tar);
    case ShardFormat::kTfRecord: return std::make_unique<TfRecordShardWriter>(sink);
    case ShardFormat::kIndexed:
      return std::make_unique<IndexedShardWriter>(sink, IndexedWriteOptions{options.zstd, options.zstd_level});
  }
  return nullptr;
}

uint64_t EstimateSampleBytes(ShardFormat format, std::string_view key,
                             const std::vector<std::pair<std::string, uint64_t>>& fields) {
  uint64_t total = 0;
  switch (format) {
    case ShardFormat::kTar:
      for (const auto& [name, size] : fields) total += TarMemberSize(std::string(key) + "." + name, size);
      return total;
    case ShardFormat::kTfRecord: {
      auto entry = [](uint64_t key_len, uint64_t value_len) {
        uint64_t list = 1 + VarintSize(value_len) + value_len;
        uint64_t feature = 1 + VarintSize(list) + list;
        uint64_t e = 1 + VarintSize(key_len) + key_len + 1 + VarintSize(feature) + feature;
        return 1 + VarintSize(e) + e;
      };
      total = entry(7, key.size());
      for (const auto& [name, size] : fields) total += entry(name.size(), size);
      return kTfRecordOverhead + 1 + VarintSize(total) + 1 + VarintSize(total) + total;
    }
    case ShardFormat::kIndexed:
      total = 8 + key.size() + 12 + 4;  // record header + offset + CRC
      for (const auto& [name, size] : fields) total += 12 + size;
      return total;
  }
  return total;
}

uint64_t ShardOverheadBytes(ShardFormat format) {
  switch (format) {
    case ShardFormat::kTar: return kTarEndSize;
    case ShardFormat::kTfRecord: return 0;
    case ShardFormat::kIndexed: return kIndexedFixedHeader + 8 + 256;
  }
  return 0;
}

std::unique_ptr<SampleStream> MakeSampleStream(ShardFormat format, ByteSource& source, ReadLimits limits) {
  switch (format) {
    case ShardFormat::kTar: return std::make_unique<Stream<TarSampleReader>>(source, limits);
    case ShardFormat::kTfRecord: return std::make_unique<Stream<TfRecordSampleReader>>(source, limits);
    case ShardFormat::kIndexed: return std::make_unique<Stream<IndexedSampleReader>>(source, limits);
  }
  return nullptr;
}

Result<std::unique_ptr<ShardRandomReader>> ShardRandomReader::Open(object::ObjectStore& store, std::string key,
                                                                   ShardFormat format, ReadLimits limits) {
  std::unique_ptr<ShardRandomReader> r(new ShardRandomReader(store, std::move(key), format, limits));
  if (format != ShardFormat::kIndexed) {
    std::string idx_key = SidecarName(r->key_);
    auto got = store.Get(idx_key);
    if (!got.ok()) return got.status().WithContext("reading the index sidecar " + idx_key);
    STRATA_ASSIGN_OR_RETURN(OffsetIndex idx, DecodeOffsetIndex(got->data, idx_key));
    if (idx.format != format) {
      return CorruptionError(idx_key + ": sidecar is for a " + std::string(FormatName(idx.format)) + " shard");
    }
    r->offsets_ = std::move(idx.offsets);
    return r;
  }
  object::GetOptions head;
  head.range = object::ByteRange::Of(0, 64 << 10);
  auto got = store.Get(r->key_, head);
  if (!got.ok()) return got.status().WithContext("reading the header of " + r->key_);
  uint64_t shard_size = got->info.size;
  STRATA_ASSIGN_OR_RETURN(uint64_t header_size, IndexedHeaderSize(got->data, shard_size, r->key_, limits));
  Buffer header = got->data.Slice(0, header_size);
  if (got->data.size() < header_size) {
    object::GetOptions rest;
    rest.range = object::ByteRange::Of(got->data.size(), header_size - got->data.size());
    rest.if_match = got->info.etag;
    auto more = store.Get(r->key_, rest);
    if (!more.ok()) return more.status().WithContext("reading the header of " + r->key_);
    header = Concat({got->data, more->data});
  }
  STRATA_ASSIGN_OR_RETURN(r->header_, ParseIndexedHeader(header, shard_size, r->key_, limits));
  r->offsets_ = r->header_.offsets;
  return r;
}

std::unique_ptr<ShardRandomReader> ShardRandomReader::FromOffsets(object::ObjectStore& store, std::string key,
                                                                  ShardFormat format, std::vector<uint64_t> offsets,
                                                                  ReadLimits limits) {
  std::unique_ptr<ShardRandomReader> r(new ShardRandomReader(store, std::move(key), format, limits));
  r->offsets_ = std::move(offsets);
  return r;
}

Result<Buffer> ShardRandomReader::GetRecord(uint64_t i) const {
  if (i >= size()) {
    return InvalidArgumentError(key_ + ": sample " + std::to_string(i) + " out of range (shard has " +
                                std::to_string(size()) + ")");
  }
  uint64_t begin = offsets_[i], len = offsets_[i + 1] - begin;
  object::GetOptions get;
  get.range = object::ByteRange::Of(begin, len);
  Buffer data;
  if (len > 0) {
    auto got = store_.Get(key_, get);
    if (!got.ok()) return got.status().WithContext("reading sample " + std::to_string(i) + " of " + key_);
    data = std::move(got->data);
  }
  if (data.size() != len) {
    return CorruptionError(key_ + ": offset " + std::to_string(begin) + ": sample " + std::to_string(i) + " needs " +
                           std::to_string(len) + " bytes but only " + std::to_string(data.size()) +
                           " exist (truncated shard?)");
  }
  return data;
}

Result<Sample> ShardRandomReader::Get(uint64_t i) const {
  STRATA_ASSIGN_OR_RETURN(Buffer data, GetRecord(i));
  const uint64_t begin = offsets_[i];
  if (format_ == ShardFormat::kIndexed) return DecodeIndexedRecord(data, header_, i, key_, limits_);
  BufferSource src(data, key_, begin);
  std::optional<Sample> sample;
  if (format_ == ShardFormat::kTar) {
    TarSampleReader reader(src, limits_);
    STRATA_ASSIGN_OR_RETURN(sample, reader.Next());
  } else {
    TfRecordSampleReader reader(src, limits_, i);
    STRATA_ASSIGN_OR_RETURN(sample, reader.Next());
  }
  if (!sample) return CorruptionError(key_ + ": offset " + std::to_string(begin) + ": no sample where the index says");
  return std::move(*sample);
}

}  // namespace strata::dataset

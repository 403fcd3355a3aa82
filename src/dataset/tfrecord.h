// TFRecord framing and tf.train.Example, by hand (no protobuf dependency).
// Record: uint64 length (LE), masked CRC32C of those 8 bytes, payload,
// masked CRC32C of the payload; both CRCs are checked and the length is
// checked against the bytes that exist before anything is allocated.
// Not thread-safe; pure functions are.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dataset/byte_source.h"
#include "dataset/sample.h"

namespace strata::dataset {

inline constexpr uint64_t kTfRecordOverhead = 16;
inline constexpr uint64_t kTfRecordHeaderBytes = 12;  // the length and its CRC

// A record's header (kTfRecordHeaderBytes at `head`): its payload length, or
// nullopt when the length's CRC does not match (a corrupt length field).
std::optional<uint64_t> DecodeTfRecordHeader(const uint8_t* head);

class TfRecordWriter {
 public:
  explicit TfRecordWriter(ByteSink& sink) : sink_(sink) {}
  Status Write(const Buffer& payload);

 private:
  ByteSink& sink_;
};

class TfRecordReader {
 public:
  explicit TfRecordReader(ByteSource& source, ReadLimits limits = {}) : src_(source), limits_(limits) {}
  // The next payload, or nullopt at a clean end of the data.
  Result<std::optional<Buffer>> Next();
  uint64_t record_offset() const { return record_offset_; }  // of the record last returned

 private:
  Status Error(uint64_t offset, const std::string& what) const;
  ByteSource& src_;
  ReadLimits limits_;
  uint64_t record_offset_ = 0;
};

// tf.train.Feature: exactly one of the lists is meaningful, per `kind`.
struct Feature {
  enum class Kind { kBytes, kFloat, kInt64 };
  Kind kind = Kind::kBytes;
  std::vector<Buffer> bytes;
  std::vector<float> floats;
  std::vector<int64_t> int64s;

  static Feature Bytes(std::vector<Buffer> v) { return {Kind::kBytes, std::move(v), {}, {}}; }
  static Feature Floats(std::vector<float> v) { return {Kind::kFloat, {}, std::move(v), {}}; }
  static Feature Int64s(std::vector<int64_t> v) { return {Kind::kInt64, {}, {}, std::move(v)}; }
};

// tf.train.Example's feature map (sorted, so encoding is deterministic).
using Example = std::map<std::string, Feature>;

// Packed encoding for int64/float lists (what TensorFlow writes).
std::string EncodeExample(const Example& example);
// Accepts packed and unpacked repeated scalars and skips unknown fields.
// Bytes values are zero-copy slices of `data`. Corruption on malformed input.
Result<Example> DecodeExample(const Buffer& data);

// Sample <-> Example: the key goes to "__key__" (bytes); each field becomes a
// one-value bytes_list, except fields named in `int64_fields` whose content is
// a decimal integer (ImageFolder's "cls"), which become int64_list.
Example SampleToExample(const Sample& sample, const std::vector<std::string>& int64_fields = {"cls"});
// Inverse: int64/float lists become space-separated decimal text, a bytes
// list of n != 1 values becomes fields "name.0".."name.<n-1>". A missing
// "__key__" gets `fallback_key`.
Sample ExampleToSample(const Example& example, std::string fallback_key);

class TfRecordSampleReader {
 public:
  // `first_index` numbers samples without "__key__" (their key is the index).
  explicit TfRecordSampleReader(ByteSource& source, ReadLimits limits = {}, uint64_t first_index = 0)
      : reader_(source, limits), src_(source), index_(first_index) {}
  Result<std::optional<Sample>> Next();
  uint64_t sample_begin() const { return begin_; }
  uint64_t sample_end() const { return end_; }

 private:
  TfRecordReader reader_;
  ByteSource& src_;
  uint64_t index_ = 0;
  uint64_t begin_ = 0, end_ = 0;
};

}  // namespace strata::dataset

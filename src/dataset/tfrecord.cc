#include "dataset/tfrecord.h"

#include <algorithm>
#include <bit>
#include <charconv>
#include <cstdio>
#include <cstring>

#include "base/coding.h"
#include "base/hash.h"
#include "base/utf8.h"

namespace strata::dataset {
namespace {

void PutVarint(std::string* out, uint64_t v) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>(v | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}
void PutTag(std::string* out, int field, int wire) { PutVarint(out, static_cast<uint64_t>(field) << 3 | wire); }
void PutLengthDelimited(std::string* out, int field, std::string_view payload) {
  PutTag(out, field, 2);
  PutVarint(out, payload.size());
  out->append(payload);
}

std::string EncodeFeature(const Feature& f) {
  std::string list;
  int kind_field = 1;
  switch (f.kind) {
    case Feature::Kind::kBytes:
      for (const Buffer& b : f.bytes) PutLengthDelimited(&list, 1, b.view());
      kind_field = 1;
      break;
    case Feature::Kind::kFloat: {
      std::string packed;
      for (float v : f.floats) PutFixed32(&packed, std::bit_cast<uint32_t>(v));
      if (!packed.empty()) PutLengthDelimited(&list, 1, packed);
      kind_field = 2;
      break;
    }
    case Feature::Kind::kInt64: {
      std::string packed;
      for (int64_t v : f.int64s) PutVarint(&packed, static_cast<uint64_t>(v));
      if (!packed.empty()) PutLengthDelimited(&list, 1, packed);
      kind_field = 3;
      break;
    }
  }
  std::string feature;
  PutLengthDelimited(&feature, kind_field, list);
  return feature;
}

// A bounds-checked protobuf wire reader over one message.
class Wire {
 public:
  Wire(const Buffer& buf, size_t begin, size_t end) : buf_(buf), pos_(begin), end_(end) {}
  bool done() const { return pos_ >= end_; }
  bool Varint(uint64_t* v) {
    *v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (pos_ >= end_) return false;
      uint8_t b = buf_.data()[pos_++];
      *v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if (!(b & 0x80)) return true;
    }
    return false;  // more than 10 bytes
  }
  // Reads a tag; field number and wire type out.
  bool Tag(uint64_t* field, int* wire) {
    uint64_t t;
    if (!Varint(&t)) return false;
    *field = t >> 3;
    *wire = static_cast<int>(t & 7);
    return *field != 0;
  }
  bool Length(size_t* begin, size_t* len) {
    uint64_t n;
    if (!Varint(&n) || n > end_ - pos_) return false;
    *begin = pos_;
    *len = n;
    pos_ += n;
    return true;
  }
  bool Fixed32(uint32_t* v) {
    if (end_ - pos_ < 4) return false;
    *v = DecodeFixed32(buf_.data() + pos_);
    pos_ += 4;
    return true;
  }
  bool SkipField(int wire) {
    uint64_t v;
    size_t b, n;
    switch (wire) {
      case 0: return Varint(&v);
      case 1:
        if (end_ - pos_ < 8) return false;
        pos_ += 8;
        return true;
      case 2: return Length(&b, &n);
      case 5:
        if (end_ - pos_ < 4) return false;
        pos_ += 4;
        return true;
      default: return false;  // groups (3, 4) and invalid types
    }
  }
  size_t pos() const { return pos_; }

 private:
  const Buffer& buf_;
  size_t pos_;
  size_t end_;
};

Status Malformed(size_t pos, const char* what) {
  return CorruptionError(std::string("malformed tf.train.Example at byte ") + std::to_string(pos) + ": " + what);
}

Status DecodeList(const Buffer& buf, size_t begin, size_t len, int kind_field, Feature* f) {
  Wire w(buf, begin, begin + len);
  f->kind = kind_field == 1 ? Feature::Kind::kBytes : kind_field == 2 ? Feature::Kind::kFloat : Feature::Kind::kInt64;
  while (!w.done()) {
    uint64_t field;
    int wire;
    if (!w.Tag(&field, &wire)) return Malformed(w.pos(), "bad tag in list");
    if (field != 1) {
      if (!w.SkipField(wire)) return Malformed(w.pos(), "bad field in list");
      continue;
    }
    if (kind_field == 1) {
      size_t b, n;
      if (wire != 2 || !w.Length(&b, &n)) return Malformed(w.pos(), "bad bytes value");
      f->bytes.push_back(buf.Slice(b, n));
    } else if (kind_field == 2) {
      uint32_t bits;
      if (wire == 5) {
        if (!w.Fixed32(&bits)) return Malformed(w.pos(), "truncated float");
        f->floats.push_back(std::bit_cast<float>(bits));
      } else if (wire == 2) {
        size_t b, n;
        if (!w.Length(&b, &n) || n % 4 != 0) return Malformed(w.pos(), "bad packed floats");
        for (size_t i = 0; i < n; i += 4) f->floats.push_back(std::bit_cast<float>(DecodeFixed32(buf.data() + b + i)));
      } else {
        return Malformed(w.pos(), "float with wrong wire type");
      }
    } else {
      uint64_t v;
      if (wire == 0) {
        if (!w.Varint(&v)) return Malformed(w.pos(), "bad int64");
        f->int64s.push_back(static_cast<int64_t>(v));
      } else if (wire == 2) {
        size_t b, n;
        if (!w.Length(&b, &n)) return Malformed(w.pos(), "bad packed int64s");
        Wire packed(buf, b, b + n);
        while (!packed.done()) {
          if (!packed.Varint(&v)) return Malformed(packed.pos(), "bad packed int64");
          f->int64s.push_back(static_cast<int64_t>(v));
        }
      } else {
        return Malformed(w.pos(), "int64 with wrong wire type");
      }
    }
  }
  return Status::Ok();
}

Status DecodeFeature(const Buffer& buf, size_t begin, size_t len, Feature* f) {
  Wire w(buf, begin, begin + len);
  while (!w.done()) {
    uint64_t field;
    int wire;
    if (!w.Tag(&field, &wire)) return Malformed(w.pos(), "bad tag in Feature");
    if (field >= 1 && field <= 3 && wire == 2) {
      size_t b, n;
      if (!w.Length(&b, &n)) return Malformed(w.pos(), "bad list length");
      *f = Feature{};  // oneof: the last one wins
      STRATA_RETURN_IF_ERROR(DecodeList(buf, b, n, static_cast<int>(field), f));
    } else if (!w.SkipField(wire)) {
      return Malformed(w.pos(), "bad field in Feature");
    }
  }
  return Status::Ok();
}

Status DecodeMapEntry(const Buffer& buf, size_t begin, size_t len, Example* out) {
  Wire w(buf, begin, begin + len);
  std::string key;
  Feature feature;
  while (!w.done()) {
    uint64_t field;
    int wire;
    size_t b, n;
    if (!w.Tag(&field, &wire)) return Malformed(w.pos(), "bad tag in map entry");
    if ((field == 1 || field == 2) && wire == 2) {
      if (!w.Length(&b, &n)) return Malformed(w.pos(), "bad map entry length");
      if (field == 1) {
        key.assign(reinterpret_cast<const char*>(buf.data() + b), n);
        // A proto3 string: protobuf itself refuses to parse one that is not UTF-8.
        if (!IsValidUtf8(key)) return Malformed(b, "feature name is not valid UTF-8");
      } else {
        feature = Feature{};
        STRATA_RETURN_IF_ERROR(DecodeFeature(buf, b, n, &feature));
      }
    } else if (!w.SkipField(wire)) {
      return Malformed(w.pos(), "bad field in map entry");
    }
  }
  (*out)[key] = std::move(feature);  // protobuf maps: the last duplicate wins
  return Status::Ok();
}

// Runs `fn(begin, len)` for each length-delimited field 1 of the message.
template <typename Fn>
Status ForEachField1(const Buffer& buf, size_t begin, size_t end, const char* what, Fn fn) {
  Wire w(buf, begin, end);
  while (!w.done()) {
    uint64_t field;
    int wire;
    if (!w.Tag(&field, &wire)) return Malformed(w.pos(), what);
    if (field == 1 && wire == 2) {
      size_t b, n;
      if (!w.Length(&b, &n)) return Malformed(w.pos(), what);
      STRATA_RETURN_IF_ERROR(fn(b, n));
    } else if (!w.SkipField(wire)) {
      return Malformed(w.pos(), what);
    }
  }
  return Status::Ok();
}

bool ParseInt64(std::string_view s, int64_t* v) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *v);
  return ec == std::errc() && p == s.data() + s.size() && !s.empty();
}

}  // namespace

std::optional<uint64_t> DecodeTfRecordHeader(const uint8_t* head) {
  if (MaskCrc32c(Crc32c(head, 8)) != DecodeFixed32(head + 8)) return std::nullopt;
  return DecodeFixed64(head);
}

Status TfRecordWriter::Write(const Buffer& payload) {
  std::string head;
  PutFixed64(&head, payload.size());
  PutFixed32(&head, MaskCrc32c(Crc32c(head.data(), 8)));
  std::string tail;
  PutFixed32(&tail, MaskCrc32c(Crc32c(payload.data(), payload.size())));
  STRATA_RETURN_IF_ERROR(sink_.Append(Buffer::FromString(std::move(head))));
  if (!payload.empty()) STRATA_RETURN_IF_ERROR(sink_.Append(payload));
  return sink_.Append(Buffer::FromString(std::move(tail)));
}

Status TfRecordReader::Error(uint64_t offset, const std::string& what) const {
  return CorruptionError(src_.name() + ": tfrecord offset " + std::to_string(offset) + ": " + what);
}

Result<std::optional<Buffer>> TfRecordReader::Next() {
  uint64_t offset = src_.position();
  record_offset_ = offset;
  if (src_.remaining() == 0) return std::optional<Buffer>();
  if (src_.remaining() < kTfRecordHeaderBytes) return Error(offset, "truncated record header");
  STRATA_ASSIGN_OR_RETURN(Buffer head, src_.Read(kTfRecordHeaderBytes));
  const std::optional<uint64_t> header_len = DecodeTfRecordHeader(head.data());
  if (!header_len) return Error(offset, "length CRC mismatch (corrupt length field)");
  const uint64_t len = *header_len;
  if (len > src_.remaining() || src_.remaining() - len < 4) {
    return Error(offset, "record of " + std::to_string(len) + " bytes but only " + std::to_string(src_.remaining()) +
                             " remain (truncated shard?)");
  }
  if (len > limits_.max_field_bytes)
    return Error(offset, "record of " + std::to_string(len) + " bytes exceeds the limit");
  STRATA_ASSIGN_OR_RETURN(Buffer payload, src_.Read(len));
  STRATA_ASSIGN_OR_RETURN(Buffer tail, src_.Read(4));
  if (limits_.verify_checksums && MaskCrc32c(Crc32c(payload.data(), payload.size())) != DecodeFixed32(tail.data())) {
    return Error(offset, "payload CRC mismatch");
  }
  return std::optional<Buffer>(std::move(payload));
}

std::string EncodeExample(const Example& example) {
  std::string features;
  for (const auto& [key, feature] : example) {
    std::string entry;
    PutLengthDelimited(&entry, 1, key);
    PutLengthDelimited(&entry, 2, EncodeFeature(feature));
    PutLengthDelimited(&features, 1, entry);
  }
  std::string out;
  PutLengthDelimited(&out, 1, features);
  return out;
}

Result<Example> DecodeExample(const Buffer& data) {
  Example out;
  STRATA_RETURN_IF_ERROR(ForEachField1(data, 0, data.size(), "bad field in Example", [&](size_t b, size_t n) {
    return ForEachField1(data, b, b + n, "bad field in Features",
                         [&](size_t eb, size_t en) { return DecodeMapEntry(data, eb, en, &out); });
  }));
  return out;
}

Example SampleToExample(const Sample& sample, const std::vector<std::string>& int64_fields) {
  Example ex;
  ex["__key__"] = Feature::Bytes({Buffer::Copy(sample.key)});
  for (const Field& f : sample.fields) {
    int64_t v;
    bool as_int = std::find(int64_fields.begin(), int64_fields.end(), f.name) != int64_fields.end() &&
                  ParseInt64(f.data.view(), &v);
    ex[f.name] = as_int ? Feature::Int64s({v}) : Feature::Bytes({f.data});
  }
  return ex;
}

Sample ExampleToSample(const Example& example, std::string fallback_key) {
  Sample s;
  s.key = std::move(fallback_key);
  for (const auto& [name, f] : example) {
    if (name == "__key__" && f.kind == Feature::Kind::kBytes && f.bytes.size() == 1) {
      s.key = f.bytes[0].ToString();
      continue;
    }
    std::string text;
    switch (f.kind) {
      case Feature::Kind::kBytes:
        if (f.bytes.size() == 1) {
          s.fields.push_back({name, f.bytes[0]});
        } else {
          for (size_t i = 0; i < f.bytes.size(); ++i) s.fields.push_back({name + "." + std::to_string(i), f.bytes[i]});
        }
        continue;
      case Feature::Kind::kInt64:
        for (int64_t v : f.int64s) text += (text.empty() ? "" : " ") + std::to_string(v);
        break;
      case Feature::Kind::kFloat:
        for (float v : f.floats) {
          char buf[32];
          auto [p, ec] = std::to_chars(buf, buf + sizeof buf, v);
          text += (text.empty() ? "" : " ") + std::string(buf, p);
        }
        break;
    }
    s.fields.push_back({name, Buffer::FromString(std::move(text))});
  }
  return s;
}

Result<std::optional<Sample>> TfRecordSampleReader::Next() {
  STRATA_ASSIGN_OR_RETURN(std::optional<Buffer> record, reader_.Next());
  if (!record) return std::optional<Sample>();
  begin_ = reader_.record_offset();
  end_ = src_.position();
  auto ex = DecodeExample(*record);
  if (!ex.ok()) {
    return CorruptionError(src_.name() + ": tfrecord offset " + std::to_string(begin_) + ": " + ex.status().message());
  }
  char key[32];
  snprintf(key, sizeof key, "%09llu", static_cast<unsigned long long>(index_++));
  return std::optional<Sample>(ExampleToSample(*ex, key));
}

}  // namespace strata::dataset

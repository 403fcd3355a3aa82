#include "dataset/indexed.h"

#include <zstd.h>

#include <algorithm>
#include <cstring>

#include "base/coding.h"
#include "base/hash.h"

namespace strata::dataset {
namespace {

constexpr char kMagic[8] = {'S', 'T', 'R', 'S', 'D', 'S', '0', '1'};
constexpr uint64_t kMaxHeaderBytes = 1ull << 30;

Status Bad(const std::string& name, uint64_t offset, const std::string& what) {
  return CorruptionError(name + ": indexed shard offset " + std::to_string(offset) + ": " + what);
}

// Parses a decoded record. Every length is checked against the bytes left.
Result<Sample> ParseRecord(const Buffer& rec, const IndexedHeader& h, const std::string& name, uint64_t at,
                           const ReadLimits& limits) {
  const uint8_t* p = rec.data();
  uint64_t n = rec.size(), pos = 0;
  auto need = [&](uint64_t k) { return k <= n - pos; };
  if (!need(4)) return Bad(name, at, "record too short for its key length");
  uint64_t key_len = DecodeFixed32(p);
  pos = 4;
  if (key_len > limits.max_name_bytes || !need(key_len + 4)) return Bad(name, at, "record key length out of bounds");
  Sample s;
  s.key.assign(reinterpret_cast<const char*>(p + pos), key_len);
  pos += key_len;
  uint64_t nfields = DecodeFixed32(p + pos);
  pos += 4;
  if (nfields > limits.max_fields || nfields > (n - pos) / 12) return Bad(name, at, "record field count out of bounds");
  uint64_t data = pos + nfields * 12;
  s.fields.reserve(nfields);
  for (uint64_t i = 0; i < nfields; ++i, pos += 12) {
    uint64_t id = DecodeFixed32(p + pos), len = DecodeFixed64(p + pos + 4);
    if (id >= h.fields.size()) return Bad(name, at, "record names field " + std::to_string(id) + " not in the schema");
    if (len > n - data) return Bad(name, at, "field length " + std::to_string(len) + " runs past the record");
    s.fields.push_back({h.fields[id], rec.Slice(data, len)});
    data += len;
  }
  if (data != n) return Bad(name, at, "record has trailing bytes");
  return s;
}

}  // namespace

uint64_t IndexedRecordSize(const Sample& sample) {
  return 8 + sample.key.size() + 12 * sample.fields.size() + sample.PayloadBytes();
}

Result<uint64_t> IndexedHeaderSize(const Buffer& fixed, uint64_t shard_size, const std::string& name,
                                   ReadLimits limits) {
  const uint8_t* p = fixed.data();
  if (fixed.size() < kIndexedFixedHeader || std::memcmp(p, kMagic, 8) != 0) {
    return Bad(name, 0, "not an indexed shard (bad magic or shorter than its header)");
  }
  if (DecodeFixed32(p + 8) != 1) return Bad(name, 8, "unsupported version " + std::to_string(DecodeFixed32(p + 8)));
  if (DecodeFixed32(p + 12) & ~uint64_t{kIndexedFlagZstd}) return Bad(name, 12, "unknown flags");
  uint64_t count = DecodeFixed64(p + 16), data_offset = DecodeFixed64(p + 24), fields = DecodeFixed32(p + 40);
  if (data_offset > shard_size) {
    return Bad(name, 24,
               "header claims " + std::to_string(data_offset) + " bytes but the shard has " +
                   std::to_string(shard_size) + " (truncated?)");
  }
  if (data_offset > kMaxHeaderBytes) return Bad(name, 24, "header too large");
  // Bounded before anything is allocated: an empty name costs 4 header bytes
  // but a whole string in memory (8x), so the header size alone is no bound.
  if (fields > limits.max_fields) {
    return Bad(
        name, 40,
        "schema declares " + std::to_string(fields) + " fields; the limit is " + std::to_string(limits.max_fields));
  }
  if (count > data_offset / 12 || fields > data_offset / 4 ||
      kIndexedFixedHeader + 4 * fields + 12 * count + 8 > data_offset) {
    return Bad(name, 16, "sample/field counts do not fit the header size");
  }
  if (DecodeFixed64(p + 32) > limits.max_field_bytes * 2) return Bad(name, 32, "record size limit too large");
  return data_offset;
}

Result<IndexedHeader> ParseIndexedHeader(const Buffer& header, uint64_t shard_size, const std::string& name,
                                         ReadLimits limits) {
  STRATA_ASSIGN_OR_RETURN(uint64_t size, IndexedHeaderSize(header, shard_size, name, limits));
  if (header.size() != size) return Bad(name, 0, "header buffer has the wrong size");
  const uint8_t* p = header.data();
  std::string copy(header.view());
  EncodeFixed32(copy.data() + 44, 0);
  if (MaskCrc32c(Crc32c(copy.data(), copy.size())) != DecodeFixed32(p + 44))
    return Bad(name, 44, "header checksum mismatch");
  IndexedHeader h;
  h.flags = DecodeFixed32(p + 12);
  h.sample_count = DecodeFixed64(p + 16);
  h.data_offset = size;
  h.max_record_size = DecodeFixed64(p + 32);
  uint64_t nfields = DecodeFixed32(p + 40), pos = kIndexedFixedHeader;
  for (uint64_t i = 0; i < nfields; ++i) {
    if (size - pos < 4) return Bad(name, pos, "schema runs past the header");
    uint64_t len = DecodeFixed32(p + pos);
    pos += 4;
    if (len > limits.max_name_bytes || len > size - pos) return Bad(name, pos, "field name length out of bounds");
    h.fields.emplace_back(reinterpret_cast<const char*>(p + pos), len);
    pos += len;
  }
  uint64_t n = h.sample_count;
  if (size - pos != 8 * (n + 1) + 4 * n) return Bad(name, pos, "offset tables do not fill the header");
  h.offsets.resize(n + 1);
  for (uint64_t i = 0; i <= n; ++i, pos += 8) h.offsets[i] = DecodeFixed64(p + pos);
  h.crcs.resize(n);
  for (uint64_t i = 0; i < n; ++i, pos += 4) h.crcs[i] = DecodeFixed32(p + pos);
  if (h.offsets[0] != size || h.offsets[n] != shard_size) {
    return Bad(name, kIndexedFixedHeader, "offset table does not span the shard (truncated or extended?)");
  }
  for (uint64_t i = 1; i <= n; ++i) {
    if (h.offsets[i] < h.offsets[i - 1])
      return Bad(name, kIndexedFixedHeader, "offsets decrease at sample " + std::to_string(i));
  }
  return h;
}

Result<Sample> DecodeIndexedRecord(const Buffer& stored, const IndexedHeader& h, uint64_t index,
                                   const std::string& name, ReadLimits limits) {
  if (index >= h.sample_count)
    return InvalidArgumentError(name + ": sample " + std::to_string(index) + " out of range");
  uint64_t at = h.offsets[index];
  if (stored.size() != h.offsets[index + 1] - at) return Bad(name, at, "record has the wrong length");
  if (limits.verify_checksums && MaskCrc32c(Crc32c(stored.data(), stored.size())) != h.crcs[index]) {
    return Bad(name, at, "checksum mismatch in sample " + std::to_string(index));
  }
  if (!(h.flags & kIndexedFlagZstd)) return ParseRecord(stored, h, name, at, limits);
  unsigned long long want = ZSTD_getFrameContentSize(stored.data(), stored.size());
  if (want == ZSTD_CONTENTSIZE_UNKNOWN || want == ZSTD_CONTENTSIZE_ERROR) return Bad(name, at, "bad zstd frame header");
  if (want > h.max_record_size || want > limits.max_field_bytes) {
    return Bad(name, at, "zstd frame claims " + std::to_string(want) + " bytes, above the shard's largest record");
  }
  // Streamed, so memory grows with bytes actually produced, never with the
  // size a (possibly lying) frame header claims.
  std::string out;
  ZSTD_DCtx* dctx = ZSTD_createDCtx();
  ZSTD_inBuffer in{stored.data(), stored.size(), 0};
  size_t ret = 1;
  while (ret != 0 && out.size() <= want) {
    size_t old = out.size();
    out.resize(old + std::min<uint64_t>(ZSTD_DStreamOutSize(), want + 1 - old));
    ZSTD_outBuffer o{out.data() + old, out.size() - old, 0};
    size_t in_before = in.pos;
    ret = ZSTD_decompressStream(dctx, &o, &in);
    out.resize(old + o.pos);
    if (ZSTD_isError(ret) || (o.pos == 0 && in.pos == in_before)) break;  // error or no progress
  }
  ZSTD_freeDCtx(dctx);
  if (ZSTD_isError(ret)) return Bad(name, at, std::string("zstd: ") + ZSTD_getErrorName(ret));
  if (ret != 0 || out.size() != want || in.pos != in.size)
    return Bad(name, at, "zstd frame is truncated or has the wrong size");
  return ParseRecord(Buffer::FromString(std::move(out)), h, name, at, limits);
}

struct IndexedWriter::ZstdCtx {
  ZSTD_CCtx* cctx = ZSTD_createCCtx();
  ~ZstdCtx() { ZSTD_freeCCtx(cctx); }
};

IndexedWriter::IndexedWriter(ByteSink& sink, IndexedWriteOptions options) : sink_(sink), options_(options) {
  if (options_.zstd) zstd_ = std::make_unique<ZstdCtx>();
}
IndexedWriter::~IndexedWriter() = default;

Status IndexedWriter::Add(const Sample& sample) {
  std::string rec;
  rec.reserve(IndexedRecordSize(sample));
  PutFixed32(&rec, sample.key.size());
  rec += sample.key;
  PutFixed32(&rec, sample.fields.size());
  for (const Field& f : sample.fields) {
    auto it = std::find(fields_.begin(), fields_.end(), f.name);
    if (it == fields_.end()) it = fields_.insert(fields_.end(), f.name);
    PutFixed32(&rec, it - fields_.begin());
    PutFixed64(&rec, f.data.size());
  }
  for (const Field& f : sample.fields) rec.append(f.data.view());
  max_record_ = std::max<uint64_t>(max_record_, rec.size());
  Buffer stored;
  if (zstd_) {
    std::string z(ZSTD_compressBound(rec.size()), '\0');
    size_t n = ZSTD_compressCCtx(zstd_->cctx, z.data(), z.size(), rec.data(), rec.size(), options_.zstd_level);
    if (ZSTD_isError(n)) return InternalError(std::string("zstd compression failed: ") + ZSTD_getErrorName(n));
    z.resize(n);
    stored = Buffer::FromString(std::move(z));
  } else {
    stored = Buffer::FromString(std::move(rec));
  }
  crcs_.push_back(MaskCrc32c(Crc32c(stored.data(), stored.size())));
  buffered_ += stored.size();
  records_.push_back(std::move(stored));
  return Status::Ok();
}

Status IndexedWriter::Finish() {
  std::string h(kMagic, 8);
  PutFixed32(&h, 1);
  PutFixed32(&h, zstd_ ? kIndexedFlagZstd : 0);
  PutFixed64(&h, records_.size());
  PutFixed64(&h, 0);  // data offset, patched below
  PutFixed64(&h, max_record_);
  PutFixed32(&h, fields_.size());
  PutFixed32(&h, 0);  // CRC, patched below
  for (const std::string& f : fields_) {
    PutFixed32(&h, f.size());
    h += f;
  }
  uint64_t data_offset = h.size() + 8 * (records_.size() + 1) + 4 * records_.size();
  uint64_t off = data_offset;
  for (const Buffer& r : records_) {
    PutFixed64(&h, off);
    off += r.size();
  }
  PutFixed64(&h, off);
  for (uint32_t c : crcs_) PutFixed32(&h, c);
  EncodeFixed64(h.data() + 24, data_offset);
  EncodeFixed32(h.data() + 44, MaskCrc32c(Crc32c(h.data(), h.size())));
  STRATA_RETURN_IF_ERROR(sink_.Append(Buffer::FromString(std::move(h))));
  for (Buffer& r : records_) STRATA_RETURN_IF_ERROR(sink_.Append(std::move(r)));
  records_.clear();
  return Status::Ok();
}

Result<std::optional<Sample>> IndexedSampleReader::Next() {
  if (!header_) {
    if (src_.remaining() < kIndexedFixedHeader) {
      return Bad(src_.name(), src_.position(), "shorter than an indexed shard header");
    }
    STRATA_ASSIGN_OR_RETURN(Buffer fixed, src_.Read(kIndexedFixedHeader));
    STRATA_ASSIGN_OR_RETURN(uint64_t size, IndexedHeaderSize(fixed, src_.size(), src_.name(), limits_));
    STRATA_ASSIGN_OR_RETURN(Buffer rest, src_.Read(size - kIndexedFixedHeader));
    STRATA_ASSIGN_OR_RETURN(header_, ParseIndexedHeader(Concat({fixed, rest}), src_.size(), src_.name(), limits_));
  }
  if (next_ >= header_->sample_count) return std::optional<Sample>();
  uint64_t len = header_->offsets[next_ + 1] - header_->offsets[next_];
  STRATA_ASSIGN_OR_RETURN(Buffer stored, src_.Read(len));
  STRATA_ASSIGN_OR_RETURN(Sample s, DecodeIndexedRecord(stored, *header_, next_, src_.name(), limits_));
  ++next_;
  return std::optional<Sample>(std::move(s));
}

}  // namespace strata::dataset

#include "cache/block_format.h"

#include <cstring>

#include "base/coding.h"
#include "base/hash.h"

namespace strata::cache {
namespace {
constexpr char kMagic[8] = {'S', 'T', 'R', 'A', 'T', 'A', 'B', 'K'};
constexpr size_t kFixedSize = 72;  // bytes before the variable-length fields

}  // namespace

Status EncodeBlockHeader(const BlockHeader& h, uint8_t* out) {
  const BlockId& id = h.id;
  if (id.store.size() > kMaxStoreUrlLength || id.etag.size() > kMaxEtagLength || id.key.size() > kMaxKeyLength) {
    return InvalidArgumentError("block header field too long for " + id.key);
  }
  if (id.block_size == 0 || h.length > id.block_size) {
    return InvalidArgumentError("block length exceeds block size for " + id.key);
  }
  std::memset(out, 0, kBlockHeaderSize);
  std::memcpy(out, kMagic, 8);
  EncodeFixed32(out + 8, kBlockFormatVersion);
  EncodeFixed32(out + 12, kBlockHeaderSize);
  EncodeFixed64(out + 16, id.block_size);
  EncodeFixed64(out + 24, id.index);
  EncodeFixed64(out + 32, id.offset());
  EncodeFixed64(out + 40, h.length);
  EncodeFixed64(out + 48, h.data_hash);
  EncodeFixed64(out + 56, static_cast<uint64_t>(h.created_ms));
  EncodeFixed16(out + 64, id.store.size());
  EncodeFixed16(out + 66, id.etag.size());
  EncodeFixed16(out + 68, id.key.size());
  size_t pos = kFixedSize;
  for (const std::string* f : {&id.store, &id.etag, &id.key}) {
    std::memcpy(out + pos, f->data(), f->size());
    pos += f->size();
  }
  EncodeFixed64(out + pos, XxHash3(out, pos));
  return Status::Ok();
}

Result<BlockHeader> DecodeBlockHeader(const uint8_t* data, size_t size) {
  if (size < kFixedSize + 8) return CorruptionError("block header truncated");
  if (std::memcmp(data, kMagic, 8) != 0) return CorruptionError("not a strata block (bad magic)");
  if (DecodeFixed32(data + 8) != kBlockFormatVersion) return CorruptionError("unsupported block format version");
  if (DecodeFixed32(data + 12) != kBlockHeaderSize) return CorruptionError("unexpected block header size");
  size_t store_len = DecodeFixed16(data + 64), etag_len = DecodeFixed16(data + 66), key_len = DecodeFixed16(data + 68);
  if (store_len > kMaxStoreUrlLength || etag_len > kMaxEtagLength || key_len > kMaxKeyLength) {
    return CorruptionError("block header field length out of bounds");
  }
  size_t end = kFixedSize + store_len + etag_len + key_len;
  if (end + 8 > size || end + 8 > kBlockHeaderSize) return CorruptionError("block header truncated");
  if (DecodeFixed64(data + end) != XxHash3(data, end)) return CorruptionError("block header checksum mismatch");
  BlockHeader h;
  h.id.block_size = DecodeFixed64(data + 16);
  h.id.index = DecodeFixed64(data + 24);
  uint64_t offset = DecodeFixed64(data + 32);
  h.length = DecodeFixed64(data + 40);
  h.data_hash = DecodeFixed64(data + 48);
  h.created_ms = static_cast<int64_t>(DecodeFixed64(data + 56));
  if (h.id.block_size == 0 || h.length > h.id.block_size) return CorruptionError("block length out of bounds");
  if (h.id.index > UINT64_MAX / h.id.block_size || offset != h.id.index * h.id.block_size) {
    return CorruptionError("block offset does not match its index");
  }
  const char* p = reinterpret_cast<const char*>(data) + kFixedSize;
  h.id.store.assign(p, store_len);
  h.id.etag.assign(p + store_len, etag_len);
  h.id.key.assign(p + store_len + etag_len, key_len);
  return h;
}

}  // namespace strata::cache

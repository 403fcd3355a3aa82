#include "cache/block_format.h"

#include <cstring>

#include "base/hash.h"

namespace strata {
namespace {
constexpr char kMagic[8] = {'S', 'T', 'R', 'A', 'T', 'A', 'B', 'K'};
constexpr size_t kFixedSize = 72;  // bytes before the variable-length fields

template <typename T>
void Put(uint8_t* p, T v) {
  for (size_t i = 0; i < sizeof(T); ++i) p[i] = static_cast<uint8_t>(static_cast<uint64_t>(v) >> (8 * i));
}
template <typename T>
T Get(const uint8_t* p) {
  uint64_t v = 0;
  for (size_t i = 0; i < sizeof(T); ++i) v |= static_cast<uint64_t>(p[i]) << (8 * i);
  return static_cast<T>(v);
}
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
  Put<uint32_t>(out + 8, kBlockFormatVersion);
  Put<uint32_t>(out + 12, kBlockHeaderSize);
  Put<uint64_t>(out + 16, id.block_size);
  Put<uint64_t>(out + 24, id.index);
  Put<uint64_t>(out + 32, id.offset());
  Put<uint64_t>(out + 40, h.length);
  Put<uint64_t>(out + 48, h.data_hash);
  Put<int64_t>(out + 56, h.created_ms);
  Put<uint16_t>(out + 64, id.store.size());
  Put<uint16_t>(out + 66, id.etag.size());
  Put<uint16_t>(out + 68, id.key.size());
  size_t pos = kFixedSize;
  for (const std::string* f : {&id.store, &id.etag, &id.key}) {
    std::memcpy(out + pos, f->data(), f->size());
    pos += f->size();
  }
  Put<uint64_t>(out + pos, XxHash3(out, pos));
  return Status::Ok();
}

Result<BlockHeader> DecodeBlockHeader(const uint8_t* data, size_t size) {
  if (size < kFixedSize + 8) return CorruptionError("block header truncated");
  if (std::memcmp(data, kMagic, 8) != 0) return CorruptionError("not a strata block (bad magic)");
  if (Get<uint32_t>(data + 8) != kBlockFormatVersion) return CorruptionError("unsupported block format version");
  if (Get<uint32_t>(data + 12) != kBlockHeaderSize) return CorruptionError("unexpected block header size");
  size_t store_len = Get<uint16_t>(data + 64), etag_len = Get<uint16_t>(data + 66), key_len = Get<uint16_t>(data + 68);
  if (store_len > kMaxStoreUrlLength || etag_len > kMaxEtagLength || key_len > kMaxKeyLength) {
    return CorruptionError("block header field length out of bounds");
  }
  size_t end = kFixedSize + store_len + etag_len + key_len;
  if (end + 8 > size || end + 8 > kBlockHeaderSize) return CorruptionError("block header truncated");
  if (Get<uint64_t>(data + end) != XxHash3(data, end)) return CorruptionError("block header checksum mismatch");
  BlockHeader h;
  h.id.block_size = Get<uint64_t>(data + 16);
  h.id.index = Get<uint64_t>(data + 24);
  uint64_t offset = Get<uint64_t>(data + 32);
  h.length = Get<uint64_t>(data + 40);
  h.data_hash = Get<uint64_t>(data + 48);
  h.created_ms = Get<int64_t>(data + 56);
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

}  // namespace strata

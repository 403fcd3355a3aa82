#include "cache/block_key.h"

#include <cstring>

#include "base/coding.h"
#include "base/hash.h"

namespace strata::cache {
namespace {
// Lengths and numbers are hashed as little-endian bytes, so a block's hash
// (its file name on disk) is the same on every host.
void AppendField(std::string* out, std::string_view field) {
  PutFixed64(out, field.size());
  out->append(field);
}
}  // namespace

std::string BlockHash::Hex() const {
  uint8_t bytes[16];
  for (int i = 0; i < 8; ++i) {
    bytes[i] = static_cast<uint8_t>(hi >> (56 - 8 * i));
    bytes[8 + i] = static_cast<uint8_t>(lo >> (56 - 8 * i));
  }
  return ToHex(bytes, sizeof(bytes));
}

BlockHash HashBlockId(const BlockId& id) {
  std::string buf;
  buf.reserve(id.store.size() + id.key.size() + id.etag.size() + 48);
  AppendField(&buf, id.store);
  AppendField(&buf, id.key);
  AppendField(&buf, id.etag);
  PutFixed64(&buf, id.block_size);
  PutFixed64(&buf, id.index);
  return BlockHash{XxHash3(buf.data(), buf.size(), 0x5354524154410001ull),
                   XxHash3(buf.data(), buf.size(), 0x5354524154410002ull)};
}

std::string ObjectKeyOf(std::string_view store, std::string_view key) {
  std::string s;
  s.reserve(store.size() + key.size() + 1);
  s.append(store);
  s.push_back('\0');
  s.append(key);
  return s;
}

}  // namespace strata::cache

// Block identity. A cached block is named by the store it came from, the
// object key, the object's ETag, the block size and the block index, so a
// changed object (new ETag) can never be served from an old version's blocks,
// and a cache reopened with another block size never mixes layouts.
// Value types; thread-compatible.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace strata::cache {

struct BlockId {
  std::string store;  // ObjectStore::Url() of the backend
  std::string key;    // object key
  std::string etag;   // object version; without quotes
  uint64_t block_size = 0;
  uint64_t index = 0;

  uint64_t offset() const { return index * block_size; }
  friend bool operator==(const BlockId&, const BlockId&) = default;
};

// 128-bit digest of a BlockId (xxHash3 with two seeds over a length-prefixed
// encoding): the in-memory map key and the disk file name. The full BlockId
// is still compared against the disk header on every read.
struct BlockHash {
  uint64_t hi = 0;
  uint64_t lo = 0;
  friend bool operator==(const BlockHash&, const BlockHash&) = default;
  std::string Hex() const;  // 32 lowercase hex digits
};

BlockHash HashBlockId(const BlockId& id);

// Names an object across stores, for invalidating every block of it.
std::string ObjectKeyOf(std::string_view store, std::string_view key);

struct BlockHashHasher {
  size_t operator()(const BlockHash& h) const { return static_cast<size_t>(h.lo ^ (h.hi * 0x9e3779b97f4a7c15ull)); }
};

}  // namespace strata::cache

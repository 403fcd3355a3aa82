// On-disk block file format of the disk tier. One file per block:
//
//   [0, 4096)       header page (little-endian, zero padded):
//                   magic "STRATABK", u32 version, u32 header_size (4096),
//                   u64 block_size, u64 block_index, u64 offset, u64 length,
//                   u64 xxh3(data), i64 created (unix ms), u16 store_len,
//                   u16 etag_len, u16 key_len, u16 reserved, store, etag, key,
//                   u64 xxh3(all header bytes before it)
//   [4096, 4096+length)  the block's bytes
//
// The header is a full page so the data starts page-aligned (O_DIRECT reads,
// zero-copy slicing of one aligned read buffer) and a restart can rebuild the
// index by reading one page per file. The header names key/ETag/offset so a
// file can be checked against the block it claims to be; its own checksum
// makes a torn or garbage header a clean "invalid", never a misread.
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "base/status.h"
#include "cache/block_key.h"

namespace strata::cache {

inline constexpr size_t kBlockHeaderSize = 4096;
inline constexpr uint32_t kBlockFormatVersion = 1;
inline constexpr size_t kMaxStoreUrlLength = 2048;
inline constexpr size_t kMaxEtagLength = 512;
inline constexpr size_t kMaxKeyLength = 1024;

struct BlockHeader {
  BlockId id;
  uint64_t length = 0;     // data bytes after the header
  uint64_t data_hash = 0;  // XxHash3 of the data
  int64_t created_ms = 0;  // unix ms when fetched (TTL survives restarts)
};

// Fills `out` (exactly kBlockHeaderSize bytes). InvalidArgument when a field
// exceeds its limit or length > block_size.
Status EncodeBlockHeader(const BlockHeader& header, uint8_t* out);

// Parses and validates a header page: magic, version, sizes, field bounds,
// offset == index * block_size, length <= block_size, header checksum.
// Corruption on any mismatch; never reads outside [data, data+size).
Result<BlockHeader> DecodeBlockHeader(const uint8_t* data, size_t size);

}  // namespace strata::cache

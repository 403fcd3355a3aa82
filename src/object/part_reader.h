// A multipart part whose bytes are read on demand (the gateway keeps a large
// UploadPart body in a temp file), so a store can take a part of up to S3's
// 5 GiB without holding it in memory. Stores that can stream a part
// implement PartStreamer; UploadPartFromSource falls back to reading the part
// into memory for the others (mem://, decorators that change UploadPart).
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "object/object_store.h"

namespace strata::object {

struct PartReader {
  uint64_t size = 0;
  // Copies bytes [offset, offset + n) into dst (offset + n <= size).
  // Thread-safe, and may be called again for the same range (a retry).
  std::function<Status(uint64_t offset, void* dst, size_t n)> read;
  // Of the whole part, when the caller already computed them (else empty):
  // an s3:// store sends them instead of reading the part twice.
  std::string md5_hex;
  std::string sha256_hex;
};

class PartStreamer {
 public:
  // As ObjectStore::UploadPart, with the bytes read from `source` in pieces.
  virtual Result<std::string> UploadPartFrom(std::string_view key, std::string_view upload_id, int part_number,
                                             const PartReader& source, const PartOptions& options) = 0;

 protected:
  ~PartStreamer() = default;
};

// Streams the part when `store` is a PartStreamer, else reads it whole and
// calls UploadPart.
inline Result<std::string> UploadPartFromSource(ObjectStore& store, std::string_view key, std::string_view upload_id,
                                                int part_number, const PartReader& source, const PartOptions& options) {
  if (auto* s = dynamic_cast<PartStreamer*>(&store)) {
    return s->UploadPartFrom(key, upload_id, part_number, source, options);
  }
  MutableBuffer data(static_cast<size_t>(source.size));
  STRATA_RETURN_IF_ERROR(source.read(0, data.data(), data.size()));
  return store.UploadPart(key, upload_id, part_number, std::move(data).Freeze(), options);
}

}  // namespace strata::object

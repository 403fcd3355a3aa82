// libFuzzer target: a shard scan as the loader reads it back from its disk
// cache (DiskScanCache). The harness writes a valid trailing CRC over the
// input first, so mutations reach the fields behind the checksum; a decoded
// scan must encode back to the same bytes.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "base/coding.h"
#include "base/hash.h"
#include "dataset/shard_set.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace strata;
  std::string bytes(reinterpret_cast<const char*>(data), size);
  (void)dataset::DecodeShardScan(Buffer::FromString(bytes), "fuzz.scan");  // as found, CRC and all
  if (bytes.size() < 4) return 0;
  bytes.resize(bytes.size() - 4);
  PutFixed32(&bytes, MaskCrc32c(Crc32c(bytes.data(), bytes.size())));
  auto scan = dataset::DecodeShardScan(Buffer::FromString(bytes), "fuzz.scan");
  if (scan.ok() && dataset::EncodeShardScan(*scan).view() != bytes) __builtin_trap();
  return 0;
}

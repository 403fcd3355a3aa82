// libFuzzer: the indexed shard (header, schema, offset table, records incl.
// zstd frames) and the dataset index JSON.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "dataset/indexed.h"
#include "dataset/manifest.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace strata::dataset;
  strata::Buffer buf = strata::Buffer::Copy(data, size);
  ReadLimits limits;
  limits.max_field_bytes = 1 << 20;
  BufferSource src(buf, "fuzz.sds");
  IndexedSampleReader reader(src, limits);
  for (int i = 0; i < 10000; ++i) {
    auto s = reader.Next();
    if (!s.ok() || !*s) break;
  }
  ParseManifest(std::string_view(reinterpret_cast<const char*>(data), size), "index.json").status().IgnoreError();
  return 0;
}

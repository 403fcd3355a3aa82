// libFuzzer: the tar reader (headers, pax/GNU extensions, sample grouping)
// and the ".idx" sidecar decoder. Must never crash or allocate a lying size.
#include <cstddef>
#include <cstdint>

#include "dataset/offset_index.h"
#include "dataset/tar.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace strata::dataset;
  strata::Buffer buf = strata::Buffer::Copy(data, size);
  ReadLimits limits;
  limits.max_field_bytes = 1 << 20;
  BufferSource src(buf, "fuzz.tar");
  TarSampleReader reader(src, limits);
  for (int i = 0; i < 10000; ++i) {
    auto s = reader.Next();
    if (!s.ok() || !*s) break;
  }
  DecodeOffsetIndex(buf, "fuzz.idx").status().IgnoreError();
  return 0;
}

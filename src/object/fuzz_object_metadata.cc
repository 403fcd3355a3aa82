// libFuzzer target: DecodeMetadata (the file store's xattr record and
// multipart upload state) must never crash, and whatever it accepts must
// encode back to the same bytes.
#include <cstdlib>
#include <string_view>

#include "object/metadata.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  auto m = strata::object::DecodeMetadata(in);
  if (!m.ok()) return 0;
  if (strata::object::EncodeMetadata(*m) != in) std::abort();
  (void)strata::object::ValidateMetadata(*m);
  return 0;
}

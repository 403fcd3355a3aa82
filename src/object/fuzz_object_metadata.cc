// libFuzzer target: DecodeMetadata and DecodePartSizes (the file store's xattr record and
// multipart upload state) must never crash, and whatever it accepts must
// encode back to the same bytes.
#include <cstdlib>
#include <string_view>

#include "object/metadata.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  // The part sizes record (file:// keeps it beside the metadata): same contract.
  if (auto parts = strata::object::DecodePartSizes(in); parts.ok()) {
    if (strata::object::EncodePartSizes(*parts) != in) std::abort();
  }
  auto m = strata::object::DecodeMetadata(in);
  if (!m.ok()) return 0;
  if (strata::object::EncodeMetadata(*m) != in) std::abort();
  (void)strata::object::ValidateMetadata(*m);
  return 0;
}

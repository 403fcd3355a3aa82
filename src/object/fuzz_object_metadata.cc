// libFuzzer target: DecodeMetadata and DecodePartSizes (the file store's xattr record and
// multipart upload state) must never crash, and whatever it accepts must
// encode back to the same bytes; DecodeCompletedUpload (its record of a
// completed upload) must never crash, and what it accepts must decode again
// from its encoding to the same record.
#include <cstdlib>
#include <string_view>

#include "object/completed_uploads.h"
#include "object/metadata.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  // The part sizes record (file:// keeps it beside the metadata): same contract.
  if (auto parts = strata::object::DecodePartSizes(in); parts.ok()) {
    if (strata::object::EncodePartSizes(*parts) != in) std::abort();
  }
  if (auto done = strata::object::DecodeCompletedUpload(in); done.ok()) {
    std::string text = strata::object::EncodeCompletedUpload(*done);
    auto again = strata::object::DecodeCompletedUpload(text);
    if (!again.ok() || strata::object::EncodeCompletedUpload(*again) != text) std::abort();
  }
  auto m = strata::object::DecodeMetadata(in);
  if (!m.ok()) return 0;
  if (strata::object::EncodeMetadata(*m) != in) std::abort();
  (void)strata::object::ValidateMetadata(*m);
  return 0;
}

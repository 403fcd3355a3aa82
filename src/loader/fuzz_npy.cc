// libFuzzer target: the .npy header parser and the JSON/Example decoders must
// never crash, hang or read out of bounds on any input.
#include <cstddef>
#include <cstdint>

#include "loader/decode.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  strata::Buffer buf = strata::Buffer::Copy(data, size);
  auto npy = strata::loader::ParseNpy(buf, "fuzz");
  if (npy.ok() && npy->data.size() > size) __builtin_trap();
  (void)strata::loader::DecodeField("k", "f", buf, strata::loader::Decode::kJson, nullptr);
  (void)strata::loader::DecodeField("k", "f", buf, strata::loader::Decode::kExample, nullptr);
  return 0;
}

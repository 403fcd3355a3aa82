// Fuzzes the safetensors header parser with the input as a whole shard file.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "ckpt/format.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  auto h = strata::ckpt::ParseSafetensorsHeader(bytes, size);
  if (h.ok()) {
    for (const auto& t : h->tensors) {
      if (t.end > size - h->data_start || t.begin > t.end) __builtin_trap();  // bounds promised
    }
  }
  return 0;
}

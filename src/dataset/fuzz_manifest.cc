// libFuzzer: manifest.json parsing and signature checking.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "dataset/manifest.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace strata::dataset;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto m = ParseManifest(text, "manifest.json");
  CheckManifestSignature(text, "key", "manifest.json").IgnoreError();
  if (m.ok()) {
    // What parses must re-encode and parse again identically.
    auto again = ParseManifest(EncodeManifest(*m), "manifest.json");
    if (!again.ok() || again->shards.size() != m->shards.size()) __builtin_trap();
  }
  return 0;
}

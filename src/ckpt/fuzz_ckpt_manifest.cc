// Fuzzes the checkpoint manifest, commit marker and step-name parsers.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "ckpt/format.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  using namespace strata::ckpt;
  if (auto m = ParseRankManifest(text); m.ok()) {
    auto again = ParseRankManifest(EncodeRankManifest(*m));  // what we encode, we parse
    if (!again.ok() || again->tensors.size() != m->tensors.size()) __builtin_trap();
  }
  if (auto g = ParseGlobalManifest(text); g.ok()) {
    if (!ParseGlobalManifest(EncodeGlobalManifest(*g)).ok()) __builtin_trap();
  }
  ParseCommit(text).status().IgnoreError();
  (void)ParseStepDirName(text);
  return 0;
}

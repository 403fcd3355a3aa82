// Fuzzes the command-line URL parser: any input gives a value or an error.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "cli/url.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto url = strata::cli::ParseObjectUrl(text);
  if (url.ok()) {
    (void)strata::cli::BaseName(url->key);
    (void)strata::cli::BaseName(url->path);
  }
  return 0;
}

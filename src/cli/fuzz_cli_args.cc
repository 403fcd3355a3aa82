// Fuzzes the command-line value parsers (sizes, durations): any input gives a
// value or an error, never a crash or an overflow.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "cli/util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  (void)strata::cli::ParseSize(text);
  auto d = strata::cli::ParseDuration(text);
  if (d.ok() && d->count() < 0) __builtin_trap();
  return 0;
}

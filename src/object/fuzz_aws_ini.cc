// libFuzzer target: the AWS shared config/credentials INI parser must never
// crash, hang or read out of bounds on any input.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "object/s3_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto ini = strata::object::ParseAwsIni(text);
  if (ini.ok()) {
    for (const auto& [section, keys] : *ini) {
      (void)section;
      (void)keys.size();
    }
  }
  return 0;
}

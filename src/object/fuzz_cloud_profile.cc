// libFuzzer target: ParseCloudProfile must never crash, and whatever it
// accepts must survive a Format/Parse round trip.
#include <cstdlib>
#include <string_view>

#include "object/cloud_store.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view spec(reinterpret_cast<const char*>(data), size);
  auto profile = strata::object::ParseCloudProfile(spec);
  if (!profile.ok()) return 0;
  auto again = strata::object::ParseCloudProfile(strata::object::FormatCloudProfile(*profile));
  if (!again.ok() || again->first_byte != profile->first_byte || again->jitter != profile->jitter ||
      again->seed != profile->seed) {
    std::abort();
  }
  (void)strata::object::CloudDelay(*profile, size * 1000003);
  return 0;
}

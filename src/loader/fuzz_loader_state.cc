// libFuzzer target: a resume state (from a user's checkpoint or a DataLoader's
// state_dict) is refused with InvalidArgument or parsed to a state that
// serialises and parses back to itself.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "loader/streaming_dataset.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using strata::loader::State;
  auto state = State::FromJson(std::string_view(reinterpret_cast<const char*>(data), size));
  if (!state.ok()) {
    if (state.status().code() != strata::Code::kInvalidArgument) std::abort();
    return 0;
  }
  auto again = State::FromJson(state->ToJson());
  if (!again.ok() || again->epoch != state->epoch || again->samples_consumed != state->samples_consumed ||
      again->fingerprint != state->fingerprint || again->streams != state->streams) {
    std::abort();
  }
  return 0;
}

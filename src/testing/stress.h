// STRATA_STRESS=1 selects the long versions of the campaigns (the stress
// label); the default suite runs the short ones. Header-only: tests that do
// not link strata_testing use it too.
#pragma once

#include <cstdlib>
#include <string_view>

namespace strata::testing {

inline bool StressRun() {
  const char* v = std::getenv("STRATA_STRESS");
  return v != nullptr && std::string_view(v) == "1";
}

}  // namespace strata::testing

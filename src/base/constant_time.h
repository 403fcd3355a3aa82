// Equality whose time does not depend on where two strings differ: for comparing
// MACs and signatures, so response timing does not leak how much of one matched.
#pragma once

#include <cstddef>
#include <string_view>

namespace strata {

inline bool ConstantTimeEquals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

}  // namespace strata

#pragma once

#include <string_view>

namespace strata {

// Well-formed UTF-8 as RFC 3629 defines it: no overlong forms, no surrogates,
// nothing above U+10FFFF. The same rule JSON serialisers and protobuf string
// fields enforce, so text that passes here can be written to either.
bool IsValidUtf8(std::string_view s);

}  // namespace strata

// Peer addresses of a cache group: "HOST:PORT" where HOST is an IPv4
// literal, a bracketed IPv6 literal ("[::1]") or a DNS name, and PORT is
// decimal. A member's address becomes the authority of the URLs others send
// it requests on (http://ADDRESS/strata/peer/...), so nothing else may pass:
// no user info, path, query, spaces or percent signs, and a bounded length.
// Pure functions; thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/status.h"

namespace strata::group {

inline constexpr size_t kMaxAddressLength = 261;  // a 253-byte DNS name, ':' and 5 digits, or brackets

struct HostPort {
  std::string host;  // without brackets
  uint16_t port = 0;
};

// InvalidArgument naming what is wrong. `allow_port_zero` for a listen
// address ("any free port"); a member's address always has a real port.
Result<HostPort> ParseHostPort(std::string_view address, bool allow_port_zero = false);

// "host:port", with brackets around an IPv6 host.
std::string FormatHostPort(const HostPort& hp);

}  // namespace strata::group

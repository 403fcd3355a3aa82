#include "group/address.h"

#include <arpa/inet.h>

namespace strata::group {
namespace {

bool IsIpv4(const std::string& s) {
  in_addr a{};
  return inet_pton(AF_INET, s.c_str(), &a) == 1;
}

bool IsIpv6(const std::string& s) {
  in6_addr a{};
  return inet_pton(AF_INET6, s.c_str(), &a) == 1;
}

// RFC 1123 host name: dot-separated labels of letters, digits and '-', each
// 1-63 long and not starting or ending with '-'; 253 bytes at most.
bool IsDnsName(std::string_view s) {
  if (s.empty() || s.size() > 253) return false;
  size_t label = 0;
  char prev = '.';
  for (char c : s) {
    if (c == '.') {
      if (label == 0 || prev == '-') return false;
      label = 0;
    } else if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-') {
      if (c == '-' && label == 0) return false;
      if (++label > 63) return false;
    } else {
      return false;
    }
    prev = c;
  }
  return label > 0 && prev != '-';
}

Status Bad(std::string_view address, const char* why) {
  // The text is untrusted (it may come from etcd): quote a bounded prefix.
  std::string shown(address.substr(0, 64));
  for (char& c : shown) {
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f) c = '?';
  }
  return InvalidArgumentError("peer address \"" + shown + (address.size() > 64 ? "...\"" : "\"") + " " + why +
                              " (expected HOST:PORT: an IPv4 address, [IPv6] or a DNS name, and a port)");
}

}  // namespace

Result<HostPort> ParseHostPort(std::string_view address, bool allow_port_zero) {
  if (address.size() > kMaxAddressLength) return Bad(address, "is too long");
  const size_t colon = address.rfind(':');
  if (colon == std::string_view::npos || colon == 0) return Bad(address, "has no port");
  std::string_view port_text = address.substr(colon + 1);
  if (port_text.empty() || port_text.size() > 5) return Bad(address, "has a bad port");
  uint32_t port = 0;
  for (char c : port_text) {
    if (c < '0' || c > '9') return Bad(address, "has a bad port");
    port = port * 10 + static_cast<uint32_t>(c - '0');
  }
  if (port > 65535 || (port == 0 && !allow_port_zero)) return Bad(address, "has a port outside 1-65535");
  HostPort hp;
  hp.port = static_cast<uint16_t>(port);
  std::string_view host = address.substr(0, colon);
  if (host.front() == '[') {
    if (host.size() < 3 || host.back() != ']') return Bad(address, "has an unclosed '['");
    hp.host = std::string(host.substr(1, host.size() - 2));
    if (!IsIpv6(hp.host)) return Bad(address, "has a bad IPv6 address");
    return hp;
  }
  hp.host = std::string(host);
  if (IsIpv4(hp.host)) return hp;
  if (hp.host.find(':') != std::string::npos) return Bad(address, "needs brackets around an IPv6 address");
  if (!IsDnsName(hp.host)) return Bad(address, "has a bad host name");
  return hp;
}

std::string FormatHostPort(const HostPort& hp) {
  const bool v6 = hp.host.find(':') != std::string::npos;
  return (v6 ? "[" + hp.host + "]" : hp.host) + ":" + std::to_string(hp.port);
}

}  // namespace strata::group

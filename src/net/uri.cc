#include "net/uri.h"

#include <algorithm>
#include <cctype>

namespace strata::net {

std::string UriEncode(std::string_view in, bool encode_slash) {
  static const char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(in.size() * 3 / 2);
  for (unsigned char c : in) {
    bool unreserved = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
                      c == '.' || c == '_' || c == '~';
    if (unreserved || (c == '/' && !encode_slash)) {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

bool UriDecode(std::string_view in, std::string* out, bool plus_is_space) {
  out->clear();
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  for (size_t i = 0; i < in.size(); ++i) {
    char c = in[i];
    if (c == '%') {
      if (i + 2 >= in.size()) return false;
      int hi = hex(in[i + 1]), lo = hex(in[i + 2]);
      if (hi < 0 || lo < 0) return false;
      *out += static_cast<char>(hi << 4 | lo);
      i += 2;
    } else if (c == '+' && plus_is_space) {
      *out += ' ';
    } else {
      *out += c;
    }
  }
  return true;
}

std::vector<RawQueryParam> SplitQuery(std::string_view query) {
  std::vector<RawQueryParam> params;
  size_t pos = 0;
  while (pos <= query.size()) {
    size_t amp = query.find('&', pos);
    if (amp == std::string_view::npos) amp = query.size();
    std::string_view part = query.substr(pos, amp - pos);
    pos = amp + 1;
    if (part.empty()) continue;
    const size_t eq = part.find('=');
    params.push_back(
        {part, part.substr(0, eq), eq == std::string_view::npos ? std::string_view() : part.substr(eq + 1)});
  }
  return params;
}

std::string RedactTarget(std::string_view target, size_t max_bytes) {
  static constexpr std::string_view kSecretParams[] = {"x-amz-signature", "signature", "x-amz-security-token"};
  size_t q = target.find('?');
  std::string out(target.substr(0, q));
  if (q != std::string_view::npos) {
    out += '?';
    std::string_view query = target.substr(q + 1);
    while (true) {
      size_t amp = query.find('&');
      std::string_view param = query.substr(0, amp);
      size_t eq = param.find('=');
      std::string name(param.substr(0, eq));
      for (auto& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      bool secret = eq != std::string_view::npos &&
                    std::find(std::begin(kSecretParams), std::end(kSecretParams), name) != std::end(kSecretParams);
      out += secret ? std::string(param.substr(0, eq)) + "=REDACTED" : std::string(param);
      if (amp == std::string_view::npos) break;
      out += '&';
      query.remove_prefix(amp + 1);
    }
  }
  if (out.size() > max_bytes) out.resize(max_bytes);
  return out;
}

}  // namespace strata::net

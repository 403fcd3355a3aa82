#include "object/s3_metadata.h"

#include <algorithm>
#include <cctype>
#include <string>

#include "base/checksum.h"

namespace strata::object {
namespace {

std::string Lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

// "<ALGORITHM> <TYPE> <base64>" into m's checksum fields when well-formed.
void ParseReservedChecksum(std::string_view v, ObjectMetadata* m) {
  size_t sp1 = v.find(' ');
  size_t sp2 = sp1 == std::string_view::npos ? sp1 : v.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos) return;
  auto a = ParseChecksumAlgorithm(v.substr(0, sp1));
  std::string_view type = v.substr(sp1 + 1, sp2 - sp1 - 1), value = v.substr(sp2 + 1);
  if (!a || !ParseChecksumType(type) || value.empty()) return;
  m->checksum_algorithm = std::string(ChecksumName(*a));
  m->checksum_type = std::string(type);
  m->checksum = std::string(value);
}

}  // namespace

void AddS3MetadataHeaders(net::HttpHeaders& h, const ObjectMetadata& m) {
  const std::pair<const char*, const std::string*> standard[] = {
      {"Content-Type", &m.content_type},         {"Content-Encoding", &m.content_encoding},
      {"Content-Language", &m.content_language}, {"Content-Disposition", &m.content_disposition},
      {"Cache-Control", &m.cache_control},       {"Expires", &m.expires}};
  for (const auto& [name, value] : standard) {
    if (!value->empty()) h.emplace_back(name, *value);
  }
  for (const auto& [name, value] : m.user) {
    if (name != kS3ChecksumMetaName) h.emplace_back("x-amz-meta-" + name, value);
  }
  if (!m.checksum.empty() && !m.checksum_algorithm.empty()) {
    std::string type = m.checksum_type.empty() ? "FULL_OBJECT" : m.checksum_type;
    h.emplace_back("x-amz-meta-" + std::string(kS3ChecksumMetaName),
                   m.checksum_algorithm + " " + type + " " + m.checksum);
  }
}

void AddS3ChecksumHeaders(net::HttpHeaders& h, std::string_view algorithm, std::string_view type,
                          std::string_view value) {
  auto a = ParseChecksumAlgorithm(algorithm);
  if (!a || value.empty()) return;
  h.emplace_back(ChecksumHeader(*a), std::string(value));
  if (!type.empty()) h.emplace_back("x-amz-checksum-type", std::string(type));
}

ObjectMetadata S3MetadataFromHeaders(const net::HttpHeaders& headers) {
  ObjectMetadata m;
  std::pair<std::string_view, std::string*> standard[] = {
      {"content-type", &m.content_type},         {"content-encoding", &m.content_encoding},
      {"content-language", &m.content_language}, {"content-disposition", &m.content_disposition},
      {"cache-control", &m.cache_control},       {"expires", &m.expires}};
  constexpr std::string_view kPrefix = "x-amz-meta-";
  constexpr std::string_view kChecksumPrefix = "x-amz-checksum-";
  std::string reserved, native_type;
  for (const auto& [raw_name, value] : headers) {
    std::string name = Lower(raw_name);
    if (name.size() > kPrefix.size() && name.starts_with(kPrefix)) {
      std::string user = name.substr(kPrefix.size());
      if (user == kS3ChecksumMetaName) {
        reserved = value;
      } else {
        m.user[user] = value;
      }
      continue;
    }
    if (name.starts_with(kChecksumPrefix)) {
      std::string_view rest = std::string_view(name).substr(kChecksumPrefix.size());
      if (rest == "type") {
        native_type = value;
      } else if (auto a = ParseChecksumAlgorithm(rest); a && !value.empty()) {
        m.checksum_algorithm = std::string(ChecksumName(*a));
        m.checksum = value;
      }
      continue;
    }
    for (auto& [header, field] : standard) {
      if (name == header) *field = value;
    }
  }
  if (!m.checksum.empty()) {  // the upstream keeps checksums: its own answer
    m.checksum_type = ParseChecksumType(native_type)              ? native_type
                      : m.checksum.find('-') != std::string::npos ? "COMPOSITE"
                                                                  : "FULL_OBJECT";
  } else if (!reserved.empty()) {
    ParseReservedChecksum(reserved, &m);
  }
  return m;
}

}  // namespace strata::object

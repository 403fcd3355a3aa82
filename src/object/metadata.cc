#include "object/metadata.h"

#include <array>
#include <utility>

#include "base/checksum.h"
#include "base/coding.h"

namespace strata::object {
namespace {

constexpr uint8_t kVersion = 1;
constexpr uint8_t kVersionWithChecksum = 2;  // version 1 + algorithm, type, value
constexpr uint32_t kMaxUserEntries = 1024;

// The standard fields, in encoding order.
template <typename M>
auto Fields(M& m) {
  return std::array{&m.content_type,        &m.content_encoding, &m.content_language,
                    &m.content_disposition, &m.cache_control,    &m.expires};
}
template <typename M>
auto ChecksumFields(M& m) {
  return std::array{&m.checksum_algorithm, &m.checksum_type, &m.checksum};
}
bool HasChecksum(const ObjectMetadata& m) {
  return !m.checksum_algorithm.empty() || !m.checksum_type.empty() || !m.checksum.empty();
}

void PutString(std::string* out, std::string_view s) {
  PutFixed32(out, static_cast<uint32_t>(s.size()));
  out->append(s);
}

bool GetString(std::string_view* in, std::string* out) {
  uint32_t n = 0;
  if (!GetFixed32(in, &n) || n > in->size()) return false;
  out->assign(in->substr(0, n));
  in->remove_prefix(n);
  return true;
}

bool IsTokenChar(char c) {
  // RFC 7230 tchar, upper case excluded (names are stored lower-case).
  if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')) return true;
  return std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

bool HeaderSafe(std::string_view v) { return v.find_first_of(std::string_view("\r\n\0", 3)) == v.npos; }

}  // namespace

bool ObjectMetadata::empty() const { return *this == ObjectMetadata{}; }

size_t UserMetadataBytes(const ObjectMetadata& m) {
  size_t n = 0;
  for (const auto& [name, value] : m.user) n += name.size() + value.size();
  return n;
}

Status ValidateMetadata(const ObjectMetadata& m) {
  size_t bytes = UserMetadataBytes(m);
  if (bytes > kMaxUserMetadataBytes) {
    return InvalidArgumentError("user metadata is " + std::to_string(bytes) + " bytes, more than S3's " +
                                std::to_string(kMaxUserMetadataBytes) + " (MetadataTooLarge)");
  }
  for (const auto& [name, value] : m.user) {
    if (name.empty()) return InvalidArgumentError("a user metadata name is empty");
    for (char c : name) {
      if (!IsTokenChar(c)) {
        return InvalidArgumentError("user metadata name '" + name + "' must be a lower-case HTTP token");
      }
    }
    if (!HeaderSafe(value)) return InvalidArgumentError("user metadata '" + name + "' holds CR, LF or NUL");
  }
  for (const std::string* f : Fields(m)) {
    if (!HeaderSafe(*f)) return InvalidArgumentError("a metadata header holds CR, LF or NUL");
  }
  if (!m.checksum_algorithm.empty() && !ParseChecksumAlgorithm(m.checksum_algorithm)) {
    return InvalidArgumentError("unknown checksum algorithm '" + m.checksum_algorithm + "'");
  }
  if (!m.checksum_type.empty() && !ParseChecksumType(m.checksum_type)) {
    return InvalidArgumentError("unknown checksum type '" + m.checksum_type + "'");
  }
  if (!HeaderSafe(m.checksum)) return InvalidArgumentError("a checksum holds CR, LF or NUL");
  return Status::Ok();
}

std::string EncodeMetadata(const ObjectMetadata& m) {
  bool checksum = HasChecksum(m);
  std::string out(1, static_cast<char>(checksum ? kVersionWithChecksum : kVersion));
  for (const std::string* f : Fields(m)) PutString(&out, *f);
  PutFixed32(&out, static_cast<uint32_t>(m.user.size()));
  for (const auto& [name, value] : m.user) {
    PutString(&out, name);
    PutString(&out, value);
  }
  if (checksum) {
    for (const std::string* f : ChecksumFields(m)) PutString(&out, *f);
  }
  return out;
}

Result<ObjectMetadata> DecodeMetadata(std::string_view in) {
  auto bad = [](const char* why) { return CorruptionError(std::string("bad object metadata record: ") + why); };
  if (in.size() > kMaxEncodedMetadataBytes) return bad("too large");
  if (in.empty()) return bad("unknown version");
  const uint8_t version = static_cast<uint8_t>(in[0]);
  if (version != kVersion && version != kVersionWithChecksum) return bad("unknown version");
  in.remove_prefix(1);
  ObjectMetadata m;
  for (std::string* f : Fields(m)) {
    if (!GetString(&in, f)) return bad("truncated header field");
  }
  uint32_t count = 0;
  if (!GetFixed32(&in, &count) || count > kMaxUserEntries) return bad("bad user metadata count");
  for (uint32_t i = 0; i < count; ++i) {
    std::string name, value;
    if (!GetString(&in, &name) || !GetString(&in, &value)) return bad("truncated user metadata");
    // Encoded in the map's order: anything else (a duplicate included) is not a record we wrote.
    if (!m.user.empty() && !(m.user.rbegin()->first < name)) return bad("user metadata names out of order");
    m.user.emplace_hint(m.user.end(), std::move(name), std::move(value));
  }
  if (version == kVersionWithChecksum) {
    for (std::string* f : ChecksumFields(m)) {
      if (!GetString(&in, f)) return bad("truncated checksum");
    }
    // Encode writes version 1 when there is no checksum: anything else is not a record we wrote.
    if (!HasChecksum(m)) return bad("version 2 without a checksum");
  }
  if (!in.empty()) return bad("trailing bytes");
  return m;
}

std::string EncodePartSizes(const std::vector<uint64_t>& sizes) {
  if (sizes.empty() || sizes.size() > kMaxRecordedParts) return "";
  std::vector<std::pair<uint64_t, uint32_t>> runs;
  for (uint64_t s : sizes) {
    if (!runs.empty() && runs.back().first == s) {
      ++runs.back().second;
    } else {
      if (runs.size() == kMaxPartRuns) return "";
      runs.push_back({s, 1});
    }
  }
  std::string out(1, static_cast<char>(kVersion));
  PutFixed32(&out, static_cast<uint32_t>(runs.size()));
  for (const auto& [size, count] : runs) {
    PutFixed64(&out, size);
    PutFixed32(&out, count);
  }
  return out;
}

Result<std::vector<uint64_t>> DecodePartSizes(std::string_view in) {
  auto bad = [](const char* why) { return CorruptionError(std::string("bad part sizes record: ") + why); };
  if (in.empty() || static_cast<uint8_t>(in[0]) != kVersion) return bad("unknown version");
  in.remove_prefix(1);
  uint32_t runs = 0;
  if (!GetFixed32(&in, &runs) || runs == 0 || runs > kMaxPartRuns) return bad("bad run count");
  std::vector<uint64_t> sizes;
  uint64_t total = 0;
  for (uint32_t i = 0; i < runs; ++i) {
    uint64_t size = 0;
    uint32_t count = 0;
    if (!GetFixed64(&in, &size) || !GetFixed32(&in, &count)) return bad("truncated run");
    if (count == 0 || count > kMaxRecordedParts - sizes.size()) return bad("bad part count");
    // Adjacent runs of one size are not what Encode writes (the round trip must hold).
    if (i > 0 && sizes.back() == size) return bad("split run");
    for (uint32_t j = 0; j < count; ++j) {
      if (total + size < total) return bad("sizes overflow");
      total += size;
      sizes.push_back(size);
    }
  }
  if (!in.empty()) return bad("trailing bytes");
  return sizes;
}

}  // namespace strata::object

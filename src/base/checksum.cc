#include "base/checksum.h"

#include <openssl/evp.h>
#include <zlib.h>

#include <algorithm>
#include <cctype>

#include "base/hash.h"

namespace strata {
namespace {

constexpr uint64_t kCrc64NvmePoly = 0x9a6c9329ac4bc9b5ull;  // 0xad93d23594c93659 reflected

struct Crc64Table {
  uint64_t t[256];
  Crc64Table() {
    for (uint64_t i = 0; i < 256; ++i) {
      uint64_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ kCrc64NvmePoly : c >> 1;
      t[i] = c;
    }
  }
};

// GF(2) arithmetic modulo a reflected CRC polynomial of `width` bits (as
// zlib's crc32_combine does it): a*b mod p, and x^(8n) mod p.
struct CrcField {
  uint64_t poly;
  int width;
  uint64_t Top() const { return uint64_t{1} << (width - 1); }  // x^0 in the reflected order
  uint64_t Mul(uint64_t a, uint64_t b) const {
    uint64_t m = Top(), p = 0;
    while (m) {
      if (a & m) p ^= b;
      m >>= 1;
      b = (b & 1) ? (b >> 1) ^ poly : b >> 1;
    }
    return p;
  }
  uint64_t XPow8n(uint64_t n) const {              // x^(8n) by square-and-multiply
    uint64_t result = Top(), square = Top() >> 8;  // x^0, x^8
    while (n) {
      if (n & 1) result = Mul(result, square);
      square = Mul(square, square);
      n >>= 1;
    }
    return result;
  }
  uint64_t Combine(uint64_t crc_a, uint64_t crc_b, uint64_t size_b) const { return Mul(XPow8n(size_b), crc_a) ^ crc_b; }
};

CrcField FieldOf(ChecksumAlgorithm a) {
  switch (a) {
    case ChecksumAlgorithm::kCrc32: return {0xedb88320u, 32};
    case ChecksumAlgorithm::kCrc32c: return {0x82f63b78u, 32};
    default: return {kCrc64NvmePoly, 64};
  }
}

std::string BigEndian(uint64_t v, size_t bytes) {
  std::string out(bytes, '\0');
  for (size_t i = 0; i < bytes; ++i) out[bytes - 1 - i] = static_cast<char>((v >> (8 * i)) & 0xff);
  return out;
}

uint64_t FromBigEndian(std::string_view s) {
  uint64_t v = 0;
  for (char c : s) v = v << 8 | static_cast<uint8_t>(c);
  return v;
}

}  // namespace

uint64_t Crc64Nvme(const void* data, size_t size, uint64_t init) {
  static const Crc64Table table;
  const uint8_t* p = static_cast<const uint8_t*>(data);
  uint64_t crc = ~init;
  while (size--) crc = (crc >> 8) ^ table.t[(crc ^ *p++) & 0xff];
  return ~crc;
}

uint32_t Crc32(const void* data, size_t size, uint32_t init) {
  uLong crc = init;
  const Bytef* p = static_cast<const Bytef*>(data);
  while (size > 0) {  // zlib takes uInt lengths
    uInt n = static_cast<uInt>(std::min<size_t>(size, 1u << 30));
    crc = crc32(crc, p, n);
    p += n;
    size -= n;
  }
  return static_cast<uint32_t>(crc);
}

std::string_view ChecksumName(ChecksumAlgorithm a) {
  switch (a) {
    case ChecksumAlgorithm::kCrc32: return "CRC32";
    case ChecksumAlgorithm::kCrc32c: return "CRC32C";
    case ChecksumAlgorithm::kCrc64Nvme: return "CRC64NVME";
    case ChecksumAlgorithm::kSha1: return "SHA1";
    case ChecksumAlgorithm::kSha256: return "SHA256";
  }
  return "";
}

std::optional<ChecksumAlgorithm> ParseChecksumAlgorithm(std::string_view name) {
  std::string upper(name);
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  for (ChecksumAlgorithm a : kAllChecksumAlgorithms) {
    if (ChecksumName(a) == upper) return a;
  }
  return std::nullopt;
}

std::string ChecksumHeader(ChecksumAlgorithm a) {
  std::string h = "x-amz-checksum-";
  for (char c : ChecksumName(a)) h += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return h;
}

size_t ChecksumSize(ChecksumAlgorithm a) {
  switch (a) {
    case ChecksumAlgorithm::kCrc32:
    case ChecksumAlgorithm::kCrc32c: return 4;
    case ChecksumAlgorithm::kCrc64Nvme: return 8;
    case ChecksumAlgorithm::kSha1: return 20;
    case ChecksumAlgorithm::kSha256: return 32;
  }
  return 0;
}

bool IsCrc(ChecksumAlgorithm a) {
  return a == ChecksumAlgorithm::kCrc32 || a == ChecksumAlgorithm::kCrc32c || a == ChecksumAlgorithm::kCrc64Nvme;
}

std::string ComputeChecksum(ChecksumAlgorithm a, std::string_view data) {
  ChecksumHasher h(a);
  h.Update(data);
  return h.Finish();
}

ChecksumHasher::ChecksumHasher(ChecksumAlgorithm a) : a_(a) {
  if (!IsCrc(a)) {
    md_ = EVP_MD_CTX_new();
    if (md_) EVP_DigestInit_ex(md_, a == ChecksumAlgorithm::kSha1 ? EVP_sha1() : EVP_sha256(), nullptr);
  }
}

ChecksumHasher::~ChecksumHasher() { EVP_MD_CTX_free(md_); }

void ChecksumHasher::Update(std::string_view p) {
  switch (a_) {
    case ChecksumAlgorithm::kCrc32: crc_ = Crc32(p.data(), p.size(), static_cast<uint32_t>(crc_)); break;
    case ChecksumAlgorithm::kCrc32c: crc_ = Crc32c(p.data(), p.size(), static_cast<uint32_t>(crc_)); break;
    case ChecksumAlgorithm::kCrc64Nvme: crc_ = Crc64Nvme(p.data(), p.size(), crc_); break;
    default:
      if (md_) EVP_DigestUpdate(md_, p.data(), p.size());
  }
}

std::string ChecksumHasher::Finish() {
  if (!IsCrc(a_)) {
    unsigned char out[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    if (!md_ || EVP_DigestFinal_ex(md_, out, &n) != 1) return {};
    return std::string(reinterpret_cast<const char*>(out), n);
  }
  return BigEndian(crc_, ChecksumSize(a_));
}

std::string ChecksumBase64(ChecksumAlgorithm a, std::string_view data) {
  std::string raw = ComputeChecksum(a, data);
  return Base64Encode(raw.data(), raw.size());
}

std::optional<std::string> DecodeChecksum(ChecksumAlgorithm a, std::string_view base64) {
  std::string raw;
  if (base64.size() > 64 || !Base64Decode(base64, &raw) || raw.size() != ChecksumSize(a)) return std::nullopt;
  return raw;
}

std::string CombineCrc(ChecksumAlgorithm a, std::string_view raw_a, std::string_view raw_b, uint64_t size_b) {
  CrcField f = FieldOf(a);
  return BigEndian(f.Combine(FromBigEndian(raw_a), FromBigEndian(raw_b), size_b), ChecksumSize(a));
}

std::string_view ChecksumTypeName(ChecksumType t) {
  return t == ChecksumType::kComposite ? "COMPOSITE" : "FULL_OBJECT";
}

std::optional<ChecksumType> ParseChecksumType(std::string_view name) {
  if (name == "COMPOSITE") return ChecksumType::kComposite;
  if (name == "FULL_OBJECT") return ChecksumType::kFullObject;
  return std::nullopt;
}

bool ChecksumTypeAllowed(ChecksumAlgorithm a, ChecksumType t) {
  if (t == ChecksumType::kFullObject) return IsCrc(a);
  return a != ChecksumAlgorithm::kCrc64Nvme;
}

ChecksumType DefaultChecksumType(ChecksumAlgorithm a) {
  return a == ChecksumAlgorithm::kCrc64Nvme ? ChecksumType::kFullObject : ChecksumType::kComposite;
}

Result<std::string> CombinePartChecksums(ChecksumAlgorithm a, ChecksumType t, const std::vector<PartChecksum>& parts) {
  if (!ChecksumTypeAllowed(a, t)) {
    return InvalidArgumentError("checksum type " + std::string(ChecksumTypeName(t)) + " is not allowed for " +
                                std::string(ChecksumName(a)));
  }
  for (const PartChecksum& p : parts) {
    if (p.raw.size() != ChecksumSize(a)) return InvalidArgumentError("a part's checksum has the wrong size");
  }
  if (t == ChecksumType::kFullObject) {
    std::string crc = ComputeChecksum(a, "");
    for (const PartChecksum& p : parts) crc = CombineCrc(a, crc, p.raw, p.size);
    return Base64Encode(crc.data(), crc.size());
  }
  std::string concat;
  for (const PartChecksum& p : parts) concat += p.raw;
  return ChecksumBase64(a, concat) + "-" + std::to_string(parts.size());
}

}  // namespace strata

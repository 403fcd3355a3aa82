// S3's object checksums (x-amz-checksum-*): CRC32 (zlib), CRC32C, CRC64NVME,
// SHA1 and SHA256, with the base64 forms S3 prints, and the multipart
// combinations S3 defines: COMPOSITE (a checksum of the parts' raw
// checksums, "-N" appended) and FULL_OBJECT (the CRC of the whole object,
// combined from the parts' CRCs and sizes). Pure functions, thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

struct evp_md_ctx_st;  // OpenSSL's EVP_MD_CTX

namespace strata {

// CRC-64/NVME (polynomial 0xad93d23594c93659, reflected; init and xorout all ones).
uint64_t Crc64Nvme(const void* data, size_t size, uint64_t init = 0);  // init = running crc
// CRC-32 (IEEE, zlib's).
uint32_t Crc32(const void* data, size_t size, uint32_t init = 0);

enum class ChecksumAlgorithm { kCrc32, kCrc32c, kCrc64Nvme, kSha1, kSha256 };
inline constexpr ChecksumAlgorithm kAllChecksumAlgorithms[] = {ChecksumAlgorithm::kCrc32, ChecksumAlgorithm::kCrc32c,
                                                               ChecksumAlgorithm::kCrc64Nvme, ChecksumAlgorithm::kSha1,
                                                               ChecksumAlgorithm::kSha256};

// "CRC32", "CRC32C", "CRC64NVME", "SHA1", "SHA256" (S3's spelling).
std::string_view ChecksumName(ChecksumAlgorithm a);
// Case-insensitive; nullopt for anything else.
std::optional<ChecksumAlgorithm> ParseChecksumAlgorithm(std::string_view name);
// "x-amz-checksum-crc32" etc.
std::string ChecksumHeader(ChecksumAlgorithm a);
// Bytes of the raw (big-endian) digest: 4, 4, 8, 20, 32.
size_t ChecksumSize(ChecksumAlgorithm a);
bool IsCrc(ChecksumAlgorithm a);

// The raw digest of `data` (big-endian for the CRCs, as S3 encodes them).
std::string ComputeChecksum(ChecksumAlgorithm a, std::string_view data);

// ComputeChecksum of a payload fed in pieces (a body streamed from a file).
class ChecksumHasher {
 public:
  explicit ChecksumHasher(ChecksumAlgorithm a);
  ~ChecksumHasher();
  ChecksumHasher(const ChecksumHasher&) = delete;
  ChecksumHasher& operator=(const ChecksumHasher&) = delete;
  void Update(std::string_view piece);
  std::string Finish();  // the raw digest, as ComputeChecksum returns it

 private:
  ChecksumAlgorithm a_;
  uint64_t crc_ = 0;
  ::evp_md_ctx_st* md_ = nullptr;  // OpenSSL's EVP_MD_CTX, for SHA1/SHA256
};
// base64 of ComputeChecksum: the value of an x-amz-checksum-* header.
std::string ChecksumBase64(ChecksumAlgorithm a, std::string_view data);
// The raw digest of a header value; nullopt unless it is base64 of exactly ChecksumSize bytes.
std::optional<std::string> DecodeChecksum(ChecksumAlgorithm a, std::string_view base64);

// The CRC of A||B from raw crc(A), raw crc(B) and |B| (CRCs only).
std::string CombineCrc(ChecksumAlgorithm a, std::string_view raw_a, std::string_view raw_b, uint64_t size_b);

enum class ChecksumType { kComposite, kFullObject };
std::string_view ChecksumTypeName(ChecksumType t);  // "COMPOSITE", "FULL_OBJECT"
std::optional<ChecksumType> ParseChecksumType(std::string_view name);
// What S3 allows: SHA only composite, CRC64NVME only full-object, CRC32(C) both.
bool ChecksumTypeAllowed(ChecksumAlgorithm a, ChecksumType t);
// S3's default type for a multipart upload that names only the algorithm.
ChecksumType DefaultChecksumType(ChecksumAlgorithm a);

struct PartChecksum {
  std::string raw;    // the part's raw digest
  uint64_t size = 0;  // the part's bytes (FULL_OBJECT combines with it)
};
// The value S3 gives a completed multipart object: COMPOSITE is
// base64(H(raw_1 || ... || raw_N)) + "-N"; FULL_OBJECT is base64 of the CRC
// of the whole object. InvalidArgument when the type is not allowed for the
// algorithm or a part's digest has the wrong size.
Result<std::string> CombinePartChecksums(ChecksumAlgorithm a, ChecksumType t, const std::vector<PartChecksum>& parts);

}  // namespace strata

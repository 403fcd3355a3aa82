// Hashes and checksums. Fast ones (xxHash3, CRC32C) protect cached and
// framed bytes; cryptographic ones (SHA-256, HMAC-SHA256, MD5) are for S3
// signing, ETags and manifests. All are pure functions, thread-safe.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace strata {

uint64_t XxHash3(const void* data, size_t size, uint64_t seed = 0);
inline uint64_t XxHash3(std::string_view s) { return XxHash3(s.data(), s.size()); }

// Incremental XxHash3: Digest() equals XxHash3 (seed 0) of everything Update()d,
// so bytes can be checked as they arrive.
class XxHash3Hasher {
 public:
  XxHash3Hasher();
  ~XxHash3Hasher();
  XxHash3Hasher(const XxHash3Hasher&) = delete;
  XxHash3Hasher& operator=(const XxHash3Hasher&) = delete;
  void Update(const void* data, size_t size);
  uint64_t Digest() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// CRC-32C (Castagnoli), as used by TFRecord and many storage formats.
uint32_t Crc32c(const void* data, size_t size, uint32_t init = 0);  // init = running crc
inline uint32_t Crc32c(std::string_view s) { return Crc32c(s.data(), s.size()); }
// 8 lowercase hex digits, most significant first (as S3 writes CRC32C, in hex).
std::string Crc32cHex(uint32_t crc);
// TFRecord's masked CRC: ((crc >> 15) | (crc << 17)) + 0xa282ead8.
uint32_t MaskCrc32c(uint32_t crc);
uint32_t UnmaskCrc32c(uint32_t masked);

using Sha256Digest = std::array<uint8_t, 32>;
using Md5Digest = std::array<uint8_t, 16>;

Sha256Digest Sha256(const void* data, size_t size);
inline Sha256Digest Sha256(std::string_view s) { return Sha256(s.data(), s.size()); }
Sha256Digest HmacSha256(std::string_view key, std::string_view message);
Md5Digest Md5(const void* data, size_t size);
inline Md5Digest Md5(std::string_view s) { return Md5(s.data(), s.size()); }

// Incremental SHA-256 (for hashing while streaming to disk).
class Sha256Hasher {
 public:
  Sha256Hasher();
  ~Sha256Hasher();
  Sha256Hasher(const Sha256Hasher&) = delete;
  Sha256Hasher& operator=(const Sha256Hasher&) = delete;
  void Update(const void* data, size_t size);
  void Update(std::string_view s) { Update(s.data(), s.size()); }
  Sha256Digest Finish();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Incremental MD5 (multipart ETags, Content-MD5).
class Md5Hasher {
 public:
  Md5Hasher();
  ~Md5Hasher();
  Md5Hasher(const Md5Hasher&) = delete;
  Md5Hasher& operator=(const Md5Hasher&) = delete;
  void Update(const void* data, size_t size);
  Md5Digest Finish();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

std::string ToHex(const void* data, size_t size);
template <size_t N>
std::string ToHex(const std::array<uint8_t, N>& a) {
  return ToHex(a.data(), N);
}
std::string Base64Encode(const void* data, size_t size);
template <size_t N>
std::string Base64Encode(const std::array<uint8_t, N>& a) {
  return Base64Encode(a.data(), N);
}
// Returns false on malformed input.
bool Base64Decode(std::string_view in, std::string* out);
bool HexDecode(std::string_view in, std::string* out);

}  // namespace strata

#include "base/hash.h"

#define XXH_INLINE_ALL
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <xxhash.h>

#include <cstring>
#include <stdexcept>

namespace strata {

uint64_t XxHash3(const void* data, size_t size, uint64_t seed) { return XXH3_64bits_withSeed(data, size, seed); }

struct XxHash3Hasher::Impl {
  XXH3_state_t state;
};
XxHash3Hasher::XxHash3Hasher() : impl_(std::make_unique<Impl>()) { XXH3_64bits_reset(&impl_->state); }
XxHash3Hasher::~XxHash3Hasher() = default;
void XxHash3Hasher::Update(const void* data, size_t size) { XXH3_64bits_update(&impl_->state, data, size); }
uint64_t XxHash3Hasher::Digest() const { return XXH3_64bits_digest(&impl_->state); }

namespace {
// Slicing-by-8 tables for CRC-32C (reflected polynomial 0x82F63B78).
struct Crc32cTables {
  uint32_t t[8][256];
  Crc32cTables() {
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
      t[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; ++i) {
      for (int s = 1; s < 8; ++s) t[s][i] = (t[s - 1][i] >> 8) ^ t[0][t[s - 1][i] & 0xff];
    }
  }
};
const Crc32cTables& Tables() {
  static const Crc32cTables tables;
  return tables;
}

uint32_t Crc32cSoftware(const void* data, size_t size, uint32_t init) {
  const auto& T = Tables().t;
  const uint8_t* p = static_cast<const uint8_t*>(data);
  uint32_t crc = ~init;
  while (size >= 8) {
    uint32_t lo = crc ^ (uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24);
    crc = T[7][lo & 0xff] ^ T[6][(lo >> 8) & 0xff] ^ T[5][(lo >> 16) & 0xff] ^ T[4][lo >> 24] ^ T[3][p[4]] ^
          T[2][p[5]] ^ T[1][p[6]] ^ T[0][p[7]];
    p += 8;
    size -= 8;
  }
  while (size--) crc = (crc >> 8) ^ T[0][(crc ^ *p++) & 0xff];
  return ~crc;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
// SSE4.2's crc32 instruction computes CRC-32C (the same reflected polynomial):
// 8 bytes per instruction, several times slicing-by-8 (the loader checks every
// record of every shard it fetches with it).
// The instruction's latency is three times its throughput: long inputs run
// three independent streams of kStream bytes, joined by advancing a CRC
// register over kStream zero bytes (linear in the register: four table
// lookups, the tables built once with the same instruction).
constexpr size_t kStream = 8192;
struct ShiftTables {
  uint32_t t[4][256];
};
__attribute__((target("sse4.2"))) ShiftTables MakeShiftTables() {
  ShiftTables s;
  for (int k = 0; k < 4; ++k) {
    for (uint32_t b = 0; b < 256; ++b) {
      uint64_t r = b << (8 * k);
      for (size_t i = 0; i < kStream / 8; ++i) r = __builtin_ia32_crc32di(r, 0);
      s.t[k][b] = uint32_t(r);
    }
  }
  return s;
}
inline uint32_t ShiftOverStream(const ShiftTables& s, uint32_t r) {
  return s.t[0][r & 0xff] ^ s.t[1][(r >> 8) & 0xff] ^ s.t[2][(r >> 16) & 0xff] ^ s.t[3][r >> 24];
}

__attribute__((target("sse4.2"))) uint32_t Crc32cSse42(const void* data, size_t size, uint32_t init) {
  const uint8_t* p = static_cast<const uint8_t*>(data);
  uint64_t crc = ~init;
  for (; size > 0 && (reinterpret_cast<uintptr_t>(p) & 7) != 0; --size)
    crc = __builtin_ia32_crc32qi(uint32_t(crc), *p++);
  if (size >= 3 * kStream) {
    static const ShiftTables shift = MakeShiftTables();
    for (; size >= 3 * kStream; size -= 3 * kStream, p += 3 * kStream) {
      uint64_t c1 = 0, c2 = 0;
      for (size_t i = 0; i < kStream; i += 8) {
        uint64_t a, b, c;
        std::memcpy(&a, p + i, 8);
        std::memcpy(&b, p + kStream + i, 8);
        std::memcpy(&c, p + 2 * kStream + i, 8);
        crc = __builtin_ia32_crc32di(crc, a);
        c1 = __builtin_ia32_crc32di(c1, b);
        c2 = __builtin_ia32_crc32di(c2, c);
      }
      crc = ShiftOverStream(shift, ShiftOverStream(shift, uint32_t(crc)) ^ uint32_t(c1)) ^ uint32_t(c2);
    }
  }
  for (; size >= 8; size -= 8, p += 8) {
    uint64_t v;
    std::memcpy(&v, p, 8);
    crc = __builtin_ia32_crc32di(crc, v);
  }
  for (; size > 0; --size) crc = __builtin_ia32_crc32qi(uint32_t(crc), *p++);
  return ~uint32_t(crc);
}
using Crc32cFn = uint32_t (*)(const void*, size_t, uint32_t);
Crc32cFn PickCrc32c() { return __builtin_cpu_supports("sse4.2") ? Crc32cSse42 : Crc32cSoftware; }
#else
uint32_t (*PickCrc32c())(const void*, size_t, uint32_t) { return Crc32cSoftware; }
#endif

}  // namespace

uint32_t Crc32c(const void* data, size_t size, uint32_t init) {
  static const auto fn = PickCrc32c();
  return fn(data, size, init);
}

std::string Crc32cHex(uint32_t crc) {
  const uint8_t be[4] = {uint8_t(crc >> 24), uint8_t(crc >> 16), uint8_t(crc >> 8), uint8_t(crc)};
  return ToHex(be, sizeof be);
}

uint32_t MaskCrc32c(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + 0xa282ead8u; }
uint32_t UnmaskCrc32c(uint32_t masked) {
  uint32_t rot = masked - 0xa282ead8u;
  return (rot >> 17) | (rot << 15);
}

Sha256Digest Sha256(const void* data, size_t size) {
  Sha256Hasher h;
  h.Update(data, size);
  return h.Finish();
}

Sha256Digest HmacSha256(std::string_view key, std::string_view message) {
  Sha256Digest out{};
  unsigned int len = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()), reinterpret_cast<const unsigned char*>(message.data()),
       message.size(), out.data(), &len);
  return out;
}

Md5Digest Md5(const void* data, size_t size) {
  Md5Hasher h;
  h.Update(data, size);
  return h.Finish();
}

struct Sha256Hasher::Impl {
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  ~Impl() { EVP_MD_CTX_free(ctx); }
};
Sha256Hasher::Sha256Hasher() : impl_(std::make_unique<Impl>()) {
  if (!impl_->ctx || EVP_DigestInit_ex(impl_->ctx, EVP_sha256(), nullptr) != 1)
    throw std::runtime_error("OpenSSL SHA-256 init failed");
}
Sha256Hasher::~Sha256Hasher() = default;
void Sha256Hasher::Update(const void* data, size_t size) { EVP_DigestUpdate(impl_->ctx, data, size); }
Sha256Digest Sha256Hasher::Finish() {
  Sha256Digest out{};
  unsigned int len = 0;
  EVP_DigestFinal_ex(impl_->ctx, out.data(), &len);
  return out;
}

struct Md5Hasher::Impl {
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  ~Impl() { EVP_MD_CTX_free(ctx); }
};
Md5Hasher::Md5Hasher() : impl_(std::make_unique<Impl>()) {
  if (!impl_->ctx || EVP_DigestInit_ex(impl_->ctx, EVP_md5(), nullptr) != 1)
    throw std::runtime_error("OpenSSL MD5 init failed");
}
Md5Hasher::~Md5Hasher() = default;
void Md5Hasher::Update(const void* data, size_t size) { EVP_DigestUpdate(impl_->ctx, data, size); }
Md5Digest Md5Hasher::Finish() {
  Md5Digest out{};
  unsigned int len = 0;
  EVP_DigestFinal_ex(impl_->ctx, out.data(), &len);
  return out;
}

std::string ToHex(const void* data, size_t size) {
  static const char kDigits[] = "0123456789abcdef";
  const uint8_t* p = static_cast<const uint8_t*>(data);
  std::string out(size * 2, '0');
  for (size_t i = 0; i < size; ++i) {
    out[2 * i] = kDigits[p[i] >> 4];
    out[2 * i + 1] = kDigits[p[i] & 0xf];
  }
  return out;
}

static const char kB64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

std::string Base64Encode(const void* data, size_t size) {
  const uint8_t* p = static_cast<const uint8_t*>(data);
  std::string out;
  out.reserve((size + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 3 <= size; i += 3) {
    uint32_t v = uint32_t(p[i]) << 16 | uint32_t(p[i + 1]) << 8 | p[i + 2];
    out += kB64[v >> 18];
    out += kB64[(v >> 12) & 63];
    out += kB64[(v >> 6) & 63];
    out += kB64[v & 63];
  }
  if (size - i == 1) {
    uint32_t v = uint32_t(p[i]) << 16;
    out += kB64[v >> 18];
    out += kB64[(v >> 12) & 63];
    out += "==";
  } else if (size - i == 2) {
    uint32_t v = uint32_t(p[i]) << 16 | uint32_t(p[i + 1]) << 8;
    out += kB64[v >> 18];
    out += kB64[(v >> 12) & 63];
    out += kB64[(v >> 6) & 63];
    out += '=';
  }
  return out;
}

bool Base64Decode(std::string_view in, std::string* out) {
  out->clear();
  if (in.size() % 4 != 0) return false;
  auto val = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  for (size_t i = 0; i < in.size(); i += 4) {
    int pad = 0;
    uint32_t v = 0;
    for (int k = 0; k < 4; ++k) {
      char c = in[i + k];
      if (c == '=') {
        // Padding only in the last quartet's final one or two places.
        if (i + 4 != in.size() || k < 2) return false;
        ++pad;
        v <<= 6;
        continue;
      }
      if (pad) return false;
      int d = val(c);
      if (d < 0) return false;
      v = v << 6 | uint32_t(d);
    }
    out->push_back(char(v >> 16));
    if (pad < 2) out->push_back(char((v >> 8) & 0xff));
    if (pad < 1) out->push_back(char(v & 0xff));
  }
  return true;
}

bool HexDecode(std::string_view in, std::string* out) {
  out->clear();
  if (in.size() % 2) return false;
  auto val = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  for (size_t i = 0; i < in.size(); i += 2) {
    int hi = val(in[i]), lo = val(in[i + 1]);
    if (hi < 0 || lo < 0) return false;
    out->push_back(char(hi << 4 | lo));
  }
  return true;
}

}  // namespace strata

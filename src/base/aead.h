// AES-256-GCM (OpenSSL's, with the CPU's AES and carry-less multiply
// instructions): what strata seals or authenticates with a key. Cache blocks
// and shard files at rest are sealed (encrypted and authenticated, a header
// authenticated beside them); the cache group's peer answers are
// authenticated only (GMAC: the GCM tag over bytes that stay in clear).
// Pure functions; thread-safe.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string_view>

#include "base/status.h"

struct evp_cipher_ctx_st;  // OpenSSL's EVP_CIPHER_CTX

namespace strata {

inline constexpr size_t kAesKeyBytes = 32;
inline constexpr size_t kGcmNonceBytes = 12;
inline constexpr size_t kGcmTagBytes = 16;
using AesKey = std::array<uint8_t, kAesKeyBytes>;
using GcmNonce = std::array<uint8_t, kGcmNonceBytes>;
using GcmTag = std::array<uint8_t, kGcmTagBytes>;

// Encrypts `size` bytes of `in` into `out` (the same buffer is fine) and
// authenticates `aad` with them. A nonce must never repeat under one key:
// take a fresh random one per message (RandomNonce).
Status AesGcmSeal(const AesKey& key, const GcmNonce& nonce, std::string_view aad, const uint8_t* in, uint8_t* out,
                  size_t size, GcmTag* tag);

// Decrypts `size` bytes of `in` into `out` (the same buffer is fine) and
// checks the tag over them and `aad`. Corruption when it does not match (a
// wrong key, or altered bytes, AAD or tag): `out` then holds bytes that must
// not be used.
Status AesGcmOpen(const AesKey& key, const GcmNonce& nonce, std::string_view aad, const uint8_t* in, uint8_t* out,
                  size_t size, const GcmTag& tag);

// Opens one message piece by piece, in order, as its bytes arrive, so
// decryption overlaps reading the rest. What Update writes must not be used
// unless Finish succeeds. Each opener owns its cipher state (a fresh context
// per message: ~3 us, against ~0.8 ms to open 4 MiB), so several may be open
// at once on one thread. Not thread-safe; move-only.
class GcmOpener {
 public:
  static Result<GcmOpener> Start(const AesKey& key, const GcmNonce& nonce, std::string_view aad);
  // Decrypts the message's next `size` bytes from `in` into `out` (the same buffer is fine).
  Status Update(const uint8_t* in, uint8_t* out, size_t size);
  // Checks `tag` over everything given; Corruption when it does not match
  // (as AesGcmOpen). The opener is spent either way.
  Status Finish(const GcmTag& tag);

 private:
  struct CtxFree {
    void operator()(evp_cipher_ctx_st* c) const;
  };
  explicit GcmOpener(evp_cipher_ctx_st* ctx) : ctx_(ctx) {}
  std::unique_ptr<evp_cipher_ctx_st, CtxFree> ctx_;
};

// The GCM tag over `parts` (as associated data, concatenated) with nothing
// encrypted. The nonce is fixed, so `key` must authenticate one message only:
// derive a fresh key per message (e.g. HMAC of a secret and a nonce).
Result<GcmTag> Gmac(const AesKey& key, std::initializer_list<std::string_view> parts);

// Unpredictable bytes from OpenSSL's generator (nonces, per-message keys).
// Internal error only when the system gives it no entropy at all.
Status RandomBytes(void* out, size_t size);
inline Result<GcmNonce> RandomNonce() {
  GcmNonce n;
  STRATA_RETURN_IF_ERROR(RandomBytes(n.data(), n.size()));
  return n;
}

}  // namespace strata

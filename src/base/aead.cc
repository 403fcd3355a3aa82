#include "base/aead.h"

#include <openssl/evp.h>
#include <openssl/rand.h>

#include <algorithm>
#include <memory>

namespace strata {
namespace {

struct CtxFree {
  void operator()(EVP_CIPHER_CTX* c) const { EVP_CIPHER_CTX_free(c); }
};
using Ctx = std::unique_ptr<EVP_CIPHER_CTX, CtxFree>;

// EVP takes int lengths: feed large buffers in pieces.
constexpr size_t kPiece = 1u << 30;

Status CipherError(const char* what) { return InternalError(std::string("AES-256-GCM: ") + what + " failed"); }

Ctx StartCipher(bool encrypt, const AesKey& key, const uint8_t* nonce) {
  Ctx c(EVP_CIPHER_CTX_new());
  if (!c) return c;
  const int enc = encrypt ? 1 : 0;
  if (EVP_CipherInit_ex(c.get(), EVP_aes_256_gcm(), nullptr, nullptr, nullptr, enc) != 1 ||
      EVP_CIPHER_CTX_ctrl(c.get(), EVP_CTRL_GCM_SET_IVLEN, static_cast<int>(kGcmNonceBytes), nullptr) != 1 ||
      EVP_CipherInit_ex(c.get(), nullptr, nullptr, key.data(), nonce, enc) != 1) {
    c.reset();
  }
  return c;
}

bool AddAad(EVP_CIPHER_CTX* c, std::string_view aad) {
  int len = 0;
  for (size_t at = 0; at < aad.size(); at += kPiece) {
    const size_t n = std::min(kPiece, aad.size() - at);
    if (EVP_CipherUpdate(c, nullptr, &len, reinterpret_cast<const uint8_t*>(aad.data()) + at, static_cast<int>(n)) !=
        1) {
      return false;
    }
  }
  return true;
}

bool Crypt(EVP_CIPHER_CTX* c, const uint8_t* in, uint8_t* out, size_t size) {
  int len = 0;
  for (size_t at = 0; at < size; at += kPiece) {
    const size_t n = std::min(kPiece, size - at);
    if (EVP_CipherUpdate(c, out + at, &len, in + at, static_cast<int>(n)) != 1) return false;
  }
  return true;
}

}  // namespace

Status AesGcmSeal(const AesKey& key, const GcmNonce& nonce, std::string_view aad, const uint8_t* in, uint8_t* out,
                  size_t size, GcmTag* tag) {
  Ctx c = StartCipher(true, key, nonce.data());
  int len = 0;
  if (!c || !AddAad(c.get(), aad) || !Crypt(c.get(), in, out, size) || EVP_EncryptFinal_ex(c.get(), out, &len) != 1 ||
      EVP_CIPHER_CTX_ctrl(c.get(), EVP_CTRL_GCM_GET_TAG, static_cast<int>(kGcmTagBytes), tag->data()) != 1) {
    return CipherError("sealing");
  }
  return Status::Ok();
}

Status AesGcmOpen(const AesKey& key, const GcmNonce& nonce, std::string_view aad, const uint8_t* in, uint8_t* out,
                  size_t size, const GcmTag& tag) {
  STRATA_ASSIGN_OR_RETURN(GcmOpener opener, GcmOpener::Start(key, nonce, aad));
  STRATA_RETURN_IF_ERROR(opener.Update(in, out, size));
  return opener.Finish(tag);
}

void GcmOpener::CtxFree::operator()(evp_cipher_ctx_st* c) const { EVP_CIPHER_CTX_free(c); }

Result<GcmOpener> GcmOpener::Start(const AesKey& key, const GcmNonce& nonce, std::string_view aad) {
  Ctx c = StartCipher(false, key, nonce.data());
  if (!c || !AddAad(c.get(), aad)) return CipherError("opening");
  return GcmOpener(c.release());
}

Status GcmOpener::Update(const uint8_t* in, uint8_t* out, size_t size) {
  if (!ctx_ || !Crypt(ctx_.get(), in, out, size)) return CipherError("opening");
  return Status::Ok();
}

Status GcmOpener::Finish(const GcmTag& tag) {
  std::unique_ptr<evp_cipher_ctx_st, CtxFree> c = std::move(ctx_);
  if (!c || EVP_CIPHER_CTX_ctrl(c.get(), EVP_CTRL_GCM_SET_TAG, static_cast<int>(kGcmTagBytes),
                                const_cast<uint8_t*>(tag.data())) != 1) {
    return CipherError("opening");
  }
  uint8_t none[16];
  int len = 0;
  if (EVP_DecryptFinal_ex(c.get(), none, &len) != 1) {
    return CorruptionError("AES-256-GCM tag mismatch: a different key, or the bytes were altered");
  }
  return Status::Ok();
}

Result<GcmTag> Gmac(const AesKey& key, std::initializer_list<std::string_view> parts) {
  static constexpr GcmNonce kZero{};
  Ctx c = StartCipher(true, key, kZero.data());
  if (!c) return CipherError("GMAC setup");
  for (std::string_view p : parts) {
    if (!AddAad(c.get(), p)) return CipherError("GMAC");
  }
  GcmTag tag;
  uint8_t none[16];
  int len = 0;
  if (EVP_EncryptFinal_ex(c.get(), none, &len) != 1 ||
      EVP_CIPHER_CTX_ctrl(c.get(), EVP_CTRL_GCM_GET_TAG, static_cast<int>(kGcmTagBytes), tag.data()) != 1) {
    return CipherError("GMAC");
  }
  return tag;
}

Status RandomBytes(void* out, size_t size) {
  for (size_t at = 0; at < size; at += kPiece) {
    const size_t n = std::min(kPiece, size - at);
    if (RAND_bytes(static_cast<unsigned char*>(out) + at, static_cast<int>(n)) != 1) {
      return InternalError("the system's random generator gave no bytes (nothing can be sealed safely)");
    }
  }
  return Status::Ok();
}

}  // namespace strata

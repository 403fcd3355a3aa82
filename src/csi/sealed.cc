#include "csi/sealed.h"

#include <openssl/evp.h>
#include <openssl/rand.h>

#include <fstream>
#include <memory>

#include "base/hash.h"

namespace strata::csi {
namespace {

constexpr size_t kKeyBytes = 32, kNonceBytes = 12, kTagBytes = 16;

using Ctx = std::unique_ptr<EVP_CIPHER_CTX, decltype(&EVP_CIPHER_CTX_free)>;

}  // namespace

Result<std::string> ReadSealKey(const std::string& path) {
  std::ifstream in(path);
  if (!in) return NotFoundError("cannot read the secrets key file " + path);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' ')) text.pop_back();
  std::string key;
  if (text.size() != 2 * kKeyBytes || !HexDecode(text, &key)) {
    return InvalidArgumentError("the secrets key file must hold 64 hex characters (openssl rand -hex 32)");
  }
  return key;
}

Result<std::string> SealSecrets(const StringMap& secrets, const std::string& key, const std::string& volume_id) {
  if (key.size() != kKeyBytes) return InvalidArgumentError("the secrets key must be 32 bytes");
  const std::string plain = FormatSecrets(secrets);
  std::string out(kNonceBytes + plain.size() + kTagBytes, '\0');
  auto* o = reinterpret_cast<unsigned char*>(out.data());
  if (RAND_bytes(o, kNonceBytes) != 1) return InternalError("no random bytes for a nonce");
  Ctx ctx(EVP_CIPHER_CTX_new(), EVP_CIPHER_CTX_free);
  int n = 0;
  if (!ctx || EVP_EncryptInit_ex(ctx.get(), EVP_aes_256_gcm(), nullptr, nullptr, nullptr) != 1 ||
      EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_GCM_SET_IVLEN, kNonceBytes, nullptr) != 1 ||
      EVP_EncryptInit_ex(ctx.get(), nullptr, nullptr, reinterpret_cast<const unsigned char*>(key.data()), o) != 1 ||
      EVP_EncryptUpdate(ctx.get(), nullptr, &n, reinterpret_cast<const unsigned char*>(volume_id.data()),
                        static_cast<int>(volume_id.size())) != 1 ||
      EVP_EncryptUpdate(ctx.get(), o + kNonceBytes, &n, reinterpret_cast<const unsigned char*>(plain.data()),
                        static_cast<int>(plain.size())) != 1 ||
      EVP_EncryptFinal_ex(ctx.get(), o + kNonceBytes + n, &n) != 1 ||
      EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_GCM_GET_TAG, kTagBytes, o + kNonceBytes + plain.size()) != 1) {
    return InternalError("AES-256-GCM sealing failed");
  }
  return Base64Encode(out.data(), out.size());
}

Result<StringMap> UnsealSecrets(std::string_view sealed, const std::string& key, const std::string& volume_id) {
  if (key.size() != kKeyBytes) return InvalidArgumentError("the secrets key must be 32 bytes");
  std::string raw;
  if (sealed.size() > (1 << 20) || !Base64Decode(sealed, &raw) || raw.size() < kNonceBytes + kTagBytes) {
    return CorruptionError("sealed secrets are not base64 of a nonce, ciphertext and tag");
  }
  const size_t len = raw.size() - kNonceBytes - kTagBytes;
  auto* r = reinterpret_cast<unsigned char*>(raw.data());
  std::string plain(len, '\0');
  Ctx ctx(EVP_CIPHER_CTX_new(), EVP_CIPHER_CTX_free);
  int n = 0;
  bool ok =
      ctx && EVP_DecryptInit_ex(ctx.get(), EVP_aes_256_gcm(), nullptr, nullptr, nullptr) == 1 &&
      EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_GCM_SET_IVLEN, kNonceBytes, nullptr) == 1 &&
      EVP_DecryptInit_ex(ctx.get(), nullptr, nullptr, reinterpret_cast<const unsigned char*>(key.data()), r) == 1 &&
      EVP_DecryptUpdate(ctx.get(), nullptr, &n, reinterpret_cast<const unsigned char*>(volume_id.data()),
                        static_cast<int>(volume_id.size())) == 1 &&
      EVP_DecryptUpdate(ctx.get(), reinterpret_cast<unsigned char*>(plain.data()), &n, r + kNonceBytes,
                        static_cast<int>(len)) == 1 &&
      EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_GCM_SET_TAG, kTagBytes, r + kNonceBytes + len) == 1 &&
      EVP_DecryptFinal_ex(ctx.get(), reinterpret_cast<unsigned char*>(plain.data()) + n, &n) == 1;
  if (!ok) return CorruptionError("sealed secrets do not open with this key for this volume");
  return ParseSecrets(plain);
}

}  // namespace strata::csi

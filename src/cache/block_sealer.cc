#include "cache/block_sealer.h"

#include <algorithm>
#include <cstring>

#include "base/hash.h"
#include "io/durable.h"
#include "io/secret_file.h"

namespace strata::cache {
namespace {

constexpr std::string_view kMarkerVersion = "strata-encryption-v1 aes-256-gcm key-id ";

}  // namespace

BlockSealer::BlockSealer(const AesKey& key) : key_(key) {
  const Sha256Digest id =
      HmacSha256(std::string_view(reinterpret_cast<const char*>(key_.data()), key_.size()), "strata cache key id v1");
  key_id_ = ToHex(id.data(), 8);
}

std::shared_ptr<const BlockSealer> BlockSealer::FromKey(const AesKey& key) {
  return std::shared_ptr<const BlockSealer>(new BlockSealer(key));
}

Result<std::shared_ptr<const BlockSealer>> BlockSealer::FromKeyFile(const std::string& path) {
  auto bytes = io::ReadSecretFile(
      path, {.what = "the cache encryption key", .min_bytes = kAesKeyBytes, .max_bytes = kAesKeyBytes, .text = false});
  if (!bytes.ok()) {
    if (bytes.status().code() != Code::kInvalidArgument) return bytes.status();
    return InvalidArgumentError("the cache encryption key file " + path + " must hold exactly 32 bytes " +
                                "(head -c 32 /dev/urandom > FILE; chmod 600 FILE)");
  }
  AesKey key;
  std::memcpy(key.data(), bytes->data(), key.size());
  return FromKey(key);
}

Status BlockSealer::Seal(std::string_view aad, const uint8_t* plain, size_t size, uint8_t* out) const {
  STRATA_ASSIGN_OR_RETURN(GcmNonce nonce, RandomNonce());
  std::memcpy(out, nonce.data(), nonce.size());
  GcmTag tag;
  STRATA_RETURN_IF_ERROR(AesGcmSeal(key_, nonce, aad, plain, out + kGcmNonceBytes, size, &tag));
  std::memcpy(out + kGcmNonceBytes + size, tag.data(), tag.size());
  return Status::Ok();
}

Status BlockSealer::Open(std::string_view aad, const uint8_t* sealed, size_t sealed_size, uint8_t* out) const {
  Opening opening(*this, std::string(aad), sealed, sealed_size, out);
  return opening.Finish();
}

BlockSealer::Opening::Opening(const BlockSealer& sealer, std::string aad, const uint8_t* sealed, size_t sealed_size,
                              uint8_t* out)
    : sealer_(sealer), aad_(std::move(aad)), sealed_(sealed), sealed_size_(sealed_size), out_(out) {}

void BlockSealer::Opening::Landed(size_t landed) {
  if (!failure_.ok() || sealed_size_ < kOverhead || landed < kGcmNonceBytes) return;
  if (!opener_) {
    GcmNonce nonce;
    std::memcpy(nonce.data(), sealed_, nonce.size());
    auto started = GcmOpener::Start(sealer_.key_, nonce, aad_);
    if (!started.ok()) {
      failure_ = started.status();
      return;
    }
    opener_.emplace(std::move(started).value());
  }
  // The ciphertext lies between the nonce and the tag.
  const size_t upto = std::min(landed, sealed_size_ - kGcmTagBytes) - kGcmNonceBytes;
  if (upto <= opened_) return;
  failure_ = opener_->Update(sealed_ + kGcmNonceBytes + opened_, out_ + opened_, upto - opened_);
  opened_ = upto;
}

Status BlockSealer::Opening::Finish() {
  if (sealed_size_ < kOverhead) return CorruptionError("sealed data shorter than its nonce and tag");
  Landed(sealed_size_);
  if (!failure_.ok()) return failure_;
  GcmTag tag;
  std::memcpy(tag.data(), sealed_ + sealed_size_ - kGcmTagBytes, tag.size());
  return opener_->Finish(tag);
}

Result<bool> CheckSealedDir(io::FileSystem& fs, const std::string& dir, const BlockSealer* sealer, SealedDirUse use,
                            const std::function<bool()>& holds_clear_data) {
  const std::string marker = dir + "/" + std::string(kSealedDirMarker);
  auto text = io::ReadFileToString(fs, marker, 256);
  if (text.ok()) {
    std::string_view t = *text;
    while (!t.empty() && t.back() == '\n') t.remove_suffix(1);
    if (!t.starts_with(kMarkerVersion)) return CorruptionError(marker + " is not a strata encryption marker");
    const std::string id(t.substr(kMarkerVersion.size()));
    if (!sealer) {
      if (use.key_optional) return true;
      return InvalidArgumentError("cache directory " + dir + " is encrypted (key id " + id +
                                  "): give its key with --cache-encryption-key-file");
    }
    if (id != sealer->key_id()) {
      return PermissionDeniedError("cache directory " + dir + " was encrypted with another key (key id " + id +
                                   "; the key given has id " + sealer->key_id() +
                                   "): give the key it was written with, or another directory");
    }
    return true;
  }
  if (text.status().code() != Code::kNotFound) return text.status().WithContext("cache encryption marker");
  if (!sealer) return false;
  if (holds_clear_data && holds_clear_data()) {
    return InvalidArgumentError("cache directory " + dir +
                                " holds unencrypted data: empty it, or give an encrypted cache another directory");
  }
  if (use.read_only) return false;
  STRATA_RETURN_IF_ERROR(fs.CreateDirs(dir));
  STRATA_RETURN_IF_ERROR(io::WriteFileAtomic(fs, marker, std::string(kMarkerVersion) + sealer->key_id() + "\n"));
  return true;
}

}  // namespace strata::cache

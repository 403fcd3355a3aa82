// BlockSealer: encryption at rest for what a cache keeps on a node's disk
// (the disk tier's blocks, the loader's shard files), which outlives the job
// that wrote it. AES-256-GCM (base/aead.h) under a 32-byte key from a
// private file, a fresh random nonce per sealed item, and the item's header
// (what it claims to be: store, key, ETag, offset, length) authenticated as
// associated data, so sealed bytes moved under another header fail like
// altered ones. Sealed form: nonce (12 bytes) | ciphertext | tag (16 bytes).
// The header stays in clear (a restart indexes the directory from headers
// alone); only the data is secret. Immutable once made; thread-safe.
//
// A directory sealed with a key says so in D/ENCRYPTION (the key's id, a
// keyed hash: never the key), so opening it with another key, without a
// key, or opening a directory of clear data with one, is a clear error at
// open rather than a stream of misses (or, without a key, wrong bytes).
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "base/aead.h"
#include "base/status.h"
#include "io/file_system.h"

namespace strata::cache {

class BlockSealer {
 public:
  static constexpr size_t kOverhead = kGcmNonceBytes + kGcmTagBytes;

  // The key in `path`: exactly 32 bytes (e.g. `head -c 32 /dev/urandom`), a
  // file only its owner may read or write (mode 0600 or 0400). Clear
  // InvalidArgument or PermissionDenied errors otherwise; they never hold key bytes.
  static Result<std::shared_ptr<const BlockSealer>> FromKeyFile(const std::string& path);
  static std::shared_ptr<const BlockSealer> FromKey(const AesKey& key);

  // Seals `size` bytes of `plain` into `out` (size + kOverhead bytes).
  Status Seal(std::string_view aad, const uint8_t* plain, size_t size, uint8_t* out) const;
  // Opens `sealed_size` bytes of `sealed` into `out` (sealed_size - kOverhead
  // bytes; `out` may be `sealed` + kGcmNonceBytes, decrypting in place).
  // Corruption when the key, the bytes or `aad` differ from the sealing ones:
  // `out` then holds nothing to use.
  Status Open(std::string_view aad, const uint8_t* sealed, size_t sealed_size, uint8_t* out) const;

  // Open, streamed: opens a sealed item while its bytes are still landing
  // (in order) in `sealed`, so decryption overlaps reading the rest and works
  // on bytes still in the CPU's cache. `out` as in Open; nothing in it may be
  // used unless Finish succeeds. One per item; not thread-safe.
  class Opening {
   public:
    Opening(const BlockSealer& sealer, std::string aad, const uint8_t* sealed, size_t sealed_size, uint8_t* out);
    // The first `landed` bytes of `sealed` are there: decrypts those it has not yet.
    void Landed(size_t landed);
    // All `sealed_size` bytes are there: decrypts the rest and checks the tag
    // (Corruption as Open).
    Status Finish();

   private:
    const BlockSealer& sealer_;
    const std::string aad_;
    const uint8_t* const sealed_;
    const size_t sealed_size_;
    uint8_t* const out_;
    std::optional<GcmOpener> opener_;  // once the nonce has landed
    size_t opened_ = 0;                // ciphertext bytes decrypted
    Status failure_;
  };

  // 16 hex digits naming the key (HMAC-SHA256 of a constant under it).
  const std::string& key_id() const { return key_id_; }

 private:
  explicit BlockSealer(const AesKey& key);
  AesKey key_;
  std::string key_id_;
};

// How a directory is opened, for CheckSealedDir.
struct SealedDirUse {
  bool read_only = false;     // nothing is written (no marker either)
  bool key_optional = false;  // headers only (inspection, eviction): a sealed directory opens without its key
};

// Checks (and, for a fresh writable directory, records) which key `dir` is
// sealed with: D/ENCRYPTION. Returns whether the directory is sealed. With a
// marker: `sealer` must have its key (PermissionDenied naming both key ids
// otherwise); none is InvalidArgument unless `use.key_optional` (then the
// caller must neither hand out nor write data). Without one: a `sealer` is
// recorded, unless `holds_clear_data()` says the directory already holds
// unsealed data (InvalidArgument: empty it or use another directory; nothing
// is deleted here).
Result<bool> CheckSealedDir(io::FileSystem& fs, const std::string& dir, const BlockSealer* sealer, SealedDirUse use,
                            const std::function<bool()>& holds_clear_data);

inline constexpr std::string_view kSealedDirMarker = "ENCRYPTION";

}  // namespace strata::cache

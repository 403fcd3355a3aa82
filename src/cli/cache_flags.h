// The cache and cache-group flags, declared once for every command that
// reads through a cache or joins a cache group (serve, mount, warm, ckpt
// pull, bench train; a new command adds them in one line):
//
//   auto cache = AddCacheFlags(sub, {.command = "warm", .defaults = ...});
//   sub->callback([cache] { const CacheSettings s = cache->Settings(); ... });
//
// --cache-ram, --cache-disk, --cache-dir, --cache-free-space, --block-size, --metadata-ttl,
// --cache-group, --peer-listen, --group-secret-file, --peer-deadline,
// --cache-encryption-key-file: one
// spelling and one grammar (base/units.h) everywhere. A flag the command
// cannot honour is hidden from its --help and refused with the command's
// reason when given, never ignored. Old spellings (--cache-mem, --cache-size,
// --cache-limit, --ram-cache) are hidden aliases that print one deprecation
// line to stderr.
#pragma once

#include <CLI/CLI.hpp>
#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "base/clock.h"
#include "base/units.h"
#include "cache/disk_tier.h"

namespace strata::cache {
class BlockSealer;
}  // namespace strata::cache

namespace strata::cli {

enum CacheFlag : uint32_t {
  kCacheRam = 1u << 0,
  kCacheDisk = 1u << 1,
  kCacheDir = 1u << 2,
  kBlockSize = 1u << 3,
  kMetadataTtl = 1u << 4,
  kCacheGroup = 1u << 5,
  kPeerListen = 1u << 6,
  kGroupSecretFile = 1u << 7,
  kPeerDeadline = 1u << 8,
  kCacheEncryptionKeyFile = 1u << 9,
  kCacheFreeSpace = 1u << 10,
};
inline constexpr size_t kNumCacheFlags = 11;
inline constexpr uint32_t kGroupMemberFlags = kPeerListen | kGroupSecretFile | kPeerDeadline;

// "--cache-ram" for kCacheRam, and so on.
const char* CacheFlagName(CacheFlag flag);

// What the flags set: the given ones parsed, the others the command's defaults.
struct CacheSettings {
  uint64_t ram_bytes = 1ull << 30;
  uint64_t disk_bytes = 10ull << 30;
  std::string dir{};                                    // the disk tier; empty: none (RAM only)
  SpaceFloor min_free = cache::kDefaultCacheFreeSpace;  // left free on the disk tier's file system
  uint64_t block_size = 4ull << 20;
  Duration metadata_ttl = std::chrono::seconds(10);  // may be kForever
  std::string group{};                               // etcd://HOST:PORT/GROUP or static://...; empty: none
  std::string peer_listen = "127.0.0.1:0";
  std::string group_secret_file{};  // empty: $STRATA_GROUP_SECRET
  Duration peer_deadline = std::chrono::seconds(2);
  std::string encryption_key_file{};  // a 32-byte key (mode 0600) sealing the disk tier; empty: clear
};

struct CacheFlagSpec {
  std::string command{};     // errors read "strata: <command>: --flag: ..."
  CacheSettings defaults{};  // for flags not given; shown in --help
  // Flags this command cannot honour, each with the reason it gives.
  std::map<CacheFlag, std::string> refused{};
  uint32_t required = 0;
  // Flags refused unless --cache-group is given too.
  uint32_t needs_group = kGroupMemberFlags;
  std::map<CacheFlag, std::string> help{};                      // this command's help text, replacing the generic one
  std::vector<std::pair<std::string, CacheFlag>> deprecated{};  // old spelling -> the flag it is now
};

class CacheFlags {
 public:
  explicit CacheFlags(CacheFlagSpec spec) : spec_(std::move(spec)) {}
  bool given(CacheFlag flag) const { return ((given_ | given_old_) & flag) != 0; }
  // Throws CliError naming the flag: a value outside the grammar, a refused
  // flag given, a group flag without --cache-group, a peer deadline outside
  // (0, 1m], a flag given under both its name and its old spelling.
  CacheSettings Settings() const;

 private:
  friend std::shared_ptr<CacheFlags> AddCacheFlags(CLI::App* sub, CacheFlagSpec spec);
  CacheFlagSpec spec_;
  std::array<std::string, kNumCacheFlags> text_;
  uint32_t given_ = 0;      // under their names
  uint32_t given_old_ = 0;  // under an old spelling
};

// The sealer of --cache-encryption-key-file (nullptr without it). Exits
// with the flag's error when the key file is bad or there is no cache
// directory to encrypt (`dir`: the one the command will use).
std::shared_ptr<const cache::BlockSealer> CacheSealer(const std::string& command, const CacheSettings& s,
                                                      const std::string& dir);

// Adds the eleven flags (and the spec's deprecated spellings) to `sub`. Keep the
// result for the command's callback: the options write into it.
std::shared_ptr<CacheFlags> AddCacheFlags(CLI::App* sub, CacheFlagSpec spec);

}  // namespace strata::cli

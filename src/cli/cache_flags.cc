#include "cli/cache_flags.h"

#include <bit>
#include <iostream>

#include "base/units.h"
#include "cache/block_sealer.h"
#include "cli/command.h"

namespace strata::cli {
namespace {

constexpr std::array<const char*, kNumCacheFlags> kNames = {
    "--cache-ram",       "--cache-disk",  "--cache-dir",         "--block-size",    "--metadata-ttl",
    "--cache-group",     "--peer-listen", "--group-secret-file", "--peer-deadline", "--cache-encryption-key-file",
    "--cache-free-space"};

size_t IndexOf(CacheFlag flag) { return static_cast<size_t>(std::countr_zero(static_cast<uint32_t>(flag))); }

CacheFlag FlagAt(size_t index) { return static_cast<CacheFlag>(1u << index); }

// A peer that takes longer than this is as good as down: read the bucket.
constexpr Duration kMaxPeerDeadline = std::chrono::minutes(1);

std::string GenericHelp(CacheFlag flag, const CacheSettings& d) {
  switch (flag) {
    case kCacheRam: return "RAM tier size (default " + FormatSizeExact(d.ram_bytes) + ")";
    case kCacheDisk: return "Disk tier size (default " + FormatSizeExact(d.disk_bytes) + ")";
    case kCacheDir: return d.dir.empty() ? "Disk tier directory (default: none, RAM only)" : "Disk tier directory";
    case kBlockSize:
      return "Cache block size (default " + FormatSizeExact(d.block_size) + "; a cache group's members must agree)";
    case kMetadataTtl:
      return "How long HEAD/LIST answers are trusted (default " + FormatDurationExact(d.metadata_ttl) +
             "; 'forever' for data that never changes)";
    case kCacheGroup: return "Share the cache with other nodes: etcd://HOST:PORT/GROUP or static://HOST:PORT,HOST:PORT";
    case kPeerListen: return "HOST:PORT of this member's peer endpoint (default " + d.peer_listen + ")";
    case kGroupSecretFile: return "File holding the cache group's secret (default: $STRATA_GROUP_SECRET)";
    case kPeerDeadline:
      return "How long a block is awaited from its owner before this member reads the bucket itself and marks "
             "the owner suspect for 30s (default " +
             FormatDurationExact(d.peer_deadline) + ")";
    case kCacheFreeSpace:
      return "Free space the disk tier leaves on its file system: a share (2%) or a size (20GiB); evicts to keep "
             "it when others fill the disk (default " +
             FormatSpaceFloor(d.min_free) + ")";
    case kCacheEncryptionKeyFile:
      return "Encrypt the cache directory at rest (AES-256-GCM) with the 32-byte key in this file (mode 0600; "
             "head -c 32 /dev/urandom > FILE)";
  }
  return {};
}

}  // namespace

const char* CacheFlagName(CacheFlag flag) { return kNames[IndexOf(flag)]; }

std::shared_ptr<const cache::BlockSealer> CacheSealer(const std::string& command, const CacheSettings& s,
                                                      const std::string& dir) {
  if (s.encryption_key_file.empty()) return nullptr;
  const char* flag = CacheFlagName(kCacheEncryptionKeyFile);
  if (dir.empty()) Fail(command, flag, InvalidArgumentError("needs --cache-dir (only a disk tier is encrypted)"));
  return Check(cache::BlockSealer::FromKeyFile(s.encryption_key_file), command, flag);
}

CacheSettings CacheFlags::Settings() const {
  const std::string& cmd = spec_.command;
  for (const auto& [flag, why] : spec_.refused) {
    if (given(flag)) Fail(cmd, CacheFlagName(flag), InvalidArgumentError("not supported by " + cmd + ": " + why));
  }
  if (!given(kCacheGroup)) {
    for (size_t i = 0; i < kNumCacheFlags; ++i) {
      if ((spec_.needs_group & FlagAt(i)) && given(FlagAt(i)))
        Fail(cmd, kNames[i], InvalidArgumentError("needs --cache-group"));
    }
  }
  for (const auto& [old_name, flag] : spec_.deprecated) {
    if (given_ & given_old_ & flag)
      Fail(cmd, CacheFlagName(flag), InvalidArgumentError("given twice: as itself and as " + old_name));
  }
  for (size_t i = 0; i < kNumCacheFlags; ++i) {
    if ((spec_.required & FlagAt(i)) && !given(FlagAt(i))) Fail(cmd, kNames[i], InvalidArgumentError("is required"));
  }
  CacheSettings s = spec_.defaults;
  const auto text = [&](CacheFlag f) -> const std::string& { return text_[IndexOf(f)]; };
  const auto size = [&](CacheFlag f, uint64_t* out) {
    if (given(f)) *out = Check(ParseSize(text(f)), cmd, CacheFlagName(f));
  };
  size(kCacheRam, &s.ram_bytes);
  size(kCacheDisk, &s.disk_bytes);
  size(kBlockSize, &s.block_size);
  if (given(kCacheDir)) s.dir = text(kCacheDir);
  if (given(kCacheFreeSpace))
    s.min_free = Check(ParseSpaceFloor(text(kCacheFreeSpace)), cmd, CacheFlagName(kCacheFreeSpace));
  if (given(kMetadataTtl)) {
    s.metadata_ttl =
        Check(ParseDuration(text(kMetadataTtl), {.allow_forever = true}), cmd, CacheFlagName(kMetadataTtl));
  }
  if (given(kCacheGroup)) s.group = text(kCacheGroup);
  if (given(kPeerListen)) s.peer_listen = text(kPeerListen);
  if (given(kGroupSecretFile)) s.group_secret_file = text(kGroupSecretFile);
  // A command whose cache directory may come from elsewhere (serve's config file) checks that it has one.
  if (given(kCacheEncryptionKeyFile)) s.encryption_key_file = text(kCacheEncryptionKeyFile);
  if (given(kPeerDeadline)) {
    s.peer_deadline =
        Check(ParseDuration(text(kPeerDeadline), {.max = kMaxPeerDeadline}), cmd, CacheFlagName(kPeerDeadline));
    if (s.peer_deadline <= Duration::zero())
      Fail(cmd, CacheFlagName(kPeerDeadline), InvalidArgumentError("must be more than 0 and at most 1m"));
  }
  return s;
}

std::shared_ptr<CacheFlags> AddCacheFlags(CLI::App* sub, CacheFlagSpec spec) {
  auto flags = std::make_shared<CacheFlags>(std::move(spec));
  CacheFlags* f = flags.get();  // the options write into *f: the caller keeps `flags` (in its callback) with `sub`
  std::array<CLI::Option*, kNumCacheFlags> options{};  // by flag index
  for (size_t i = 0; i < kNumCacheFlags; ++i) {
    const CacheFlag flag = FlagAt(i);
    auto help = f->spec_.help.find(flag);
    CLI::Option* o = sub->add_option(kNames[i], f->text_[i],
                                     help != f->spec_.help.end() ? help->second : GenericHelp(flag, f->spec_.defaults));
    o->each([f, flag](const std::string&) { f->given_ |= flag; });
    if (f->spec_.refused.count(flag)) o->group("");  // accepted by the parser, refused with a reason
    if (f->spec_.required & flag) o->required();
    options[i] = o;
  }
  for (const auto& [old_name, flag] : f->spec_.deprecated) {
    const std::string line = "strata: " + f->spec_.command + ": " + old_name + " is deprecated; use " +
                             CacheFlagName(flag) + " (the same value)";
    CLI::Option* alias =
        sub->add_option(old_name, f->text_[IndexOf(flag)], "Deprecated: " + std::string(CacheFlagName(flag)));
    alias->group("");
    // An init-capture: clang 14 cannot capture a structured binding by name.
    alias->each([f, flag = flag, line, warned = false](const std::string&) mutable {
      f->given_old_ |= flag;
      if (!warned) std::cerr << line << std::endl;
      warned = true;
    });
    // Either spelling meets a requirement: Settings() checks it instead of the parser.
    options[IndexOf(flag)]->required(false);
  }
  return flags;
}

}  // namespace strata::cli

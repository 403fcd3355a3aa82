// strata warm URL/PREFIX --cache-dir D [--parallel N]: fills a cache
// directory with every object under a prefix (like Fluid's DataLoad), in
// parallel, with a progress bar on a terminal; prints bytes, objects, MB/s.
// With --cache-group URL --peer-listen HOST:PORT it fills only the blocks
// this member owns in the group (rendezvous over the group's members and
// itself): run on every member, the group's caches fill in parallel and each
// block leaves the bucket once. Nothing is served or registered meanwhile.
#include <iostream>
#include <mutex>
#include <optional>

#include "base/executor.h"
#include "cache/block_cache.h"
#include "cache/cached_store.h"
#include "cli/cache_flags.h"
#include "cli/command.h"
#include "cli/url.h"
#include "cli/util.h"
#include "group/member.h"
#include "object/cloud_store.h"
#include "object/transfer.h"

namespace strata::cli {
namespace {

struct WarmArgs {
  std::string url;
  std::string emulate;  // cloud profile, for demos
  int parallel = 16;
};

// This member's share: blocks whose owner among `members` is `self` (ownership is keyed by the group secret).
class Share {
 public:
  Share(std::vector<group::Member> members, std::string self, std::string secret)
      : self_(std::move(self)), secret_(std::move(secret)) {
    members.push_back({self_, self_});
    members_ = group::Canonical(std::move(members));
  }
  bool Owns(const cache::BlockId& id) const {
    const group::Member* m = group::OwnerOf(members_, group::BlockSeed(secret_, cache::HashBlockId(id)));
    return !m || m->id == self_;
  }
  size_t size() const { return members_.size(); }

 private:
  std::string self_, secret_;
  std::vector<group::Member> members_;
};

// Warms the blocks of `key` that `share` owns; returns their bytes.
Result<uint64_t> WarmShare(cache::CachedStore& store, const std::string& key, const Share& share, size_t parallel) {
  STRATA_ASSIGN_OR_RETURN(object::ObjectInfo info, store.Head(key));
  const uint64_t bs = store.cache().options().block_size;
  std::vector<uint64_t> mine;
  for (uint64_t i = 0; i * bs < info.size; ++i) {
    if (share.Owns(cache::BlockId{store.Url(), key, info.etag, bs, i})) mine.push_back(i);
  }
  std::mutex mu;
  Status first_error;
  uint64_t bytes = 0;
  ParallelFor(mine.size(), parallel, [&](size_t j) {
    auto b = store.ServeBlock(key, info.etag, info.size, mine[j], nullptr);  // a hit when already cached
    std::lock_guard lock(mu);
    if (!b.ok()) {
      if (first_error.ok()) first_error = b.status();
      return;
    }
    bytes += b->size();
  });
  if (!first_error.ok()) return first_error;
  return bytes;
}

void RunWarm(const WarmArgs& args, const CacheSettings& c) {
  const char* cmd = "warm";
  if (args.parallel < 1 || args.parallel > 1024) Fail(cmd, "--parallel", InvalidArgumentError("must be 1..1024"));
  ObjectUrl url = Check(ParseObjectUrl(args.url), cmd, args.url);
  Endpoint ep = Check(OpenTreeSource(url), cmd, args.url);
  object::ObjectStorePtr backend = ep.store;
  if (!args.emulate.empty())
    backend = object::EmulateCloud(backend, Check(object::ParseCloudProfile(args.emulate), cmd, "--emulate"));

  cache::CacheOptions options;
  options.dir = c.dir;
  options.disk_bytes = c.disk_bytes;
  options.disk_min_free = c.min_free;
  options.block_size = c.block_size;
  options.ram_bytes = 0;  // warming targets the disk; RAM would only hold a copy
  options.sealer = CacheSealer(cmd, c, c.dir);
  auto cache = Check(cache::BlockCache::Open(options), cmd, c.dir);
  cache::CachedStoreOptions store_options;
  store_options.readahead_threads = 0;
  cache::CachedStore store(backend, cache, store_options);

  std::optional<Share> share;
  if (!c.group.empty()) {
    if (c.peer_listen.empty()) {
      Fail(cmd, "--peer-listen", InvalidArgumentError("--cache-group needs this member's --peer-listen HOST:PORT"));
    }
    const auto deadline = std::chrono::duration_cast<std::chrono::milliseconds>(c.peer_deadline);
    std::string secret = Check(group::ReadGroupSecret(c.group_secret_file), cmd, "--group-secret-file");
    share.emplace(Check(group::ListGroupMembers(c.group, secret, deadline), cmd, c.group), c.peer_listen,
                  std::move(secret));
    std::cerr << "strata: warm: warming this member's share (" << c.peer_listen << ", 1 of " << share->size()
              << " members of " << c.group << ")\n";
  }
  auto objects = Check(object::ListAll(store, ep.key), cmd, args.url);
  uint64_t total = 0;
  for (const auto& o : objects) total += o.size;
  if (total > options.disk_bytes) {
    std::cerr << "strata: warm: warning: " << FormatBytes(total) << " under " << args.url << " exceeds --cache-disk "
              << FormatBytes(options.disk_bytes) << "; older blocks will be evicted\n";
  } else if (auto space = io::DefaultFileSystem().Space(c.dir); space.ok()) {
    const uint64_t floor = cache->disk()->min_free_bytes();
    const uint64_t room = cache->disk()->bytes() + (space->available > floor ? space->available - floor : 0);
    if (total > room) {
      std::cerr << "strata: warm: warning: " << FormatBytes(total) << " under " << args.url << " exceeds the "
                << FormatBytes(room) << " the file system of " << c.dir << " has above the " << FormatBytes(floor)
                << " it keeps free (--cache-free-space " << FormatSpaceFloor(c.min_free)
                << "); older blocks will be evicted\n";
    }
  }
  std::mutex mu;
  Status first_error;
  std::string failed_key;
  {
    Progress progress("warming", objects.size(), total);
    ParallelFor(objects.size(), std::min<size_t>(args.parallel, std::max<size_t>(objects.size(), 1)), [&](size_t i) {
      auto n = share ? WarmShare(store, objects[i].key, *share, 4) : store.Warm(objects[i].key);
      if (!n.ok()) {
        std::lock_guard lock(mu);
        if (first_error.ok()) first_error = n.status(), failed_key = objects[i].key;
        return;
      }
      progress.Add(1, *n);
    });
    if (!first_error.ok()) Fail(cmd, ep.UrlOf(failed_key), first_error);
    std::cout << progress.Summary() << "\n";
  }
  cache->Flush();  // what went behind the reads (demotions) and the metadata journal
  cache::CacheStats s = cache->Stats();
  std::cout << "cache " << c.dir << ": " << s.disk_blocks << " blocks, " << FormatBytes(s.disk_bytes) << " of "
            << FormatBytes(s.disk_capacity) << " (" << s[cache::CacheCounter::kMisses] << " fetched, "
            << s[cache::CacheCounter::kDiskHits] << " already cached)\n";
  if (const uint64_t low = s[cache::CacheCounter::kDiskLowSpace]; low > 0) {
    std::cerr << "strata: warm: warning: " << low << " blocks not kept: the file system of " << c.dir
              << " is down to the " << FormatBytes(double(cache->disk()->min_free_bytes()))
              << " it keeps free (--cache-free-space " << FormatSpaceFloor(c.min_free) << ")\n";
  }
}

CommandRegistrar registrar("warm", [](CLI::App& root) {
  auto args = std::make_shared<WarmArgs>();
  auto* sub = root.add_subcommand("warm", "Fill a cache directory with every object under a prefix");
  sub->add_option("url", args->url, "s3://bucket/prefix, mem://name/prefix or a local directory")->required();
  auto cache = AddCacheFlags(
      sub,
      {.command = "warm",
       .defaults = {.peer_listen = ""},
       .refused = {{kCacheRam, "warm fills the disk tier (--cache-dir); a RAM copy would be dropped at exit"},
                   {kMetadataTtl, "warm lists and reads each object once"}},
       .required = kCacheDir,
       .needs_group = kPeerListen | kPeerDeadline | kGroupSecretFile,
       .help = {{kCacheDir, "Cache directory (created if missing)"},
                {kBlockSize, "Cache block size (default 4MiB; must match the readers')"},
                {kCacheGroup,
                 "Warm only this member's share of a cache group: etcd://HOST:PORT/GROUP or static://HOST:PORT,..."},
                {kPeerListen, "This member's peer address (its id in the group)"},
                {kPeerDeadline, "How long to wait for the group's member list (etcd) before failing (default 2s)"}},
       .deprecated = {{"--cache-size", kCacheDisk}}});
  sub->add_option("--parallel", args->parallel, "Objects fetched at once (default 16)");
  sub->add_option("--emulate", args->emulate, "Emulate a cloud bucket, e.g. ttfb=30ms,bw=25MB/s");
  sub->footer(
      [] { return std::string("Example: strata warm s3://bucket/train/ --cache-dir /nvme/strata --parallel 32"); });
  sub->callback([args, cache] { RunWarm(*args, cache->Settings()); });
});

}  // namespace
}  // namespace strata::cli

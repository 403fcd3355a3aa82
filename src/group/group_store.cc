#include "group/group_store.h"

#include <unistd.h>

#include <map>

#include "base/log.h"
#include "base/mutex.h"
#include "cache/block_cache.h"
#include "group/member.h"

namespace strata::group {
namespace {

// What the stores of one group in this process share. Declared so that the
// member (peer endpoint, etcd lease) goes first, then the stores, then the cache.
struct Joined {
  std::shared_ptr<cache::BlockCache> cache;
  Mutex mu;
  std::map<std::string, std::shared_ptr<cache::CachedStore>> stores GUARDED_BY(mu);  // by backend URL
  std::shared_ptr<CacheGroup> client;   // a forked child's router (no self)
  std::unique_ptr<GroupMember> member;  // the process that joined
};

struct Entry {
  pid_t pid = 0;  // the process that made it: a forked child must not touch its parent's
  std::weak_ptr<Joined> joined;
};

Mutex registry_mu;
std::map<std::string, Entry>& Registry() {
  static auto* registry = new std::map<std::string, Entry>();  // leaked: children may inherit live members
  return *registry;
}

Result<std::shared_ptr<Joined>> JoinNew(const GroupStoreOptions& o, const std::string& secret, bool as_client) {
  auto joined = std::make_shared<Joined>();
  cache::CacheOptions co;
  co.block_size = o.block_size;
  co.ram_bytes = o.ram_bytes;
  co.dir = as_client ? "" : o.cache_dir;  // a client owns nothing: every block is another's, kept in RAM only
  co.sealer = o.sealer;
  co.disk_bytes = o.disk_bytes;
  co.disk_min_free = o.disk_min_free;
  STRATA_ASSIGN_OR_RETURN(joined->cache, cache::BlockCache::Open(co));
  if (!as_client) {
    JoinOptions jo;
    jo.url = o.url;
    jo.listen = o.listen;
    jo.secret = secret;
    jo.deadline = o.deadline;
    STRATA_ASSIGN_OR_RETURN(joined->member, GroupMember::Join(jo));
    STRATA_LOG_INFO("joined cache group {} as {}", o.url, joined->member->address());
    return joined;
  }
  STRATA_ASSIGN_OR_RETURN(std::vector<Member> members, ListGroupMembers(o.url, secret));
  STRATA_ASSIGN_OR_RETURN(GroupUrl url, ParseGroupUrl(o.url));
  if (url.scheme == "static") members.push_back({o.listen, o.listen});  // the parent, listed or not
  GroupOptions go;
  go.self = "";  // no member has this id: every block is asked of its owner
  go.secret = secret;
  go.deadline = o.deadline;
  joined->client = std::make_shared<CacheGroup>(go);
  joined->client->SetMembers(std::move(members));
  STRATA_LOG_INFO("process {}: reading cache group {} as a client of its members (a forked child)", getpid(), o.url);
  return joined;
}

}  // namespace

Result<std::shared_ptr<cache::CachedStore>> JoinGroupStore(object::ObjectStorePtr backend,
                                                           const GroupStoreOptions& options) {
  if (!backend) return InvalidArgumentError("no store to read through the cache group");
  STRATA_RETURN_IF_ERROR(ParseGroupUrl(options.url).status());
  std::string secret = options.secret;
  if (secret.empty()) {
    STRATA_ASSIGN_OR_RETURN(secret, ReadGroupSecret(options.secret_file));
  }
  if (secret.size() < kMinSecretBytes) {
    return InvalidArgumentError("a cache group secret must be at least " + std::to_string(kMinSecretBytes) + " bytes");
  }
  const std::string key = options.url + "\n" + options.listen;
  const pid_t pid = getpid();
  std::shared_ptr<Joined> joined;
  {
    MutexLock lock(registry_mu);
    auto& registry = Registry();
    auto it = registry.find(key);
    // An entry another process made is a parent's (its threads do not exist
    // here): left alone, never released; this child keeps its own beside it.
    const bool inherited = it != registry.end() && it->second.pid != pid;
    const std::string mine = inherited ? key + "\n" + std::to_string(pid) : key;
    if (auto own = registry.find(mine); own != registry.end()) joined = own->second.joined.lock();
    if (!joined) {
      STRATA_ASSIGN_OR_RETURN(joined, JoinNew(options, secret, inherited));
      registry[mine] = Entry{pid, joined};
    }
  }
  MutexLock lock(joined->mu);
  auto& store = joined->stores[backend->Url()];
  if (!store) {
    store = std::make_shared<cache::CachedStore>(std::move(backend), joined->cache);
    if (joined->member) {
      joined->member->Attach(store);
    } else {
      store->SetBlockRouter(joined->client);
    }
  }
  // The caller's pointer keeps the member (and every store of it) alive.
  return std::shared_ptr<cache::CachedStore>(joined, store.get());
}

}  // namespace strata::group

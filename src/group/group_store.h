// GroupStore: how a library front end (the loader's StreamingDataset, a
// checkpoint restore, the Python package) joins a cache group: its store is
// wrapped in a CachedStore attached to this process's member of the group, so
// a block owned by another member is asked of it (which serves it from its
// cache or fetches it from the bucket once) and a block this member owns is
// fetched here once and kept for the others.
//
// One member per (group URL, peer address) per process, joined on first use
// and shared by every store of that group (the peer address can be bound
// once); one CachedStore per backend URL per member (the peer endpoint
// serves by store URL). The member leaves the group when the last store
// returned for it is gone. Cache options are the first opener's.
//
// A forked child (a DataLoader worker) of a process that joined cannot bind
// the parent's address: it reads as a client of the group instead, asking
// every block of its owner, the parent included (the members are the static
// list, or etcd's registrations read once at open). Thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "base/status.h"
#include "cache/cached_store.h"
#include "object/object_store.h"

namespace strata::group {

struct GroupStoreOptions {
  std::string url;          // --cache-group: etcd://HOST:PORT/GROUP or static://HOST:PORT,...
  std::string listen;       // --peer-listen HOST:PORT (port 0: any free port; static lists need a fixed one)
  std::string secret;       // the secret itself; empty: from secret_file, else STRATA_GROUP_SECRET
  std::string secret_file;  // --group-secret-file
  std::chrono::milliseconds deadline{2000};  // a peer fetch takes at most this long
  // This member's block cache: its own blocks on disk (empty dir: RAM only,
  // so its share is refetched once evicted), other members' in RAM only.
  std::string cache_dir;
  uint64_t disk_bytes = 10ull << 30;
  SpaceFloor disk_min_free = cache::kDefaultCacheFreeSpace;  // left free on cache_dir's file system
  uint64_t ram_bytes = 256ull << 20;
  uint64_t block_size = 4ull << 20;                  // must be the group's (peers refuse another)
  std::shared_ptr<const cache::BlockSealer> sealer;  // encrypts cache_dir's blocks at rest; null: clear
};

// `backend` read through the group (see above). InvalidArgument for a bad
// URL, address or missing secret; Unavailable when the address cannot be bound.
Result<std::shared_ptr<cache::CachedStore>> JoinGroupStore(object::ObjectStorePtr backend,
                                                           const GroupStoreOptions& options);

}  // namespace strata::group

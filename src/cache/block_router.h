// BlockRouter: where a missing block comes from besides the backend. A cache
// group implements it: blocks owned by another member are asked of that
// member first and kept in this node's RAM tier only (the group's capacity is
// the sum of the owners' disks). CachedStore consults it on every miss; with
// no router every block is local. Implementations must be thread-safe and
// must never block longer than their own deadline.
#pragma once

#include <cstdint>

#include "base/buffer.h"
#include "base/status.h"
#include "cache/block_key.h"

namespace strata::cache {

class BlockRouter {
 public:
  virtual ~BlockRouter() = default;
  // Whether another node owns `id` (then it is fetched with FetchRemote and
  // never written to this node's disk).
  virtual bool Remote(const BlockId& id) = 0;
  // Exactly `length` verified bytes of `id` (a block of an object of
  // `object_size` bytes) from its owner. Any error makes the caller read the
  // backend itself; the router decides what the failure says about the peer.
  virtual Result<Buffer> FetchRemote(const BlockId& id, uint64_t length, uint64_t object_size) = 0;
};

}  // namespace strata::cache

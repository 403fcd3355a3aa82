// CacheGroup: this node's view of a cache group, and the cache::BlockRouter
// that CachedStore asks on a miss. The owner of a block is chosen by
// rendezvous hashing, keyed by the group secret, over the current members
// (rendezvous.h; at most kMaxMembers of them); a block owned by another
// member is asked of it over the peer protocol with a deadline, its answer's
// MAC verified (peer_protocol.h) before a byte is used, and kept in RAM only. A peer that fails (refuses,
// errs, sends a bad block) is marked suspect for `suspect_for`: its blocks are
// read from the bucket directly meanwhile, so nothing waits on a dead node. A
// peer that only misses the deadline may be alive but busy: it is suspect for
// `slow_suspect_for`, doubled on each further timeout up to `suspect_for`, and
// forgiven by its next answer. The
// member list comes from outside (a static list, or etcd via Membership) and
// may change at any time. Thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/mutex.h"
#include "cache/block_router.h"
#include "group/rendezvous.h"
#include "net/http_client.h"

namespace strata::group {

struct GroupOptions {
  std::string self;                          // this member's id (its peer address with a static list)
  std::string secret;                        // the group secret
  std::chrono::milliseconds deadline{2000};  // a peer fetch takes at most this long
  Duration suspect_for = std::chrono::seconds(30);
  Duration slow_suspect_for = std::chrono::seconds(2);  // after a first timeout
  Clock* clock = nullptr;                               // default RealClock()
};

class CacheGroup : public cache::BlockRouter {
 public:
  // Members considered at most (the first by id): ownership costs a hash
  // per member per block, and every member truncates the same way.
  static constexpr size_t kMaxMembers = 1024;
  explicit CacheGroup(GroupOptions options);
  ~CacheGroup() override;

  // Replaces the member list (any order; duplicates dropped).
  void SetMembers(std::vector<Member> members);
  std::vector<Member> members() const;
  // The owner of `id` now (nullopt with no members).
  std::optional<Member> OwnerOf(const cache::BlockId& id) const;
  bool IsSuspect(const std::string& member_id) const;

  bool Remote(const cache::BlockId& id) override;
  Result<Buffer> FetchRemote(const cache::BlockId& id, uint64_t length, uint64_t object_size) override;

  struct Stats {
    uint64_t peer_hits = 0;      // blocks got from their owner
    uint64_t peer_misses = 0;    // asks that failed (the bucket was read instead)
    uint64_t bad_checksums = 0;  // answers refused: their MAC (or length) did not verify
    uint64_t suspect_skips = 0;  // blocks read from the bucket because their owner was suspect
  };
  Stats stats() const;
  const GroupOptions& options() const { return options_; }

 private:
  // A timeout (`why` DeadlineExceeded) counts as slow, anything else as failed.
  void MarkSuspect(const std::string& member_id, const Status& why);
  void Forgive(const std::string& member_id);
  Result<Buffer> Ask(const Member& owner, const cache::BlockId& id, uint64_t length, uint64_t object_size);

  GroupOptions options_;
  Clock& clock_;
  mutable Mutex mu_;
  std::shared_ptr<const std::vector<Member>> members_ GUARDED_BY(mu_);  // replaced whole, read without copying
  std::map<std::string, TimePoint> suspect_until_ GUARDED_BY(mu_);
  std::map<std::string, int> timeouts_in_a_row_ GUARDED_BY(mu_);
  std::atomic<uint64_t> hits_{0}, misses_{0}, bad_checksums_{0}, suspect_skips_{0};
  std::unique_ptr<net::HttpClient> http_;
};

}  // namespace strata::group

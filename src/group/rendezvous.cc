#include "group/rendezvous.h"

#include <algorithm>
#include <cstring>

#include "base/hash.h"

namespace strata::group {

uint64_t RendezvousScore(const cache::BlockHash& block, const std::string& member_id) {
  // Seeding with the block's digest and hashing the id keeps the score of
  // one member independent of every other member.
  return XxHash3(member_id.data(), member_id.size(), block.hi ^ (block.lo * 0x9e3779b97f4a7c15ull));
}

const Member* OwnerOf(const std::vector<Member>& members, const cache::BlockHash& block) {
  const Member* best = nullptr;
  uint64_t best_score = 0;
  for (const Member& m : members) {
    uint64_t s = RendezvousScore(block, m.id);
    if (!best || s > best_score || (s == best_score && m.id < best->id)) {
      best = &m;
      best_score = s;
    }
  }
  return best;
}

std::vector<Member> Canonical(std::vector<Member> members) {
  std::sort(members.begin(), members.end(), [](const Member& a, const Member& b) { return a.id < b.id; });
  members.erase(
      std::unique(members.begin(), members.end(), [](const Member& a, const Member& b) { return a.id == b.id; }),
      members.end());
  return members;
}

}  // namespace strata::group

#include "group/rendezvous.h"

#include <algorithm>
#include <cstring>

#include "base/hash.h"

namespace strata::group {

uint64_t BlockSeed(std::string_view secret, const cache::BlockHash& block) {
  std::string msg = "strata rendezvous v1\n";
  for (uint64_t half : {block.hi, block.lo}) {
    for (int i = 0; i < 8; ++i) msg.push_back(static_cast<char>(half >> (56 - 8 * i)));
  }
  const Sha256Digest mac = HmacSha256(secret, msg);
  uint64_t seed = 0;
  for (int i = 0; i < 8; ++i) seed = (seed << 8) | mac[i];
  return seed;
}

uint64_t RendezvousScore(uint64_t block_seed, const std::string& member_id) {
  // Seeding with the block's secret seed and hashing the id keeps the score
  // of one member independent of every other member's.
  return XxHash3(member_id.data(), member_id.size(), block_seed);
}

const Member* OwnerOf(const std::vector<Member>& members, uint64_t block_seed) {
  const Member* best = nullptr;
  uint64_t best_score = 0;
  for (const Member& m : members) {
    uint64_t s = RendezvousScore(block_seed, m.id);
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

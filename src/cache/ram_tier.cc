#include "cache/ram_tier.h"

namespace strata::cache {

std::optional<CachedBlock> RamTier::Get(const BlockHash& h) {
  MutexLock lock(mu_);
  auto* node = index_.Find(h);
  if (!node) return std::nullopt;
  index_.Touch(h);
  CachedBlock out = node->entry;
  node->entry.prefetched = false;
  return out;
}

bool RamTier::Contains(const BlockHash& h) const {
  MutexLock lock(mu_);
  return const_cast<LruIndex<CachedBlock>&>(index_).Find(h) != nullptr;
}

bool RamTier::Put(const BlockHash& h, CachedBlock block, bool pinned, std::vector<CachedBlock>* evicted) {
  uint64_t need = block.data.size();
  if (need > capacity_) return false;
  MutexLock lock(mu_);
  index_.Erase(h);
  while (index_.bytes() + need > capacity_) {
    auto* victim = index_.Victim();
    if (!victim) return false;  // everything left is pinned
    typename LruIndex<CachedBlock>::Node out;
    index_.Erase(victim->hash, &out);
    if (evicted) evicted->push_back(std::move(out.entry));
  }
  typename LruIndex<CachedBlock>::Node node;
  node.hash = h;
  node.object = ObjectKeyOf(block.id.store, block.id.key);
  node.bytes = need;
  node.pinned = pinned;
  node.entry = std::move(block);
  index_.Insert(std::move(node));
  return true;
}

std::optional<CachedBlock> RamTier::Remove(const BlockHash& h) {
  MutexLock lock(mu_);
  typename LruIndex<CachedBlock>::Node out;
  if (!index_.Erase(h, &out)) return std::nullopt;
  return std::move(out.entry);
}

std::vector<CachedBlock> RamTier::RemoveObject(const std::string& object) {
  MutexLock lock(mu_);
  return RemoveLocked(index_.BlocksOf(object));
}

std::vector<CachedBlock> RamTier::RemoveLocked(const std::vector<BlockHash>& hashes) {
  std::vector<CachedBlock> out;
  for (const auto& h : hashes) {
    typename LruIndex<CachedBlock>::Node node;
    if (index_.Erase(h, &node)) out.push_back(std::move(node.entry));
  }
  return out;
}

uint64_t RamTier::bytes() const {
  MutexLock lock(mu_);
  return index_.bytes();
}

size_t RamTier::blocks() const {
  MutexLock lock(mu_);
  return index_.size();
}

}  // namespace strata::cache

// LruIndex: the recency order and byte accounting shared by both tiers.
// Maps BlockHash -> Entry (caller data), keeps least-recently-used order and
// the sum of entry sizes, plus a per-object secondary index so every block of
// an object can be dropped on write. Not thread-safe: the tier's lock guards it.
#pragma once

#include <cstdint>
#include <list>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "base/metrics.h"
#include "cache/block_key.h"

namespace strata::cache {

template <typename Entry>
class LruIndex {
 public:
  struct Node {
    BlockHash hash;
    std::string object;  // ObjectKeyOf(store, key)
    uint64_t bytes = 0;  // charged against the tier's capacity
    bool pinned = false;
    Entry entry;
  };

  // Occupancy gauge kept equal to this index's share of bytes (Add deltas, so
  // several caches in one process sum up).
  void set_gauge(Gauge* gauge) { gauge_ = gauge; }

  Node* Find(const BlockHash& h) {
    auto it = map_.find(h);
    return it == map_.end() ? nullptr : &*it->second;
  }
  // Marks most recently used.
  void Touch(const BlockHash& h) {
    auto it = map_.find(h);
    if (it != map_.end()) list_.splice(list_.begin(), list_, it->second);
  }
  // Inserts (or replaces) as most recently used.
  Node& Insert(Node node) {
    Erase(node.hash);
    Charge(static_cast<int64_t>(node.bytes));
    by_object_[node.object].insert(node.hash);
    list_.push_front(std::move(node));
    map_[list_.front().hash] = list_.begin();
    return list_.front();
  }
  // Appends as least recently used (restart scan inserts oldest-last order).
  Node& InsertCold(Node node) {
    Erase(node.hash);
    Charge(static_cast<int64_t>(node.bytes));
    by_object_[node.object].insert(node.hash);
    list_.push_back(std::move(node));
    auto it = std::prev(list_.end());
    map_[it->hash] = it;
    return *it;
  }
  bool Erase(const BlockHash& h, Node* out = nullptr) {
    auto it = map_.find(h);
    if (it == map_.end()) return false;
    auto node_it = it->second;
    Charge(-static_cast<int64_t>(node_it->bytes));
    auto obj = by_object_.find(node_it->object);
    if (obj != by_object_.end()) {
      obj->second.erase(h);
      if (obj->second.empty()) by_object_.erase(obj);
    }
    if (out) *out = std::move(*node_it);
    list_.erase(node_it);
    map_.erase(it);
    return true;
  }
  // Least recently used unpinned node, or null.
  Node* Victim() {
    for (auto it = list_.rbegin(); it != list_.rend(); ++it) {
      if (!it->pinned) return &*it;
    }
    return nullptr;
  }
  std::vector<BlockHash> BlocksOf(const std::string& object) const {
    auto it = by_object_.find(object);
    if (it == by_object_.end()) return {};
    return {it->second.begin(), it->second.end()};
  }
  template <typename Fn>
  void ForEach(Fn&& fn) {  // most recent first
    for (auto& n : list_) fn(n);
  }
  uint64_t bytes() const { return bytes_; }
  size_t size() const { return map_.size(); }
  void Clear() {
    list_.clear();
    map_.clear();
    by_object_.clear();
    Charge(-static_cast<int64_t>(bytes_));
  }
  ~LruIndex() { Clear(); }

 private:
  void Charge(int64_t delta) {
    bytes_ += delta;
    if (gauge_) gauge_->Add(delta);
  }
  Gauge* gauge_ = nullptr;
  std::list<Node> list_;
  std::unordered_map<BlockHash, typename std::list<Node>::iterator, BlockHashHasher> map_;
  std::unordered_map<std::string, std::unordered_set<BlockHash, BlockHashHasher>> by_object_;
  uint64_t bytes_ = 0;
};

}  // namespace strata::cache

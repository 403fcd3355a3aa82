#include "gateway/connections.h"

namespace strata::gateway {

bool ConnectionTable::EvictLocked(const std::string& client) {
  ServedConnection* victim = nullptr;
  Entry* victim_entry = nullptr;
  uint64_t oldest = 0;
  for (auto& [c, e] : entries_) {
    if (!e.counted || !c->idle() || (!client.empty() && e.client != client)) continue;
    uint64_t since = c->idle_since();
    if (victim == nullptr || since < oldest) {
      victim = c;
      victim_entry = &e;
      oldest = since;
    }
  }
  if (victim == nullptr) return false;
  auto conn = victim_entry->conn.lock();
  if (!conn) return false;  // already going: its destructor unregisters it
  victim_entry->counted = false;
  --counted_;
  if (--per_client_[victim_entry->client] == 0) per_client_.erase(victim_entry->client);
  conn->ForceClose();  // posts to its strand: never closes under our lock
  return true;
}

ConnectionTable::Admission ConnectionTable::Admit(ServedConnection* c, std::weak_ptr<ServedConnection> w,
                                                  const std::string& client) {
  MutexLock lock(mu_);
  bool evicted = false;
  auto it = per_client_.find(client);
  if (it != per_client_.end() && it->second >= max_per_client_) {
    if (!EvictLocked(client)) return Admission::kRefused;
    evicted = true;
  }
  if (counted_ >= max_total_) {
    if (!EvictLocked("")) return Admission::kRefused;
    evicted = true;
  }
  entries_[c] = Entry{std::move(w), client, true};
  ++per_client_[client];
  ++counted_;
  return evicted ? Admission::kAdmittedByEviction : Admission::kAdmitted;
}

void ConnectionTable::Remove(ServedConnection* c) {
  MutexLock lock(mu_);
  auto it = entries_.find(c);
  if (it == entries_.end()) return;
  if (it->second.counted) {
    --counted_;
    if (--per_client_[it->second.client] == 0) per_client_.erase(it->second.client);
  }
  entries_.erase(it);
  cv_.NotifyAll();
}

bool ConnectionTable::EvictOldestIdle() {
  MutexLock lock(mu_);
  return EvictLocked("");
}

std::vector<std::shared_ptr<ServedConnection>> ConnectionTable::Live() {
  std::vector<std::shared_ptr<ServedConnection>> out;
  MutexLock lock(mu_);
  for (auto& [c, e] : entries_) {
    if (auto s = e.conn.lock()) out.push_back(std::move(s));
  }
  return out;
}

bool ConnectionTable::WaitEmpty(Duration timeout) {
  MutexLock lock(mu_);
  return cv_.WaitFor(lock, timeout, [this]() REQUIRES(mu_) { return entries_.empty(); });
}

uint64_t ConnectionTable::size() {
  MutexLock lock(mu_);
  return counted_;
}

}  // namespace strata::gateway

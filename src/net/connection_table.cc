#include "net/connection_table.h"

namespace strata::net {

std::shared_ptr<ServedConnection> ConnectionTable::EvictLocked(const std::string& client) {
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
  if (victim == nullptr) return nullptr;
  auto conn = victim_entry->conn.lock();
  if (!conn) return nullptr;  // already going: its destructor unregisters it
  victim_entry->counted = false;
  --counted_;
  if (--per_client_[victim_entry->client] == 0) per_client_.erase(victim_entry->client);
  return conn;
}

ConnectionTable::Admission ConnectionTable::Admit(ServedConnection* c, std::weak_ptr<ServedConnection> w,
                                                  const std::string& client) {
  std::shared_ptr<ServedConnection> evicted[2];
  Admission result = Admission::kAdmitted;
  {
    MutexLock lock(mu_);
    auto it = per_client_.find(client);
    if (it != per_client_.end() && it->second >= max_per_client_ && !(evicted[0] = EvictLocked(client))) {
      return Admission::kRefused;
    }
    if (counted_ >= max_total_ && !(evicted[1] = EvictLocked(""))) {
      result = Admission::kRefused;
    } else {
      entries_[c] = Entry{std::move(w), client, true};
      ++per_client_[client];
      ++counted_;
      if (evicted[0] || evicted[1]) result = Admission::kAdmittedByEviction;
    }
  }
  for (auto& e : evicted) {
    if (e) e->ForceClose();
  }
  return result;
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
  std::shared_ptr<ServedConnection> victim;
  {
    MutexLock lock(mu_);
    victim = EvictLocked("");
  }
  if (victim) victim->ForceClose();
  return victim != nullptr;
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

}  // namespace strata::net

// A server's live connections and their caps (the gateway's and a cache
// group member's peer endpoint): at most max_total on the listener and
// max_per_client from one client address.
// When a cap is reached, the connection that has been idle the longest in
// that scope (waiting for a request, or still sending its headers) is closed
// to make room; a connection busy with a request is never closed for this.
// Only when none is idle is the newcomer refused. So idle connections,
// however many a client opens, cannot keep a working client out, and no
// client holds more than its share. Beast-free; thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/clock.h"
#include "base/mutex.h"

namespace strata::net {

// What the table needs of a connection (a server's connection class).
class ServedConnection {
 public:
  virtual ~ServedConnection() = default;
  // Closes now (eviction, or a shutdown past its drain time); from any thread.
  virtual void ForceClose() = 0;
  // Closes if idle, else after the response in progress (shutdown).
  virtual void StopIfIdle() = 0;

  // Idle: waiting for a request or reading its headers. Set on the connection's own strand.
  void MarkIdle() {
    idle_since_.store(NextTick());
    waiting_.store(true);
  }
  void MarkBusy() { waiting_.store(false); }
  bool idle() const { return waiting_.load(); }
  // When it became idle, as a count of MarkIdle calls process-wide (order is all that matters).
  uint64_t idle_since() const { return idle_since_.load(); }

 private:
  static uint64_t NextTick() {
    static std::atomic<uint64_t> ticks{0};
    return ticks.fetch_add(1) + 1;
  }
  std::atomic<bool> waiting_{true};  // a new connection has sent nothing yet
  std::atomic<uint64_t> idle_since_{NextTick()};
};

class ConnectionTable {
 public:
  ConnectionTable(uint64_t max_total, uint64_t max_per_client)
      : max_total_(max_total), max_per_client_(max_per_client) {}

  // Registers `c` from `client` (its address without the port), closing an
  // idle connection when a cap is reached; kRefused (nothing registered) when
  // none could be closed: the caller refuses `c`.
  enum class Admission { kAdmitted, kAdmittedByEviction, kRefused };
  Admission Admit(ServedConnection* c, std::weak_ptr<ServedConnection> w, const std::string& client);
  // Unregisters `c` (its destructor).
  void Remove(ServedConnection* c);
  // Closes the connection idle the longest, if any (the process is out of descriptors).
  bool EvictOldestIdle();
  // The registered connections, for shutdown.
  std::vector<std::shared_ptr<ServedConnection>> Live();
  // Waits until every connection is unregistered; false after `timeout`.
  bool WaitEmpty(Duration timeout);
  // Counted connections (the evicted ones are no longer counted while they close).
  uint64_t size();

 private:
  struct Entry {
    std::weak_ptr<ServedConnection> conn;
    std::string client;
    bool counted = true;  // false once evicted: its close is under way
  };
  // The idle connection (of `client`, or any when empty) idle the longest,
  // uncounted; null if none. The caller closes it once mu_ is released (its
  // last reference may go there, and its destructor unregisters it).
  std::shared_ptr<ServedConnection> EvictLocked(const std::string& client) REQUIRES(mu_);

  const uint64_t max_total_, max_per_client_;
  Mutex mu_;
  CondVar cv_;  // an entry went away
  std::unordered_map<ServedConnection*, Entry> entries_ GUARDED_BY(mu_);
  std::unordered_map<std::string, uint64_t> per_client_ GUARDED_BY(mu_);
  uint64_t counted_ GUARDED_BY(mu_) = 0;
};

}  // namespace strata::net

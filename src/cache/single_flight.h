// SingleFlight: concurrent calls for the same key run the function once; the
// others wait and share its result (so N readers missing one block cause one
// backend fetch). The function must publish its result (e.g. insert into the
// cache) before returning, so a caller arriving after the flight lands finds
// it there. Thread-safe.
#pragma once

#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <unordered_map>

namespace strata {

template <typename K, typename V, typename Hash = std::hash<K>>
class SingleFlight {
 public:
  // Runs `fn` unless a call for `key` is already running, in which case waits
  // for it. *shared is set to true for the waiters.
  V Do(const K& key, const std::function<V()>& fn, bool* shared = nullptr) {
    std::unique_lock lock(mu_);
    auto it = calls_.find(key);
    if (it != calls_.end()) {
      std::shared_ptr<Call> call = it->second;
      if (shared) *shared = true;
      ++call->waiters;
      call->cv.wait(lock, [&] { return call->result.has_value(); });
      return *call->result;
    }
    auto call = std::make_shared<Call>();
    calls_.emplace(key, call);
    lock.unlock();
    if (shared) *shared = false;
    V result = fn();
    lock.lock();
    call->result = result;
    calls_.erase(key);
    call->cv.notify_all();
    return result;
  }

  // Callers currently waiting on another's call for `key` (tests use it).
  size_t Waiters(const K& key) const {
    std::lock_guard lock(mu_);
    auto it = calls_.find(key);
    return it == calls_.end() ? 0 : it->second->waiters;
  }

  bool InFlight(const K& key) const {
    std::lock_guard lock(mu_);
    return calls_.count(key) != 0;
  }

 private:
  struct Call {
    std::condition_variable cv;
    std::optional<V> result;
    size_t waiters = 0;
  };
  mutable std::mutex mu_;
  std::unordered_map<K, std::shared_ptr<Call>, Hash> calls_;
};

}  // namespace strata

// SingleFlight: concurrent calls for the same key run the function once; the
// others wait and share its result (so N readers missing one block cause one
// backend fetch). The function must publish its result (e.g. insert into the
// cache) before returning, so a caller arriving after the flight lands finds
// it there. Thread-safe.
//
// DoAsync is the form for callers that must not wait past a deadline: the
// call runs on another thread, each caller waits for it only until the
// call's own deadline, and a result may be kept (a failure remembered for a
// backoff) until ForgetIf drops it.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
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
  //
  // With `linger`, the leader hands the result to the waiters first and then
  // runs linger(result) with the flight still open: callers arriving meanwhile
  // take the result at once instead of starting another call (the loader
  // keeps a shard's flight open while it writes the disk copy).
  V Do(const K& key, const std::function<V()>& fn, bool* shared = nullptr,
       const std::function<void(const V&)>& linger = nullptr) {
    std::unique_lock lock(mu_);
    for (auto it = calls_.find(key); it != calls_.end(); it = calls_.find(key)) {
      std::shared_ptr<Call> call = it->second;  // kept alive while we wait
      if (shared) *shared = true;
      ++call->waiters;
      ++joins_;
      call->cv.wait(lock, [&] { return call->result.has_value() || call->abandoned; });
      if (call->result) return *call->result;
      // The leader's fn threw: there is nothing to share; call again (perhaps as the leader).
    }
    auto call = std::make_shared<Call>();
    calls_.emplace(key, call);
    lock.unlock();
    if (shared) *shared = false;
    // An exception from fn or linger propagates to this caller, but must not
    // leave the flight open: its waiters would wait forever, and so would
    // every later caller for the key (or take a lingering result for ever).
    std::optional<V> result;
    try {
      result.emplace(fn());
    } catch (...) {
      lock.lock();
      call->abandoned = true;
      call->cv.notify_all();
      EraseLocked(key, call);
      throw;
    }
    lock.lock();
    call->result = *result;
    call->cv.notify_all();
    if (linger) {
      lock.unlock();
      try {
        linger(*result);
      } catch (...) {
        lock.lock();
        EraseLocked(key, call);
        throw;
      }
      lock.lock();
    }
    EraseLocked(key, call);
    return std::move(*result);
  }

  // Joins the call for `key`, or starts `fn` on another thread through
  // `spawn` (which must run the task it is given once, e.g. by submitting it
  // to a pool); then waits until `timeout` after that call started. nullopt:
  // no result by then; the call goes on, later callers join it, and those
  // arriving after its deadline do not wait at all. When keep(result), the
  // result stays in place once the call is over (callers take it at once,
  // Do's included) until ForgetIf drops it. *shared: true unless this caller
  // started the call.
  std::optional<V> DoAsync(const K& key, std::function<V()> fn, const std::function<void(std::function<void()>)>& spawn,
                           std::chrono::steady_clock::duration timeout, bool* shared = nullptr,
                           std::function<bool(const V&)> keep = nullptr) {
    std::unique_lock lock(mu_);
    std::shared_ptr<Call> call;
    if (auto it = calls_.find(key); it != calls_.end()) {
      call = it->second;
      ++call->waiters;
      ++joins_;
      if (shared) *shared = true;
    } else {
      call = std::make_shared<Call>();
      calls_.emplace(key, call);
      if (shared) *shared = false;
      lock.unlock();
      spawn([this, key, call, fn = std::move(fn), keep = std::move(keep)] {
        std::optional<V> result;
        try {
          result.emplace(fn());
        } catch (...) {
          std::lock_guard held(mu_);
          call->abandoned = true;
          call->cv.notify_all();
          EraseLocked(key, call);
          throw;
        }
        std::lock_guard held(mu_);
        call->result = *result;
        call->cv.notify_all();
        if (!keep || !keep(*call->result)) EraseLocked(key, call);
      });
      lock.lock();
    }
    call->cv.wait_until(lock, call->started + timeout, [&] { return call->result.has_value() || call->abandoned; });
    return call->result;
  }

  // Closes a flight that has its result but is still lingering, so later
  // callers start a call of their own (its result turned out bad). A flight
  // still running is left alone.
  void Forget(const K& key) {
    ForgetIf(key, [](const V&) { return true; });
  }
  // Forget, only when stale(result) (a kept result whose time is over).
  void ForgetIf(const K& key, const std::function<bool(const V&)>& stale) {
    std::lock_guard lock(mu_);
    auto it = calls_.find(key);
    if (it != calls_.end() && it->second->result.has_value() && stale(*it->second->result)) calls_.erase(it);
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

  // Callers that joined another's call, all keys, since construction
  // (counted when they join, before they wait).
  uint64_t Joins() const {
    std::lock_guard lock(mu_);
    return joins_;
  }

 private:
  struct Call {
    std::condition_variable cv;
    std::optional<V> result;
    bool abandoned = false;  // fn threw: no result will come
    size_t waiters = 0;
    const std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();
  };

  // Only our own call: Forget may have replaced it with a newer one.
  void EraseLocked(const K& key, const std::shared_ptr<Call>& call) {
    auto it = calls_.find(key);
    if (it != calls_.end() && it->second == call) calls_.erase(it);
  }

  mutable std::mutex mu_;
  std::unordered_map<K, std::shared_ptr<Call>, Hash> calls_;
  uint64_t joins_ = 0;
};

}  // namespace strata

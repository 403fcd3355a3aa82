// Test helpers for the cache: a decorator over any ObjectStore that counts
// backend requests, can hold Gets at a gate, and can truncate bodies.
#pragma once

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <string>

#include "base/hash.h"
#include "base/random.h"
#include "object/store_wrapper.h"

namespace strata::testing_cache {

class CountingStore : public object::StoreWrapper {
 public:
  explicit CountingStore(object::ObjectStorePtr inner) : object::StoreWrapper(std::move(inner)) {}
  using object::StoreWrapper::Get;

  std::atomic<int> gets{0}, heads{0}, lists{0};
  std::atomic<uint64_t> get_bytes{0};
  std::atomic<int> truncate_next{0};  // next N Gets return one byte short

  // Gets with a range starting at or after `min_offset` wait until Open().
  void CloseGate(uint64_t min_offset = 0) {
    std::lock_guard lock(mu_);
    gate_closed_ = true;
    gate_min_offset_ = min_offset;
  }
  void OpenGate() {
    std::lock_guard lock(mu_);
    gate_closed_ = false;
    cv_.notify_all();
  }
  // Waits (bounded) until `n` Gets are held at the gate.
  bool WaitHeld(int n, std::chrono::seconds deadline = std::chrono::seconds(10)) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, deadline, [&] { return held_ >= n; });
  }
  int held() {
    std::lock_guard lock(mu_);
    return held_;
  }
  int max_held() {
    std::lock_guard lock(mu_);
    return max_held_;
  }

  Result<object::GetResult> Get(std::string_view key, const object::GetOptions& options) override {
    ++gets;
    {
      std::unique_lock lock(mu_);
      uint64_t off = options.range ? options.range->offset : 0;
      if (gate_closed_ && off >= gate_min_offset_) {
        ++held_;
        max_held_ = std::max(max_held_, held_);
        cv_.notify_all();
        cv_.wait(lock, [&] { return !gate_closed_; });
        --held_;
      }
    }
    auto r = base_->Get(key, options);
    if (r.ok()) {
      get_bytes += r->data.size();
      int t = truncate_next.load();
      while (t > 0 && !truncate_next.compare_exchange_weak(t, t - 1)) {
      }
      if (t > 0 && !r->data.empty()) r->data = r->data.Slice(0, r->data.size() - 1);
    }
    return r;
  }
  Result<object::ObjectInfo> Head(std::string_view key) override {
    ++heads;
    return base_->Head(key);
  }
  Result<object::ListResult> List(const object::ListOptions& o) override {
    ++lists;
    return base_->List(o);
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool gate_closed_ = false;
  uint64_t gate_min_offset_ = 0;
  int held_ = 0, max_held_ = 0;
};

// Option builders (aggregate initialisers with missing fields warn under -Wextra).
inline object::GetOptions Range(object::ByteRange r) {
  object::GetOptions o;
  o.range = r;
  return o;
}
inline object::ListOptions Prefix(std::string p) {
  object::ListOptions o;
  o.prefix = std::move(p);
  return o;
}

// Deterministic pseudo-random bytes.
inline Buffer RandomBytes(size_t n, uint64_t seed) {
  std::string s(n, '\0');
  uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;
  for (size_t i = 0; i < n; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    s[i] = static_cast<char>(x);
  }
  return Buffer::FromString(std::move(s));
}

}  // namespace strata::testing_cache

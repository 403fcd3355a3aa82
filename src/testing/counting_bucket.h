// A store decorator for tests that count what the bucket sent: GETs by (key,
// range offset) and the bytes they returned, as the bucket saw them.
// Thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>

#include "object/store_wrapper.h"

namespace strata::testing {

class CountingBucket : public object::StoreWrapper {
 public:
  using object::StoreWrapper::Get;
  using object::StoreWrapper::StoreWrapper;
  Result<object::GetResult> Get(std::string_view key, const object::GetOptions& o) override {
    auto r = base_->Get(key, o);
    std::lock_guard lock(mu_);
    auto& c = gets_[{std::string(key), o.range ? o.range->offset : 0}];
    ++c.first;
    if (r.ok()) c.second += r->data.size();
    return r;
  }
  // (key, range offset) -> (GETs, bytes returned).
  std::map<std::pair<std::string, uint64_t>, std::pair<int, uint64_t>> Snapshot() {
    std::lock_guard lock(mu_);
    return gets_;
  }
  void Reset() {
    std::lock_guard lock(mu_);
    gets_.clear();
  }

 private:
  std::mutex mu_;
  std::map<std::pair<std::string, uint64_t>, std::pair<int, uint64_t>> gets_;
};

}  // namespace strata::testing

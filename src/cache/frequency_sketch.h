// FrequencySketch: how often each key was read lately, for admission (TinyLFU):
// a count-min sketch of four rows of 8-bit counters, every counter halved
// after `10 x expected_items` increments so that old popularity fades.
// A cache full of blocks read as often as a candidate keeps them: a dataset
// larger than the cache, streamed once per epoch, then keeps the part that
// fitted instead of evicting it block by block for blocks evicted in turn
// before their next read. Keys are already hashes (64 well-mixed bits).
// Thread-safe.
#pragma once

#include <cstdint>
#include <vector>

#include "base/mutex.h"

namespace strata::cache {

class FrequencySketch {
 public:
  explicit FrequencySketch(uint64_t expected_items);
  void Increment(uint64_t key);
  uint32_t Estimate(uint64_t key) const;

 private:
  size_t Slot(uint64_t key, int row) const;

  mutable Mutex mu_;
  const uint64_t mask_;                            // row width - 1 (a power of two)
  const uint64_t sample_;                          // increments between halvings
  std::vector<uint8_t> counters_ GUARDED_BY(mu_);  // 4 rows
  uint64_t increments_ GUARDED_BY(mu_) = 0;
};

}  // namespace strata::cache

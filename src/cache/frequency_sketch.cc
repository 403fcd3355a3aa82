#include "cache/frequency_sketch.h"

#include <algorithm>
#include <bit>

namespace strata::cache {
namespace {
constexpr int kRows = 4;
constexpr uint64_t kMinWidth = 1024, kMaxWidth = 1ull << 22;  // 4 MiB x 4 rows at most
constexpr uint64_t kSeeds[kRows] = {0x9e3779b97f4a7c15ull, 0xc2b2ae3d27d4eb4full, 0x165667b19e3779f9ull,
                                    0xd6e8feb86659fd93ull};
}  // namespace

FrequencySketch::FrequencySketch(uint64_t expected_items)
    : mask_(std::clamp<uint64_t>(std::bit_ceil(std::max<uint64_t>(expected_items, 1) * 2), kMinWidth, kMaxWidth) - 1),
      sample_(10 * std::max<uint64_t>(expected_items, 64)),
      counters_(kRows * (mask_ + 1), 0) {}

size_t FrequencySketch::Slot(uint64_t key, int row) const {
  uint64_t h = (key ^ kSeeds[row]) * 0xff51afd7ed558ccdull;
  h ^= h >> 32;
  return static_cast<size_t>(row * (mask_ + 1) + (h & mask_));
}

void FrequencySketch::Increment(uint64_t key) {
  MutexLock lock(mu_);
  for (int r = 0; r < kRows; ++r) {
    uint8_t& c = counters_[Slot(key, r)];
    if (c < 255) ++c;
  }
  if (++increments_ >= sample_) {
    for (uint8_t& c : counters_) c >>= 1;
    increments_ = 0;
  }
}

uint32_t FrequencySketch::Estimate(uint64_t key) const {
  MutexLock lock(mu_);
  uint32_t m = 255;
  for (int r = 0; r < kRows; ++r) m = std::min<uint32_t>(m, counters_[Slot(key, r)]);
  return m;
}

}  // namespace strata::cache

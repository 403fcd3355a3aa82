#include "cache/readahead.h"

#include <algorithm>

namespace strata::cache {

ReadaheadPlan PlanReadahead(ReadaheadState& s, uint64_t begin, uint64_t end, uint64_t object_size, uint64_t block_size,
                            uint64_t max_window) {
  const uint64_t slack = block_size / 4;
  bool sequential =
      s.next_offset != ReadaheadState::kUnset && begin + slack >= s.next_offset && begin <= s.next_offset + slack;
  s.next_offset = end;
  if (!sequential) {
    s.window = 0;
    s.issued_until = 0;
    return {};
  }
  s.window = s.window == 0 ? block_size : std::min(s.window * 2, std::max(max_window, block_size));
  if (end >= object_size || end == 0) return {};
  uint64_t first = (end - 1) / block_size + 1;
  uint64_t last_byte = std::min(object_size - 1, end - 1 + s.window);
  uint64_t stop = last_byte / block_size + 1;
  first = std::max(first, s.issued_until);
  if (first >= stop) return {};
  s.issued_until = stop;
  return {first, stop};
}

}  // namespace strata::cache

// The dataset of the cache group loader tests: sample i's bytes, known to
// the test that writes it and to the nodes (threads or processes) that check it.
#pragma once

#include <cstdint>
#include <string>

namespace strata::loader::testing {

inline constexpr uint64_t kGroupSampleBytes = 600 << 10;  // 10 per shard: ~6 MiB shards, two 4 MiB blocks

inline std::string GroupSampleBytes(uint64_t i) {
  std::string s(kGroupSampleBytes, '\0');
  for (size_t j = 0; j < s.size(); ++j) s[j] = static_cast<char>((i * 131 + j * 7 + j / 509) % 251);
  return s;
}

}  // namespace strata::loader::testing

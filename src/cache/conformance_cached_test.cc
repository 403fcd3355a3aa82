// The conformance suite against CachedStore over mem:// and over a
// transparent FaultStore: a cache in front of a store must answer exactly as
// the store does (codes, conditions, listings, multipart, copy).
#include "base/clock.h"
#include "cache/cached_store.h"
#include "object/fault_store.h"
#include "object/mem_store.h"
#include "testing/conformance.h"

namespace strata::cache {
namespace {

// gtest pastes the suite name into identifiers: it must be unqualified
using strata::testing::ObjectStoreConformance;

FakeClock& AutoClock() {
  static FakeClock clock(/*auto_advance=*/true);
  return clock;
}

// Small blocks and parts, so reads of the suite's objects span several
// blocks and fills; RAM tier only (unit tests touch no disk).
object::ObjectStorePtr Cached(object::ObjectStorePtr backend) {
  CacheOptions co;
  co.block_size = 64 << 10;
  co.ram_bytes = 64 << 20;
  auto cache = BlockCache::Open(co);
  EXPECT_TRUE(cache.ok()) << cache.status();
  if (!cache.ok()) return nullptr;
  CachedStoreOptions so;
  so.fetch_part_size = 16 << 10;
  so.readahead_threads = 2;
  return std::make_shared<CachedStore>(std::move(backend), *cache, so);
}

INSTANTIATE_TEST_SUITE_P(
    Cached, ObjectStoreConformance,
    ::testing::Values(testing::ConformanceCase{"cached_mem", [] { return Cached(object::MakeMemStore()); }},
                      testing::ConformanceCase{"cached_fault_mem",
                                               [] {
                                                 object::FaultConfig no_faults;
                                                 no_faults.clock = &AutoClock();
                                                 return Cached(std::make_shared<object::FaultStore>(
                                                     object::MakeMemStore(), no_faults));
                                               }}),
    testing::ConformanceCaseName);

}  // namespace
}  // namespace strata::cache

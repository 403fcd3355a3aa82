// The conformance suite against mem:// and cloud-emulated mem:// stores.
#include "base/clock.h"
#include "object/cloud_store.h"
#include "object/fault_store.h"
#include "object/mem_store.h"
#include "object/prefix_store.h"
#include "testing/conformance.h"

namespace strata::object {
namespace {

// gtest pastes the suite name into identifiers: it must be unqualified
using strata::testing::ObjectStoreConformance;

FakeClock& AutoClock() {
  static FakeClock clock(/*auto_advance=*/true);
  return clock;
}
FaultConfig NoFaults() { return FaultConfig{.clock = &AutoClock()}; }

INSTANTIATE_TEST_SUITE_P(
    Mem, ObjectStoreConformance,
    ::testing::Values(
        testing::ConformanceCase{"mem", [] { return MakeMemStore(); }},
        testing::ConformanceCase{"mem_small_parts",
                                 [] { return MakeMemStore("", MemStoreOptions{.min_part_size = 16}); }},
        testing::ConformanceCase{"cloud_mem",
                                 [] {
                                   CloudProfile profile;
                                   profile.jitter = std::chrono::milliseconds(5);
                                   return EmulateCloud(MakeMemStore(), profile, AutoClock());
                                 }},
        // A fault store with no faults configured must be transparent.
        testing::ConformanceCase{"fault_mem", [] { return std::make_shared<FaultStore>(MakeMemStore(), NoFaults()); }},
        testing::ConformanceCase{"prefix_mem", [] { return MakePrefixStore(MakeMemStore(), "some/prefix/"); }}),
    testing::ConformanceCaseName);

}  // namespace
}  // namespace strata::object

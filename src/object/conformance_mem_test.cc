// The conformance suite against mem:// and cloud-emulated mem:// stores.
#include "base/clock.h"
#include "object/cloud_store.h"
#include "object/fault_store.h"
#include "object/mem_store.h"
#include "object/prefix_store.h"
#include "testing/conformance.h"

namespace strata {
namespace {

FakeClock& AutoClock() {
  static FakeClock clock(/*auto_advance=*/true);
  return clock;
}

INSTANTIATE_TEST_SUITE_P(
    Mem, ObjectStoreConformance,
    ::testing::Values(
        ConformanceCase{"mem", [] { return MakeMemStore(); }},
        ConformanceCase{"mem_small_parts", [] { return MakeMemStore("", MemStoreOptions{.min_part_size = 16}); }},
        ConformanceCase{"cloud_mem",
                        [] {
                          CloudProfile profile;
                          profile.jitter = std::chrono::milliseconds(5);
                          return EmulateCloud(MakeMemStore(), profile, AutoClock());
                        }},
        // A fault store with no faults configured must be transparent.
        // (ListMultipartUploads is not forwarded yet: FaultStore predates it.)
        ConformanceCase{.name = "fault_mem",
                        .make = [] { return std::make_shared<FaultStore>(MakeMemStore(), FaultConfig{}, AutoClock()); },
                        .supports_list_uploads = false},
        ConformanceCase{"prefix_mem", [] { return MakePrefixStore(MakeMemStore(), "some/prefix/"); }}),
    ConformanceCaseName);

}  // namespace
}  // namespace strata

// Both fault injectors in one translation unit: their names must not clash
// (the file system's operations are FileFaultOp, the store's FaultOp).
#include <gtest/gtest.h>

#include <type_traits>

#include "io/fault_file_system.h"
#include "object/fault_store.h"

namespace strata::object {
namespace {

static_assert(!std::is_same_v<io::FileFaultOp, FaultOp>);

TEST(FaultNames, FileAndStoreFaultHeadersCompileTogether) {
  const uint32_t file_ops = io::kFaultRead | io::kFaultOpen;
  EXPECT_EQ(file_ops, 9u);
  EXPECT_NE(FaultOp::kGet, FaultOp::kAny);
}

}  // namespace
}  // namespace strata::object

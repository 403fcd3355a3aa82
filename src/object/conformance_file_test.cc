// The conformance suite against file:// stores in fresh temp directories.
#include <filesystem>

#include "object/file_store.h"
#include "object/prefix_store.h"
#include "testing/conformance.h"

namespace strata::object {
namespace {

// gtest pastes the suite name into identifiers: it must be unqualified
using strata::testing::ObjectStoreConformance;

std::string FreshDir() {
  static int n = 0;
  auto dir = std::filesystem::temp_directory_path() /
             ("strata-conformance-" + std::to_string(::getpid()) + "-" + std::to_string(n++));
  std::filesystem::remove_all(dir);
  return dir.string();
}

ObjectStorePtr Open(FileStoreOptions options) {
  auto store = OpenFileStore(FreshDir(), options);
  EXPECT_TRUE(store.ok()) << store.status();
  return store.ok() ? *store : nullptr;
}

INSTANTIATE_TEST_SUITE_P(
    File, ObjectStoreConformance,
    ::testing::Values(
        testing::ConformanceCase{"file", [] { return Open({}); }},
        testing::ConformanceCase{"file_no_xattr", [] { return Open({.use_xattrs = false, .fsync = false}); }},
        testing::ConformanceCase{"file_prefix", [] { return MakePrefixStore(Open({.fsync = false}), "pre/fix-"); }}),
    testing::ConformanceCaseName);

class CleanupTemp : public ::testing::Environment {
 public:
  void TearDown() override {
    for (const auto& e : std::filesystem::directory_iterator(std::filesystem::temp_directory_path())) {
      if (e.path().filename().string().rfind("strata-conformance-" + std::to_string(::getpid()) + "-", 0) == 0) {
        std::filesystem::remove_all(e.path());
      }
    }
  }
};
const auto* const kCleanup = ::testing::AddGlobalTestEnvironment(new CleanupTemp);

}  // namespace
}  // namespace strata::object

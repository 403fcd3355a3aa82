// The ObjectStore conformance suite: value-parameterised GoogleTest cases that
// every implementation must pass with the exact codes object_store.h
// documents. Instantiate it in a test binary linked with strata_testing:
//
//   INSTANTIATE_TEST_SUITE_P(Mem, ObjectStoreConformance,
//       ::testing::Values(ConformanceCase{"mem", [] { return MakeMemStore(); }}),
//       ConformanceCaseName);
//
// Each test calls `make` once and expects a fresh, empty store.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "object/object_store.h"

namespace strata::testing {

struct ConformanceCase {
  std::string name;                              // alphanumeric/underscore: used in test names
  std::function<object::ObjectStorePtr()> make;  // a fresh, empty store
  // What the server behind the store honours (quirks of s3rver and the like,
  // which the store cannot know); a test of a missing one is skipped. What
  // the store itself can do is its Capabilities(); DeclaredCapabilitiesHold
  // checks those and that these flags claim nothing beyond them.
  bool strict_min_part_size = true;      // Complete rejects small non-last parts
  bool supports_if_match = true;         // Get If-Match / If-None-Match
  bool supports_conditional_put = true;  // Put If-Match / If-None-Match: *
  bool supports_list_parts = true;
  bool supports_list_uploads = true;     // ListMultipartUploads
  bool supports_abort = true;            // Abort makes the upload id unknown
  bool supports_suffix_range = true;     // bytes=-N
  bool etag_is_md5 = true;               // single-part ETag = hex MD5 of content
  bool max_keys_counts_prefixes = true;  // MaxKeys counts common prefixes too (s3rver: no)
  bool rejects_bad_token = true;         // a foreign continuation token is InvalidArgument
  bool keeps_odd_keys = true;            // "a//b", "./x", "dir//" round-trip (s3rver: no, its keys are file paths)
};

class ObjectStoreConformance : public ::testing::TestWithParam<ConformanceCase> {
 protected:
  void SetUp() override;
  object::ObjectStorePtr store_;
};

// Names instances after ConformanceCase::name.
std::string ConformanceCaseName(const ::testing::TestParamInfo<ConformanceCase>& info);

// The suite's tests live in conformance.cc; this reference keeps the linker
// from dropping them from the static library in binaries that include this header.
int ConformanceSuiteAnchor();
inline const int kConformanceSuiteAnchor = ConformanceSuiteAnchor();

}  // namespace strata::testing

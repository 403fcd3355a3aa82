#include "object/list_util.h"

#include <gtest/gtest.h>

#include "object/mem_store.h"

namespace strata::object {
namespace {

TEST(ListUtil, PrefixSuccessor) {
  EXPECT_EQ(PrefixSuccessor("abc"), "abd");
  EXPECT_EQ(PrefixSuccessor(std::string("a\xff\xff", 3)), "b");
  EXPECT_EQ(PrefixSuccessor(std::string("\xff", 1)), std::nullopt);
  EXPECT_EQ(PrefixSuccessor(""), std::nullopt);
}

TEST(ListUtil, EtagMatches) {
  EXPECT_TRUE(EtagMatches("abc", "abc"));
  EXPECT_TRUE(EtagMatches("\"abc\"", "abc"));
  EXPECT_TRUE(EtagMatches("abc", "\"abc\""));
  EXPECT_TRUE(EtagMatches("*", "abc"));
  EXPECT_TRUE(EtagMatches("\"x\", \"abc\"", "abc"));
  EXPECT_TRUE(EtagMatches("W/\"abc\"", "abc"));
  EXPECT_FALSE(EtagMatches("abd", "abc"));
  EXPECT_FALSE(EtagMatches("", "abc"));
  EXPECT_FALSE(EtagMatches("\"\"", ""));
}

TEST(ListUtil, StartAfterEqualToACommonPrefixSkipsIt) {
  auto store = MakeMemStore();
  for (const char* k : {"a/1", "a/2", "b/1", "c"}) ASSERT_TRUE(store->Put(k, Buffer()).ok());
  ListOptions o;
  o.delimiter = "/";
  o.start_after = "a/";
  auto r = store->List(o);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->common_prefixes, std::vector<std::string>{"b/"});
  ASSERT_EQ(r->objects.size(), 1u);
  EXPECT_EQ(r->objects[0].key, "c");
  // Inside a group, the group is still reported (keys after start_after remain in it).
  o.start_after = "a/1";
  r = store->List(o);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->common_prefixes, (std::vector<std::string>{"a/", "b/"}));
}

TEST(ListUtil, MultiCharacterDelimiterAndPrefixInsideGroup) {
  auto store = MakeMemStore();
  for (const char* k : {"x--1--a", "x--1--b", "x--2", "y"}) ASSERT_TRUE(store->Put(k, Buffer()).ok());
  ListOptions o;
  o.delimiter = "--";
  auto r = store->List(o);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->common_prefixes, std::vector<std::string>{"x--"});
  o.prefix = "x--";
  r = store->List(o);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->common_prefixes, std::vector<std::string>{"x--1--"});
  ASSERT_EQ(r->objects.size(), 1u);
  EXPECT_EQ(r->objects[0].key, "x--2");
}

TEST(ListUtil, TokensFromOtherListingsAreRejectedOrHarmless) {
  auto store = MakeMemStore();
  ListOptions o;
  for (const char* bad : {"", "%%%", "YWJj" /* "abc" */}) {
    o.continuation_token = bad;
    auto r = store->List(o);
    if (std::string(bad).empty()) {
      EXPECT_TRUE(r.ok());
    } else {
      EXPECT_EQ(r.status().code(), Code::kInvalidArgument) << bad;
    }
  }
}

TEST(ListUtil, CompletePartChecks) {
  std::vector<PartInfo> uploaded = {{1, "e1", 10, {}}, {2, "e2", 3, {}}, {3, "e3", 10, {}}};
  EXPECT_TRUE(CheckCompleteParts("k", {{1, "e1"}, {3, "\"e3\""}}, uploaded, 10).ok());
  EXPECT_EQ(CheckCompleteParts("k", {{1, "e1"}, {2, "e2"}, {3, "e3"}}, uploaded, 10).code(),
            Code::kInvalidArgument);                                                // part 2 too small and not last
  EXPECT_TRUE(CheckCompleteParts("k", {{1, "e1"}, {2, "e2"}}, uploaded, 10).ok());  // small last part
  EXPECT_EQ(CheckCompleteParts("k", {{4, "e4"}}, uploaded, 10).code(), Code::kInvalidArgument);
  EXPECT_EQ(CheckCompleteParts("k", {{1, "e1"}, {1, "e1"}}, uploaded, 10).code(), Code::kInvalidArgument);
}

}  // namespace
}  // namespace strata::object

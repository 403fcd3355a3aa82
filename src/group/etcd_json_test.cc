#include "group/etcd_json.h"

#include <gtest/gtest.h>

#include "base/hash.h"

namespace strata::group {
namespace {

std::string B64(std::string_view s) { return Base64Encode(s.data(), s.size()); }

TEST(EtcdJson, RangeAnswer) {
  const std::string body = R"({"header":{"revision":"7"},"kvs":[{"key":")" + B64("/p/a") + R"(","value":")" +
                           B64("va") + R"(","mod_revision":"5"},{"key":"!!notbase64","value":"eA=="},{"key":")" +
                           B64("/p/b") + R"(","value":")" + B64("vb") + R"("}],"more":true})";
  auto r = ParseEtcdRange(body);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->revision, 7);
  EXPECT_TRUE(r->more);
  ASSERT_EQ(r->kvs.size(), 2u);  // the undecodable entry is skipped
  EXPECT_EQ(r->kvs[0].key, "/p/a");
  EXPECT_EQ(r->kvs[0].value, "va");
  EXPECT_EQ(r->kvs[0].mod_revision, 5);
  EXPECT_TRUE(ParseEtcdRange(R"({"header":{"revision":"3"}})").ok());
  for (const char* bad : {"", "[]", "{", R"({"kvs":{}})", "null"}) EXPECT_FALSE(ParseEtcdRange(bad).ok()) << bad;
}

TEST(EtcdJson, WatchMessages) {
  auto created = ParseEtcdWatchMessage(R"({"result":{"header":{"revision":"9"},"created":true}})");
  ASSERT_TRUE(created.ok());
  EXPECT_TRUE(created->created);
  const std::string events = R"({"result":{"header":{"revision":"12"},"events":[{"kv":{"key":")" + B64("/p/a") +
                             R"(","value":")" + B64("x") + R"(","mod_revision":"11"}},{"type":"DELETE","kv":{"key":")" +
                             B64("/p/b") + R"("}},{"type":"BOGUS","kv":{"key":")" + B64("/p/c") + R"("}}]}})";
  auto m = ParseEtcdWatchMessage(events);
  ASSERT_TRUE(m.ok()) << m.status();
  ASSERT_EQ(m->events.size(), 2u);
  EXPECT_TRUE(m->events[0].put);
  EXPECT_EQ(m->events[0].kv.mod_revision, 11);
  EXPECT_FALSE(m->events[1].put);
  EXPECT_EQ(m->events[1].kv.key, "/p/b");
  EXPECT_EQ(m->events[1].kv.mod_revision, 12);  // from the header when the kv has none
  EXPECT_FALSE(ParseEtcdWatchMessage(R"({"result":{"canceled":true,"cancel_reason":"permission denied"}})").ok());
  EXPECT_FALSE(ParseEtcdWatchMessage(R"({"error":{"code":16}})").ok());
  EXPECT_FALSE(ParseEtcdWatchMessage("nope").ok());
}

TEST(EtcdJson, LeaseAndAuthAnswers) {
  EXPECT_EQ(ParseEtcdLeaseGrant(R"({"ID":"2324035675341006346","TTL":"5"})").value_or(""), "2324035675341006346");
  EXPECT_FALSE(ParseEtcdLeaseGrant(R"({"TTL":"5"})").ok());
  EXPECT_EQ(ParseEtcdKeepAliveTtl("{\"result\":{\"ID\":\"1\",\"TTL\":\"5\"}}\n{\"result\":{}}"), 5);
  EXPECT_EQ(ParseEtcdKeepAliveTtl(R"({"result":{"ID":"1"}})"), 0);
  EXPECT_EQ(ParseEtcdAuthToken(R"({"token":"hXabpjYdZWKlQIRL.17"})").value_or(""), "hXabpjYdZWKlQIRL.17");
  EXPECT_FALSE(ParseEtcdAuthToken(R"({"token":"a\r\nInjected: 1"})").ok());
  EXPECT_FALSE(ParseEtcdAuthToken(R"({})").ok());
}

TEST(EtcdJson, SplitterFindsWholeObjectsAcrossChunks) {
  JsonObjectSplitter splitter;
  std::vector<std::string> got;
  auto each = [&](std::string_view m) {
    got.emplace_back(m);
    return Status::Ok();
  };
  ASSERT_TRUE(splitter.Feed(R"({"a":"}{"}  {"b":)", each).ok());
  ASSERT_TRUE(splitter
                  .Feed(R"({"c":"\"}"}})"
                        "\n",
                        each)
                  .ok());
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0], R"({"a":"}{"})");
  EXPECT_EQ(got[1], R"({"b":{"c":"\"}"}})");
  JsonObjectSplitter big;
  EXPECT_FALSE(big.Feed("{" + std::string(JsonObjectSplitter::kMaxMessage + 1, ' '), each).ok());
}

TEST(EtcdJson, PrefixEnd) {
  EXPECT_EQ(EtcdPrefixEnd("/a/"), "/a0");
  EXPECT_EQ(EtcdPrefixEnd(std::string("a\xff", 2)), "b");
  EXPECT_EQ(EtcdPrefixEnd(""), std::string(1, '\0'));
}

}  // namespace
}  // namespace strata::group

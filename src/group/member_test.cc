#include "group/member.h"

#include <gtest/gtest.h>

namespace strata::group {
namespace {

TEST(GroupUrl, ParsesEtcdAndStatic) {
  auto e = ParseGroupUrl("etcd://127.0.0.1:2379/train");
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  EXPECT_EQ(e->etcd_endpoint, "http://127.0.0.1:2379");
  EXPECT_EQ(e->group, "train");
  auto s = ParseGroupUrl("static://127.0.0.1:7001,127.0.0.1:7002");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->peers, (std::vector<std::string>{"127.0.0.1:7001", "127.0.0.1:7002"}));
  for (const char* bad : {"etcd://127.0.0.1:2379", "etcd://127.0.0.1:2379/", "etcd://host/g", "static://",
                          "static://a:b", "static://h:99999", "http://x:1/g", ""}) {
    EXPECT_FALSE(ParseGroupUrl(bad).ok()) << bad;
  }
}

TEST(GroupMember, StaticGroupNeedsAFixedPortAndASecret) {
  JoinOptions o;
  o.url = "static://127.0.0.1:7001";
  o.listen = "127.0.0.1:0";
  o.secret = "0123456789abcdef";
  EXPECT_FALSE(GroupMember::Join(o).ok());
  o.url = "etcd://127.0.0.1:1/g";  // nothing listens on port 1: etcd unreachable is an error at join
  o.secret = "";
  EXPECT_FALSE(GroupMember::Join(o).ok());
}

}  // namespace
}  // namespace strata::group

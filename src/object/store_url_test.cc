#include "object/store_url.h"

#include <gtest/gtest.h>

#include "object/mem_store.h"

namespace strata::object {
namespace {

TEST(ParseStoreUrl, Schemes) {
  auto u = ParseStoreUrl("file:///data/bucket%20one");
  ASSERT_TRUE(u.ok()) << u.status();
  EXPECT_EQ(u->scheme, "file");
  EXPECT_EQ(u->authority, "");
  EXPECT_EQ(u->path, "/data/bucket one");

  u = ParseStoreUrl("file://localhost/data");
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->path, "/data");

  u = ParseStoreUrl("mem://demo/some/prefix/?min_part_size=16&emulate=ttfb=30ms,bw=25MB/s");
  ASSERT_TRUE(u.ok()) << u.status();
  EXPECT_EQ(u->scheme, "mem");
  EXPECT_EQ(u->authority, "demo");
  EXPECT_EQ(u->path, "some/prefix/");
  ASSERT_EQ(u->params.size(), 2u);
  EXPECT_EQ(u->params[0], (std::pair<std::string, std::string>{"min_part_size", "16"}));
  EXPECT_EQ(u->params[1], (std::pair<std::string, std::string>{"emulate", "ttfb=30ms,bw=25MB/s"}));

  u = ParseStoreUrl("s3://bucket?endpoint=http%3A%2F%2F127.0.0.1%3A9000&path_style");
  ASSERT_TRUE(u.ok()) << u.status();
  EXPECT_EQ(u->authority, "bucket");
  EXPECT_EQ(u->path, "");
  EXPECT_EQ(u->params[0].second, "http://127.0.0.1:9000");
  EXPECT_EQ(u->params[1].first, "path_style");
}

TEST(ParseStoreUrl, RejectsMalformedUrlsNamingThem) {
  for (const char* bad : {"", "/abs/path", "ftp://x", "file://host/data", "file://", "mem://", "s3:///prefix",
                          "mem://x?a=1&a=2", "mem://x#frag", "file:///bad%zzescape", "mem://x?=v"}) {
    auto u = ParseStoreUrl(bad);
    ASSERT_FALSE(u.ok()) << bad;
    EXPECT_EQ(u.status().code(), Code::kInvalidArgument) << bad;
    EXPECT_NE(u.status().message().find("'" + std::string(bad) + "'"), std::string::npos) << u.status();
  }
}

TEST(OpenStore, MemNamesAreShared) {
  DropMemStore("url-test");
  auto a = OpenStore("mem://url-test");
  auto b = OpenStore("mem://url-test");
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_TRUE((*a)->Put("k", Buffer::Copy("v")).ok());
  EXPECT_EQ((*b)->Get("k")->data.ToString(), "v");
  DropMemStore("url-test");
}

TEST(OpenStore, MemPrefixConfinesKeys) {
  DropMemStore("url-prefix");
  auto whole = OpenStore("mem://url-prefix");
  auto sub = OpenStore("mem://url-prefix/team/a/");
  ASSERT_TRUE(whole.ok() && sub.ok());
  ASSERT_TRUE((*sub)->Put("x", Buffer::Copy("1")).ok());
  ASSERT_TRUE((*whole)->Put("team/b/y", Buffer::Copy("2")).ok());
  EXPECT_TRUE((*whole)->Head("team/a/x").ok());
  auto list = (*sub)->List({});
  ASSERT_TRUE(list.ok());
  ASSERT_EQ(list->objects.size(), 1u);
  EXPECT_EQ(list->objects[0].key, "x");
  EXPECT_EQ((*sub)->Head("x")->key, "x");
  // The URL a store reports reopens the same view.
  auto again = OpenStore((*sub)->Url());
  ASSERT_TRUE(again.ok()) << (*sub)->Url() << ": " << again.status();
  EXPECT_EQ((*again)->Get("x")->data.ToString(), "1");
  auto param = OpenStore("mem://url-prefix?prefix=team/");
  ASSERT_TRUE(param.ok());
  EXPECT_TRUE((*param)->Head("b/y").ok());
  DropMemStore("url-prefix");
}

TEST(OpenStore, EmulateWrapsAnyScheme) {
  FakeClock clock(true);
  auto store = OpenStore("mem://url-emulate?emulate=ttfb=40ms,bw=unlimited&min_part_size=16", clock);
  ASSERT_TRUE(store.ok()) << store.status();
  EXPECT_EQ((*store)->MinPartSize(), 16u);
  EXPECT_EQ((*store)->Head("nothing").status().code(), Code::kNotFound);
  EXPECT_EQ(clock.TotalSlept(), std::chrono::milliseconds(40));
  auto again = OpenStore((*store)->Url(), clock);
  ASSERT_TRUE(again.ok()) << (*store)->Url() << ": " << again.status();
  DropMemStore("url-emulate");
}

TEST(OpenStore, BadParametersAreInvalidArgument) {
  for (const char* bad :
       {"mem://x?bogus=1", "mem://x?emulate=ttfb=fast", "mem://x?min_part_size=big", "file:///tmp/x?bogus=1"}) {
    auto store = OpenStore(bad);
    ASSERT_FALSE(store.ok()) << bad;
    EXPECT_EQ(store.status().code(), Code::kInvalidArgument) << bad;
    EXPECT_NE(store.status().message().find(bad), std::string::npos) << store.status();
  }
}

// The one split under the CLI's and the loader's shard lists.
TEST(SplitUrlDirName, SplitsAtTheLastSlashKeepingAnS3QueryApart) {
  UrlDirName s = SplitUrlDirName("s3://b/dir/a-{0..3}.tar?endpoint=http://127.0.0.1:1/x");
  ASSERT_TRUE(s.dir);
  EXPECT_EQ(*s.dir, "s3://b/dir");
  EXPECT_EQ(s.name, "a-{0..3}.tar");
  EXPECT_EQ(s.query, "?endpoint=http://127.0.0.1:1/x");
  // `before` picks the last '/' ahead of it, so a pattern's own '/' is the name's.
  const std::string_view braces = "file:///d/x/{a,b/c}.tar";
  s = SplitUrlDirName(braces, braces.find('{'));
  ASSERT_TRUE(s.dir);
  EXPECT_EQ(*s.dir, "file:///d/x");
  EXPECT_EQ(s.name, "{a,b/c}.tar");
  EXPECT_EQ(s.query, "");  // only s3:// carries a query
  s = SplitUrlDirName("name.tar");
  EXPECT_FALSE(s.dir);
  EXPECT_EQ(s.name, "name.tar");
}

}  // namespace
}  // namespace strata::object

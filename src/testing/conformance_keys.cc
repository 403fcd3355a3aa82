// Conformance cases for keys a path-based store finds awkward: an object and
// keys below it ("a" and "a/b", in either order), "dir/" markers, empty,
// "." and ".." segments, leading and trailing '/', reserved-looking names,
// spaces, unicode and segments near 255 bytes. Every store keeps each as its
// own object, and lists them exactly as S3 does (byte order, common
// prefixes, start-after, pagination), checked against a reference model.
#include <algorithm>
#include <set>

#include "testing/conformance.h"

namespace strata::testing {

int ConformanceKeysAnchor() { return 0; }

namespace {

#define ASSERT_OK(expr)                                   \
  do {                                                    \
    auto _s = (expr);                                     \
    ASSERT_TRUE(_s.ok()) << #expr << ": " << _s.status(); \
  } while (0)

using Strings = std::vector<std::string>;

// The awkward keys, each stored with its own name as content.
Strings OddKeys() {
  return {"a",
          "a/b",
          "a/b/c",
          "a-b",
          "a0",
          "dir/",
          "dir/x",
          "dir//",
          "a//b",
          "a//",
          "/lead",
          "//",
          "trail/",
          "./x",
          "x/../y",
          "x/./z",
          "..",
          "...",
          "trail.",
          ".strata-tmp",
          ".strata-x",
          "k/.strata-self",
          "k/.strata-xy",
          "with space/and more ",
          "unicodé/ключ/日本",
          "long/" + std::string(255, 't'),
          "long/" + std::string(250, 'u') + "/v",
          "long/.strata-" + std::string(200, 'w')};
}

// S3's answer for a listing of `keys` (the whole, unpaginated one).
struct Expected {
  Strings keys, prefixes;
};
Expected ReferenceList(Strings keys, const std::string& prefix, const std::string& delimiter,
                       const std::string& start_after) {
  std::sort(keys.begin(), keys.end());
  Expected out;
  std::set<std::string> seen;
  for (const auto& k : keys) {
    if (!k.starts_with(prefix) || k <= start_after) continue;
    size_t d = delimiter.empty() ? std::string::npos : k.find(delimiter, prefix.size());
    if (d == std::string::npos) {
      out.keys.push_back(k);
    } else if (std::string cp = k.substr(0, d + delimiter.size()); cp != start_after && seen.insert(cp).second) {
      out.prefixes.push_back(cp);  // a start-after equal to a common prefix means "already reported", as on S3
    }
  }
  return out;
}

// Lists page by page (max_keys per page) and gathers everything.
void ListAll(object::ObjectStore& store, object::ListOptions o, Expected* got) {
  for (int pages = 0; pages < 200; ++pages) {
    auto r = store.List(o);
    ASSERT_OK(r);
    for (const auto& info : r->objects) got->keys.push_back(info.key);
    for (const auto& p : r->common_prefixes) got->prefixes.push_back(p);
    if (!r->truncated) return;
    ASSERT_FALSE(r->next_continuation_token.empty());
    o.continuation_token = r->next_continuation_token;
  }
  FAIL() << "listing did not end";
}

std::string Get(object::ObjectStore& store, const std::string& key) {
  auto r = store.Get(key);
  EXPECT_TRUE(r.ok()) << "Get '" << key << "': " << r.status();
  return r.ok() ? r->data.ToString() : "<error>";
}

}  // namespace

TEST_P(ObjectStoreConformance, ObjectAndKeysBelowItCoexistInEitherOrder) {
  ASSERT_OK(store_->Put("a", Buffer::Copy("object a")));
  ASSERT_OK(store_->Put("a/b", Buffer::Copy("object a/b")));
  ASSERT_OK(store_->Put("d/x", Buffer::Copy("object d/x")));
  ASSERT_OK(store_->Put("d", Buffer::Copy("object d")));
  for (const char* k : {"a", "a/b", "d", "d/x"}) EXPECT_EQ(Get(*store_, k), std::string("object ") + k);
  auto head = store_->Head("a");
  ASSERT_OK(head);
  EXPECT_EQ(head->size, 8u);
  object::ListOptions o;
  o.delimiter = "/";
  auto r = store_->List(o);
  ASSERT_OK(r);
  Strings keys;
  for (const auto& info : r->objects) keys.push_back(info.key);
  EXPECT_EQ(keys, (Strings{"a", "d"}));
  EXPECT_EQ(r->common_prefixes, (Strings{"a/", "d/"}));
  // Overwrites of either keep the other.
  ASSERT_OK(store_->Put("a", Buffer::Copy("a again")));
  ASSERT_OK(store_->Put("d/x", Buffer::Copy("d/x again")));
  EXPECT_EQ(Get(*store_, "a/b"), "object a/b");
  EXPECT_EQ(Get(*store_, "d"), "object d");
  // Deleting one leaves the other.
  ASSERT_TRUE(store_->Delete("a").ok());
  EXPECT_EQ(store_->Head("a").status().code(), Code::kNotFound);
  EXPECT_EQ(Get(*store_, "a/b"), "object a/b");
  ASSERT_TRUE(store_->Delete("d/x").ok());
  EXPECT_EQ(Get(*store_, "d"), "object d");
  EXPECT_EQ(store_->Head("d/x").status().code(), Code::kNotFound);
  // And back: "a" over "a/b" once more, then only "a" stays.
  ASSERT_OK(store_->Put("a", Buffer::Copy("third a")));
  ASSERT_TRUE(store_->Delete("a/b").ok());
  EXPECT_EQ(Get(*store_, "a"), "third a");
  r = store_->List({});
  ASSERT_OK(r);
  keys.clear();
  for (const auto& info : r->objects) keys.push_back(info.key);
  EXPECT_EQ(keys, (Strings{"a", "d"}));
}

TEST_P(ObjectStoreConformance, DirectoryMarkersAreObjects) {
  ASSERT_OK(store_->Put("dir/", Buffer()));
  auto head = store_->Head("dir/");
  ASSERT_OK(head);
  EXPECT_EQ(head->size, 0u);
  EXPECT_EQ(store_->Head("dir").status().code(), Code::kNotFound);
  ASSERT_OK(store_->Put("dir/x", Buffer::Copy("x")));
  object::ListOptions o;
  o.prefix = "dir/";
  o.delimiter = "/";
  auto r = store_->List(o);
  ASSERT_OK(r);
  Strings keys;
  for (const auto& info : r->objects) keys.push_back(info.key);
  EXPECT_EQ(keys, (Strings{"dir/", "dir/x"}));
  EXPECT_TRUE(r->common_prefixes.empty());
  o.prefix = "";
  r = store_->List(o);
  ASSERT_OK(r);
  EXPECT_TRUE(r->objects.empty());
  EXPECT_EQ(r->common_prefixes, Strings{"dir/"});
  // Deleting what is in it keeps the marker; deleting the marker keeps nothing.
  ASSERT_TRUE(store_->Delete("dir/x").ok());
  EXPECT_TRUE(store_->Head("dir/").ok());
  ASSERT_TRUE(store_->Delete("dir/").ok());
  EXPECT_EQ(store_->Head("dir/").status().code(), Code::kNotFound);
  r = store_->List({});
  ASSERT_OK(r);
  EXPECT_TRUE(r->objects.empty());
}

TEST_P(ObjectStoreConformance, OddKeysRoundTripAndListAsS3Does) {
  if (!GetParam().keeps_odd_keys) GTEST_SKIP() << "the server behind this store cannot keep every valid key";
  const Strings keys = OddKeys();
  for (const auto& k : keys) {
    auto put = store_->Put(k, Buffer::Copy("v:" + k));
    ASSERT_TRUE(put.ok()) << "Put '" << k << "': " << put.status();
  }
  for (const auto& k : keys) {
    EXPECT_EQ(Get(*store_, k), "v:" + k) << k;
    auto head = store_->Head(k);
    ASSERT_OK(head);
    EXPECT_EQ(head->size, k.size() + 2) << k;
  }
  struct Case {
    std::string prefix, delimiter, start_after;
  };
  const std::vector<Case> cases = {
      {"", "", ""},      {"", "/", ""},    {"a", "/", ""}, {"a/", "/", ""},    {"a//", "/", ""}, {"dir/", "/", ""},
      {"/", "/", ""},    {"x/", "/", ""},  {"k/", "", ""}, {"long/", "/", ""}, {"", "/", "a/"},  {"", "", "a/b"},
      {"", "/", "dir/"}, {"a", "", "a-b"}, {"", "/", "."}, {".", "/", ""},     {"", "b", ""},    {"unicodé/", "/", ""}};
  for (const auto& c : cases) {
    const Expected want = ReferenceList(keys, c.prefix, c.delimiter, c.start_after);
    for (int max_keys : {1000, 1, 3}) {
      object::ListOptions o;
      o.prefix = c.prefix;
      o.delimiter = c.delimiter;
      o.start_after = c.start_after;
      o.max_keys = max_keys;
      if (max_keys < 1000 && !c.delimiter.empty() && !GetParam().max_keys_counts_prefixes) continue;
      Expected got;
      ListAll(*store_, o, &got);
      EXPECT_EQ(got.keys, want.keys) << "prefix '" << c.prefix << "' delimiter '" << c.delimiter << "' after '"
                                     << c.start_after << "' max " << max_keys;
      EXPECT_EQ(got.prefixes, want.prefixes) << "prefix '" << c.prefix << "' delimiter '" << c.delimiter << "' after '"
                                             << c.start_after << "' max " << max_keys;
    }
  }
  // Copies and multipart uploads reach them too.
  ASSERT_OK(store_->Copy("a//b", "copied//"));
  EXPECT_EQ(Get(*store_, "copied//"), "v:a//b");
  ASSERT_OK(store_->Copy("a", "a/b/c/d"));  // "a/b/c" becomes a prefix as well as an object
  EXPECT_EQ(Get(*store_, "a/b/c"), "v:a/b/c");
  EXPECT_EQ(Get(*store_, "a/b/c/d"), "v:a");
  for (const std::string k : {"x/../y", "mp//"}) {
    auto id = store_->CreateMultipartUpload(k);
    ASSERT_OK(id);
    auto etag = store_->UploadPart(k, *id, 1, Buffer::Copy("part of " + k));
    ASSERT_OK(etag);
    ASSERT_OK(store_->CompleteMultipartUpload(k, *id, {{1, *etag}}));
    EXPECT_EQ(Get(*store_, k), "part of " + k);
  }
  // Deleting every key empties the store, in any order.
  Strings all = keys;
  all.insert(all.end(), {"copied//", "a/b/c/d", "mp//"});
  std::reverse(all.begin() + 5, all.end());
  for (const auto& k : all) {
    ASSERT_TRUE(store_->Delete(k).ok()) << k;
    EXPECT_EQ(store_->Head(k).status().code(), Code::kNotFound) << k;
  }
  auto r = store_->List({});
  ASSERT_OK(r);
  EXPECT_TRUE(r->objects.empty()) << r->objects.front().key;
}

}  // namespace strata::testing

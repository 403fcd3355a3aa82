#include "testing/conformance.h"

#include <algorithm>
#include <cstring>
#include <mutex>
#include <random>
#include <set>

#include "base/hash.h"

namespace strata::testing {

int ConformanceMetadataAnchor();  // conformance_metadata.cc
int ConformanceKeysAnchor();      // conformance_keys.cc
int ConformanceSuiteAnchor() { return ConformanceMetadataAnchor() + ConformanceKeysAnchor(); }

void ObjectStoreConformance::SetUp() {
  store_ = GetParam().make();
  ASSERT_NE(store_, nullptr);
}

std::string ConformanceCaseName(const ::testing::TestParamInfo<ConformanceCase>& info) { return info.param.name; }

namespace {

std::string RandomBytes(size_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::string s(n, '\0');
  for (auto& c : s) c = static_cast<char>(gen());
  return s;
}

std::string Md5Hex(std::string_view s) { return ToHex(Md5(s)); }

#define ASSERT_OK(expr)                                   \
  do {                                                    \
    auto _s = (expr);                                     \
    ASSERT_TRUE(_s.ok()) << #expr << ": " << _s.status(); \
  } while (0)

Status StatusOf(const Status& s) { return s; }
template <typename T>
Status StatusOf(const Result<T>& r) {
  return r.status();
}
#define EXPECT_CODE(expr, want)                                                \
  do {                                                                         \
    auto _r = (expr);                                                          \
    EXPECT_EQ(StatusOf(_r).code(), want) << #expr << " gave " << StatusOf(_r); \
  } while (0)

class PutHelper {
 public:
  explicit PutHelper(object::ObjectStore& s) : s_(s) {}
  object::ObjectInfo operator()(const std::string& key, const std::string& data) {
    auto r = s_.Put(key, Buffer::Copy(data));
    EXPECT_TRUE(r.ok()) << "Put " << key << ": " << r.status();
    return r.ok() ? *r : object::ObjectInfo{};
  }

 private:
  object::ObjectStore& s_;
};

std::string GetString(object::ObjectStore& s, const std::string& key, const object::GetOptions& o = {}) {
  auto r = s.Get(key, o);
  EXPECT_TRUE(r.ok()) << "Get " << key << ": " << r.status();
  return r.ok() ? r->data.ToString() : std::string("<error>");
}

std::vector<std::string> Keys(const object::ListResult& r) {
  std::vector<std::string> keys;
  for (const auto& o : r.objects) keys.push_back(o.key);
  return keys;
}

using Strings = std::vector<std::string>;

}  // namespace

TEST_P(ObjectStoreConformance, MissingKeyIsNotFound) {
  EXPECT_CODE(store_->Get("no/such/key"), Code::kNotFound);
  EXPECT_CODE(store_->Head("no/such/key"), Code::kNotFound);
  EXPECT_CODE(store_->Copy("no/such/key", "dst"), Code::kNotFound);
}

TEST_P(ObjectStoreConformance, PutGetHeadRoundTrip) {
  PutHelper put(*store_);
  object::ObjectInfo info = put("dir/hello.txt", "hello, world");
  EXPECT_EQ(info.size, 12u);
  if (GetParam().etag_is_md5) {
    EXPECT_EQ(info.etag, Md5Hex("hello, world"));
  }
  auto got = store_->Get("dir/hello.txt");
  ASSERT_OK(got);
  EXPECT_EQ(got->data.ToString(), "hello, world");
  EXPECT_EQ(got->offset, 0u);
  EXPECT_EQ(got->info.size, 12u);
  EXPECT_EQ(got->info.etag, info.etag);
  auto head = store_->Head("dir/hello.txt");
  ASSERT_OK(head);
  EXPECT_EQ(head->key, "dir/hello.txt");
  EXPECT_EQ(head->size, 12u);
  EXPECT_EQ(head->etag, info.etag);
  EXPECT_GT(head->mtime.time_since_epoch().count(), 0);
}

TEST_P(ObjectStoreConformance, RangesAreExactAndClamped) {
  PutHelper put(*store_);
  put("r", "0123456789");
  auto get = [&](object::ByteRange range) {
    object::GetOptions o;
    o.range = range;
    return store_->Get("r", o);
  };
  auto mid = get(object::ByteRange::Of(2, 3));
  ASSERT_OK(mid);
  EXPECT_EQ(mid->data.ToString(), "234");
  EXPECT_EQ(mid->offset, 2u);
  EXPECT_EQ(mid->info.size, 10u);  // the whole object's size
  auto from = get(object::ByteRange::From(7));
  ASSERT_OK(from);
  EXPECT_EQ(from->data.ToString(), "789");
  auto clamped = get(object::ByteRange::Of(8, 100));
  ASSERT_OK(clamped);
  EXPECT_EQ(clamped->data.ToString(), "89");
  auto last_byte = get(object::ByteRange::Of(9, 1));
  ASSERT_OK(last_byte);
  EXPECT_EQ(last_byte->data.ToString(), "9");
  EXPECT_CODE(get(object::ByteRange::Of(10, 1)), Code::kOutOfRange);
  EXPECT_CODE(get(object::ByteRange::From(11)), Code::kOutOfRange);
}

TEST_P(ObjectStoreConformance, SuffixRanges) {
  if (!GetParam().supports_suffix_range) GTEST_SKIP() << "backend mishandles bytes=-N";
  PutHelper put(*store_);
  put("r", "0123456789");
  object::GetOptions o;
  o.range = object::ByteRange::Last(4);
  auto last = store_->Get("r", o);
  ASSERT_OK(last);
  EXPECT_EQ(last->data.ToString(), "6789");
  EXPECT_EQ(last->offset, 6u);
  o.range = object::ByteRange::Last(100);  // longer than the object: all of it
  auto all = store_->Get("r", o);
  ASSERT_OK(all);
  EXPECT_EQ(all->data.ToString(), "0123456789");
  EXPECT_EQ(all->offset, 0u);
}

TEST_P(ObjectStoreConformance, EmptyObject) {
  PutHelper put(*store_);
  object::ObjectInfo info = put("empty", "");
  EXPECT_EQ(info.size, 0u);
  if (GetParam().etag_is_md5) {
    EXPECT_EQ(info.etag, Md5Hex(""));
  }
  EXPECT_EQ(GetString(*store_, "empty"), "");
  auto head = store_->Head("empty");
  ASSERT_OK(head);
  EXPECT_EQ(head->size, 0u);
  auto list = store_->List({});
  ASSERT_OK(list);
  EXPECT_EQ(Keys(*list), Strings{"empty"});
}

TEST_P(ObjectStoreConformance, OverwriteReplacesContentAndEtag) {
  PutHelper put(*store_);
  object::ObjectInfo a = put("k", "first version");
  object::ObjectInfo b = put("k", "second, longer version");
  EXPECT_NE(a.etag, b.etag);
  EXPECT_EQ(GetString(*store_, "k"), "second, longer version");
  auto head = store_->Head("k");
  ASSERT_OK(head);
  EXPECT_EQ(head->etag, b.etag);
  EXPECT_EQ(head->size, 22u);
}

TEST_P(ObjectStoreConformance, GetConditions) {
  if (!GetParam().supports_if_match) GTEST_SKIP() << "backend ignores If-Match";
  PutHelper put(*store_);
  object::ObjectInfo info = put("c", "conditional");
  object::GetOptions o;
  o.if_match = info.etag;
  EXPECT_EQ(GetString(*store_, "c", o), "conditional");
  o.if_match = "\"" + info.etag + "\"";  // quoted, as on the wire
  EXPECT_EQ(GetString(*store_, "c", o), "conditional");
  o.if_match = Md5Hex("something else");
  EXPECT_CODE(store_->Get("c", o), Code::kPreconditionFailed);
  o = {};
  o.if_none_match = info.etag;
  EXPECT_CODE(store_->Get("c", o), Code::kNotModified);
  o.if_none_match = Md5Hex("something else");
  EXPECT_EQ(GetString(*store_, "c", o), "conditional");
}

TEST_P(ObjectStoreConformance, PutConditions) {
  if (!GetParam().supports_conditional_put) GTEST_SKIP() << "backend has no conditional PUT";
  object::PutOptions create_only;
  create_only.if_none_match = true;
  auto first = store_->Put("p", Buffer::Copy("one"), create_only);
  ASSERT_OK(first);
  EXPECT_CODE(store_->Put("p", Buffer::Copy("two"), create_only), Code::kPreconditionFailed);
  EXPECT_EQ(GetString(*store_, "p"), "one");
  object::PutOptions swap;
  swap.if_match = Md5Hex("not the etag");
  EXPECT_CODE(store_->Put("p", Buffer::Copy("three"), swap), Code::kPreconditionFailed);
  swap.if_match = first->etag;
  ASSERT_OK(store_->Put("p", Buffer::Copy("four"), swap));
  EXPECT_EQ(GetString(*store_, "p"), "four");
}

TEST_P(ObjectStoreConformance, ListPrefixAndDelimiter) {
  PutHelper put(*store_);
  for (const char* k : {"a/1", "a/2", "a/b/3", "a/b/4", "ab", "b", "c/d/5"}) put(k, k);
  object::ListOptions o;
  o.prefix = "a/";
  o.delimiter = "/";
  auto r = store_->List(o);
  ASSERT_OK(r);
  EXPECT_EQ(Keys(*r), (Strings{"a/1", "a/2"}));
  EXPECT_EQ(r->common_prefixes, Strings{"a/b/"});
  EXPECT_FALSE(r->truncated);
  o.prefix = "";
  r = store_->List(o);
  ASSERT_OK(r);
  EXPECT_EQ(Keys(*r), (Strings{"ab", "b"}));
  EXPECT_EQ(r->common_prefixes, (Strings{"a/", "c/"}));
  o = {};
  o.prefix = "a";
  r = store_->List(o);
  ASSERT_OK(r);
  EXPECT_EQ(Keys(*r), (Strings{"a/1", "a/2", "a/b/3", "a/b/4", "ab"}));
  EXPECT_TRUE(r->common_prefixes.empty());
  o.prefix = "zzz";
  r = store_->List(o);
  ASSERT_OK(r);
  EXPECT_TRUE(r->objects.empty());
  EXPECT_FALSE(r->truncated);
  // Sizes and ETags come with listed objects.
  o = {};
  o.prefix = "b";
  r = store_->List(o);
  ASSERT_OK(r);
  ASSERT_EQ(r->objects.size(), 1u);
  EXPECT_EQ(r->objects[0].size, 1u);
  EXPECT_EQ(r->objects[0].etag, store_->Head("b")->etag);
}

TEST_P(ObjectStoreConformance, ListIsInByteOrder) {
  // '-' < '.' < '/' < '0': a file store walking directories must still interleave these.
  PutHelper put(*store_);
  for (const char* k : {"a0", "a/b", "a.b", "a-b", "a/a", "B"}) put(k, "x");
  // "a" and "a/..." cannot coexist in a file store, which says so with NotSupported.
  auto a = store_->Put("a", Buffer::Copy("x"));
  if (!a.ok()) {
    EXPECT_EQ(a.status().code(), Code::kNotSupported) << a.status();
  }
  auto r = store_->List({});
  ASSERT_OK(r);
  Strings want = {"B", "a", "a-b", "a.b", "a/a", "a/b", "a0"};
  if (!a.ok()) want.erase(want.begin() + 1);
  EXPECT_EQ(Keys(*r), want);
}

TEST_P(ObjectStoreConformance, StartAfter) {
  PutHelper put(*store_);
  for (const char* k : {"k1", "k2", "k3", "k4"}) put(k, k);
  object::ListOptions o;
  o.start_after = "k2";
  auto r = store_->List(o);
  ASSERT_OK(r);
  EXPECT_EQ(Keys(*r), (Strings{"k3", "k4"}));
  o.start_after = "k25";
  r = store_->List(o);
  ASSERT_OK(r);
  EXPECT_EQ(Keys(*r), (Strings{"k3", "k4"}));
  o.start_after = "k4";
  r = store_->List(o);
  ASSERT_OK(r);
  EXPECT_TRUE(r->objects.empty());
}

TEST_P(ObjectStoreConformance, PaginationVisitsEveryKeyOnce) {
  PutHelper put(*store_);
  Strings all = {"p/1", "p/2", "p/3", "p/4", "p/5", "p/6", "p/7"};
  for (const auto& k : all) put(k, k);
  object::ListOptions o;
  o.prefix = "p/";
  o.max_keys = 2;
  Strings seen;
  int pages = 0;
  for (;;) {
    auto r = store_->List(o);
    ASSERT_OK(r);
    ++pages;
    ASSERT_LE(r->objects.size(), 2u);
    for (const auto& info : r->objects) seen.push_back(info.key);
    EXPECT_EQ(r->truncated, !r->next_continuation_token.empty());
    if (!r->truncated) break;
    ASSERT_LT(pages, 10);
    o.continuation_token = r->next_continuation_token;
  }
  EXPECT_EQ(seen, all);
  EXPECT_EQ(pages, 4);
}

TEST_P(ObjectStoreConformance, PaginationWithCommonPrefixes) {
  if (!GetParam().max_keys_counts_prefixes) GTEST_SKIP() << "backend pages wrongly with a delimiter";
  PutHelper put(*store_);
  for (const char* k : {"a/1", "a/2", "b", "c/1", "d", "e/1", "e/2", "f"}) put(k, k);
  object::ListOptions o;
  o.delimiter = "/";
  o.max_keys = 2;
  Strings keys, prefixes;
  for (int pages = 0; pages < 10; ++pages) {
    auto r = store_->List(o);
    ASSERT_OK(r);
    EXPECT_LE(r->objects.size() + r->common_prefixes.size(), 2u);
    for (const auto& info : r->objects) keys.push_back(info.key);
    for (const auto& cp : r->common_prefixes) prefixes.push_back(cp);
    if (!r->truncated) break;
    o.continuation_token = r->next_continuation_token;
  }
  EXPECT_EQ(keys, (Strings{"b", "d", "f"}));
  EXPECT_EQ(prefixes, (Strings{"a/", "c/", "e/"}));
}

TEST_P(ObjectStoreConformance, BadListArguments) {
  if (!GetParam().rejects_bad_token) GTEST_SKIP() << "backend accepts foreign continuation tokens";
  object::ListOptions o;
  o.continuation_token = "definitely-not-a-token";
  EXPECT_CODE(store_->List(o), Code::kInvalidArgument);
}

TEST_P(ObjectStoreConformance, DeleteIsIdempotent) {
  PutHelper put(*store_);
  EXPECT_TRUE(store_->Delete("never/existed").ok());
  put("d/x", "x");
  ASSERT_TRUE(store_->Delete("d/x").ok());
  EXPECT_CODE(store_->Head("d/x"), Code::kNotFound);
  EXPECT_CODE(store_->Get("d/x"), Code::kNotFound);
  EXPECT_TRUE(store_->Delete("d/x").ok());
  auto r = store_->List({});
  ASSERT_OK(r);
  EXPECT_TRUE(r->objects.empty());
  // A deleted prefix does not block a key of the same name.
  put("d", "now a plain key");
  EXPECT_EQ(GetString(*store_, "d"), "now a plain key");
}

TEST_P(ObjectStoreConformance, MultipartComplete) {
  const uint64_t min = store_->MinPartSize();
  std::string p1 = RandomBytes(min, 1), p2 = RandomBytes(1234, 2);
  auto id = store_->CreateMultipartUpload("mp/obj");
  ASSERT_OK(id);
  EXPECT_CODE(store_->Head("mp/obj"), Code::kNotFound);              // invisible until Complete
  auto e2 = store_->UploadPart("mp/obj", *id, 2, Buffer::Copy(p2));  // any order
  ASSERT_OK(e2);
  auto e1 = store_->UploadPart("mp/obj", *id, 1, Buffer::Copy(p1));
  ASSERT_OK(e1);
  auto info = store_->CompleteMultipartUpload("mp/obj", *id, {{1, *e1}, {2, *e2}});
  ASSERT_OK(info);
  auto head = store_->Head("mp/obj");
  ASSERT_OK(head);
  EXPECT_EQ(head->size, p1.size() + p2.size());
  EXPECT_EQ(head->etag, object::MultipartEtag({Md5Hex(p1), Md5Hex(p2)}));
  EXPECT_TRUE(head->etag.size() > 2 && head->etag.substr(head->etag.size() - 2) == "-2") << head->etag;
  auto got = store_->Get("mp/obj");
  ASSERT_OK(got);
  EXPECT_TRUE(got->data.view() == p1 + p2);
  // The upload is gone once completed.
  EXPECT_CODE(store_->UploadPart("mp/obj", *id, 3, Buffer::Copy("x")), Code::kNotFound);
}

// A Complete sent again after it succeeded (an SDK retrying a lost answer)
// answers the object that completion made, as S3 does, even after the key
// was overwritten (which the retry must not undo); other parts: NotFound.
TEST_P(ObjectStoreConformance, MultipartCompleteSentAgain) {
  const uint64_t min = store_->MinPartSize();
  std::string p1 = RandomBytes(min, 3), p2 = "the tail";
  auto id = store_->CreateMultipartUpload("mp/again");
  ASSERT_OK(id);
  auto e1 = store_->UploadPart("mp/again", *id, 1, Buffer::Copy(p1));
  auto e2 = store_->UploadPart("mp/again", *id, 2, Buffer::Copy(p2));
  ASSERT_OK(e1);
  ASSERT_OK(e2);
  const std::vector<object::CompletedPart> parts{{1, *e1}, {2, *e2}};
  auto pending = store_->FindCompletedUpload("mp/again", *id, parts);
  ASSERT_OK(pending);
  EXPECT_FALSE(pending->has_value()) << "an upload in progress has not completed";
  auto first = store_->CompleteMultipartUpload("mp/again", *id, parts);
  ASSERT_OK(first);
  ASSERT_OK(store_->Put("mp/again", Buffer::Copy("a newer write")));
  auto again = store_->CompleteMultipartUpload("mp/again", *id, {{1, "\"" + *e1 + "\""}, {2, *e2}});
  ASSERT_OK(again);
  EXPECT_EQ(again->etag, first->etag);
  EXPECT_EQ(again->size, p1.size() + p2.size());
  EXPECT_EQ(again->key, "mp/again");
  auto found = store_->FindCompletedUpload("mp/again", *id, parts);
  ASSERT_OK(found);
  ASSERT_TRUE(found->has_value());
  EXPECT_EQ((*found)->etag, first->etag);
  EXPECT_EQ(GetString(*store_, "mp/again"), "a newer write");  // the retry changed nothing
  EXPECT_CODE(store_->CompleteMultipartUpload("mp/again", *id, {{1, *e1}}), Code::kNotFound);
  EXPECT_CODE(store_->FindCompletedUpload("mp/other", *id, parts), Code::kNotFound);
  auto unknown = store_->FindCompletedUpload("mp/again", "no-such-upload", parts);
  ASSERT_OK(unknown);
  EXPECT_FALSE(unknown->has_value());
}

TEST_P(ObjectStoreConformance, MultipartAbort) {
  auto id = store_->CreateMultipartUpload("mp/aborted");
  ASSERT_OK(id);
  auto e1 = store_->UploadPart("mp/aborted", *id, 1, Buffer::Copy("part one"));
  ASSERT_OK(e1);
  ASSERT_TRUE(store_->AbortMultipartUpload("mp/aborted", *id).ok());
  EXPECT_CODE(store_->Head("mp/aborted"), Code::kNotFound);
  if (!GetParam().supports_abort) return;
  EXPECT_CODE(store_->UploadPart("mp/aborted", *id, 2, Buffer::Copy("late")), Code::kNotFound);
  EXPECT_CODE(store_->CompleteMultipartUpload("mp/aborted", *id, {{1, *e1}}), Code::kNotFound);
}

TEST_P(ObjectStoreConformance, MultipartUnknownUpload) {
  if (!GetParam().supports_abort) GTEST_SKIP() << "backend does not track upload ids";
  EXPECT_CODE(store_->UploadPart("k", "no-such-upload", 1, Buffer::Copy("x")), Code::kNotFound);
  EXPECT_CODE(store_->CompleteMultipartUpload("k", "no-such-upload", {{1, Md5Hex("x")}}), Code::kNotFound);
  EXPECT_CODE(store_->AbortMultipartUpload("k", "no-such-upload"), Code::kNotFound);
}

TEST_P(ObjectStoreConformance, ListParts) {
  if (!GetParam().supports_list_parts) GTEST_SKIP() << "backend has no ListParts";
  auto id = store_->CreateMultipartUpload("mp/parts");
  ASSERT_OK(id);
  auto e1 = store_->UploadPart("mp/parts", *id, 1, Buffer::Copy("first"));
  auto e3 = store_->UploadPart("mp/parts", *id, 3, Buffer::Copy("third part"));
  ASSERT_OK(e1);
  ASSERT_OK(e3);
  EXPECT_EQ(*e1, Md5Hex("first"));
  // Re-uploading a part number replaces it.
  auto e1b = store_->UploadPart("mp/parts", *id, 1, Buffer::Copy("first, again"));
  ASSERT_OK(e1b);
  auto parts = store_->ListParts("mp/parts", *id);
  ASSERT_OK(parts);
  ASSERT_EQ(parts->size(), 2u);
  EXPECT_EQ((*parts)[0].part_number, 1);
  EXPECT_EQ((*parts)[0].size, 12u);
  EXPECT_EQ((*parts)[0].etag, *e1b);
  EXPECT_EQ((*parts)[1].part_number, 3);
  EXPECT_EQ((*parts)[1].size, 10u);
  EXPECT_EQ((*parts)[1].etag, *e3);
  EXPECT_TRUE(store_->AbortMultipartUpload("mp/parts", *id).ok());
}

TEST_P(ObjectStoreConformance, ListMultipartUploads) {
  if (!GetParam().supports_list_uploads) GTEST_SKIP() << "backend cannot list uploads";
  auto none = store_->ListMultipartUploads("");
  ASSERT_OK(none);
  EXPECT_TRUE(none->empty());
  auto b = store_->CreateMultipartUpload("up/b");
  auto a1 = store_->CreateMultipartUpload("up/a");
  auto a2 = store_->CreateMultipartUpload("up/a");
  auto other = store_->CreateMultipartUpload("other");
  ASSERT_OK(b);
  ASSERT_OK(a1);
  ASSERT_OK(a2);
  ASSERT_OK(other);
  auto listed = store_->ListMultipartUploads("up/");
  ASSERT_OK(listed);
  ASSERT_EQ(listed->size(), 3u);
  EXPECT_EQ((*listed)[0].key, "up/a");
  EXPECT_EQ((*listed)[1].key, "up/a");
  EXPECT_EQ((*listed)[2].key, "up/b");
  EXPECT_EQ((*listed)[2].upload_id, *b);
  std::set<std::string> a_ids{(*listed)[0].upload_id, (*listed)[1].upload_id};
  EXPECT_EQ(a_ids, (std::set<std::string>{*a1, *a2}));
  // Finished and aborted uploads are no longer listed.
  auto part = store_->UploadPart("up/b", *b, 1, Buffer::Copy("b"));
  ASSERT_OK(part);
  ASSERT_OK(store_->CompleteMultipartUpload("up/b", *b, {{1, *part}}));
  ASSERT_TRUE(store_->AbortMultipartUpload("up/a", *a1).ok());
  auto after = store_->ListMultipartUploads("");
  ASSERT_OK(after);
  std::vector<std::pair<std::string, std::string>> left;
  for (const auto& u : *after) left.push_back({u.key, u.upload_id});
  EXPECT_EQ(left, (std::vector<std::pair<std::string, std::string>>{{"other", *other}, {"up/a", *a2}}));
  EXPECT_TRUE(store_->AbortMultipartUpload("up/a", *a2).ok());
  EXPECT_TRUE(store_->AbortMultipartUpload("other", *other).ok());
}

TEST_P(ObjectStoreConformance, MultipartRejectsTooSmallAndWrongParts) {
  auto id = store_->CreateMultipartUpload("mp/small");
  ASSERT_OK(id);
  auto e1 = store_->UploadPart("mp/small", *id, 1, Buffer::Copy("tiny"));
  auto e2 = store_->UploadPart("mp/small", *id, 2, Buffer::Copy("last"));
  ASSERT_OK(e1);
  ASSERT_OK(e2);
  EXPECT_CODE(store_->CompleteMultipartUpload("mp/small", *id, {{1, Md5Hex("wrong")}}), Code::kInvalidArgument);
  if (GetParam().strict_min_part_size) {
    EXPECT_CODE(store_->CompleteMultipartUpload("mp/small", *id, {{1, *e1}, {2, *e2}}), Code::kInvalidArgument);
    EXPECT_CODE(store_->Head("mp/small"), Code::kNotFound);
  }
  // A single small part is fine: only non-last parts have a minimum.
  auto info = store_->CompleteMultipartUpload("mp/small", *id, {{1, *e1}});
  ASSERT_OK(info);
  EXPECT_EQ(GetString(*store_, "mp/small"), "tiny");
}

TEST_P(ObjectStoreConformance, Copy) {
  PutHelper put(*store_);
  object::ObjectInfo src = put("copy/src", "copied bytes");
  auto dst = store_->Copy("copy/src", "copy/dst");
  ASSERT_OK(dst);
  EXPECT_EQ(dst->size, 12u);
  EXPECT_EQ(GetString(*store_, "copy/dst"), "copied bytes");
  if (GetParam().etag_is_md5) {
    EXPECT_EQ(store_->Head("copy/dst")->etag, src.etag);
  }
  put("copy/src", "changed");  // the copy is independent of its source
  EXPECT_EQ(GetString(*store_, "copy/dst"), "copied bytes");
}

TEST_P(ObjectStoreConformance, SpecialCharacterKeysRoundTrip) {
  PutHelper put(*store_);
  Strings keys = {"with space",        "plus+sign",       "percent%20literal", "eq=sign&amp",
                  "unicodé/ключ/日本", "tilde~and'quote", "semi;colon,comma",  "star*(paren)"};
  for (const auto& k : keys) put(k, "v:" + k);
  for (const auto& k : keys) EXPECT_EQ(GetString(*store_, k), "v:" + k) << k;
  auto r = store_->List({});
  ASSERT_OK(r);
  Strings sorted = keys;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(Keys(*r), sorted);
  object::ListOptions o;
  o.prefix = "unicodé/";
  o.delimiter = "/";
  r = store_->List(o);
  ASSERT_OK(r);
  EXPECT_EQ(r->common_prefixes, Strings{"unicodé/ключ/"});
}

TEST_P(ObjectStoreConformance, EmptyKeyIsInvalid) {
  EXPECT_CODE(store_->Put("", Buffer::Copy("x")), Code::kInvalidArgument);
}

// What Capabilities() declares holds, and the case's flags claim no more.
TEST_P(ObjectStoreConformance, DeclaredCapabilitiesHold) {
  const object::StoreCapabilities caps = store_->Capabilities();
  EXPECT_EQ(store_->MinPartSize(), caps.min_part_size);
  EXPECT_LE(caps.min_part_size, caps.max_part_size);
  EXPECT_GT(caps.read_part_size, 0u);
  if (GetParam().supports_conditional_put) {
    EXPECT_TRUE(caps.conditional_put) << "the case expects conditional PUT the store does not declare";
  }
  auto marker = store_->Put("dir/", Buffer());
  if (caps.directory_markers) {
    ASSERT_OK(marker);
    EXPECT_EQ(GetString(*store_, "dir/"), "");
    EXPECT_TRUE(store_->Delete("dir/").ok());
  } else {
    EXPECT_CODE(marker, Code::kInvalidArgument);
  }
}

// Streamed or not, ReadRangeTo hands over exactly the range, pinned to the ETag.
TEST_P(ObjectStoreConformance, ReadRangeToDeliversTheRange) {
  const std::string data = RandomBytes(100'000, 11);
  auto info = store_->Put("range/obj", Buffer::Copy(data));
  ASSERT_OK(info);
  const uint64_t offset = 12'345, length = 54'321;
  std::string got(length, '\0');
  std::mutex mu;
  Status st = store_->ReadRangeTo("range/obj", info->etag, offset, length,
                                  [&](uint64_t at, const uint8_t* p, size_t n) -> Status {
                                    if (at < offset || at - offset > length || n > length - (at - offset)) {
                                      return CorruptionError("bytes outside the range");
                                    }
                                    std::lock_guard lock(mu);
                                    std::memcpy(got.data() + (at - offset), p, n);
                                    return Status::Ok();
                                  });
  ASSERT_TRUE(st.ok()) << st;
  EXPECT_TRUE(got == std::string_view(data).substr(offset, length));
  auto none = [](uint64_t, const uint8_t*, size_t) { return Status::Ok(); };
  EXPECT_CODE(store_->ReadRangeTo("range/missing", "", 0, 1, none), Code::kNotFound);
  if (GetParam().supports_if_match) {
    EXPECT_CODE(store_->ReadRangeTo("range/obj", Md5Hex("another version"), 0, 10, none), Code::kPreconditionFailed);
  }
}

TEST_P(ObjectStoreConformance, LargeObjectIsByteExact) {
  const std::string data = RandomBytes(8u << 20, 42);
  auto info = store_->Put("large/blob", Buffer::Copy(data));
  ASSERT_OK(info);
  EXPECT_EQ(info->size, data.size());
  auto got = store_->Get("large/blob");
  ASSERT_OK(got);
  ASSERT_EQ(got->data.size(), data.size());
  EXPECT_TRUE(got->data.view() == data);
  object::GetOptions o;
  o.range = object::ByteRange::Of((4u << 20) - 7, 1u << 20);
  auto mid = store_->Get("large/blob", o);
  ASSERT_OK(mid);
  EXPECT_TRUE(mid->data.view() == std::string_view(data).substr((4u << 20) - 7, 1u << 20));
}

}  // namespace strata::testing

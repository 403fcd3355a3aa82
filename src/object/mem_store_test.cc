#include "object/mem_store.h"

#include <gtest/gtest.h>

#include <thread>

#include "base/hash.h"

namespace strata::object {
namespace {

// CompleteMultipartUpload's own conditions are checked under the bucket's
// lock with the commit; a failed one leaves the upload in place.
TEST(MemStore, CompleteConditionsAreCheckedWithTheCommit) {
  auto store = MakeMemStore("", MemStoreOptions{.min_part_size = 1});
  auto id = store->CreateMultipartUpload("c");
  ASSERT_TRUE(id.ok()) << id.status();
  auto e = store->UploadPart("c", *id, 1, Buffer::Copy("part"));
  ASSERT_TRUE(e.ok()) << e.status();
  CompleteOptions o;
  o.if_match = ToHex(Md5("old"));  // no object yet
  EXPECT_EQ(store->CompleteMultipartUpload("c", *id, {{1, *e}}, o).status().code(), Code::kPreconditionFailed);
  ASSERT_TRUE(store->Put("c", Buffer::Copy("old")).ok());
  o = {};
  o.if_none_match = true;
  EXPECT_EQ(store->CompleteMultipartUpload("c", *id, {{1, *e}}, o).status().code(), Code::kPreconditionFailed);
  EXPECT_EQ(store->Get("c")->data.ToString(), "old");
  o = {};
  o.if_match = ToHex(Md5("old"));  // the upload stayed: it can still complete
  auto done = store->CompleteMultipartUpload("c", *id, {{1, *e}}, o);
  ASSERT_TRUE(done.ok()) << done.status();
  EXPECT_EQ(store->Get("c")->data.ToString(), "part");
}

TEST(MemStore, NamedStoresShareDataAcrossHandles) {
  DropMemStore("mem-test-shared");
  auto a = MakeMemStore("mem-test-shared");
  auto b = MakeMemStore("mem-test-shared");
  ASSERT_TRUE(a->Put("k", Buffer::Copy("v")).ok());
  auto got = b->Get("k");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->data.ToString(), "v");
  EXPECT_EQ(a->Url(), "mem://mem-test-shared");
  EXPECT_TRUE(DropMemStore("mem-test-shared"));
  EXPECT_EQ(MakeMemStore("mem-test-shared")->Head("k").status().code(), Code::kNotFound);
  DropMemStore("mem-test-shared");
}

TEST(MemStore, AnonymousStoresArePrivateButReopenableByUrl) {
  auto a = MakeMemStore();
  auto b = MakeMemStore();
  ASSERT_TRUE(a->Put("k", Buffer::Copy("v")).ok());
  EXPECT_EQ(b->Head("k").status().code(), Code::kNotFound);
  EXPECT_NE(a->Url(), b->Url());
  std::string name = a->Url().substr(6);
  auto again = MakeMemStore(name);
  EXPECT_TRUE(again->Head("k").ok());
}

TEST(MemStore, MtimeComesFromTheClock) {
  FakeClock clock;
  auto store = MakeMemStore("", MemStoreOptions{.clock = &clock});
  auto first = store->Put("k", Buffer::Copy("1"));
  ASSERT_TRUE(first.ok());
  clock.Advance(std::chrono::seconds(10));
  auto second = store->Put("k", Buffer::Copy("2"));
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(second->mtime - first->mtime, std::chrono::seconds(10));
  EXPECT_EQ(store->Head("k")->mtime, second->mtime);
}

TEST(MemStore, DateConditions) {
  FakeClock clock;
  auto store = MakeMemStore("", MemStoreOptions{.clock = &clock});
  auto info = store->Put("k", Buffer::Copy("v"));
  ASSERT_TRUE(info.ok());
  GetOptions o;
  o.if_modified_since = info->mtime;
  EXPECT_EQ(store->Get("k", o).status().code(), Code::kNotModified);
  o.if_modified_since = info->mtime - std::chrono::seconds(1);
  EXPECT_TRUE(store->Get("k", o).ok());
  o = {};
  o.if_unmodified_since = info->mtime - std::chrono::seconds(1);
  EXPECT_EQ(store->Get("k", o).status().code(), Code::kPreconditionFailed);
  o.if_unmodified_since = info->mtime;
  EXPECT_TRUE(store->Get("k", o).ok());
  // If-Match wins over If-Unmodified-Since (RFC 7232 section 6).
  o.if_match = info->etag;
  o.if_unmodified_since = info->mtime - std::chrono::seconds(1);
  EXPECT_TRUE(store->Get("k", o).ok());
}

TEST(MemStore, GetSharesBytesWithoutCopying) {
  auto store = MakeMemStore();
  Buffer data = Buffer::Copy("shared bytes");
  ASSERT_TRUE(store->Put("k", data).ok());
  auto got = store->Get("k");
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->data.data(), data.data());
}

TEST(MemStore, MultipartPartOrderAndPartNumbers) {
  auto store = MakeMemStore("", MemStoreOptions{.min_part_size = 1});
  auto id = store->CreateMultipartUpload("k");
  ASSERT_TRUE(id.ok());
  EXPECT_EQ(store->UploadPart("k", *id, 0, Buffer::Copy("x")).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(store->UploadPart("k", *id, 10001, Buffer::Copy("x")).status().code(), Code::kInvalidArgument);
  auto e1 = store->UploadPart("k", *id, 1, Buffer::Copy("a"));
  auto e2 = store->UploadPart("k", *id, 2, Buffer::Copy("b"));
  ASSERT_TRUE(e1.ok() && e2.ok());
  // Descending order is InvalidPartOrder; a part of another key's upload is unknown.
  EXPECT_EQ(store->CompleteMultipartUpload("k", *id, {{2, *e2}, {1, *e1}}).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(store->CompleteMultipartUpload("other", *id, {{1, *e1}}).status().code(), Code::kNotFound);
  EXPECT_EQ(store->CompleteMultipartUpload("k", *id, {}).status().code(), Code::kInvalidArgument);
  // Gaps in part numbers are allowed.
  auto info = store->CompleteMultipartUpload("k", *id, {{2, "\"" + *e2 + "\""}});
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(store->Get("k")->data.ToString(), "b");
  EXPECT_EQ(info->etag, MultipartEtag({*e2}));
}

TEST(MemStore, CompleteHonoursCreateConditions) {
  auto store = MakeMemStore("", MemStoreOptions{.min_part_size = 1});
  ASSERT_TRUE(store->Put("k", Buffer::Copy("exists")).ok());
  PutOptions create_only;
  create_only.if_none_match = true;
  auto id = store->CreateMultipartUpload("k", create_only);
  ASSERT_TRUE(id.ok());
  auto e1 = store->UploadPart("k", *id, 1, Buffer::Copy("new"));
  ASSERT_TRUE(e1.ok());
  EXPECT_EQ(store->CompleteMultipartUpload("k", *id, {{1, *e1}}).status().code(), Code::kPreconditionFailed);
  EXPECT_EQ(store->Get("k")->data.ToString(), "exists");
}

TEST(MemStore, ListMaxKeysValidation) {
  auto store = MakeMemStore();
  ListOptions o;
  o.max_keys = 0;
  EXPECT_EQ(store->List(o).status().code(), Code::kInvalidArgument);
  o.max_keys = 5000;  // clamped to 1000, as S3 does
  for (int i = 0; i < 1001; ++i) ASSERT_TRUE(store->Put("k" + std::to_string(10000 + i), Buffer()).ok());
  auto r = store->List(o);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->objects.size(), 1000u);
  EXPECT_TRUE(r->truncated);
}

TEST(MemStore, ConcurrentPutsAndGetsSeeWholeObjects) {
  auto store = MakeMemStore();
  const std::string a(4096, 'a'), b(8192, 'b');
  ASSERT_TRUE(store->Put("k", Buffer::Copy(a)).ok());
  std::atomic<bool> stop{false};
  std::thread writer([&] {
    for (int i = 0; i < 2000; ++i) store->Put("k", Buffer::Copy(i % 2 ? a : b)).status().IgnoreError();
    stop = true;
  });
  int reads = 0;
  while (!stop || reads < 10) {
    auto got = store->Get("k");
    ASSERT_TRUE(got.ok());
    ASSERT_TRUE(got->data.view() == a || got->data.view() == b);
    EXPECT_EQ(got->info.etag, ToHex(Md5(got->data.view())));
    ++reads;
  }
  writer.join();
}

}  // namespace
}  // namespace strata::object

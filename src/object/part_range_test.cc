// GetPartRange (?partNumber=): the default over Head's part sizes, and the
// s3:// side: parsing an upstream's HEAD ?partNumber= answer and learning the
// part sizes of a Complete from ListParts.
#include <gtest/gtest.h>

#include "object/mem_store.h"
#include "object/object_store.h"
#include "object/prefix_store.h"
#include "object/s3_part_range.h"

namespace strata::object {
namespace {

constexpr uint64_t kMiB = 1 << 20;

// A 3-part upload (5 MiB, 5 MiB + 7, 1234 bytes) of `key`; returns its info.
ObjectInfo UploadThreeParts(ObjectStore& store, const std::string& key) {
  const std::vector<uint64_t> sizes = {5 * kMiB, 5 * kMiB + 7, 1234};
  auto id = store.CreateMultipartUpload(key);
  EXPECT_TRUE(id.ok()) << id.status();
  std::vector<CompletedPart> parts;
  for (int n = 1; n <= 3; ++n) {
    auto etag = store.UploadPart(key, *id, n, Buffer::FromString(std::string(sizes[n - 1], char('A' + n))));
    EXPECT_TRUE(etag.ok()) << etag.status();
    parts.push_back({n, *etag});
  }
  auto info = store.CompleteMultipartUpload(key, *id, parts);
  EXPECT_TRUE(info.ok()) << info.status();
  return *info;
}

TEST(PartRangeTest, DefaultAnswersFromTheKeptPartSizes) {
  auto store = MakeMemStore();
  ObjectInfo info = UploadThreeParts(*store, "mp");
  const uint64_t offsets[] = {0, 5 * kMiB, 10 * kMiB + 7}, lengths[] = {5 * kMiB, 5 * kMiB + 7, 1234};
  for (int n = 1; n <= 3; ++n) {
    auto r = store->GetPartRange("mp", info.etag, n);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->offset, offsets[n - 1]) << n;
    EXPECT_EQ(r->length, lengths[n - 1]) << n;
    EXPECT_EQ(r->parts_count, 3);
    EXPECT_EQ(r->etag, info.etag);
    EXPECT_EQ(r->object_size, info.size);
  }
  EXPECT_EQ(store->GetPartRange("mp", "", 4).status().code(), Code::kOutOfRange);
  EXPECT_EQ(store->GetPartRange("mp", "", 0).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(store->GetPartRange("mp", "someotheretag", 1).status().code(), Code::kPreconditionFailed);
  EXPECT_EQ(store->GetPartRange("missing", "", 1).status().code(), Code::kNotFound);
  // Through a decorator that changes keys, too.
  auto prefixed = MakePrefixStore(store, "pre/");
  ASSERT_TRUE(UploadThreeParts(*prefixed, "mp2").size > 0);
  auto r = prefixed->GetPartRange("mp2", "", 2);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->offset, 5 * kMiB);
  EXPECT_EQ(r->parts_count, 3);
}

TEST(PartRangeTest, ASinglePutIsOnePartTheWholeObject) {
  auto store = MakeMemStore();
  ASSERT_TRUE(store->Put("one", Buffer::FromString("one piece")).ok());
  auto r = store->GetPartRange("one", "", 1);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->offset, 0u);
  EXPECT_EQ(r->length, 9u);
  EXPECT_EQ(r->parts_count, 0);
  EXPECT_EQ(store->GetPartRange("one", "", 2).status().code(), Code::kOutOfRange);
}

TEST(PartRangeTest, SizesThatOverrunTheObjectAreStaleNotARange) {
  ObjectInfo info;
  info.key = "k";
  info.size = 10;
  info.part_sizes = {8, UINT64_MAX - 4};  // would wrap around if added
  EXPECT_EQ(PartRangeOf(info, 2).status().code(), Code::kUnavailable);
  info.part_sizes = {UINT64_MAX, 5};
  EXPECT_EQ(PartRangeOf(info, 2).status().code(), Code::kUnavailable);
  info.part_sizes = {4, 6};
  auto r = PartRangeOf(info, 2);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->offset, 4u);
  EXPECT_EQ(r->length, 6u);
}

net::HttpHeaders Headers(std::initializer_list<std::pair<std::string, std::string>> h) { return h; }

TEST(S3PartRangeTest, ParsesAPartAnswer) {
  auto r = PartRangeFromHeaders(206,
                                Headers({{"Content-Length", "5242887"},
                                         {"Content-Range", "bytes 5242880-10485766/10487001"},
                                         {"x-amz-mp-parts-count", "3"},
                                         {"ETag", "\"abc-3\""}}),
                                2);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->offset, 5242880u);
  EXPECT_EQ(r->length, 5242887u);
  EXPECT_EQ(r->parts_count, 3);
  EXPECT_EQ(r->etag, "abc-3");
  EXPECT_EQ(r->object_size, 10487001u);
}

TEST(S3PartRangeTest, AnUpstreamIgnoringPartNumberIsASinglePartObject) {
  // RGW 16.2: 200, the whole object, no count, for every N.
  auto h = Headers({{"Content-Length", "10487001"}, {"ETag", "\"abc-3\""}});
  auto r = PartRangeFromHeaders(200, h, 1);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->offset, 0u);
  EXPECT_EQ(r->length, 10487001u);
  EXPECT_EQ(r->parts_count, 0);
  EXPECT_EQ(PartRangeFromHeaders(200, h, 2).status().code(), Code::kOutOfRange);
  // A one-part multipart object: the whole object with its count.
  r = PartRangeFromHeaders(200, Headers({{"Content-Length", "9"}, {"x-amz-mp-parts-count", "1"}}), 1);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->parts_count, 1);
}

TEST(S3PartRangeTest, MalformedAnswersAreCorruption) {
  const std::vector<std::pair<int, net::HttpHeaders>> bad = {
      {200, Headers({})},                                                               // no length
      {200, Headers({{"Content-Length", "-1"}})},                                       // signed
      {200, Headers({{"Content-Length", "99999999999999999999"}})},                     // too long
      {206, Headers({{"Content-Length", "5"}})},                                        // 206 without a range
      {206, Headers({{"Content-Length", "5"}, {"Content-Range", "bytes 0-9/20"}})},     // length mismatch
      {206, Headers({{"Content-Length", "10"}, {"Content-Range", "bytes 15-24/20"}})},  // past the end
      {206, Headers({{"Content-Length", "1"}, {"Content-Range", "bytes */20"}})},       // unsatisfied
      {206, Headers({{"Content-Length", "10"}, {"Content-Range", "bytes 0-9/20"}})},    // a part, no count
      {206, Headers({{"Content-Length", "10"}, {"Content-Range", "bytes 0-9/20"}, {"x-amz-mp-parts-count", "0"}})},
      {206, Headers({{"Content-Length", "10"}, {"Content-Range", "bytes 0-9/20"}, {"x-amz-mp-parts-count", "x"}})},
      {206, Headers({{"Content-Length", "10"}, {"Content-Range", "bytes 0-9/20"}, {"x-amz-mp-parts-count", "10001"}})},
      {500, Headers({{"Content-Length", "0"}})},
  };
  for (const auto& [status, headers] : bad) {
    auto r = PartRangeFromHeaders(status, headers, 1);
    EXPECT_EQ(r.status().code(), Code::kCorruption) << status << " " << (headers.empty() ? "" : headers.back().second);
  }
  // A count below the part asked for.
  auto r = PartRangeFromHeaders(
      206, Headers({{"Content-Length", "10"}, {"Content-Range", "bytes 0-9/20"}, {"x-amz-mp-parts-count", "2"}}), 3);
  EXPECT_EQ(r.status().code(), Code::kCorruption);
}

TEST(S3PartRangeTest, CompletedPartSizesOnlyWhenTheListedPartsAreTheCompletedOnes) {
  std::vector<PartInfo> listed = {{1, "\"e1\"", 5, {}}, {2, "e2", 7, {}}, {3, "e3", 2, {}}};
  EXPECT_EQ(CompletedPartSizes(listed, {{1, "e1"}, {2, "\"e2\""}, {3, "e3"}}, 14), (std::vector<uint64_t>{5, 7, 2}));
  EXPECT_EQ(CompletedPartSizes(listed, {{1, "e1"}, {3, "e3"}}, 7), (std::vector<uint64_t>{5, 2}));
  EXPECT_TRUE(CompletedPartSizes(listed, {{1, "e1"}, {2, "other"}}, 12).empty());  // re-sent meanwhile
  EXPECT_TRUE(CompletedPartSizes(listed, {{1, "e1"}, {4, "e4"}}, 12).empty());     // not listed
  EXPECT_TRUE(CompletedPartSizes(listed, {{1, "e1"}, {2, "e2"}}, 13).empty());     // sizes do not add up
  EXPECT_TRUE(CompletedPartSizes({{1, "e1", UINT64_MAX, {}}, {2, "e2", 2, {}}}, {{1, "e1"}, {2, "e2"}}, 1).empty());
}

}  // namespace
}  // namespace strata::object

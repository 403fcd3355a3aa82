// Conformance cases for object metadata (ObjectMetadata): kept by Put,
// multipart and Copy, returned by Head and Get, for every store that
// declares Capabilities().metadata_kept; refused plainly by one that does not.
#include "base/checksum.h"
#include "testing/conformance.h"

namespace strata::testing {

int ConformanceMetadataAnchor() { return 0; }

namespace {

#define ASSERT_OK(expr)                                   \
  do {                                                    \
    auto _s = (expr);                                     \
    ASSERT_TRUE(_s.ok()) << #expr << ": " << _s.status(); \
  } while (0)

object::ObjectMetadata Full() {
  object::ObjectMetadata m;
  m.content_type = "text/plain";
  m.content_encoding = "identity";
  m.content_language = "en-GB";
  m.content_disposition = "attachment; filename=\"report.txt\"";
  m.cache_control = "max-age=3600";
  m.expires = "Wed, 21 Oct 2037 07:28:00 GMT";
  m.user = {{"a", "1"}, {"b", "two words"}, {"mode", "33188"}, {"uid", "1000"}, {"gid", "1000"}};
  return m;
}

// Only what the test set: S3 servers name a default Content-Type when none was stored.
void ExpectUserOnly(const object::ObjectMetadata& got, const std::map<std::string, std::string>& user) {
  EXPECT_EQ(got.user, user);
}

}  // namespace

TEST_P(ObjectStoreConformance, MetadataRoundTrips) {
  object::PutOptions o;
  o.metadata = Full();
  if (!store_->Capabilities().metadata_kept) {
    EXPECT_EQ(store_->Put("meta/obj", Buffer::Copy("x"), o).status().code(), Code::kNotSupported);
    EXPECT_EQ(store_->CreateMultipartUpload("meta/mp", o).status().code(), Code::kNotSupported);
    ASSERT_OK(store_->Put("meta/plain", Buffer::Copy("x")));  // no metadata: fine
    GTEST_SKIP() << "the store declares it keeps no metadata";
  }
  auto put = store_->Put("meta/obj", Buffer::Copy("hello"), o);
  ASSERT_OK(put);
  EXPECT_EQ(put->metadata, o.metadata);
  auto head = store_->Head("meta/obj");
  ASSERT_OK(head);
  EXPECT_EQ(head->metadata, o.metadata);
  auto got = store_->Get("meta/obj");
  ASSERT_OK(got);
  EXPECT_EQ(got->info.metadata, o.metadata);
  object::GetOptions ranged;
  ranged.range = object::ByteRange::Of(1, 2);
  got = store_->Get("meta/obj", ranged);
  ASSERT_OK(got);
  EXPECT_EQ(got->data.ToString(), "el");
  EXPECT_EQ(got->info.metadata, o.metadata);

  // A replacing Put replaces the metadata too, even with none.
  ASSERT_OK(store_->Put("meta/obj", Buffer::Copy("second")));
  head = store_->Head("meta/obj");
  ASSERT_OK(head);
  ExpectUserOnly(head->metadata, {});
  EXPECT_TRUE(head->metadata.cache_control.empty());
}

TEST_P(ObjectStoreConformance, MetadataLimitIsEnforced) {
  object::PutOptions o;
  o.metadata.user["big"] = std::string(object::kMaxUserMetadataBytes, 'v');  // 3 + 2048 bytes
  EXPECT_EQ(store_->Put("meta/big", Buffer::Copy("x"), o).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(store_->CreateMultipartUpload("meta/big", o).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(store_->Head("meta/big").status().code(), Code::kNotFound);
}

TEST_P(ObjectStoreConformance, CopyKeepsOrReplacesMetadata) {
  if (!store_->Capabilities().metadata_kept) GTEST_SKIP() << "the store declares it keeps no metadata";
  object::PutOptions o;
  o.metadata = Full();
  auto src = store_->Put("meta/src", Buffer::Copy("copied"), o);
  ASSERT_OK(src);
  auto kept = store_->Copy("meta/src", "meta/kept");
  ASSERT_OK(kept);
  EXPECT_EQ(store_->Head("meta/kept")->metadata, o.metadata);

  object::CopyOptions replace;
  replace.directive = object::MetadataDirective::kReplace;
  replace.metadata.content_type = "application/json";
  replace.metadata.user = {{"c", "3"}};
  ASSERT_OK(store_->Copy("meta/src", "meta/replaced", replace));
  auto head = store_->Head("meta/replaced");
  ASSERT_OK(head);
  EXPECT_EQ(head->metadata.content_type, "application/json");
  ExpectUserOnly(head->metadata, {{"c", "3"}});
  EXPECT_TRUE(head->metadata.cache_control.empty());
  EXPECT_EQ(store_->Get("meta/replaced")->data.ToString(), "copied");

  // Onto itself: only the metadata changes (how the mount stores chmod).
  replace.metadata.user = {{"mode", "33261"}};
  ASSERT_OK(store_->Copy("meta/src", "meta/src", replace));
  head = store_->Head("meta/src");
  ASSERT_OK(head);
  ExpectUserOnly(head->metadata, {{"mode", "33261"}});
  EXPECT_EQ(store_->Get("meta/src")->data.ToString(), "copied");
  if (GetParam().etag_is_md5) {
    EXPECT_EQ(head->etag, src->etag);
  }
}

TEST_P(ObjectStoreConformance, ChecksumsOfPartsCombineAtComplete) {
  if (!store_->Capabilities().checksums_kept) GTEST_SKIP() << "the store declares it keeps no checksums";
  const uint64_t min = store_->MinPartSize();
  const std::string p1(min, 'a'), p2 = "second";
  for (const char* type : {"COMPOSITE", "FULL_OBJECT"}) {
    const ChecksumAlgorithm crc = ChecksumAlgorithm::kCrc32c;
    object::PutOptions o;
    o.metadata.checksum_algorithm = "CRC32C";
    o.metadata.checksum_type = type;
    auto id = store_->CreateMultipartUpload("meta/ck", o);
    ASSERT_OK(id);
    object::PartOptions po1, po2;
    po1.checksum = {"CRC32C", ChecksumBase64(crc, p1)};
    po2.checksum = {"CRC32C", ChecksumBase64(crc, p2)};
    auto e1 = store_->UploadPart("meta/ck", *id, 1, Buffer::Copy(p1), po1);
    auto e2 = store_->UploadPart("meta/ck", *id, 2, Buffer::Copy(p2), po2);
    ASSERT_OK(e1);
    ASSERT_OK(e2);
    auto parts = store_->ListParts("meta/ck", *id);
    ASSERT_OK(parts);
    ASSERT_EQ(parts->size(), 2u);
    EXPECT_EQ((*parts)[0].checksum, po1.checksum);
    EXPECT_EQ((*parts)[1].checksum, po2.checksum);
    ASSERT_OK(store_->CompleteMultipartUpload("meta/ck", *id, {{1, *e1}, {2, *e2}}));
    auto head = store_->Head("meta/ck");
    ASSERT_OK(head);
    const std::string expected = std::string(type) == "COMPOSITE"
                                     ? ChecksumBase64(crc, ComputeChecksum(crc, p1) + ComputeChecksum(crc, p2)) + "-2"
                                     : ChecksumBase64(crc, p1 + p2);
    EXPECT_EQ(head->metadata.checksum, expected) << type;
    EXPECT_EQ(head->metadata.checksum_type, type);
  }
  // A single Put keeps the checksum it is given.
  object::PutOptions o;
  o.metadata.checksum_algorithm = "SHA256";
  o.metadata.checksum_type = "FULL_OBJECT";
  o.metadata.checksum = ChecksumBase64(ChecksumAlgorithm::kSha256, "one");
  ASSERT_OK(store_->Put("meta/ck1", Buffer::Copy("one"), o));
  EXPECT_EQ(store_->Head("meta/ck1")->metadata, o.metadata);
}

TEST_P(ObjectStoreConformance, MultipartKeepsMetadata) {
  if (!store_->Capabilities().metadata_kept) GTEST_SKIP() << "the store declares it keeps no metadata";
  object::PutOptions o;
  o.metadata = Full();
  auto id = store_->CreateMultipartUpload("meta/mp", o);
  ASSERT_OK(id);
  auto e1 = store_->UploadPart("meta/mp", *id, 1, Buffer::Copy("only part"));
  ASSERT_OK(e1);
  auto done = store_->CompleteMultipartUpload("meta/mp", *id, {{1, *e1}});
  ASSERT_OK(done);
  auto head = store_->Head("meta/mp");
  ASSERT_OK(head);
  EXPECT_EQ(head->metadata, o.metadata);
  EXPECT_EQ(store_->Get("meta/mp")->info.metadata, o.metadata);
}

// A multipart object's part sizes come back from Head and Get where the
// store declares it keeps them; a single PUT and a copy have none.
TEST_P(ObjectStoreConformance, MultipartPartSizes) {
  const object::StoreCapabilities caps = store_->Capabilities();
  const uint64_t min = store_->MinPartSize();
  const std::vector<uint64_t> sizes{min, min + 1, 3};
  auto id = store_->CreateMultipartUpload("parts/mp", {});
  ASSERT_OK(id);
  std::vector<object::CompletedPart> parts;
  for (int i = 0; i < 3; ++i) {
    auto e = store_->UploadPart("parts/mp", *id, i + 1, Buffer::FromString(std::string(sizes[i], 'a' + i)));
    ASSERT_OK(e);
    parts.push_back({i + 1, *e});
  }
  ASSERT_OK(store_->CompleteMultipartUpload("parts/mp", *id, parts));
  const std::vector<uint64_t> expected = caps.part_sizes_kept ? sizes : std::vector<uint64_t>{};
  EXPECT_EQ(store_->Head("parts/mp")->part_sizes, expected);
  EXPECT_EQ(store_->Get("parts/mp")->info.part_sizes, expected);
  ASSERT_OK(store_->Put("parts/single", Buffer::Copy("one")));
  EXPECT_TRUE(store_->Head("parts/single")->part_sizes.empty());
  ASSERT_OK(store_->Copy("parts/mp", "parts/copy"));
  EXPECT_TRUE(store_->Head("parts/copy")->part_sizes.empty());
}

}  // namespace strata::testing

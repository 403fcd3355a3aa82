#include "object/metadata.h"

#include <gtest/gtest.h>

#include "base/coding.h"

namespace strata::object {
namespace {

ObjectMetadata Sample() {
  ObjectMetadata m;
  m.content_type = "text/plain; charset=utf-8";
  m.content_encoding = "gzip";
  m.content_language = "en";
  m.content_disposition = "attachment; filename=\"a b.txt\"";
  m.cache_control = "max-age=60";
  m.expires = "Wed, 21 Oct 2037 07:28:00 GMT";
  m.user = {{"mode", "33188"}, {"uid", "1000"}, {"gid", "1000"}, {"mtime", "1700000000"}, {"empty", ""}};
  return m;
}

TEST(ObjectMetadata, RoundTrips) {
  for (const ObjectMetadata& m : {ObjectMetadata{}, Sample()}) {
    auto back = DecodeMetadata(EncodeMetadata(m));
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(*back, m);
  }
  EXPECT_TRUE(ObjectMetadata{}.empty());
  EXPECT_FALSE(Sample().empty());
}

TEST(ObjectMetadata, EveryTruncationAndCorruptionIsRejected) {
  const std::string enc = EncodeMetadata(Sample());
  for (size_t n = 0; n < enc.size(); ++n) {
    EXPECT_EQ(DecodeMetadata(enc.substr(0, n)).status().code(), Code::kCorruption) << n;
  }
  EXPECT_EQ(DecodeMetadata(enc + "x").status().code(), Code::kCorruption);
  std::string v3 = enc;
  v3[0] = 3;
  EXPECT_EQ(DecodeMetadata(v3).status().code(), Code::kCorruption);
  // Version 2 (with checksum) of a record without one: Encode never writes that.
  std::string v2 = enc;
  v2[0] = 2;
  for (int i = 0; i < 3; ++i) PutFixed32(&v2, 0);
  EXPECT_EQ(DecodeMetadata(v2).status().code(), Code::kCorruption);
  // A length pointing far past the end.
  std::string huge(1, '\1');
  PutFixed32(&huge, 0xffffffffu);
  EXPECT_EQ(DecodeMetadata(huge).status().code(), Code::kCorruption);
  // A duplicated user name.
  std::string dup = EncodeMetadata(ObjectMetadata{});
  dup.resize(dup.size() - 4);
  PutFixed32(&dup, 2);
  for (int i = 0; i < 2; ++i) {
    PutFixed32(&dup, 1);
    dup += "a";
    PutFixed32(&dup, 1);
    dup += "1";
  }
  EXPECT_EQ(DecodeMetadata(dup).status().code(), Code::kCorruption);
  // Names out of order (found by fuzz_object_metadata: it decoded, then encoded differently).
  std::string unordered = EncodeMetadata(ObjectMetadata{});
  unordered.resize(unordered.size() - 4);
  PutFixed32(&unordered, 2);
  for (const char* name : {"h", "b"}) {
    PutFixed32(&unordered, 1);
    unordered += name;
    PutFixed32(&unordered, 1);
    unordered += "1";
  }
  EXPECT_EQ(DecodeMetadata(unordered).status().code(), Code::kCorruption);
}

ObjectMetadata WithChecksum() {
  ObjectMetadata m = Sample();
  m.checksum_algorithm = "CRC32C";
  m.checksum_type = "COMPOSITE";
  m.checksum = "4waSgw==-2";
  return m;
}

TEST(ObjectMetadata, ChecksumRoundTripsAndOldRecordsStillDecode) {
  ObjectMetadata m = WithChecksum();
  const std::string enc = EncodeMetadata(m);
  EXPECT_EQ(enc[0], 2);
  auto back = DecodeMetadata(enc);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, m);
  for (size_t n = 0; n < enc.size(); ++n) {
    EXPECT_EQ(DecodeMetadata(enc.substr(0, n)).status().code(), Code::kCorruption) << n;
  }
  // Without a checksum the record stays version 1, byte for byte what older builds wrote.
  ObjectMetadata only_type;
  only_type.content_type = "a/b";
  std::string v1(1, '\1');
  for (std::string_view f : {"a/b", "", "", "", "", ""}) {
    PutFixed32(&v1, static_cast<uint32_t>(f.size()));
    v1 += f;
  }
  PutFixed32(&v1, 0);
  EXPECT_EQ(EncodeMetadata(only_type), v1);
  auto old = DecodeMetadata(v1);
  ASSERT_TRUE(old.ok()) << old.status();
  EXPECT_EQ(*old, only_type);
  // An upload's record names algorithm and type before any value exists.
  ObjectMetadata pending;
  pending.checksum_algorithm = "SHA256";
  pending.checksum_type = "COMPOSITE";
  EXPECT_FALSE(pending.empty());
  EXPECT_EQ(*DecodeMetadata(EncodeMetadata(pending)), pending);
  EXPECT_TRUE(ValidateMetadata(m).ok());
  m.checksum_algorithm = "MD5";
  EXPECT_FALSE(ValidateMetadata(m).ok());
  m = WithChecksum();
  m.checksum_type = "PARTIAL";
  EXPECT_FALSE(ValidateMetadata(m).ok());
}

TEST(ObjectMetadata, ValidationFollowsS3) {
  EXPECT_TRUE(ValidateMetadata(Sample()).ok());
  ObjectMetadata m;
  m.user["k"] = std::string(kMaxUserMetadataBytes - 1, 'v');
  EXPECT_TRUE(ValidateMetadata(m).ok());
  EXPECT_EQ(UserMetadataBytes(m), kMaxUserMetadataBytes);
  m.user["k"] += "v";
  Status too_large = ValidateMetadata(m);
  EXPECT_EQ(too_large.code(), Code::kInvalidArgument);
  EXPECT_NE(too_large.message().find("MetadataTooLarge"), std::string::npos);
  for (const char* bad_name : {"", "Upper", "sp ace", "new\nline", "colon:"}) {
    ObjectMetadata b;
    b.user[bad_name] = "v";
    EXPECT_EQ(ValidateMetadata(b).code(), Code::kInvalidArgument) << bad_name;
  }
  ObjectMetadata crlf;
  crlf.user["a"] = "x\r\nInjected: 1";
  EXPECT_EQ(ValidateMetadata(crlf).code(), Code::kInvalidArgument);
  ObjectMetadata ct;
  ct.content_type = "text/plain\r\n";
  EXPECT_EQ(ValidateMetadata(ct).code(), Code::kInvalidArgument);
}

TEST(PartSizes, RoundTripInRuns) {
  const std::vector<uint64_t> sizes{5 << 20, 5 << 20, 5 << 20, 7, 5 << 20, 1};
  std::string enc = EncodePartSizes(sizes);
  EXPECT_EQ(enc.size(), 1u + 4 + 4 * 12);  // four runs
  auto back = DecodePartSizes(enc);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, sizes);
  // 10000 equal parts are one run.
  std::vector<uint64_t> many(kMaxRecordedParts, 8 << 20);
  many.back() = 3;
  enc = EncodePartSizes(many);
  EXPECT_EQ(enc.size(), 1u + 4 + 2 * 12);
  EXPECT_EQ(*DecodePartSizes(enc), many);
  // Not representable: nothing is kept.
  EXPECT_EQ(EncodePartSizes({}), "");
  EXPECT_EQ(EncodePartSizes(std::vector<uint64_t>(kMaxRecordedParts + 1, 1)), "");
  std::vector<uint64_t> distinct;
  for (uint64_t i = 0; i <= kMaxPartRuns; ++i) distinct.push_back(i + 1);
  EXPECT_EQ(EncodePartSizes(distinct), "");
  distinct.pop_back();
  EXPECT_EQ(*DecodePartSizes(EncodePartSizes(distinct)), distinct);
}

TEST(PartSizes, MalformedIsCorruption) {
  const std::string good = EncodePartSizes({10, 10, 4});
  for (size_t n = 0; n < good.size(); ++n) {
    EXPECT_EQ(DecodePartSizes(good.substr(0, n)).status().code(), Code::kCorruption) << n;
  }
  EXPECT_EQ(DecodePartSizes(good + "x").status().code(), Code::kCorruption);
  auto record = [](std::vector<std::pair<uint64_t, uint32_t>> runs) {
    std::string out(1, '\x01');
    PutFixed32(&out, static_cast<uint32_t>(runs.size()));
    for (auto [size, count] : runs) {
      PutFixed64(&out, size);
      PutFixed32(&out, count);
    }
    return out;
  };
  EXPECT_TRUE(DecodePartSizes(record({{10, 2}, {4, 1}})).ok());
  EXPECT_EQ(DecodePartSizes(record({})).status().code(), Code::kCorruption);                    // no runs
  EXPECT_EQ(DecodePartSizes(record({{10, 0}})).status().code(), Code::kCorruption);             // empty run
  EXPECT_EQ(DecodePartSizes(record({{10, 1}, {10, 1}})).status().code(), Code::kCorruption);    // split run
  EXPECT_EQ(DecodePartSizes(record({{1, 10000}, {2, 1}})).status().code(), Code::kCorruption);  // too many
  EXPECT_EQ(DecodePartSizes(record({{1, 0xffffffff}})).status().code(), Code::kCorruption);     // huge count
  EXPECT_EQ(DecodePartSizes(record({{~0ull, 1}, {1, 1}})).status().code(), Code::kCorruption);  // overflow
  std::string wrong_version = good;
  wrong_version[0] = 2;
  EXPECT_EQ(DecodePartSizes(wrong_version).status().code(), Code::kCorruption);
}

}  // namespace
}  // namespace strata::object

#include "net/s3_xml.h"

#include <gtest/gtest.h>

#include "net/http.h"

namespace strata::net {
namespace {

WallTime T(const char* iso) { return *ParseIso8601(iso); }

TEST(S3Xml, ListObjectsV2RoundTrip) {
  for (std::string enc : {"", "url"}) {
    SCOPED_TRACE(enc);
    ListObjectsV2Result r;
    r.bucket = "bkt";
    r.prefix = "dir with space/";
    r.delimiter = "/";
    r.start_after = "dir with space/a+b";
    r.continuation_token = "tok1";
    r.next_continuation_token = "tok2&<";
    r.encoding_type = enc;
    r.max_keys = 2;
    r.is_truncated = true;
    r.contents.push_back({"dir with space/a&b<c>\x01", 12, "\"abc\"", T("2024-01-02T03:04:05.678Z"), ""});
    r.contents.push_back({"dir with space/\xE2\x82\xAC+%", 0, "\"d41d8cd98f00b204e9800998ecf8427e-2\"",
                          T("2009-10-12T17:50:30.000Z"), "STANDARD"});
    r.common_prefixes = {"dir with space/sub dir/"};
    std::string xml = EncodeListObjectsV2(r);
    if (enc == "url") {
      EXPECT_NE(xml.find("<Key>dir%20with%20space/a%26b%3Cc%3E%01</Key>"), std::string::npos) << xml;
    }
    auto d = DecodeListObjectsV2(xml);
    ASSERT_TRUE(d.ok()) << d.status() << xml;
    EXPECT_EQ(d->bucket, "bkt");
    EXPECT_EQ(d->prefix, r.prefix);
    EXPECT_EQ(d->delimiter, "/");
    EXPECT_EQ(d->start_after, r.start_after);
    EXPECT_EQ(d->continuation_token, "tok1");
    EXPECT_EQ(d->next_continuation_token, "tok2&<");
    EXPECT_EQ(d->encoding_type, enc);
    EXPECT_EQ(d->max_keys, 2);
    EXPECT_EQ(d->key_count, 3);
    EXPECT_TRUE(d->is_truncated);
    ASSERT_EQ(d->contents.size(), 2u);
    EXPECT_EQ(d->contents[0].key, r.contents[0].key);
    EXPECT_EQ(d->contents[0].size, 12u);
    EXPECT_EQ(d->contents[0].etag, "\"abc\"");
    EXPECT_EQ(d->contents[0].last_modified, r.contents[0].last_modified);
    EXPECT_EQ(d->contents[0].storage_class, "STANDARD");
    EXPECT_EQ(d->contents[1].key, r.contents[1].key);
    EXPECT_EQ(d->common_prefixes, r.common_prefixes);
  }
}

TEST(S3Xml, DecodesAwsStyleListing) {
  // As AWS renders it: namespace, whitespace between elements, '+' for spaces with encoding-type=url.
  const char* xml = R"(<?xml version="1.0" encoding="UTF-8"?>
<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">
  <Name>example-bucket</Name><Prefix>a+b%2F</Prefix><KeyCount>1</KeyCount><MaxKeys>1000</MaxKeys>
  <EncodingType>url</EncodingType><IsTruncated>false</IsTruncated>
  <Contents>
    <Key>a+b%2Fc</Key><LastModified>2009-10-12T17:50:30.000Z</LastModified>
    <ETag>&quot;fba9dede5f27731c9771645a39863328&quot;</ETag><Size>434234</Size><StorageClass>STANDARD</StorageClass>
  </Contents>
</ListBucketResult>)";
  auto d = DecodeListObjectsV2(xml);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->prefix, "a b/");
  ASSERT_EQ(d->contents.size(), 1u);
  EXPECT_EQ(d->contents[0].key, "a b/c");
  EXPECT_EQ(d->contents[0].size, 434234u);
  EXPECT_EQ(d->contents[0].etag, "\"fba9dede5f27731c9771645a39863328\"");
  EXPECT_FALSE(d->is_truncated);
}

TEST(S3Xml, DecodersRejectMalformed) {
  auto bad = [](Status s) {
    EXPECT_EQ(s.code(), Code::kInvalidArgument) << s;
    EXPECT_EQ(s.foreign_code(), "MalformedXML") << s;
  };
  bad(DecodeListObjectsV2("<ListBucketResult><Contents><Size>x</Size><Key>k</Key></Contents></ListBucketResult>")
          .status());
  bad(DecodeListObjectsV2("<ListBucketResult><Contents><Size>1</Size></Contents></ListBucketResult>").status());
  bad(DecodeListObjectsV2("<ListBucketResult><IsTruncated>maybe</IsTruncated></ListBucketResult>").status());
  bad(DecodeListObjectsV2("<Error><Code>x</Code></Error>").status());
  bad(DecodeListObjectsV2("<ListBucketResult>").status());
  bad(DecodeListObjectsV2(
          "<ListBucketResult><Contents><Key>k</Key><Size>99999999999999999999999</Size></Contents></ListBucketResult>")
          .status());
  bad(DecodeCompleteMultipartUpload(
          "<CompleteMultipartUpload><Part><PartNumber>0</PartNumber></Part></CompleteMultipartUpload>")
          .status());
  bad(DecodeCompleteMultipartUpload("<CompleteMultipartUpload><Part><ETag>x</ETag></Part></CompleteMultipartUpload>")
          .status());
  bad(DecodeS3Error("<Error><Message>m</Message></Error>").status());
  bad(DecodeInitiateMultipartUpload("<InitiateMultipartUploadResult/>").status());
  bad(DecodeDeleteRequest("<Delete><Object><Key></Key></Object></Delete>").status());
  std::string many = "<Delete>";
  for (int i = 0; i < 1001; ++i) many += "<Object><Key>k" + std::to_string(i) + "</Key></Object>";
  bad(DecodeDeleteRequest(many + "</Delete>").status());
}

TEST(S3Xml, AllMyBuckets) {
  ListAllMyBucketsResult r{"id1", "me", {{"a", T("2020-01-01T00:00:00.000Z")}, {"b&c", T("2021-06-01T12:00:00.000Z")}}};
  auto d = DecodeListAllMyBuckets(EncodeListAllMyBuckets(r));
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->owner_id, "id1");
  EXPECT_EQ(d->owner_display_name, "me");
  ASSERT_EQ(d->buckets.size(), 2u);
  EXPECT_EQ(d->buckets[1].name, "b&c");
  EXPECT_EQ(d->buckets[1].creation_date, r.buckets[1].creation_date);
}

TEST(S3Xml, ErrorBody) {
  S3ErrorBody e{"NoSuchKey", "The specified key does not exist.", "/bucket/a<b", "4442587FB7D0A2F9"};
  std::string xml = EncodeS3Error(e);
  EXPECT_EQ(xml.find("xmlns"), std::string::npos);  // AWS's <Error> carries no namespace
  auto d = DecodeS3Error(xml);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->code, e.code);
  EXPECT_EQ(d->message, e.message);
  EXPECT_EQ(d->resource, e.resource);
  EXPECT_EQ(d->request_id, e.request_id);
}

TEST(S3Xml, Multipart) {
  auto init = DecodeInitiateMultipartUpload(EncodeInitiateMultipartUpload({"b", "k&", "VXBsb2FkIElE"}));
  ASSERT_TRUE(init.ok());
  EXPECT_EQ(init->key, "k&");
  EXPECT_EQ(init->upload_id, "VXBsb2FkIElE");

  std::vector<S3CompletedPart> parts = {{1, "\"a\"", {}}, {2, "\"b\"", {}}, {10000, "c", {}}};
  auto p = DecodeCompleteMultipartUpload(EncodeCompleteMultipartUpload(parts));
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_EQ(p->size(), 3u);
  EXPECT_EQ((*p)[2].part_number, 10000);
  EXPECT_EQ((*p)[1].etag, "\"b\"");

  auto c = DecodeCompleteMultipartUploadResult(EncodeCompleteMultipartUploadResult(
      {"http://h/b/k", "b", "k", "\"3858f62230ac3c915f300c664312c11f-9\"", {}, ""}));
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->etag, "\"3858f62230ac3c915f300c664312c11f-9\"");
  EXPECT_EQ(c->location, "http://h/b/k");
  // Ceph RGW's empty ETag is accepted.
  auto rgw = DecodeCompleteMultipartUploadResult(
      "<CompleteMultipartUploadResult><Bucket>b</Bucket><Key>k</Key><ETag></ETag></CompleteMultipartUploadResult>");
  ASSERT_TRUE(rgw.ok());
  EXPECT_EQ(rgw->etag, "");

  ListPartsResult lp{
      "b",  "k",
      "u",  0,
      2,    1000,
      true, {{1, "\"e1\"", 5 << 20, T("2024-01-01T00:00:00.000Z"), {"CRC32", "NhCmhg=="}}, {2, "\"e2\"", 7, {}, {}}}};
  auto l = DecodeListParts(EncodeListParts(lp));
  ASSERT_TRUE(l.ok()) << l.status();
  EXPECT_EQ(l->parts[0].checksum.algorithm, "CRC32");
  EXPECT_EQ(l->parts[0].checksum.value, "NhCmhg==");
  EXPECT_TRUE(l->parts[1].checksum.algorithm.empty());
  ASSERT_TRUE(l.ok()) << l.status();
  EXPECT_EQ(l->upload_id, "u");
  EXPECT_EQ(l->next_part_number_marker, 2);
  EXPECT_TRUE(l->is_truncated);
  ASSERT_EQ(l->parts.size(), 2u);
  EXPECT_EQ(l->parts[0].size, 5u << 20);
  EXPECT_EQ(l->parts[0].last_modified, lp.parts[0].last_modified);
  EXPECT_EQ(l->parts[1].etag, "\"e2\"");
}

TEST(S3Xml, DeleteObjectsAndCopy) {
  auto req = DecodeDeleteRequest(EncodeDeleteRequest({true, {"a", "b<c", "d e"}, {"", "null", ""}}));
  ASSERT_TRUE(req.ok());
  EXPECT_TRUE(req->quiet);
  EXPECT_EQ(req->keys, (std::vector<std::string>{"a", "b<c", "d e"}));
  EXPECT_EQ(req->version_ids, (std::vector<std::string>{"", "null", ""}));
  auto loud = DecodeDeleteRequest(
      "<Delete "
      "xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Object><Key>x</Key><VersionId>1</VersionId></Object></"
      "Delete>");
  ASSERT_TRUE(loud.ok());
  EXPECT_FALSE(loud->quiet);
  EXPECT_EQ(loud->version_ids, std::vector<std::string>{"1"});

  DeleteResult r{{"a", "b"}, {{"c", "AccessDenied", "Access Denied", "v1"}}, {"null", ""}};
  auto d = DecodeDeleteResult(EncodeDeleteResult(r));
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->deleted, r.deleted);
  ASSERT_EQ(d->errors.size(), 1u);
  EXPECT_EQ(d->errors[0].code, "AccessDenied");
  EXPECT_EQ(d->errors[0].version_id, "v1");
  EXPECT_EQ(d->deleted_version_ids, r.deleted_version_ids);

  CopyObjectResult cr{"\"9b2cf535f27731c974343645a3985328\"", T("2009-10-28T22:32:00.000Z")};
  auto c = DecodeCopyObjectResult(EncodeCopyObjectResult(cr));
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->etag, cr.etag);
  EXPECT_EQ(c->last_modified, cr.last_modified);
}

}  // namespace
}  // namespace strata::net

// Unit tests of S3 checksums in the gateway (over mem stores, no sockets):
// x-amz-checksum-* from headers and aws-chunked trailers, BadDigest with
// nothing stored, Content-MD5, checksum mode on reads, and multipart
// COMPOSITE / FULL_OBJECT values.
#include <gtest/gtest.h>

#include "base/checksum.h"
#include "base/hash.h"
#include "gateway/buckets.h"
#include "gateway/s3_handler.h"
#include "net/s3_xml.h"
#include "net/sigv4.h"
#include "object/mem_store.h"

namespace strata::gateway {
namespace {

const net::AwsCredentials kCreds{"AKIDCHECKSUM", "secret-checksum-key", ""};
const auto kCrc32 = ChecksumAlgorithm::kCrc32;

class GatewayChecksumTest : public ::testing::Test {
 protected:
  void SetUp() override {
    cache::CacheOptions co;
    co.block_size = 64 << 10;
    co.ram_bytes = 16 << 20;
    cache_ = *cache::BlockCache::Open(co);
    object::MemStoreOptions mo;
    mo.min_part_size = 16;
    buckets_ = BucketSet::FromStores({{"bucket", object::MakeMemStore("", mo)}}, cache_);
    S3HandlerOptions ho;
    ho.keys[kCreds.access_key_id] = kCreds.secret_access_key;
    handler_ = std::make_unique<S3Handler>(*buckets_, ho);
  }

  GatewayRequest Signed(std::string method, std::string target, std::string body = "", net::HttpHeaders extra = {}) {
    size_t q = target.find('?');
    net::HttpRequestParts p{method, target.substr(0, q), q == std::string::npos ? "" : target.substr(q + 1), extra};
    p.headers.emplace_back("Host", "127.0.0.1:9000");
    EXPECT_TRUE(net::SignRequest(p, kCreds, "us-east-1", "s3", RealClock().WallNow(), ToHex(Sha256(body))).ok());
    return GatewayRequest{method, target, p.headers, Buffer::FromString(std::move(body)), ""};
  }

  // An aws-chunked PUT with one checksum trailer; signed chunks (and trailer) when `sign`.
  GatewayRequest Trailer(const std::string& key, const std::string& payload, const std::string& trailer_value,
                         bool sign) {
    net::HttpRequestParts p{"PUT", "/bucket/" + key, "", {{"Host", "127.0.0.1:9000"}}};
    p.headers.emplace_back("Content-Encoding", "aws-chunked");
    p.headers.emplace_back("x-amz-decoded-content-length", std::to_string(payload.size()));
    p.headers.emplace_back("x-amz-trailer", "x-amz-checksum-crc32");
    WallTime now = RealClock().WallNow();
    auto mode = sign ? net::kStreamingPayloadTrailer : net::kStreamingUnsignedTrailer;
    EXPECT_TRUE(net::SignRequest(p, kCreds, "us-east-1", "s3", now, mode).ok());
    auto v = net::VerifyRequest(
        p, [](std::string_view) { return std::optional<std::string>(kCreds.secret_access_key); }, now);
    EXPECT_TRUE(v.ok()) << v.status();
    std::string wire, prev = v->seed_signature;
    const std::string trailer = "x-amz-checksum-crc32:" + trailer_value;
    if (sign) {
      wire = net::EncodeSignedChunk(v->signing_key, v->amz_date, v->scope, &prev, payload);
      wire += net::EncodeSignedChunk(v->signing_key, v->amz_date, v->scope, &prev, "");
      wire.resize(wire.size() - 2);  // the final chunk's CRLF comes after the trailers
      std::string sts = "AWS4-HMAC-SHA256-TRAILER\n" + v->amz_date + "\n" + v->scope + "\n" + prev + "\n" +
                        ToHex(Sha256(trailer + "\n"));
      wire += trailer + "\r\nx-amz-trailer-signature:" + net::SignatureHex(v->signing_key, sts) + "\r\n\r\n";
    } else {
      char size[20];
      std::snprintf(size, sizeof size, "%zx", payload.size());
      wire = std::string(size) + "\r\n" + payload + "\r\n0\r\n" + trailer + "\r\n\r\n";
    }
    return GatewayRequest{"PUT", "/bucket/" + key, p.headers, Buffer::Copy(wire), ""};
  }

  GatewayResponse Do(const GatewayRequest& r) { return handler_->Handle(r); }
  static std::string H(const GatewayResponse& r, std::string_view name) {
    const std::string* v = net::FindHeader(r.headers, name);
    return v ? *v : "";
  }
  static std::string Code(const GatewayResponse& r) {
    auto e = net::DecodeS3Error(r.body);
    return e.ok() ? e->code : "";
  }
  GatewayResponse HeadWithChecksum(const std::string& key) {
    return Do(Signed("HEAD", "/bucket/" + key, "", {{"x-amz-checksum-mode", "ENABLED"}}));
  }
  int HeadStatus(const std::string& key) { return Do(Signed("HEAD", "/bucket/" + key)).status; }

  std::shared_ptr<cache::BlockCache> cache_;
  std::unique_ptr<BucketSet> buckets_;
  std::unique_ptr<S3Handler> handler_;
};

TEST_F(GatewayChecksumTest, EveryAlgorithmIsVerifiedStoredAndReturnedInChecksumMode) {
  const std::string data = "checksummed bytes";
  for (ChecksumAlgorithm a : kAllChecksumAlgorithms) {
    const std::string key = "k-" + std::string(ChecksumName(a));
    const std::string value = ChecksumBase64(a, data);
    auto put = Do(Signed("PUT", "/bucket/" + key, data, {{ChecksumHeader(a), value}}));
    ASSERT_EQ(put.status, 200) << put.body;
    EXPECT_EQ(H(put, ChecksumHeader(a)), value);
    // Only with x-amz-checksum-mode: ENABLED.
    EXPECT_EQ(H(Do(Signed("HEAD", "/bucket/" + key)), ChecksumHeader(a)), "");
    auto head = HeadWithChecksum(key);
    EXPECT_EQ(H(head, ChecksumHeader(a)), value) << key;
    EXPECT_EQ(H(head, "x-amz-checksum-type"), "FULL_OBJECT");
    auto get = Do(Signed("GET", "/bucket/" + key, "", {{"x-amz-checksum-mode", "ENABLED"}}));
    EXPECT_EQ(H(get, ChecksumHeader(a)), value);
    // A ranged read is not the object the checksum describes.
    auto ranged = Do(Signed("GET", "/bucket/" + key, "", {{"x-amz-checksum-mode", "ENABLED"}, {"Range", "bytes=0-1"}}));
    EXPECT_EQ(H(ranged, ChecksumHeader(a)), "");
  }
}

TEST_F(GatewayChecksumTest, MismatchIsBadDigestAndNothingIsStored) {
  for (ChecksumAlgorithm a : kAllChecksumAlgorithms) {
    auto put = Do(Signed("PUT", "/bucket/bad", "actual bytes", {{ChecksumHeader(a), ChecksumBase64(a, "other")}}));
    EXPECT_EQ(put.status, 400);
    EXPECT_EQ(Code(put), "BadDigest");
    EXPECT_NE(put.body.find("The " + std::string(ChecksumName(a)) + " you specified did not match"), std::string::npos)
        << put.body;
    EXPECT_EQ(HeadStatus("bad"), 404);
  }
  // Malformed values, two algorithms at once, an SDK algorithm without its checksum: InvalidRequest.
  EXPECT_EQ(Code(Do(Signed("PUT", "/bucket/bad", "x", {{"x-amz-checksum-crc32", "AAAAAAAAAAA="}}))), "InvalidRequest");
  EXPECT_EQ(Code(Do(Signed("PUT", "/bucket/bad", "x",
                           {{"x-amz-checksum-crc32", ChecksumBase64(kCrc32, "x")},
                            {"x-amz-checksum-sha1", ChecksumBase64(ChecksumAlgorithm::kSha1, "x")}}))),
            "InvalidRequest");
  EXPECT_EQ(Code(Do(Signed("PUT", "/bucket/bad", "x", {{"x-amz-sdk-checksum-algorithm", "CRC32"}}))), "InvalidRequest");
  EXPECT_EQ(HeadStatus("bad"), 404);
}

TEST_F(GatewayChecksumTest, ContentMd5IsVerified) {
  const std::string data = "md5 body";
  EXPECT_EQ(Do(Signed("PUT", "/bucket/md5", data, {{"Content-MD5", Base64Encode(Md5(data))}})).status, 200);
  auto bad = Do(Signed("PUT", "/bucket/md5-bad", data, {{"Content-MD5", Base64Encode(Md5("other"))}}));
  EXPECT_EQ(bad.status, 400);
  EXPECT_EQ(Code(bad), "BadDigest");
  auto malformed = Do(Signed("PUT", "/bucket/md5-bad", data, {{"Content-MD5", "not-md5"}}));
  EXPECT_EQ(malformed.status, 400);
  EXPECT_EQ(Code(malformed), "InvalidDigest");
  EXPECT_EQ(HeadStatus("md5-bad"), 404);
}

TEST_F(GatewayChecksumTest, TrailerChecksumsSignedAndUnsigned) {
  const std::string data(70000, 'q');
  const std::string good = ChecksumBase64(kCrc32, data), wrong = ChecksumBase64(kCrc32, "nope");
  for (bool sign : {false, true}) {
    auto put = Do(Trailer("t", data, good, sign));
    ASSERT_EQ(put.status, 200) << put.body;
    auto head = HeadWithChecksum("t");
    EXPECT_EQ(H(head, "x-amz-checksum-crc32"), good);
    EXPECT_EQ(H(head, "Content-Encoding"), "");  // aws-chunked is framing, not kept
    auto bad = Do(Trailer("t-bad", data, wrong, sign));
    EXPECT_EQ(bad.status, 400);
    EXPECT_EQ(Code(bad), "BadDigest") << bad.body;
    EXPECT_EQ(HeadStatus("t-bad"), 404);
  }
}

TEST_F(GatewayChecksumTest, MultipartCompositeAndFullObject) {
  const std::string p1(32, 'a'), p2 = "tail part";
  struct Case {
    ChecksumAlgorithm a;
    const char* type;  // nullptr: the algorithm's default
    std::string expected;
  };
  std::vector<Case> cases = {
      {kCrc32, nullptr, ChecksumBase64(kCrc32, ComputeChecksum(kCrc32, p1) + ComputeChecksum(kCrc32, p2)) + "-2"},
      {ChecksumAlgorithm::kSha256, "COMPOSITE",
       ChecksumBase64(ChecksumAlgorithm::kSha256, ComputeChecksum(ChecksumAlgorithm::kSha256, p1) +
                                                      ComputeChecksum(ChecksumAlgorithm::kSha256, p2)) +
           "-2"},
      {ChecksumAlgorithm::kCrc32c, "FULL_OBJECT", ChecksumBase64(ChecksumAlgorithm::kCrc32c, p1 + p2)},
      {ChecksumAlgorithm::kCrc64Nvme, nullptr, ChecksumBase64(ChecksumAlgorithm::kCrc64Nvme, p1 + p2)},
  };
  for (const Case& c : cases) {
    const std::string key = "mp-" + std::string(ChecksumName(c.a));
    net::HttpHeaders create_headers{{"x-amz-checksum-algorithm", std::string(ChecksumName(c.a))}};
    if (c.type) create_headers.emplace_back("x-amz-checksum-type", c.type);
    auto create = Do(Signed("POST", "/bucket/" + key + "?uploads", "", create_headers));
    ASSERT_EQ(create.status, 200) << create.body;
    auto id = net::DecodeInitiateMultipartUpload(create.body)->upload_id;
    std::vector<net::S3CompletedPart> parts;
    int n = 0;
    for (const std::string& p : {p1, p2}) {
      ++n;
      std::string target = "/bucket/" + key + "?partNumber=" + std::to_string(n) + "&uploadId=" + id;
      auto up = Do(Signed("PUT", target, p, {{ChecksumHeader(c.a), ChecksumBase64(c.a, p)}}));
      ASSERT_EQ(up.status, 200) << up.body;
      parts.push_back({n, H(up, "ETag"), {std::string(ChecksumName(c.a)), ChecksumBase64(c.a, p)}});
    }
    // A part checksum that is not the one uploaded: InvalidPart.
    auto wrong_parts = parts;
    wrong_parts[0].checksum.value = ChecksumBase64(c.a, "other");
    auto refused =
        Do(Signed("POST", "/bucket/" + key + "?uploadId=" + id, net::EncodeCompleteMultipartUpload(wrong_parts)));
    EXPECT_EQ(Code(refused), "InvalidPart") << refused.body;
    // A whole-object checksum that does not match: BadDigest, nothing stored.
    net::HttpHeaders wrong_whole{{ChecksumHeader(c.a), ChecksumBase64(c.a, "whole?")}};
    auto bad = Do(
        Signed("POST", "/bucket/" + key + "?uploadId=" + id, net::EncodeCompleteMultipartUpload(parts), wrong_whole));
    EXPECT_EQ(Code(bad), "BadDigest") << bad.body;
    EXPECT_EQ(HeadStatus(key), 404);
    net::HttpHeaders whole{{ChecksumHeader(c.a), c.expected}};
    auto done =
        Do(Signed("POST", "/bucket/" + key + "?uploadId=" + id, net::EncodeCompleteMultipartUpload(parts), whole));
    ASSERT_EQ(done.status, 200) << done.body;
    auto result = net::DecodeCompleteMultipartUploadResult(done.body);
    ASSERT_TRUE(result.ok());
    EXPECT_EQ(result->checksum.value, c.expected) << key;
    auto head = HeadWithChecksum(key);
    EXPECT_EQ(H(head, ChecksumHeader(c.a)), c.expected) << key;
    EXPECT_EQ(H(head, "x-amz-checksum-type"), c.expected.find('-') == std::string::npos ? "FULL_OBJECT" : "COMPOSITE");
  }
  // S3 refuses SHA1 full-object and CRC64NVME composite.
  EXPECT_EQ(Code(Do(Signed("POST", "/bucket/x?uploads", "",
                           {{"x-amz-checksum-algorithm", "SHA1"}, {"x-amz-checksum-type", "FULL_OBJECT"}}))),
            "InvalidRequest");
  EXPECT_EQ(Code(Do(Signed("POST", "/bucket/x?uploads", "",
                           {{"x-amz-checksum-algorithm", "CRC64NVME"}, {"x-amz-checksum-type", "COMPOSITE"}}))),
            "InvalidRequest");
}

TEST_F(GatewayChecksumTest, ListPartsReturnsEachPartsChecksum) {
  auto create = Do(Signed("POST", "/bucket/lp?uploads", "", {{"x-amz-checksum-algorithm", "CRC32"}}));
  auto id = net::DecodeInitiateMultipartUpload(create.body)->upload_id;
  ASSERT_EQ(Do(Signed("PUT", "/bucket/lp?partNumber=1&uploadId=" + id, "part",
                      {{"x-amz-checksum-crc32", ChecksumBase64(kCrc32, "part")}}))
                .status,
            200);
  auto list = Do(Signed("GET", "/bucket/lp?uploadId=" + id));
  auto parts = net::DecodeListParts(list.body);
  ASSERT_TRUE(parts.ok()) << list.body;
  ASSERT_EQ(parts->parts.size(), 1u);
  EXPECT_EQ(parts->parts[0].checksum.algorithm, "CRC32");
  EXPECT_EQ(parts->parts[0].checksum.value, ChecksumBase64(kCrc32, "part"));
}

}  // namespace
}  // namespace strata::gateway

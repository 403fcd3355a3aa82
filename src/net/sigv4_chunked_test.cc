#include <gtest/gtest.h>

#include "base/hash.h"
#include "base/random.h"
#include "net/sigv4.h"

namespace strata::net {
namespace {

const AwsCredentials kCreds{"AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", ""};
const char kSeed[] = "4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9";

SecretLookup Lookup() {
  return [](std::string_view ak) -> std::optional<std::string> {
    if (ak == kCreds.access_key_id) return kCreds.secret_access_key;
    return std::nullopt;
  };
}

WallTime T0() { return *ParseAmzDate("20130524T000000Z"); }

// The AWS "signature calculation for streaming upload" example.
HttpRequestParts ChunkedPut() {
  HttpRequestParts req{"PUT",
                       "/examplebucket/chunkObject.txt",
                       "",
                       {{"Host", "s3.amazonaws.com"},
                        {"x-amz-storage-class", "REDUCED_REDUNDANCY"},
                        {"Content-Encoding", "aws-chunked"},
                        {"x-amz-decoded-content-length", "66560"},
                        {"Content-Length", "66824"}}};
  EXPECT_TRUE(SignRequest(req, kCreds, "us-east-1", "s3", T0(), kStreamingPayload).ok());
  return req;
}

struct Body {
  std::string wire;
  std::vector<std::string> signatures;
};

Body EncodeExample(const VerifiedRequest& v) {
  Body b;
  std::string prev = v.seed_signature;
  for (size_t n : {65536, 1024, 0}) {
    b.wire += EncodeSignedChunk(v.signing_key, v.amz_date, v.scope, &prev, std::string(n, 'a'));
    b.signatures.push_back(prev);
  }
  // The final zero-size chunk already ends with the empty line that closes the body.
  return b;
}

TEST(AwsChunked, AwsExampleSignatures) {
  HttpRequestParts req = ChunkedPut();
  auto v = VerifyRequest(req, Lookup(), T0());
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_EQ(v->seed_signature, kSeed);
  EXPECT_TRUE(v->streaming());
  Body b = EncodeExample(*v);
  EXPECT_EQ(b.signatures[0], "ad80c730a21e5b8d04586a2213dd63b9a0e99e0e2307b0ade35a65485a288648");
  EXPECT_EQ(b.signatures[1], "0055627c9e194cb4542bae2aa5492e3c1575bbb81b612b7d234b86a503ef5497");
  EXPECT_EQ(b.signatures[2], "b6c6ea8a5354eaf15b3cb7646744f4275b71ea724fed81ceb9323e279d449df9");
  EXPECT_EQ(b.wire.size(), 66824u);  // the example's Content-Length
}

TEST(AwsChunked, DecodesAnySplit) {
  auto v = VerifyRequest(ChunkedPut(), Lookup(), T0());
  ASSERT_TRUE(v.ok());
  Body b = EncodeExample(*v);
  Random rng(7);
  for (int round = 0; round < 20; ++round) {
    AwsChunkedOptions opts;
    opts.decoded_content_length = 66560;
    AwsChunkedDecoder d = AwsChunkedDecoder::ForRequest(*v, opts);
    std::string out;
    size_t pos = 0;
    while (pos < b.wire.size()) {
      size_t n = round == 0 ? 1 : 1 + rng.Uniform(round * 500);
      n = std::min(n, b.wire.size() - pos);
      ASSERT_TRUE(d.Feed(std::string_view(b.wire).substr(pos, n), &out).ok());
      pos += n;
    }
    ASSERT_TRUE(d.Finish().ok()) << d.Finish();
    EXPECT_TRUE(d.done());
    EXPECT_EQ(out, std::string(66560, 'a'));
    EXPECT_EQ(d.decoded_bytes(), 66560u);
  }
}

TEST(AwsChunked, TamperedDataOrSignatureFails) {
  auto v = VerifyRequest(ChunkedPut(), Lookup(), T0());
  ASSERT_TRUE(v.ok());
  Body b = EncodeExample(*v);
  for (size_t at : {size_t{100}, size_t{65800}}) {
    std::string wire = b.wire;
    ASSERT_LT(at, wire.size());
    ASSERT_EQ(wire[at], 'a');
    wire[at] = 'b';
    AwsChunkedDecoder d = AwsChunkedDecoder::ForRequest(*v);
    std::string out;
    Status s = d.Feed(wire, &out);
    EXPECT_EQ(s.code(), Code::kUnauthenticated);
    EXPECT_EQ(s.foreign_code(), "SignatureDoesNotMatch");
    EXPECT_LE(out.size(), 65536u) << "unverified data must not be released";
    EXPECT_EQ(d.Feed("x", &out).code(), Code::kUnauthenticated);  // stays failed
  }
  // Chunks replayed out of order break the chain.
  std::string prev = v->seed_signature;
  std::string c1 = EncodeSignedChunk(v->signing_key, v->amz_date, v->scope, &prev, "one");
  std::string c2 = EncodeSignedChunk(v->signing_key, v->amz_date, v->scope, &prev, "two");
  AwsChunkedDecoder d = AwsChunkedDecoder::ForRequest(*v);
  std::string out;
  EXPECT_EQ(d.Feed(c2 + c1, &out).foreign_code(), "SignatureDoesNotMatch");
}

TEST(AwsChunked, LyingSizesAndBadFramingAreRejected) {
  auto v = VerifyRequest(ChunkedPut(), Lookup(), T0());
  ASSERT_TRUE(v.ok());
  std::string sig(64, 'a');
  for (const std::string& wire : std::vector<std::string>{
           "ffffffffffffffff;chunk-signature=" + sig + "\r\n", "fffffffffffffffff;chunk-signature=" + sig + "\r\n",
           "zz;chunk-signature=" + sig + "\r\n", "10;chunk-signature=" + sig + "\n", std::string("10;other=1\r\n"),
           std::string(5000, '1'), "3;chunk-signature=" + sig + "\r\nabcXY"}) {
    SCOPED_TRACE(wire.substr(0, 40));
    AwsChunkedOptions opts;
    opts.max_chunk_size = 1 << 20;
    AwsChunkedDecoder d = AwsChunkedDecoder::ForRequest(*v, opts);
    std::string out;
    Status s = d.Feed(wire, &out);
    EXPECT_FALSE(s.ok());
    EXPECT_TRUE(out.empty());
  }
  // Truncated body: Finish fails.
  AwsChunkedDecoder d = AwsChunkedDecoder::ForRequest(*v);
  std::string out;
  Body b = EncodeExample(*v);
  ASSERT_TRUE(d.Feed(std::string_view(b.wire).substr(0, 1000), &out).ok());
  EXPECT_EQ(d.Finish().code(), Code::kInvalidArgument);
  // Decoded length that disagrees with x-amz-decoded-content-length.
  AwsChunkedOptions opts;
  opts.decoded_content_length = 100;
  AwsChunkedDecoder short_len = AwsChunkedDecoder::ForRequest(*v, opts);
  EXPECT_EQ(short_len.Feed(b.wire, &out).code(), Code::kInvalidArgument);
}

TEST(AwsChunked, UnsignedTrailerMode) {
  HttpRequestParts req{"PUT", "/b/k", "", {{"Host", "localhost"}}};
  ASSERT_TRUE(SignRequest(req, kCreds, "us-east-1", "s3", T0(), kStreamingUnsignedTrailer).ok());
  auto v = VerifyRequest(req, Lookup(), T0());
  ASSERT_TRUE(v.ok()) << v.status();
  AwsChunkedDecoder d = AwsChunkedDecoder::ForRequest(*v);
  std::string out;
  ASSERT_TRUE(d.Feed("5\r\nhello\r\n6\r\n world\r\n0\r\nx-amz-checksum-crc32:AAAAAA==\r\n\r\n", &out).ok());
  ASSERT_TRUE(d.Finish().ok());
  EXPECT_EQ(out, "hello world");
  ASSERT_EQ(d.trailers().size(), 1u);
  EXPECT_EQ(d.trailers()[0].first, "x-amz-checksum-crc32");
  EXPECT_EQ(d.Feed("more", &out).code(), Code::kInvalidArgument);
}

}  // namespace
}  // namespace strata::net

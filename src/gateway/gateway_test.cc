// Unit tests of the S3 routing, XML and auth over mem stores, without sockets.
#include "gateway/gateway.h"

#include <gtest/gtest.h>

#include "base/hash.h"
#include "gateway/buckets.h"
#include "gateway/config.h"
#include "gateway/observer.h"
#include "gateway/s3_handler.h"
#include "gateway/sigv2.h"
#include "net/s3_xml.h"
#include "net/sigv4.h"
#include "net/uri.h"
#include "object/mem_store.h"

namespace strata::gateway {

class GatewayObserverTestPeer {
 public:
  static std::string FormatLogLine(const RequestRecord& r) { return GatewayObserver::FormatLogLine(r); }
};

namespace {

const net::AwsCredentials kCreds{"AKIDGATEWAY", "secret-gateway-key", ""};

class GatewayTest : public ::testing::Test {
 protected:
  void SetUp() override { Rebuild(); }

  void Rebuild() {
    cache::CacheOptions co;
    co.block_size = 64 << 10;
    co.ram_bytes = 64 << 20;
    cache_ = *cache::BlockCache::Open(co);
    object::MemStoreOptions mo;
    mo.min_part_size = 16;
    std::map<std::string, object::ObjectStorePtr> stores{{"bucket", object::MakeMemStore("", mo)},
                                                         {"other", object::MakeMemStore("", mo)}};
    buckets_ = BucketSet::FromStores(stores, cache_);
    S3HandlerOptions ho;
    ho.keys[kCreds.access_key_id] = kCreds.secret_access_key;
    ho.stream_chunk = 64 << 10;
    handler_ = std::make_unique<S3Handler>(*buckets_, ho);
  }

  // A request signed as the aws CLI would (header form, hex payload hash).
  GatewayRequest Signed(std::string method, std::string target, std::string body = "", net::HttpHeaders extra = {},
                        const net::AwsCredentials& creds = kCreds) {
    GatewayRequest r;
    r.method = method;
    r.target = target;
    size_t q = target.find('?');
    net::HttpRequestParts p{method, target.substr(0, q), q == std::string::npos ? "" : target.substr(q + 1), extra};
    p.headers.emplace_back("Host", "127.0.0.1:9000");
    Status st = net::SignRequest(p, creds, "us-east-1", "s3", RealClock().WallNow(), ToHex(Sha256(body)));
    EXPECT_TRUE(st.ok()) << st;
    r.headers = p.headers;
    r.body = Buffer::FromString(std::move(body));
    return r;
  }

  GatewayResponse Do(const GatewayRequest& r) { return handler_->Handle(r); }

  static std::string Body(GatewayResponse& r) {
    if (!r.stream) return r.body;
    std::string out;
    while (true) {
      auto b = r.stream->Next();
      EXPECT_TRUE(b.ok()) << b.status();
      if (!b.ok() || b->empty()) break;
      out += b->view();
    }
    return out;
  }
  static std::string H(const GatewayResponse& r, std::string_view name) {
    const std::string* v = net::FindHeader(r.headers, name);
    return v ? *v : "";
  }
  static std::string ErrorCode(const GatewayResponse& r) {
    auto e = net::DecodeS3Error(r.body);
    return e.ok() ? e->code : "<no error body>";
  }

  void Put(const std::string& key, const std::string& data, const std::string& bucket = "bucket") {
    auto r = Do(Signed("PUT", "/" + bucket + "/" + key, data));
    ASSERT_EQ(r.status, 200) << r.body;
  }

  std::shared_ptr<cache::BlockCache> cache_;
  std::unique_ptr<BucketSet> buckets_;
  std::unique_ptr<S3Handler> handler_;
};

TEST_F(GatewayTest, PutThenGetReturnsBytesAndQuotedEtag) {
  auto put = Do(Signed("PUT", "/bucket/dir/hello%20world.txt", "hello"));
  ASSERT_EQ(put.status, 200) << put.body;
  EXPECT_EQ(H(put, "ETag"), "\"" + ToHex(Md5("hello")) + "\"");
  EXPECT_EQ(put.op, "PutObject");
  auto get = Do(Signed("GET", "/bucket/dir/hello%20world.txt"));
  ASSERT_EQ(get.status, 200);
  EXPECT_EQ(Body(get), "hello");
  EXPECT_EQ(get.content_length, 5u);
  EXPECT_EQ(H(get, "ETag"), H(put, "ETag"));
  EXPECT_FALSE(H(get, "Last-Modified").empty());
  EXPECT_FALSE(H(get, "x-amz-request-id").empty());
}

TEST_F(GatewayTest, LargeGetIsStreamedInBlockPieces) {
  std::string data(1 << 20, '\0');
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>(i * 7 + i / 4096);
  Put("big", data);
  auto get = Do(Signed("GET", "/bucket/big"));
  ASSERT_TRUE(get.stream);
  int pieces = 0;
  std::string out;
  while (true) {
    auto b = get.stream->Next();
    ASSERT_TRUE(b.ok()) << b.status();
    if (b->empty()) break;
    EXPECT_LE(b->size(), 64u << 10);
    out += b->view();
    ++pieces;
  }
  EXPECT_EQ(pieces, 16);
  EXPECT_EQ(out, data);
}

TEST_F(GatewayTest, ContentMd5IsChecked) {
  std::string good = Base64Encode(Md5("abc"));
  EXPECT_EQ(Do(Signed("PUT", "/bucket/k", "abc", {{"Content-MD5", good}})).status, 200);
  auto bad = Do(Signed("PUT", "/bucket/k2", "abd", {{"Content-MD5", good}}));
  EXPECT_EQ(bad.status, 400);
  EXPECT_EQ(ErrorCode(bad), "BadDigest");
  auto malformed = Do(Signed("PUT", "/bucket/k2", "abd", {{"Content-MD5", "not-base64!"}}));
  EXPECT_EQ(ErrorCode(malformed), "InvalidDigest");
  EXPECT_EQ(Do(Signed("HEAD", "/bucket/k2")).status, 404);  // nothing was written
}

TEST_F(GatewayTest, RangesAndInvalidRange) {
  Put("r", "0123456789");
  auto a = Do(Signed("GET", "/bucket/r", "", {{"Range", "bytes=2-5"}}));
  EXPECT_EQ(a.status, 206);
  EXPECT_EQ(Body(a), "2345");
  EXPECT_EQ(H(a, "Content-Range"), "bytes 2-5/10");
  auto suffix = Do(Signed("GET", "/bucket/r", "", {{"Range", "bytes=-3"}}));
  EXPECT_EQ(Body(suffix), "789");
  auto open = Do(Signed("GET", "/bucket/r", "", {{"Range", "bytes=8-100"}}));
  EXPECT_EQ(Body(open), "89");
  EXPECT_EQ(H(open, "Content-Range"), "bytes 8-9/10");
  auto past = Do(Signed("GET", "/bucket/r", "", {{"Range", "bytes=10-"}}));
  EXPECT_EQ(past.status, 416);
  EXPECT_EQ(ErrorCode(past), "InvalidRange");
  EXPECT_EQ(H(past, "Content-Range"), "bytes */10");
  auto garbage = Do(Signed("GET", "/bucket/r", "", {{"Range", "bytes=5-2"}}));
  EXPECT_EQ(garbage.status, 200);  // unparseable ranges are ignored, as S3 does
  EXPECT_EQ(Body(garbage), "0123456789");
}

TEST_F(GatewayTest, ConditionalGets) {
  Put("c", "data");
  std::string etag = "\"" + ToHex(Md5("data")) + "\"";
  EXPECT_EQ(Do(Signed("GET", "/bucket/c", "", {{"If-None-Match", etag}})).status, 304);
  EXPECT_EQ(Do(Signed("GET", "/bucket/c", "", {{"If-None-Match", "\"other\""}})).status, 200);
  EXPECT_EQ(Do(Signed("GET", "/bucket/c", "", {{"If-Match", etag}})).status, 200);
  auto pf = Do(Signed("GET", "/bucket/c", "", {{"If-Match", "\"other\""}}));
  EXPECT_EQ(pf.status, 412);
  EXPECT_EQ(ErrorCode(pf), "PreconditionFailed");
  std::string future = net::FormatHttpDate(RealClock().WallNow() + std::chrono::hours(1));
  std::string past = net::FormatHttpDate(RealClock().WallNow() - std::chrono::hours(1));
  EXPECT_EQ(Do(Signed("GET", "/bucket/c", "", {{"If-Modified-Since", future}})).status, 304);
  EXPECT_EQ(Do(Signed("GET", "/bucket/c", "", {{"If-Modified-Since", past}})).status, 200);
  EXPECT_EQ(Do(Signed("GET", "/bucket/c", "", {{"If-Unmodified-Since", past}})).status, 412);
  // If-Match wins over If-Unmodified-Since (RFC 7232, S3).
  EXPECT_EQ(Do(Signed("GET", "/bucket/c", "", {{"If-Match", etag}, {"If-Unmodified-Since", past}})).status, 200);
  auto nm = Do(Signed("GET", "/bucket/c", "", {{"If-None-Match", etag}}));
  EXPECT_FALSE(nm.send_body);
  EXPECT_EQ(H(nm, "ETag"), etag);
}

TEST_F(GatewayTest, HeadHasLengthButNoBody) {
  Put("h", "12345");
  auto h = Do(Signed("HEAD", "/bucket/h"));
  EXPECT_EQ(h.status, 200);
  EXPECT_EQ(h.content_length, 5u);
  EXPECT_FALSE(h.send_body);
  auto missing = Do(Signed("HEAD", "/bucket/nope"));
  EXPECT_EQ(missing.status, 404);
  EXPECT_FALSE(missing.send_body);
  EXPECT_EQ(ErrorCode(Do(Signed("GET", "/bucket/nope"))), "NoSuchKey");
  EXPECT_EQ(ErrorCode(Do(Signed("GET", "/nobucket/x"))), "NoSuchBucket");
}

TEST_F(GatewayTest, WrongSecretUnknownKeyAndAnonymousAreRefused) {
  auto bad = Do(Signed("GET", "/bucket/x", "", {}, {"AKIDGATEWAY", "wrong", ""}));
  EXPECT_EQ(bad.status, 403);
  EXPECT_EQ(ErrorCode(bad), "SignatureDoesNotMatch");
  auto unknown = Do(Signed("GET", "/bucket/x", "", {}, {"NOSUCHKEY", "s", ""}));
  EXPECT_EQ(ErrorCode(unknown), "InvalidAccessKeyId");
  GatewayRequest anon{"GET", "/bucket/x", {{"Host", "h"}}, {}, ""};
  auto a = Do(anon);
  EXPECT_EQ(a.status, 403);
  EXPECT_EQ(ErrorCode(a), "AccessDenied");
  // PreCheck refuses before any body is read.
  auto pre = handler_->PreCheck(Signed("PUT", "/bucket/x", "body", {}, {"AKIDGATEWAY", "wrong", ""}));
  ASSERT_TRUE(pre.has_value());
  EXPECT_EQ(pre->status, 403);
  EXPECT_FALSE(handler_->PreCheck(Signed("PUT", "/bucket/x", "body")).has_value());
}

TEST_F(GatewayTest, PayloadHashMismatchIsRefused) {
  GatewayRequest r = Signed("PUT", "/bucket/p", "original");
  r.body = Buffer::Copy("tampered");
  auto resp = Do(r);
  EXPECT_EQ(resp.status, 400);
  EXPECT_EQ(ErrorCode(resp), "XAmzContentSHA256Mismatch");
}

TEST_F(GatewayTest, PresignedUrlGet) {
  Put("pre", "presigned bytes");
  net::HttpRequestParts p{"GET", "/bucket/pre", "", {{"Host", "127.0.0.1:9000"}}};
  auto query = net::PresignUrl(p, kCreds, "us-east-1", "s3", RealClock().WallNow(), std::chrono::minutes(5));
  ASSERT_TRUE(query.ok()) << query.status();
  GatewayRequest r{"GET", "/bucket/pre?" + *query, {{"Host", "127.0.0.1:9000"}}, {}, ""};
  auto resp = Do(r);
  ASSERT_EQ(resp.status, 200) << resp.body;
  EXPECT_EQ(Body(resp), "presigned bytes");
  GatewayRequest tampered{"GET", "/bucket/other?" + *query, {{"Host", "127.0.0.1:9000"}}, {}, ""};
  EXPECT_EQ(ErrorCode(Do(tampered)), "SignatureDoesNotMatch");
}

TEST_F(GatewayTest, StreamingSignedChunkedUpload) {
  std::string payload(100000, 'z');
  net::HttpRequestParts p{"PUT", "/bucket/chunked", "", {{"Host", "127.0.0.1:9000"}}};
  p.headers.emplace_back("x-amz-decoded-content-length", std::to_string(payload.size()));
  p.headers.emplace_back("Content-Encoding", "aws-chunked");
  WallTime now = RealClock().WallNow();
  ASSERT_TRUE(net::SignRequest(p, kCreds, "us-east-1", "s3", now, net::kStreamingPayload).ok());
  // Reconstruct the seed signature and scope the way a client does.
  auto v = net::VerifyRequest(
      p, [](std::string_view) { return std::optional<std::string>(kCreds.secret_access_key); }, now);
  ASSERT_TRUE(v.ok()) << v.status();
  std::string prev = v->seed_signature, wire;
  for (size_t off = 0; off < payload.size(); off += 65536) {
    wire += net::EncodeSignedChunk(v->signing_key, v->amz_date, v->scope, &prev, payload.substr(off, 65536));
  }
  std::string good_wire = wire + net::EncodeSignedChunk(v->signing_key, v->amz_date, v->scope, &prev, "");
  GatewayRequest r{"PUT", "/bucket/chunked", p.headers, Buffer::Copy(good_wire), ""};
  auto resp = Do(r);
  ASSERT_EQ(resp.status, 200) << resp.body;
  auto get = Do(Signed("GET", "/bucket/chunked"));
  EXPECT_EQ(Body(get), payload);
  // Flip one payload byte: the chunk signature no longer matches.
  std::string bad_wire = good_wire;
  bad_wire[bad_wire.find("\r\n") + 10] ^= 1;
  GatewayRequest bad{"PUT", "/bucket/chunked", p.headers, Buffer::Copy(bad_wire), ""};
  EXPECT_EQ(ErrorCode(Do(bad)), "SignatureDoesNotMatch");
}

TEST_F(GatewayTest, ListObjectsV2PaginatesWithDelimiter) {
  for (std::string k : {"a/1", "a/2", "b", "c/x/y", "d", "e f"}) Put(k, "v");
  auto r = Do(Signed("GET", "/bucket?list-type=2&delimiter=%2F&max-keys=2"));
  ASSERT_EQ(r.status, 200) << r.body;
  auto page = net::DecodeListObjectsV2(r.body);
  ASSERT_TRUE(page.ok()) << page.status();
  std::vector<std::string> seen;
  for (auto& o : page->contents) seen.push_back(o.key);
  for (auto& p : page->common_prefixes) seen.push_back(p);
  EXPECT_TRUE(page->is_truncated);
  std::string token = page->next_continuation_token;
  int pages = 1;
  while (!token.empty() && pages < 10) {
    auto next =
        Do(Signed("GET", "/bucket?list-type=2&delimiter=%2F&max-keys=2&continuation-token=" + net::UriEncode(token)));
    ASSERT_EQ(next.status, 200) << next.body;
    auto p2 = net::DecodeListObjectsV2(next.body);
    ASSERT_TRUE(p2.ok());
    for (auto& o : p2->contents) seen.push_back(o.key);
    for (auto& p : p2->common_prefixes) seen.push_back(p);
    token = p2->is_truncated ? p2->next_continuation_token : "";
    ++pages;
  }
  std::sort(seen.begin(), seen.end());
  EXPECT_EQ(seen, (std::vector<std::string>{"a/", "b", "c/", "d", "e f"}));
  auto bad = Do(Signed("GET", "/bucket?list-type=2&continuation-token=%21%21"));
  EXPECT_EQ(ErrorCode(bad), "InvalidArgument");
  auto url = Do(Signed("GET", "/bucket?list-type=2&prefix=e&encoding-type=url"));
  EXPECT_NE(url.body.find("<Key>e%20f</Key>"), std::string::npos) << url.body;
  auto start = net::DecodeListObjectsV2(Do(Signed("GET", "/bucket?list-type=2&start-after=c%2Fx%2Fy")).body);
  ASSERT_TRUE(start.ok());
  ASSERT_EQ(start->contents.size(), 2u);
  EXPECT_EQ(start->contents[0].key, "d");
  EXPECT_EQ(start->contents[0].etag, "\"" + ToHex(Md5("v")) + "\"");
}

TEST_F(GatewayTest, ListObjectsV1MarkerSkipsCommonPrefix) {
  for (std::string k : {"a/1", "a/2", "a/3", "b"}) Put(k, "v");
  auto r = Do(Signed("GET", "/bucket?delimiter=%2F&max-keys=1"));
  ASSERT_EQ(r.status, 200);
  EXPECT_NE(r.body.find("<CommonPrefixes><Prefix>a/</Prefix></CommonPrefixes>"), std::string::npos) << r.body;
  EXPECT_NE(r.body.find("<NextMarker>a/</NextMarker>"), std::string::npos) << r.body;
  auto r2 = Do(Signed("GET", "/bucket?delimiter=%2F&max-keys=1&marker=a%2F"));
  EXPECT_NE(r2.body.find("<Key>b</Key>"), std::string::npos) << r2.body;
  EXPECT_EQ(r2.body.find("<CommonPrefixes>"), std::string::npos) << r2.body;
  EXPECT_NE(r2.body.find("<IsTruncated>false</IsTruncated>"), std::string::npos);
}

TEST_F(GatewayTest, BucketOperations) {
  auto list = Do(Signed("GET", "/"));
  auto parsed = net::DecodeListAllMyBuckets(list.body);
  ASSERT_TRUE(parsed.ok()) << list.body;
  ASSERT_EQ(parsed->buckets.size(), 2u);
  EXPECT_EQ(parsed->buckets[0].name, "bucket");
  EXPECT_EQ(Do(Signed("HEAD", "/bucket")).status, 200);
  auto missing = Do(Signed("HEAD", "/missing"));
  EXPECT_EQ(missing.status, 404);
  EXPECT_EQ(missing.error_code, "NoSuchBucket");
  auto loc = Do(Signed("GET", "/bucket?location"));
  EXPECT_NE(loc.body.find("LocationConstraint"), std::string::npos);
  EXPECT_EQ(Do(Signed("PUT", "/bucket")).status, 200);  // us-east-1: re-creating one's own bucket (gateway_compat_test)
  EXPECT_EQ(Do(Signed("PUT", "/newbucket")).status, 501);  // fixed buckets only
  EXPECT_EQ(Do(Signed("GET", "/bucket?versioning")).status, 200);
}

TEST_F(GatewayTest, MultipartUpload) {
  auto create = Do(Signed("POST", "/bucket/mp?uploads"));
  ASSERT_EQ(create.status, 200) << create.body;
  auto init = net::DecodeInitiateMultipartUpload(create.body);
  ASSERT_TRUE(init.ok());
  std::string id = net::UriEncode(init->upload_id);
  std::string p1(20, 'a'), p2 = "tail";
  auto u1 = Do(Signed("PUT", "/bucket/mp?partNumber=1&uploadId=" + id, p1));
  auto u2 = Do(Signed("PUT", "/bucket/mp?partNumber=2&uploadId=" + id, p2));
  ASSERT_EQ(u1.status, 200) << u1.body;
  ASSERT_EQ(u2.status, 200);
  EXPECT_EQ(H(u1, "ETag"), "\"" + ToHex(Md5(p1)) + "\"");
  auto lp = Do(Signed("GET", "/bucket/mp?uploadId=" + id));
  auto parts = net::DecodeListParts(lp.body);
  ASSERT_TRUE(parts.ok()) << lp.body;
  ASSERT_EQ(parts->parts.size(), 2u);
  EXPECT_EQ(parts->parts[1].size, 4u);
  auto lp1 = net::DecodeListParts(Do(Signed("GET", "/bucket/mp?uploadId=" + id + "&max-parts=1")).body);
  ASSERT_TRUE(lp1.ok());
  EXPECT_TRUE(lp1->is_truncated);
  EXPECT_EQ(lp1->next_part_number_marker, 1);
  std::string wrong = net::EncodeCompleteMultipartUpload({{1, H(u1, "ETag"), {}}, {2, "\"deadbeef\"", {}}});
  EXPECT_EQ(Do(Signed("POST", "/bucket/mp?uploadId=" + id, wrong)).error_code, "InvalidPart");
  std::string order = net::EncodeCompleteMultipartUpload({{2, H(u2, "ETag"), {}}, {1, H(u1, "ETag"), {}}});
  EXPECT_EQ(Do(Signed("POST", "/bucket/mp?uploadId=" + id, order)).error_code, "InvalidPartOrder");
  // A part number listed again: its last entry counts (here a stale ETag).
  std::string relisted =
      net::EncodeCompleteMultipartUpload({{1, H(u1, "ETag"), {}}, {1, "\"deadbeef\"", {}}, {2, H(u2, "ETag"), {}}});
  EXPECT_EQ(Do(Signed("POST", "/bucket/mp?uploadId=" + id, relisted)).error_code, "InvalidPart");
  std::string body = net::EncodeCompleteMultipartUpload({{1, H(u1, "ETag"), {}}, {2, H(u2, "ETag"), {}}});
  auto done = Do(Signed("POST", "/bucket/mp?uploadId=" + id, body));
  ASSERT_EQ(done.status, 200) << done.body;
  auto result = net::DecodeCompleteMultipartUploadResult(done.body);
  ASSERT_TRUE(result.ok());
  EXPECT_TRUE(result->etag.ends_with("-2\"")) << result->etag;
  auto get = Do(Signed("GET", "/bucket/mp"));
  EXPECT_EQ(Body(get), p1 + p2);
  // Abort: the upload is gone afterwards.
  auto c2 = net::DecodeInitiateMultipartUpload(Do(Signed("POST", "/bucket/mp2?uploads")).body);
  std::string id2 = net::UriEncode(c2->upload_id);
  EXPECT_EQ(Do(Signed("DELETE", "/bucket/mp2?uploadId=" + id2)).status, 204);
  EXPECT_EQ(Do(Signed("PUT", "/bucket/mp2?partNumber=1&uploadId=" + id2, "x")).error_code, "NoSuchUpload");
  EXPECT_EQ(Do(Signed("PUT", "/bucket/mp2?partNumber=0&uploadId=" + id2, "x")).error_code, "InvalidArgument");
}

// Unversioned buckets through the versioning API: one "null" version per key.
TEST_F(GatewayTest, VersioningApiOnUnversionedBuckets) {
  for (const char* k : {"a", "b/1", "b/2", "c"}) Put(k, k);
  auto p1 = Do(Signed("GET", "/bucket?versions&delimiter=/&max-keys=2"));
  ASSERT_EQ(p1.status, 200) << p1.body;
  EXPECT_EQ(p1.op, "ListObjectVersions");
  EXPECT_NE(p1.body.find("<Key>a</Key><VersionId>null</VersionId><IsLatest>true</IsLatest>"), std::string::npos)
      << p1.body;
  EXPECT_NE(p1.body.find("<CommonPrefixes><Prefix>b/</Prefix></CommonPrefixes>"), std::string::npos) << p1.body;
  EXPECT_NE(p1.body.find("<IsTruncated>true</IsTruncated><NextKeyMarker>b/</NextKeyMarker>"), std::string::npos);
  auto p2 = Do(Signed("GET", "/bucket?versions&delimiter=/&max-keys=2&key-marker=b/"));
  EXPECT_NE(p2.body.find("<Key>c</Key>"), std::string::npos) << p2.body;
  EXPECT_EQ(p2.body.find("<Key>a</Key>"), std::string::npos) << p2.body;
  EXPECT_EQ(p2.body.find("b/"), p2.body.find("<KeyMarker>b/") + 11) << "b/ must not be listed again: " << p2.body;
  auto p3 = Do(Signed("GET", "/bucket?versions&key-marker=b/1&version-id-marker=null"));
  EXPECT_NE(p3.body.find("<Key>b/2</Key>"), std::string::npos) << p3.body;
  EXPECT_EQ(p3.body.find("<Key>b/1</Key>"), std::string::npos) << p3.body;
  EXPECT_EQ(Do(Signed("GET", "/bucket?versions&key-marker=a&version-id-marker=v2")).error_code, "InvalidArgument");

  std::string enable = "<VersioningConfiguration><Status>Enabled</Status></VersioningConfiguration>";
  auto on = Do(Signed("PUT", "/bucket?versioning", enable));
  EXPECT_EQ(on.status, 501);
  EXPECT_EQ(on.error_code, "NotImplemented");
  EXPECT_NE(on.body.find("not kept"), std::string::npos) << on.body;
  std::string suspend = "<VersioningConfiguration><Status>Suspended</Status></VersioningConfiguration>";
  EXPECT_EQ(Do(Signed("PUT", "/bucket?versioning", suspend)).status, 200);
  EXPECT_EQ(Do(Signed("GET", "/bucket?versioning")).body.find("<Status>"), std::string::npos);

  EXPECT_EQ(Do(Signed("GET", "/bucket/a?versionId=null")).status, 200);
  EXPECT_EQ(Do(Signed("DELETE", "/bucket/a?versionId=3HL4kqtJlcpXroDTDmJ")).error_code, "InvalidArgument");
  auto del = Do(Signed("DELETE", "/bucket/a?versionId=null"));
  EXPECT_EQ(del.status, 204);
  EXPECT_EQ(H(del, "x-amz-version-id"), "null");
  EXPECT_EQ(Do(Signed("HEAD", "/bucket/a")).status, 404);
  std::string multi =
      "<Delete><Object><Key>c</Key><VersionId>null</VersionId></Object>"
      "<Object><Key>b/1</Key><VersionId>other</VersionId></Object></Delete>";
  auto md = Do(Signed("POST", "/bucket?delete", multi));
  ASSERT_EQ(md.status, 200) << md.body;
  EXPECT_NE(md.body.find("<Deleted><Key>c</Key><VersionId>null</VersionId></Deleted>"), std::string::npos) << md.body;
  EXPECT_NE(md.body.find("<Code>NoSuchVersion</Code>"), std::string::npos) << md.body;
  EXPECT_EQ(Do(Signed("HEAD", "/bucket/c")).status, 404);
  EXPECT_EQ(Do(Signed("HEAD", "/bucket/b/1")).status, 200);
}

TEST_F(GatewayTest, ConditionalWritesAnswerAsAws) {
  auto ifm = [](std::string v) { return net::HttpHeaders{{"If-Match", std::move(v)}}; };
  auto inm = [](std::string v) { return net::HttpHeaders{{"If-None-Match", std::move(v)}}; };
  auto missing = Do(Signed("PUT", "/bucket/cw", "x", ifm("\"" + ToHex(Md5("x")) + "\"")));
  EXPECT_EQ(missing.status, 404);
  EXPECT_EQ(missing.error_code, "NoSuchKey");
  EXPECT_EQ(Do(Signed("PUT", "/bucket/cw", "1", inm("*"))).status, 200);
  EXPECT_EQ(Do(Signed("PUT", "/bucket/cw", "2", inm("*"))).error_code, "PreconditionFailed");
  EXPECT_EQ(Do(Signed("PUT", "/bucket/cw", "2", ifm("\"0123\""))).status, 412);
  EXPECT_EQ(Do(Signed("PUT", "/bucket/cw", "2", ifm("\"" + ToHex(Md5("1")) + "\""))).status, 200);
  EXPECT_EQ(Do(Signed("PUT", "/bucket/cw", "3", inm("\"" + ToHex(Md5("2")) + "\""))).status, 501);

  // CompleteMultipartUpload takes the same conditions.
  auto complete = [&](const std::string& key, net::HttpHeaders h) {
    auto init = net::DecodeInitiateMultipartUpload(Do(Signed("POST", "/bucket/" + key + "?uploads")).body);
    EXPECT_TRUE(init.ok());
    std::string id = net::UriEncode(init->upload_id);
    auto u = Do(Signed("PUT", "/bucket/" + key + "?partNumber=1&uploadId=" + id, "part"));
    return Do(Signed("POST", "/bucket/" + key + "?uploadId=" + id,
                     net::EncodeCompleteMultipartUpload({{1, H(u, "ETag"), {}}}), std::move(h)));
  };
  EXPECT_EQ(complete("cw", inm("*")).error_code, "PreconditionFailed");
  EXPECT_EQ(complete("cw-new", ifm("\"0123\"")).error_code, "NoSuchKey");
  EXPECT_EQ(complete("cw", ifm("\"0123\"")).status, 412);
  EXPECT_EQ(complete("cw", inm("\"0123\"")).status, 501);
  EXPECT_EQ(complete("cw-new", inm("*")).status, 200);
  EXPECT_EQ(complete("cw", ifm("\"" + ToHex(Md5("2")) + "\"")).status, 200);
}

TEST_F(GatewayTest, ListMultipartUploadsAndPartNumbers) {
  std::map<std::string, std::string> ids;
  for (const char* k : {"x/1", "x/2", "y", "y", "z"}) {
    auto init = net::DecodeInitiateMultipartUpload(Do(Signed("POST", "/bucket/" + std::string(k) + "?uploads")).body);
    ASSERT_TRUE(init.ok());
    ids[std::string(k) + (ids.count(k) ? "#2" : "")] = init->upload_id;
  }
  auto all = Do(Signed("GET", "/bucket?uploads"));
  ASSERT_EQ(all.status, 200) << all.body;
  EXPECT_EQ(all.op, "ListMultipartUploads");
  EXPECT_NE(all.body.find("<Key>x/1</Key><UploadId>" + ids["x/1"]), std::string::npos) << all.body;
  // Delimiter roll-up and paging by key + upload id markers.
  auto p1 = Do(Signed("GET", "/bucket?uploads&delimiter=/&max-uploads=2"));
  EXPECT_NE(p1.body.find("<CommonPrefixes><Prefix>x/</Prefix>"), std::string::npos) << p1.body;
  EXPECT_NE(p1.body.find("<NextKeyMarker>y</NextKeyMarker><NextUploadIdMarker>" + ids["y"]), std::string::npos)
      << p1.body;
  auto p2 = Do(Signed(
      "GET", "/bucket?uploads&delimiter=/&max-uploads=2&key-marker=y&upload-id-marker=" + net::UriEncode(ids["y"])));
  EXPECT_NE(p2.body.find("<UploadId>" + ids["y#2"]), std::string::npos) << p2.body;
  EXPECT_NE(p2.body.find("<Key>z</Key>"), std::string::npos) << p2.body;
  EXPECT_NE(p2.body.find("<IsTruncated>false</IsTruncated>"), std::string::npos) << p2.body;
  auto px = Do(Signed("GET", "/bucket?uploads&prefix=x/&key-marker=x/1"));
  EXPECT_NE(px.body.find("<Key>x/2</Key>"), std::string::npos) << px.body;
  EXPECT_EQ(px.body.find("<Key>x/1</Key>"), std::string::npos) << px.body;

  // A re-sent part replaces the earlier one.
  std::string id = net::UriEncode(ids["z"]);
  Do(Signed("PUT", "/bucket/z?partNumber=1&uploadId=" + id, "first"));
  auto again = Do(Signed("PUT", "/bucket/z?partNumber=1&uploadId=" + id, "second"));
  auto parts = net::DecodeListParts(Do(Signed("GET", "/bucket/z?uploadId=" + id)).body);
  ASSERT_TRUE(parts.ok());
  ASSERT_EQ(parts->parts.size(), 1u);
  EXPECT_EQ(parts->parts[0].etag, H(again, "ETag"));

  // ?partNumber of a single PUT: part 1 is the whole object, without a parts count (as AWS).
  Put("whole", "whole object");
  auto part1 = Do(Signed("GET", "/bucket/whole?partNumber=1"));
  EXPECT_EQ(part1.status, 200);
  EXPECT_EQ(Body(part1), "whole object");
  EXPECT_EQ(H(part1, "x-amz-mp-parts-count"), "");
  EXPECT_EQ(H(part1, "Content-Range"), "");
  EXPECT_EQ(Do(Signed("HEAD", "/bucket/whole?partNumber=2")).status, 416);
  EXPECT_EQ(Do(Signed("GET", "/bucket/whole?partNumber=2")).error_code, "InvalidPartNumber");
  EXPECT_EQ(Do(Signed("GET", "/bucket/whole?partNumber=0")).error_code, "InvalidArgument");
}

TEST_F(GatewayTest, PartNumberOfMultipartObject) {
  auto init = net::DecodeInitiateMultipartUpload(Do(Signed("POST", "/bucket/mp3?uploads")).body);
  ASSERT_TRUE(init.ok());
  std::string id = net::UriEncode(init->upload_id);
  const std::vector<std::string> data{std::string(20, 'a'), std::string(24, 'b'), "tail"};
  std::vector<net::S3CompletedPart> parts;
  for (int i = 0; i < 3; ++i) {
    auto u = Do(Signed("PUT", "/bucket/mp3?partNumber=" + std::to_string(i + 1) + "&uploadId=" + id, data[i]));
    ASSERT_EQ(u.status, 200) << u.body;
    parts.push_back({i + 1, H(u, "ETag"), {}});
  }
  auto done = Do(Signed("POST", "/bucket/mp3?uploadId=" + id, net::EncodeCompleteMultipartUpload(parts)));
  ASSERT_EQ(done.status, 200) << done.body;
  const std::string etag = net::DecodeCompleteMultipartUploadResult(done.body)->etag;
  const std::vector<std::string> ranges{"bytes 0-19/48", "bytes 20-43/48", "bytes 44-47/48"};
  for (int round = 0; round < 2; ++round) {  // the second from the cache
    for (int i = 0; i < 3; ++i) {
      const std::string q = "/bucket/mp3?partNumber=" + std::to_string(i + 1);
      auto get = Do(Signed("GET", q));
      ASSERT_EQ(get.status, 206) << get.body;
      EXPECT_EQ(Body(get), data[i]);
      EXPECT_EQ(get.content_length, data[i].size());
      EXPECT_EQ(H(get, "Content-Range"), ranges[i]);
      EXPECT_EQ(H(get, "x-amz-mp-parts-count"), "3");
      EXPECT_EQ(H(get, "ETag"), etag);
      auto head = Do(Signed("HEAD", q));
      EXPECT_EQ(head.status, 206);
      EXPECT_EQ(head.content_length, data[i].size());
      EXPECT_EQ(H(head, "Content-Range"), ranges[i]);
      EXPECT_EQ(H(head, "x-amz-mp-parts-count"), "3");
    }
  }
  auto past = Do(Signed("GET", "/bucket/mp3?partNumber=4"));
  EXPECT_EQ(past.status, 416);
  EXPECT_EQ(past.error_code, "InvalidPartNumber");
  EXPECT_EQ(Do(Signed("HEAD", "/bucket/mp3?partNumber=4")).status, 416);
  // A plain GET is unchanged; a copy is a single object (no parts carried over).
  auto whole = Do(Signed("GET", "/bucket/mp3"));
  EXPECT_EQ(whole.status, 200);
  EXPECT_EQ(H(whole, "x-amz-mp-parts-count"), "");
  ASSERT_EQ(Do(Signed("PUT", "/bucket/cp3", "", {{"x-amz-copy-source", "/bucket/mp3"}})).status, 200);
  auto copy1 = Do(Signed("GET", "/bucket/cp3?partNumber=1"));
  EXPECT_EQ(copy1.status, 200);
  EXPECT_EQ(Body(copy1).size(), 48u);
  EXPECT_EQ(H(copy1, "x-amz-mp-parts-count"), "");
  EXPECT_EQ(Do(Signed("GET", "/bucket/cp3?partNumber=2")).status, 416);
}

TEST_F(GatewayTest, CopyObject) {
  Put("src", "copy me");
  auto same = Do(Signed("PUT", "/bucket/dst", "", {{"x-amz-copy-source", "/bucket/src"}}));
  ASSERT_EQ(same.status, 200) << same.body;
  auto r = net::DecodeCopyObjectResult(same.body);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->etag, "\"" + ToHex(Md5("copy me")) + "\"");
  auto dst = Do(Signed("GET", "/bucket/dst"));
  EXPECT_EQ(Body(dst), "copy me");
  auto cross = Do(Signed("PUT", "/other/c", "", {{"x-amz-copy-source", "bucket/src"}}));
  ASSERT_EQ(cross.status, 200) << cross.body;
  auto got = Do(Signed("GET", "/other/c"));
  EXPECT_EQ(Body(got), "copy me");
  EXPECT_EQ(Do(Signed("PUT", "/bucket/src", "", {{"x-amz-copy-source", "bucket/src"}})).error_code, "InvalidRequest");
  EXPECT_EQ(Do(Signed("PUT", "/bucket/src", "",
                      {{"x-amz-copy-source", "bucket/src"}, {"x-amz-metadata-directive", "REPLACE"}}))
                .status,
            200);
  EXPECT_EQ(Do(Signed("PUT", "/bucket/d2", "",
                      {{"x-amz-copy-source", "bucket/src"}, {"x-amz-copy-source-if-match", "\"nope\""}}))
                .error_code,
            "PreconditionFailed");
  EXPECT_EQ(Do(Signed("PUT", "/bucket/d3", "", {{"x-amz-copy-source", "bucket/missing"}})).error_code, "NoSuchKey");
}

TEST_F(GatewayTest, DeleteAndDeleteObjects) {
  Put("d1", "1");
  Put("d2", "2");
  EXPECT_EQ(Do(Signed("DELETE", "/bucket/d1")).status, 204);
  EXPECT_EQ(Do(Signed("DELETE", "/bucket/d1")).status, 204);  // missing: still 204
  auto multi = Do(Signed("POST", "/bucket?delete", net::EncodeDeleteRequest({false, {"d2", "never"}, {}})));
  ASSERT_EQ(multi.status, 200) << multi.body;
  auto result = net::DecodeDeleteResult(multi.body);
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(result->deleted.size(), 2u);
  EXPECT_EQ(Do(Signed("HEAD", "/bucket/d2")).status, 404);
  EXPECT_EQ(Do(Signed("POST", "/bucket?delete", "<not xml")).error_code, "MalformedXML");
}

TEST_F(GatewayTest, WritesInvalidateCachedBlocks) {
  Put("w", "first version");
  auto g1 = Do(Signed("GET", "/bucket/w"));
  EXPECT_EQ(Body(g1), "first version");
  Put("w", "second");
  auto g2 = Do(Signed("GET", "/bucket/w"));
  EXPECT_EQ(Body(g2), "second");
}

TEST_F(GatewayTest, UnknownOperationsAndBadTargets) {
  Put("k", "v");
  EXPECT_EQ(Do(Signed("GET", "/bucket/k?torrent")).status, 501);
  EXPECT_EQ(Do(Signed("GET", "/bucket?policy")).error_code, "NotImplemented");
  EXPECT_EQ(Do(Signed("PATCH", "/bucket/k")).status, 405);
  GatewayRequest junk{"GET", "no-slash", {}, {}, ""};
  EXPECT_EQ(Do(junk).error_code, "InvalidURI");
  GatewayRequest bad_escape{"GET", "/bucket/%zz", {}, {}, ""};
  EXPECT_EQ(Do(bad_escape).status, 400);
}

TEST(GatewaySigV2, KnownVectors) {
  // AWS's SigV2 documentation example (and botocore's HmacV1Auth agrees).
  net::HttpRequestParts get{"GET", "/johnsmith/photos/puppy.jpg", "", {{"Date", "Tue, 27 Mar 2007 19:36:42 +0000"}}};
  std::string sts = SigV2StringToSign(get, "Tue, 27 Mar 2007 19:36:42 +0000");
  EXPECT_EQ(sts, "GET\n\n\nTue, 27 Mar 2007 19:36:42 +0000\n/johnsmith/photos/puppy.jpg");
  EXPECT_EQ(SigV2Signature("wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", sts), "bWq2s1WEIj+Ydj0vQ697zp+IXMU=");
  // x-amz-* headers (joined, sorted) and signed subresources (sorted; others dropped).
  net::HttpRequestParts put{"PUT",
                            "/johnsmith/photos/puppy.jpg",
                            "uploadId=abc&x-id=UploadPart&partNumber=2",
                            {{"Content-Type", "image/jpeg"},
                             {"X-Amz-Meta-A", "1"},
                             {"x-amz-date", "Tue, 27 Mar 2007 21:15:45 +0000"},
                             {"x-amz-meta-a", " 2 "}}};
  std::string sts2 = SigV2StringToSign(put, "");
  EXPECT_EQ(SigV2Signature("wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", sts2), "78JOxEv9UXsYn7zArIXgnSRg4xA=") << sts2;
  EXPECT_EQ(SigV2CanonicalResource("/b", "uploads&prefix=x"), "/b?uploads");
}

TEST_F(GatewayTest, SigV2HeaderAndPresignedQuery) {
  Put("v2", "signed the old way");
  std::string date = net::FormatHttpDate(RealClock().WallNow());
  net::HttpRequestParts p{"GET", "/bucket/v2", "", {{"Host", "h"}, {"Date", date}}};
  std::string sig = SigV2Signature(kCreds.secret_access_key, SigV2StringToSign(p, date));
  GatewayRequest header_form{
      "GET",
      "/bucket/v2",
      {{"Host", "h"}, {"Date", date}, {"Authorization", "AWS " + kCreds.access_key_id + ":" + sig}},
      {},
      ""};
  auto r = Do(header_form);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(Body(r), "signed the old way");
  header_form.headers.back().second =
      "AWS " + kCreds.access_key_id + ":" + SigV2Signature("wrong", SigV2StringToSign(p, date));
  EXPECT_EQ(ErrorCode(Do(header_form)), "SignatureDoesNotMatch");
  // boto3's default presigned URL in us-east-1.
  auto presign = [&](int64_t expires) {
    std::string e = std::to_string(expires);
    net::HttpRequestParts q{"GET", "/bucket/v2", "", {}};
    std::string s = SigV2Signature(kCreds.secret_access_key, SigV2StringToSign(q, e));
    return GatewayRequest{
        "GET",
        "/bucket/v2?AWSAccessKeyId=" + kCreds.access_key_id + "&Signature=" + net::UriEncode(s) + "&Expires=" + e,
        {{"Host", "h"}},
        {},
        ""};
  };
  int64_t now = std::chrono::duration_cast<std::chrono::seconds>(RealClock().WallNow().time_since_epoch()).count();
  auto ok = Do(presign(now + 300));
  ASSERT_EQ(ok.status, 200) << ok.body;
  EXPECT_EQ(Body(ok), "signed the old way");
  auto expired = Do(presign(now - 10));
  EXPECT_EQ(ErrorCode(expired), "AccessDenied");
  GatewayRequest tampered = presign(now + 300);
  tampered.target.replace(tampered.target.find("v2?"), 2, "zz");
  EXPECT_EQ(ErrorCode(Do(tampered)), "SignatureDoesNotMatch");
}

TEST(GatewayTargets, ParseTarget) {
  auto t = ParseTarget("/b/dir/a%20b?x=1");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->bucket, "b");
  EXPECT_EQ(t->key, "dir/a b");
  EXPECT_EQ(t->raw_query, "x=1");
  EXPECT_EQ(ParseTarget("/")->bucket, "");
  EXPECT_EQ(ParseTarget("/b/")->key, "");
  EXPECT_FALSE(ParseTarget("http://x/").ok());
}

TEST(GatewayBuckets, NameRules) {
  EXPECT_TRUE(IsValidBucketName("my-bucket.1"));
  EXPECT_FALSE(IsValidBucketName(".."));
  EXPECT_FALSE(IsValidBucketName("a"));
  EXPECT_FALSE(IsValidBucketName("Upper"));
  EXPECT_FALSE(IsValidBucketName("a..b"));
  EXPECT_FALSE(IsValidBucketName("192.168.1.1"));
  EXPECT_FALSE(IsValidBucketName("x/../y"));
}

TEST(GatewayConfigTest, JsonAndFlags) {
  GatewayConfig c;
  Status st = ParseGatewayConfigJson(R"({"listen": "127.0.0.1:0", "backend": "mem://b1",
      "keys": [{"access_key": "a", "secret_key": "secret-of-key-a-01"}], "emulate": "ttfb=5ms",
      "cache": {"ram": "64MiB", "block_size": "1MiB", "metadata_ttl": "2s", "free_space": "5%"},
      "limits": {"header_timeout": "250ms", "max_body_bytes": 1048576}})",
                                     &c);
  ASSERT_TRUE(st.ok()) << st;
  EXPECT_EQ(c.backends, std::vector<std::string>{"mem://b1"});
  EXPECT_EQ(c.keys.at("a"), "secret-of-key-a-01");
  EXPECT_EQ(c.cache.ram_bytes, 64ull << 20);
  EXPECT_EQ(c.cache.free_space, (SpaceFloor{.percent = 5}));
  EXPECT_EQ(CacheOptionsFor(c).disk_min_free, (SpaceFloor{.percent = 5}));
  EXPECT_EQ(GatewayConfig{}.cache.free_space, cache::kDefaultCacheFreeSpace);
  EXPECT_EQ(c.limits.header_timeout, std::chrono::milliseconds(250));
  EXPECT_EQ(c.limits.max_body_bytes, 1048576u);
  EXPECT_TRUE(ValidateGatewayConfig(c).ok());
  EXPECT_FALSE(ParseGatewayConfigJson("{\"keys\": 5}", &c).ok());
  EXPECT_FALSE(ParseGatewayConfigJson("not json", &c).ok());
  EXPECT_FALSE(ParseGatewayConfigJson(R"({"cache": {"ram": "12 parsecs"}})", &c).ok());
  Status floor = ParseGatewayConfigJson(R"({"cache": {"free_space": "200%"}})", &c);
  EXPECT_NE(floor.message().find("cache.free_space"), std::string::npos) << floor;
  EXPECT_NE(floor.message().find("more than 100%"), std::string::npos) << floor;
  GatewayConfig none;
  none.backends = {"mem://x"};
  EXPECT_FALSE(ValidateGatewayConfig(none).ok());  // no keys and no public bucket
  std::string host;
  uint16_t port = 0;
  EXPECT_TRUE(ParseListenAddress(":8080", &host, &port).ok());
  EXPECT_EQ(host, "127.0.0.1");
  EXPECT_EQ(port, 8080);
  EXPECT_FALSE(ParseListenAddress("127.0.0.1:99999", &host, &port).ok());
}

TEST(GatewayObserverTest, AccessLogLine) {
  RequestRecord r;
  r.remote = "127.0.0.1:5000";
  r.access_key = "AK";
  r.request_id = "01";
  r.op = "GetObject";
  r.bucket = "b";
  r.key = "a b\nc";
  r.status = 200;
  r.bytes_out = 10;
  r.seconds = 0.0042;
  std::string line = GatewayObserverTestPeer::FormatLogLine(r);
  EXPECT_EQ(line.find('\n'), std::string::npos);
  EXPECT_NE(line.find(" 127.0.0.1:5000 AK 01 GetObject b/a%20b%0Ac 200 - 10 0 4.2ms"), std::string::npos) << line;
}

}  // namespace
}  // namespace strata::gateway

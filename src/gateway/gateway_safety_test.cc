// Unit tests: no request can hurt the gateway (S3Handler over mem stores,
// without sockets). The same requests against a real `strata serve` are in
// gateway_hostile_test.cc.
#include <gtest/gtest.h>

#include <atomic>
#include <new>

#include "base/hash.h"
#include "gateway/buckets.h"
#include "gateway/s3_handler.h"
#include "net/s3_xml.h"
#include "net/sigv4.h"
#include "object/mem_store.h"

namespace strata::gateway {
namespace {

const net::AwsCredentials kCreds{"AKIDSAFE", "secret-safe-key-01", ""};

// A FakeClock whose WallNow can be made to throw once (std::bad_alloc), to
// reach the handler's exception boundary from inside an operation.
class ThrowingClock : public FakeClock {
 public:
  WallTime WallNow() const override {
    if (throw_next_.exchange(false)) throw std::bad_alloc();
    return FakeClock::WallNow();
  }
  mutable std::atomic<bool> throw_next_{false};
};

class GatewaySafetyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    cache::CacheOptions co;
    co.block_size = 64 << 10;
    co.ram_bytes = 64 << 20;
    cache_ = *cache::BlockCache::Open(co);
    object::MemStoreOptions mo;
    mo.min_part_size = 16;
    buckets_ = BucketSet::FromStores({{"bucket", object::MakeMemStore("", mo)}}, cache_);
    S3HandlerOptions ho;
    ho.keys[kCreds.access_key_id] = kCreds.secret_access_key;
    ho.max_copy_bytes = 1000;
    ho.clock = &clock_;
    handler_ = std::make_unique<S3Handler>(*buckets_, ho);
  }

  GatewayRequest Signed(std::string method, std::string target, std::string body = "", net::HttpHeaders extra = {},
                        std::string payload_hash = "") {
    size_t q = target.find('?');
    net::HttpRequestParts p{method, target.substr(0, q), q == std::string::npos ? "" : target.substr(q + 1), extra};
    p.headers.emplace_back("Host", "127.0.0.1:9000");
    if (payload_hash.empty()) payload_hash = ToHex(Sha256(body));
    Status st = net::SignRequest(p, kCreds, "us-east-1", "s3", clock_.WallNow(), payload_hash);
    EXPECT_TRUE(st.ok()) << st;
    GatewayRequest r;
    r.method = method;
    r.target = target;
    r.headers = p.headers;
    r.body = Buffer::FromString(std::move(body));
    return r;
  }
  static std::string ErrorCode(const GatewayResponse& r) {
    auto e = net::DecodeS3Error(r.body);
    return e.ok() ? e->code : "<no error body>";
  }
  void Put(const std::string& key, const std::string& data) {
    ASSERT_EQ(handler_->Handle(Signed("PUT", "/bucket/" + key, data)).status, 200);
  }

  ThrowingClock clock_;
  std::shared_ptr<cache::BlockCache> cache_;
  std::unique_ptr<BucketSet> buckets_;
  std::unique_ptr<S3Handler> handler_;
};

// The request of issue 14 that made reserve() throw and ended the process.
TEST_F(GatewaySafetyTest, NegativeDecodedLengthIsRefused) {
  for (std::string len : {"-1", "18446744073709551615", "99999999999999999999", "1e3", " 5", "5 ", "", "0x10"}) {
    SCOPED_TRACE(len);
    GatewayRequest anon;
    anon.method = "PUT";
    anon.target = "/bucket/crash";
    anon.headers = {{"Host", "x"},
                    {"x-amz-content-sha256", std::string(net::kStreamingUnsignedTrailer)},
                    {"x-amz-decoded-content-length", len}};
    anon.body = Buffer::FromString("0\r\n\r\n");
    GatewayResponse r = handler_->Handle(anon);
    EXPECT_EQ(r.status, 400);
    EXPECT_EQ(ErrorCode(r), "InvalidArgument");
    GatewayResponse s =
        handler_->Handle(Signed("PUT", "/bucket/crash", "0\r\n\r\n", {{"x-amz-decoded-content-length", len}},
                                std::string(net::kStreamingUnsignedTrailer)));
    EXPECT_EQ(s.status, 400);
  }
  // A length larger than the framed body cannot be true: refused before allocating it.
  GatewayResponse big =
      handler_->Handle(Signed("PUT", "/bucket/crash", "0\r\n\r\n", {{"x-amz-decoded-content-length", "5368709120"}},
                              std::string(net::kStreamingUnsignedTrailer)));
  EXPECT_EQ(big.status, 400);
  EXPECT_EQ(ErrorCode(big), "IncompleteBody");
  // The honest form of the same request still works.
  GatewayResponse ok =
      handler_->Handle(Signed("PUT", "/bucket/empty", "0\r\n\r\n", {{"x-amz-decoded-content-length", "0"}},
                              std::string(net::kStreamingUnsignedTrailer)));
  EXPECT_EQ(ok.status, 200) << ok.body;
}

TEST_F(GatewaySafetyTest, AnExceptionInsideAnOperationIsA500) {
  GatewayRequest r = Signed("PUT", "/bucket/k", "data");
  clock_.throw_next_ = true;  // Authenticate reads the clock: std::bad_alloc there
  GatewayResponse resp = handler_->Handle(r);
  EXPECT_EQ(resp.status, 500);
  EXPECT_EQ(ErrorCode(resp), "InternalError");
  EXPECT_TRUE(resp.close);
  EXPECT_EQ(handler_->exceptions_caught(), 1u);
  GatewayRequest again = Signed("PUT", "/bucket/k", "data");
  clock_.throw_next_ = true;
  auto pre = handler_->PreCheck(again);
  ASSERT_TRUE(pre.has_value());
  EXPECT_EQ(pre->status, 500);
  // And the handler serves the next request normally.
  EXPECT_EQ(handler_->Handle(Signed("PUT", "/bucket/k", "data")).status, 200);
}

TEST_F(GatewaySafetyTest, UnsignedAmzHeadersAreRefused) {
  Put("secret", "top secret");
  // Header auth: a header added after signing.
  GatewayRequest r = Signed("PUT", "/bucket/victim", "");
  r.headers.emplace_back("x-amz-copy-source", "/bucket/secret");
  GatewayResponse resp = handler_->Handle(r);
  EXPECT_EQ(resp.status, 403);
  EXPECT_EQ(ErrorCode(resp), "AccessDenied");
  EXPECT_NE(resp.body.find("not signed"), std::string::npos) << resp.body;
  EXPECT_NE(resp.body.find("x-amz-copy-source"), std::string::npos) << resp.body;
  // Presigned: X-Amz-SignedHeaders=host, then an x-amz-* header on the request.
  net::HttpRequestParts p{"PUT", "/bucket/victim", "", {{"Host", "127.0.0.1:9000"}}};
  auto query = net::PresignUrl(p, kCreds, "us-east-1", "s3", clock_.WallNow(), std::chrono::minutes(5));
  ASSERT_TRUE(query.ok()) << query.status();
  GatewayRequest pr;
  pr.method = "PUT";
  pr.target = "/bucket/victim?" + *query;
  pr.headers = {{"Host", "127.0.0.1:9000"}, {"X-Amz-Copy-Source", "bucket/secret"}};
  EXPECT_TRUE(handler_->PreCheck(pr).has_value());
  GatewayResponse presp = handler_->Handle(pr);
  EXPECT_EQ(presp.status, 403);
  EXPECT_EQ(ErrorCode(presp), "AccessDenied");
  EXPECT_EQ(handler_->Handle(Signed("GET", "/bucket/victim")).status, 404);
  // Without the extra header the presigned PUT is a plain PUT.
  pr.headers = {{"Host", "127.0.0.1:9000"}};
  pr.body = Buffer::FromString("mine");
  EXPECT_FALSE(handler_->PreCheck(pr).has_value());
  EXPECT_EQ(handler_->Handle(pr).status, 200);
}

TEST_F(GatewaySafetyTest, AuthenticationIsDecidedWhenTheHeadersArrive) {
  GatewayRequest r = Signed("PUT", "/bucket/slow", "", {}, std::string(net::kUnsignedPayload));
  ASSERT_FALSE(handler_->PreCheck(r).has_value());
  ASSERT_NE(r.auth, nullptr);
  clock_.Advance(std::chrono::hours(1));  // the body took an hour to arrive
  r.body = Buffer::FromString("a long upload");
  GatewayResponse resp = handler_->Handle(r);
  EXPECT_EQ(resp.status, 200) << resp.body;
  // Without the pre-check the same request is judged now: too old.
  GatewayRequest late = Signed("PUT", "/bucket/late", "", {}, std::string(net::kUnsignedPayload));
  clock_.Advance(std::chrono::hours(1));
  EXPECT_EQ(ErrorCode(handler_->Handle(late)), "RequestTimeTooSkewed");
}

TEST_F(GatewaySafetyTest, UploadPartCopyHasTheCopyObjectBound) {
  Put("small", std::string(500, 's'));
  Put("large", std::string(2000, 'l'));
  GatewayResponse create = handler_->Handle(Signed("POST", "/bucket/dst?uploads"));
  ASSERT_EQ(create.status, 200);
  auto init = net::DecodeInitiateMultipartUpload(create.body);
  ASSERT_TRUE(init.ok());
  std::string part = "/bucket/dst?partNumber=1&uploadId=" + init->upload_id;
  EXPECT_EQ(handler_->Handle(Signed("PUT", part, "", {{"x-amz-copy-source", "/bucket/small"}})).status, 200);
  GatewayResponse too_big = handler_->Handle(Signed("PUT", part, "", {{"x-amz-copy-source", "/bucket/large"}}));
  EXPECT_EQ(too_big.status, 400);
  EXPECT_EQ(ErrorCode(too_big), "InvalidRequest");
  GatewayResponse range = handler_->Handle(
      Signed("PUT", part, "", {{"x-amz-copy-source", "/bucket/large"}, {"x-amz-copy-source-range", "bytes=0-1500"}}));
  EXPECT_EQ(range.status, 400);
  GatewayResponse ranged_ok = handler_->Handle(
      Signed("PUT", part, "", {{"x-amz-copy-source", "/bucket/large"}, {"x-amz-copy-source-range", "bytes=0-999"}}));
  EXPECT_EQ(ranged_ok.status, 200) << ranged_ok.body;
}

}  // namespace
}  // namespace strata::gateway

// Regression tests of issue 14 ("no request can hurt it") against the built
// `strata serve`: each hostile request gets an error answer, and the same
// process answers the next request. After each test, the gateway's log
// (with its access log) is searched for the secret key and for every
// signature the test sent: neither may appear in it.
#include <gtest/gtest.h>
#include <poll.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "base/hash.h"
#include "gateway/test_wire.h"
#include "net/http.h"
#include "net/sigv4.h"
#include "testing/background_process.h"
#include "testing/subprocess.h"

namespace strata::gateway {
namespace {

using strata::testing::operator+=;  // EnvOverrides is a std::vector: ADL cannot find it

namespace fs = std::filesystem;
using SteadyClock = std::chrono::steady_clock;

const net::AwsCredentials kCreds{"GWHOSTILEKEY", "gw-hostile-secret", ""};
constexpr const char* kBucket = "gwbucket";

using test_wire::Exchange;
using test_wire::Reply;

// Every signature a test sent, for the log search in TearDown.
std::vector<std::string>& SentSignatures() {
  static std::vector<std::string> sent;
  return sent;
}

void Remember(std::string_view text) {
  for (size_t at = text.find("Signature="); at != std::string_view::npos; at = text.find("Signature=", at + 1)) {
    SentSignatures().emplace_back(text.substr(at + 10, 64));
  }
}

std::string Signed(const std::string& method, const std::string& target, const std::string& body,
                   net::HttpHeaders extra = {}, std::string payload_hash = "") {
  std::string signature;
  std::string text =
      test_wire::Signed(kCreds, method, target, body, std::move(extra), std::move(payload_hash), &signature);
  SentSignatures().push_back(signature);
  return text;
}

class GatewayHostileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("strata-gwh-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "data" / kBucket);
    auto serve = testing::StartStrataServe(
        std::vector<std::string>{"--backend", "file://" + (dir_ / "data").string(), "--listen", "127.0.0.1:0",
                                 "--access-key", kCreds.access_key_id, "--secret-key", kCreds.secret_access_key,
                                 "--cache-ram", "256MiB", "--max-inflight", "4MiB", "--access-log", "-"},
        (dir_ / "gateway.out").string());
    ASSERT_TRUE(serve.ok()) << serve.status();
    port_ = serve->port;
    gateway_ = std::move(serve->process);
  }

  void TearDown() override {
    if (gateway_) {
      int code = gateway_->Stop();
      EXPECT_EQ(code, 0) << "strata serve did not exit cleanly:\n" << gateway_->Log();
      // No secret and no signature in any log line.
      const std::string log = gateway_->Log();
      EXPECT_EQ(log.find(kCreds.secret_access_key), std::string::npos) << log;
      for (const std::string& sig : SentSignatures()) EXPECT_EQ(log.find(sig), std::string::npos) << sig << "\n" << log;
    }
    SentSignatures().clear();
    fs::remove_all(dir_);
  }

  bool Alive() { return !gateway_->Exited(); }

  // The process is up and serves a real round trip.
  void ExpectStillServing(const std::string& key) {
    ASSERT_TRUE(Alive()) << "strata serve died:\n" << gateway_->Log();
    EXPECT_EQ(Exchange(port_, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n").status, 200);
    EXPECT_EQ(Exchange(port_, Signed("PUT", std::string("/") + kBucket + "/" + key, "after")).status, 200);
    Reply get = Exchange(port_, Signed("GET", std::string("/") + kBucket + "/" + key, ""));
    EXPECT_EQ(get.status, 200);
    EXPECT_TRUE(get.text.ends_with("\r\n\r\nafter")) << get.text;
  }

  fs::path dir_;
  std::unique_ptr<testing::BackgroundProcess> gateway_;
  uint16_t port_ = 0;
};

TEST_F(GatewayHostileTest, TerminatingRequestGetsAnErrorAndTheServerStaysUp) {
  const std::string body = "0\r\n\r\n";
  std::string anonymous = std::string("PUT /") + kBucket +
                          "/crash HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                          "x-amz-content-sha256: STREAMING-UNSIGNED-PAYLOAD-TRAILER\r\n"
                          "x-amz-decoded-content-length: -1\r\nContent-Length: 5\r\n\r\n" +
                          body;
  Reply r = Exchange(port_, anonymous);  // anonymous writes are refused from their headers
  EXPECT_EQ(r.status, 403) << r.text;
  EXPECT_NE(r.text.find("AccessDenied"), std::string::npos) << r.text;
  ExpectStillServing("after-anonymous");
  Reply s =
      Exchange(port_, Signed("PUT", std::string("/") + kBucket + "/crash", body,
                             {{"x-amz-decoded-content-length", "-1"}}, std::string(net::kStreamingUnsignedTrailer)));
  EXPECT_EQ(s.status, 400) << s.text;
  ExpectStillServing("after-signed");
  EXPECT_FALSE(fs::exists(dir_ / "data" / kBucket / "crash"));
}

TEST_F(GatewayHostileTest, HugeAttributeCountXmlIsRefusedQuickly) {
  std::string xml = "<CompleteMultipartUpload";
  xml.reserve(32 << 20);
  for (int i = 0; i < 2000000; ++i) xml += " a" + std::to_string(i) + "=''";
  xml += "><Part><PartNumber>1</PartNumber><ETag>x</ETag></Part></CompleteMultipartUpload>";
  for (std::string target : {std::string("/") + kBucket + "/k?uploadId=nope", std::string("/") + kBucket + "?delete"}) {
    SCOPED_TRACE(target);
    auto start = SteadyClock::now();
    Reply r = Exchange(port_, Signed("POST", target, xml));
    EXPECT_GE(r.status, 400) << r.text.substr(0, 500);
    EXPECT_LT(r.status, 500) << r.text.substr(0, 500);
    EXPECT_LT(SteadyClock::now() - start, std::chrono::seconds(30));
    ExpectStillServing("after-xml");
  }
}

TEST_F(GatewayHostileTest, PresignedPutCannotBecomeACopy) {
  std::ofstream(dir_ / "presign.py") << R"PY(
import sys, urllib.request, urllib.error
import boto3
from botocore.config import Config
endpoint, bucket, key_id, secret = sys.argv[1:5]
s3 = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id=key_id, aws_secret_access_key=secret,
                  region_name="us-east-1", config=Config(signature_version="s3v4", s3={"addressing_style": "path"},
                                                         retries={"max_attempts": 1}))
s3.put_object(Bucket=bucket, Key="secret", Body=b"top secret")
url = s3.generate_presigned_url("put_object", Params={"Bucket": bucket, "Key": "victim"}, ExpiresIn=300)
req = urllib.request.Request(url, data=b"", method="PUT", headers={"x-amz-copy-source": bucket + "/secret"})
try:
    urllib.request.urlopen(req)
    print("copy: 200")
except urllib.error.HTTPError as e:
    body = e.read().decode()
    print("copy: %d %s" % (e.code, "AccessDenied" if "<Code>AccessDenied</Code>" in body else body))
    print("not-signed: %s" % ("not signed" in body and "x-amz-copy-source" in body))
try:
    s3.head_object(Bucket=bucket, Key="victim")
    print("victim: exists")
except s3.exceptions.ClientError as e:
    print("victim: %s" % e.response["Error"]["Code"])
req = urllib.request.Request(url, data=b"mine", method="PUT")
try:
    print("plain: %d" % urllib.request.urlopen(req).status)
except urllib.error.HTTPError as e:
    print("plain: %d %s" % (e.code, e.read().decode()))
    sys.exit(1)
print("victim body: %s" % s3.get_object(Bucket=bucket, Key="victim")["Body"].read().decode())
)PY";
  testing::EnvOverrides env = testing::WithoutCaBundles();
  env += {{"AWS_CONFIG_FILE", "/dev/null"},
          {"AWS_SHARED_CREDENTIALS_FILE", "/dev/null"},
          {"AWS_EC2_METADATA_DISABLED", "true"},
          {"NO_PROXY", "127.0.0.1"}};
  std::string endpoint = "http://127.0.0.1:" + std::to_string(port_);
  std::vector<std::string> argv{"/usr/bin/python3",   (dir_ / "presign.py").string(), endpoint, kBucket,
                                kCreds.access_key_id, kCreds.secret_access_key};
  auto r = testing::RunCommand(argv, env);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->exit_code, 0) << testing::DescribeRun(argv, *r) << "\n" << r->stdout_text;
  const std::string& out = r->stdout_text;
  EXPECT_NE(out.find("copy: 403 AccessDenied"), std::string::npos) << out;
  EXPECT_NE(out.find("not-signed: True"), std::string::npos) << out;
  EXPECT_NE(out.find("victim: 404"), std::string::npos) << out;
  EXPECT_NE(out.find("plain: 200"), std::string::npos) << out;
  EXPECT_NE(out.find("victim body: mine"), std::string::npos) << out;
  ExpectStillServing("after-presign");
}

TEST_F(GatewayHostileTest, BodiesInFlightShareOneBudget) {
  // A holds 3 MiB of the 4 MiB budget: its headers are in, its body is not.
  const std::string held(3 << 20, 'h');
  std::string a_req = Signed("PUT", std::string("/") + kBucket + "/held", held, {{"Expect", "100-continue"}});
  std::string a_head = a_req.substr(0, a_req.find("\r\n\r\n") + 4);
  int a = test_wire::Connect(port_);
  ASSERT_GE(a, 0);
  ASSERT_EQ(::send(a, a_head.data(), a_head.size(), MSG_NOSIGNAL), static_cast<ssize_t>(a_head.size()));
  auto read_some = [&](std::string* into) {
    pollfd p{a, POLLIN, 0};
    if (::poll(&p, 1, 10000) <= 0) return false;
    char buf[4096];
    ssize_t n = ::recv(a, buf, sizeof buf, 0);
    if (n <= 0) return false;
    into->append(buf, n);
    return true;
  };
  std::string a_in;
  while (a_in.find("\r\n\r\n") == std::string::npos && read_some(&a_in)) {
  }
  ASSERT_TRUE(a_in.starts_with("HTTP/1.1 100")) << a_in;  // the budget is reserved before the body is invited
  // B does not fit next to it: SlowDown, nothing stored.
  std::string b_req = Signed("PUT", std::string("/") + kBucket + "/second", std::string(2 << 20, 'b'));
  Reply b = Exchange(port_, b_req);
  EXPECT_EQ(b.status, 503) << b.text.substr(0, 500);
  EXPECT_NE(b.text.find("<Code>SlowDown</Code>"), std::string::npos) << b.text.substr(0, 500);
  // A finishes; then B fits.
  a_in.clear();
  size_t sent = 0;
  while (sent < held.size()) {
    ssize_t n = ::send(a, held.data() + sent, held.size() - sent, MSG_NOSIGNAL);
    ASSERT_GT(n, 0);
    sent += n;
  }
  while (a_in.find("\r\n\r\n") == std::string::npos && read_some(&a_in)) {
  }
  ::close(a);
  EXPECT_TRUE(a_in.starts_with("HTTP/1.1 200")) << a_in;
  EXPECT_EQ(Exchange(port_, b_req).status, 200);
  // An object larger than the whole budget is spilled to a temp file, never held in memory.
  EXPECT_EQ(Exchange(port_, Signed("PUT", std::string("/") + kBucket + "/big", std::string(9 << 20, 'g'))).status, 200);
  EXPECT_EQ(fs::file_size(dir_ / "data" / kBucket / "big"), 9u << 20);
  // A body that must be held (XML) and is larger than the budget is refused before it is read.
  const std::string xml(9 << 20, ' ');
  Reply too_big = Exchange(port_, Signed("POST", std::string("/") + kBucket + "?delete", xml));
  EXPECT_EQ(too_big.status, 400) << too_big.text.substr(0, 500);
  EXPECT_NE(too_big.text.find("<Code>MaxMessageLengthExceeded</Code>"), std::string::npos)
      << too_big.text.substr(0, 500);
  ExpectStillServing("after-budget");
}

// A request that fails inside the gateway (500: the bucket's record is
// damaged) through a presigned URL: neither its log line nor its error body
// holds the signature.
TEST_F(GatewayHostileTest, PresignedSignaturesStayOutOfLogsAndErrors) {
  fs::create_directories(dir_ / "data" / "damaged");
  std::ofstream(dir_ / "data" / "damaged" / ".strata-bucket") << "{not json";
  for (const std::string& path : {std::string("/damaged/key"), std::string("/") + kBucket + "/missing"}) {
    net::HttpRequestParts p{"GET", path, "", {{"Host", "127.0.0.1"}}};
    auto query = net::PresignUrl(p, kCreds, "us-east-1", "s3", RealClock().WallNow(), std::chrono::minutes(5));
    ASSERT_TRUE(query.ok()) << query.status();
    Remember(*query);
    Reply r = Exchange(port_, "GET " + path + "?" + *query + " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
    EXPECT_EQ(r.status, path.starts_with("/damaged") ? 500 : 404) << r.text;
    EXPECT_EQ(r.text.find(SentSignatures().back()), std::string::npos) << r.text;
  }
  ASSERT_TRUE(gateway_->Log().find("/damaged/key?") != std::string::npos) << gateway_->Log();  // it was logged
  // A request too far from the server's clock learns nothing of that clock.
  const std::string skewed =
      "GET /" + std::string(kBucket) +
      "/x HTTP/1.1\r\nHost: 127.0.0.1\r\nx-amz-date: 20000101T000000Z\r\n"
      "x-amz-content-sha256: UNSIGNED-PAYLOAD\r\nAuthorization: AWS4-HMAC-SHA256 "
      "Credential=" +
      kCreds.access_key_id +
      "/20000101/us-east-1/s3/aws4_request, SignedHeaders=host, Signature=" + std::string(64, 'a') + "\r\n\r\n";
  Reply r = Exchange(port_, skewed);
  EXPECT_EQ(r.status, 403) << r.text;
  const std::string body = r.text.substr(r.text.find("\r\n\r\n"));
  EXPECT_NE(body.find("RequestTimeTooSkewed"), std::string::npos) << body;
  const std::string today = net::FormatAmzDate(RealClock().WallNow()).substr(0, 8);
  EXPECT_EQ(body.find(today), std::string::npos) << body;  // the old message named the server's time
  ExpectStillServing("after-presigned");
}

}  // namespace
}  // namespace strata::gateway

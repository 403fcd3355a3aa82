// `strata serve` in front of a whole S3 endpoint (Ceph RGW): every bucket of
// the upstream is served, bucket operations pass through, one cache serves
// them all. The assertions live in testdata/upstream_clients.py (boto3 against
// both the gateway and RGW directly).
#include <gtest/gtest.h>

#include <filesystem>

#include "testing/background_process.h"
#include "testing/s3_server.h"

namespace strata::gateway {
namespace {

namespace fs = std::filesystem;

constexpr const char* kKey = "GWUPSTREAMKEY";
constexpr const char* kSecret = "gw-upstream-secret";

class GatewayUpstreamTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("strata-gwup-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    auto server = testing::S3TestServer::Start(testing::S3TestServer::Kind::kRgw);
    ASSERT_TRUE(server.ok()) << server.status();
    rgw_ = std::move(server).value();
  }
  void TearDown() override {
    if (gateway_) {
      EXPECT_EQ(gateway_->Stop(), 0) << gateway_->Log();
    }
    if (rgw_) {
      EXPECT_TRUE(rgw_->Stop().ok());
    }
    fs::remove_all(dir_);
  }
  void StartGateway(const std::string& backend) {
    auto gw = testing::StartStrataServe({"--backend", backend, "--listen", "127.0.0.1:0", "--access-key", kKey,
                                         "--secret-key", kSecret, "--cache-ram", "128MiB"},
                                        (dir_ / "gateway.out").string(), rgw_->ClientEnv());
    ASSERT_TRUE(gw.ok()) << gw.status();
    url_ = gw->endpoint;
    gateway_ = std::move(gw->process);
  }

  // Runs a boto3 script from testdata/ with the gateway's and RGW's endpoints and keys after
  // `extra`; it must exit 0 and print its tally, "N check(s), 0 failure(s)".
  void RunScript(const std::string& script, const std::vector<std::string>& extra = {}) {
    const char* src = std::getenv("STRATA_SOURCE_DIR");
    ASSERT_NE(src, nullptr) << "run under ctest (STRATA_SOURCE_DIR)";
    std::vector<std::string> argv{"/usr/bin/python3", std::string(src) + "/src/gateway/testdata/" + script, url_, kKey,
                                  kSecret};
    argv.insert(argv.end(), extra.begin(), extra.end());
    argv.insert(argv.end(), {rgw_->endpoint(), rgw_->access_key(), rgw_->secret_key()});
    auto r = testing::RunCommand(argv, rgw_->ClientEnv());
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->exit_code, 0) << r->stdout_text << r->stderr_text << "\ngateway log:\n" << gateway_->Log();
    // Every check ran: the tally is there, and not "10 failure(s)".
    EXPECT_NE(r->stdout_text.find(" check(s), 0 failure(s)"), std::string::npos) << r->stdout_text;
  }

  fs::path dir_;
  std::unique_ptr<testing::S3TestServer> rgw_;
  std::unique_ptr<testing::BackgroundProcess> gateway_;
  std::string url_;
};

TEST_F(GatewayUpstreamTest, Boto3ServesEveryBucketOfTheEndpoint) {
  StartGateway("s3://?endpoint=" + rgw_->endpoint() + "&region=" + rgw_->region());
  RunScript("upstream_clients.py");
}

// Checksums through an upstream that ignores them (RGW 16.2): verified by
// the gateway (BadDigest, nothing stored) and kept in the object's metadata.
TEST_F(GatewayUpstreamTest, Boto3ChecksumsSurviveAnUpstreamThatIgnoresThem) {
  StartGateway("s3://?endpoint=" + rgw_->endpoint() + "&region=" + rgw_->region());
  RunScript("upstream_checksums.py", {"gw-checksums"});
}

// GetObject/HeadObject ?partNumber= in front of RGW, which ignores
// partNumber (16.2): a 3-part upload through the gateway answers each part
// exactly (sizes learned at Complete), 416 InvalidPartNumber past the last;
// one uploaded to RGW directly answers as RGW does.
TEST_F(GatewayUpstreamTest, Boto3PartNumberOfMultipartObjects) {
  StartGateway(rgw_->StoreUrl());
  RunScript("part_numbers.py", {rgw_->bucket()});
}

// An s3:// URL with a bucket still serves that one bucket, fixed.
TEST_F(GatewayUpstreamTest, BucketUrlStillServesOneFixedBucket) {
  StartGateway(rgw_->StoreUrl());
  std::string script = R"(
import sys, boto3, botocore
from botocore.config import Config
gw = boto3.client("s3", endpoint_url=sys.argv[1], aws_access_key_id=sys.argv[2], aws_secret_access_key=sys.argv[3],
                  region_name="us-east-1", config=Config(s3={"addressing_style": "path"}))
gw.put_object(Bucket=sys.argv[4], Key="k", Body=b"fixed")
assert gw.get_object(Bucket=sys.argv[4], Key="k")["Body"].read() == b"fixed"
assert [b["Name"] for b in gw.list_buckets()["Buckets"]] == [sys.argv[4]]
try:
    gw.create_bucket(Bucket="another-one")
    raise SystemExit("CreateBucket succeeded in front of a fixed bucket")
except botocore.exceptions.ClientError as e:
    assert e.response["Error"]["Code"] == "NotImplemented", e.response
print("ok")
)";
  auto r =
      testing::RunCommand({"/usr/bin/python3", "-c", script, url_, kKey, kSecret, rgw_->bucket()}, rgw_->ClientEnv());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->exit_code, 0) << r->stdout_text << r->stderr_text << "\ngateway log:\n" << gateway_->Log();
  EXPECT_EQ(r->stdout_text, "ok\n");
}

}  // namespace
}  // namespace strata::gateway

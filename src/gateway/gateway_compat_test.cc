// S3 answers SDKs rely on (issue 30, the S3 item), through the built
// `strata serve` in front of a file:// root and of a whole Ceph RGW endpoint
// (s3://): a CompleteMultipartUpload sent again after it succeeded (200, same
// ETag, also after the gateway restarts), a re-sent part 1 that finishes last,
// CreateBucket of one's own and another key's bucket (us-east-1 and another
// region), ListObjectsV2 with an empty continuation token, keys that are not
// UTF-8, and x-amz-copy-source with ?versionId=. boto3 (testdata/s3_compat.py)
// checks every item; the aws CLI checks the three a CLI user meets.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iostream>

#include "gateway/serve_clients_fixture.h"

namespace strata::gateway {
namespace {

namespace fs = std::filesystem;

class GatewayCompatTest : public ServeClientsTest {
 protected:
  // The gateway with two keys, answering as S3's `region`.
  void StartGateway(const std::string& region) {
    region_ = region;
    ServeClientsTest::StartGateway("gateway-" + region + ".json", R"({"region": ")" + region + R"(", "keys": [)" +
                                                                      KeyJson(kAlice) + ", " + KeyJson(kBob) + "]}");
  }

  // Alice's, in the gateway's region, with the state file of s3_compat.py's "retry".
  testing::EnvOverrides ClientEnv() const {
    testing::EnvOverrides env = ServeClientsTest::ClientEnv(&kAlice, region_);
    env += {{"STATE_FILE", (dir_ / "completed.json").string()}};
    return env;
  }

  // testdata/s3_compat.py PHASE: exits 0 and prints its tally with no failure.
  void Boto3(const std::string& phase, testing::EnvOverrides extra = {}) {
    testing::EnvOverrides env = ClientEnv();
    env += extra;
    std::cout << RunChecks("s3_compat.py", {phase, region_, kAlice.id, kAlice.secret, kBob.id, kBob.secret}, env);
  }

  // `aws s3api ARGS`: {exit code, stdout + stderr}.
  std::pair<int, std::string> Aws(std::vector<std::string> args) {
    std::vector<std::string> argv{"/usr/bin/aws", "--endpoint-url", url_, "--output", "json", "s3api"};
    argv.insert(argv.end(), args.begin(), args.end());
    auto r = testing::RunCommand(argv, ClientEnv());
    EXPECT_TRUE(r.ok()) << r.status();
    if (!r.ok()) return {-1, ""};
    return {r->exit_code, r->stdout_text + r->stderr_text};
  }

  // What the aws CLI user meets: Complete retried, CreateBucket again, an
  // empty --continuation-token.
  void AwsCli() {
    const std::string bucket = "cli-compat";
    ASSERT_EQ(Aws({"create-bucket", "--bucket", bucket}).first, 0);
    auto again = Aws({"create-bucket", "--bucket", bucket});
    EXPECT_EQ(again.first, 0) << "us-east-1: re-creating one's own bucket succeeds: " << again.second;

    auto created = Aws({"create-multipart-upload", "--bucket", bucket, "--key", "mp", "--query", "UploadId"});
    ASSERT_EQ(created.first, 0) << created.second;
    std::string upload = created.second.substr(created.second.find('"') + 1);
    upload = upload.substr(0, upload.find('"'));
    const fs::path part = dir_ / "part";
    std::ofstream(part) << "part one";
    auto etag = Aws({"upload-part", "--bucket", bucket, "--key", "mp", "--upload-id", upload, "--part-number", "1",
                     "--body", part.string(), "--query", "ETag", "--output", "text"});
    ASSERT_EQ(etag.first, 0) << etag.second;
    std::string tag = etag.second.substr(0, etag.second.find('\n'));
    const std::string parts = R"({"Parts":[{"PartNumber":1,"ETag":)" + tag + "}]}";
    const std::vector<std::string> complete{
        "complete-multipart-upload", "--bucket", bucket,    "--key", "mp",       "--upload-id", upload,
        "--multipart-upload",        parts,      "--query", "ETag",  "--output", "text"};
    auto first = Aws(complete);
    ASSERT_EQ(first.first, 0) << first.second;
    auto second = Aws(complete);
    EXPECT_EQ(second.first, 0) << "a retried Complete succeeds: " << second.second;
    EXPECT_EQ(second.second, first.second) << "with the same ETag";

    auto listed = Aws({"list-objects-v2", "--bucket", bucket, "--continuation-token", ""});
    EXPECT_EQ(listed.first, 0) << listed.second;
    EXPECT_NE(listed.second.find("\"Key\": \"mp\""), std::string::npos) << "the first page: " << listed.second;

    EXPECT_EQ(Aws({"delete-object", "--bucket", bucket, "--key", "mp"}).first, 0);
    EXPECT_EQ(Aws({"delete-bucket", "--bucket", bucket}).first, 0);
  }

  std::string region_;
};

// Every item in us-east-1, then the completed upload completes again after a
// restart (the record is durable where the store is: file://), then
// CreateBucket again in another region (BucketAlreadyOwnedByYou).
TEST_P(GatewayCompatTest, Boto3AndAwsCliGetS3sAnswers) {
  ASSERT_NO_FATAL_FAILURE(StartGateway("us-east-1"));
  Boto3("run");
  AwsCli();
  if (GetParam() == BackendKind::kFile) {
    StopGateway();
    ASSERT_NO_FATAL_FAILURE(StartGateway("us-east-1"));
    Boto3("retry");
  }
  StopGateway();
  ASSERT_NO_FATAL_FAILURE(StartGateway("eu-west-1"));
  Boto3("run", {{"COMPAT_ITEMS", "create"}});
}

INSTANTIATE_TEST_SUITE_P(Backends, GatewayCompatTest, ::testing::Values(BackendKind::kFile, BackendKind::kRgwEndpoint),
                         BackendName);

}  // namespace
}  // namespace strata::gateway

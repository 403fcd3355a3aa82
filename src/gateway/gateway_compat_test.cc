// S3 answers SDKs rely on (issue 30, the S3 item), through the built
// `strata serve` in front of a file:// root and of a whole Ceph RGW endpoint
// (s3://): a CompleteMultipartUpload sent again after it succeeded (200, same
// ETag, also after the gateway restarts), a re-sent part 1 that finishes last,
// CreateBucket of one's own and another key's bucket (us-east-1 and another
// region), ListObjectsV2 with an empty continuation token, keys that are not
// UTF-8, and x-amz-copy-source with ?versionId=. boto3 (testdata/s3_compat.py)
// checks every item; the aws CLI checks the three a CLI user meets.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "testing/background_process.h"
#include "testing/s3_server.h"
#include "testing/subprocess.h"

namespace strata::gateway {
namespace {

using strata::testing::operator+=;  // EnvOverrides is a std::vector: ADL cannot find it

namespace fs = std::filesystem;

struct Key {
  const char* id;
  const char* secret;
};
constexpr Key kAlice{"ALICEKEY", "alice-secret-key-0001"};
constexpr Key kBob{"BOBKEY", "bob-secret-key-0002"};

enum class BackendKind { kFile, kRgwEndpoint };

class GatewayCompatTest : public ::testing::TestWithParam<BackendKind> {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("strata-gwcompat-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "data");
    gw_env_ = testing::WithoutCaBundles();
    if (GetParam() == BackendKind::kFile) {
      backend_ = "file://" + (dir_ / "data").string();
    } else {
      auto server = testing::S3TestServer::Start(testing::S3TestServer::Kind::kRgw);
      ASSERT_TRUE(server.ok()) << server.status();
      rgw_ = std::move(server).value();
      backend_ = "s3://?endpoint=" + rgw_->endpoint() + "&region=" + rgw_->region();
      gw_env_ = rgw_->ClientEnv();
    }
  }
  void TearDown() override {
    StopGateway();
    if (rgw_) {
      EXPECT_TRUE(rgw_->Stop().ok());
    }
    fs::remove_all(dir_);
  }

  // The gateway with two keys, answering as S3's `region`.
  void StartGateway(const std::string& region) {
    region_ = region;
    const fs::path config = dir_ / ("gateway-" + region + ".json");
    std::ofstream(config) << R"({"region": ")" << region << R"(", "keys": [
      {"access_key": ")" << kAlice.id
                          << R"(", "secret_key": ")" << kAlice.secret << R"("},
      {"access_key": ")" << kBob.id
                          << R"(", "secret_key": ")" << kBob.secret << R"("}]})";
    auto serve = testing::StartStrataServe(
        {"--backend", backend_, "--listen", "127.0.0.1:0", "--config", config.string(), "--cache-ram", "64MiB"},
        (dir_ / ("gateway" + std::to_string(starts_++) + ".log")).string(), gw_env_);
    ASSERT_TRUE(serve.ok()) << serve.status();
    url_ = serve->endpoint;
    gateway_ = std::move(serve->process);
  }
  void StopGateway() {
    if (!gateway_) return;
    EXPECT_EQ(gateway_->Stop(), 0) << gateway_->Log();
    gateway_.reset();
  }

  testing::EnvOverrides ClientEnv() const {
    testing::EnvOverrides env = testing::WithoutCaBundles();
    env += {{"AWS_CONFIG_FILE", "/dev/null"},
            {"AWS_SHARED_CREDENTIALS_FILE", "/dev/null"},
            {"AWS_EC2_METADATA_DISABLED", "true"},
            {"AWS_DEFAULT_REGION", region_},
            {"AWS_ACCESS_KEY_ID", kAlice.id},
            {"AWS_SECRET_ACCESS_KEY", kAlice.secret},
            {"AWS_PAGER", ""},
            {"NO_PROXY", "127.0.0.1"},
            {"AWS_SESSION_TOKEN", std::nullopt},
            {"AWS_PROFILE", std::nullopt},
            {"STATE_FILE", (dir_ / "completed.json").string()}};
    return env;
  }

  // testdata/s3_compat.py PHASE: exits 0 and prints its tally with no failure.
  void Boto3(const std::string& phase, testing::EnvOverrides extra = {}) {
    const char* src = std::getenv("STRATA_SOURCE_DIR");
    ASSERT_NE(src, nullptr) << "run under ctest (STRATA_SOURCE_DIR)";
    std::vector<std::string> argv{"/usr/bin/python3",
                                  std::string(src) + "/src/gateway/testdata/s3_compat.py",
                                  url_,
                                  phase,
                                  region_,
                                  kAlice.id,
                                  kAlice.secret,
                                  kBob.id,
                                  kBob.secret};
    testing::EnvOverrides env = ClientEnv();
    env += extra;
    auto r = testing::RunCommand(argv, env);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->exit_code, 0) << testing::DescribeRun(argv, *r) << "\ngateway log:\n" << gateway_->Log();
    EXPECT_NE(("\n" + r->stdout_text).find(", 0 failure(s)"), std::string::npos) << r->stdout_text;
    std::cout << r->stdout_text;  // the "observed" lines: each item's status and code
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

  fs::path dir_;
  std::string backend_;
  std::string region_;
  testing::EnvOverrides gw_env_;
  std::unique_ptr<testing::S3TestServer> rgw_;
  std::unique_ptr<testing::BackgroundProcess> gateway_;
  std::string url_;
  int starts_ = 0;
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
                         [](const auto& info) { return info.param == BackendKind::kFile ? "File" : "RgwEndpoint"; });

}  // namespace
}  // namespace strata::gateway

// Per-key access through the built `strata serve` (issue 27, item 2), with
// three keys in its config (two unrestricted, one read-only with a grant)
// in front of a file:// root and of a whole Ceph RGW endpoint: boto3
// (testdata/access_clients.py) checks ownership, the read-only key and
// canned ACLs; curl checks what unsigned requests may do (read public
// objects) and may not (PUT, DELETE, POST ?delete, anything with an Origin
// header); the aws CLI checks the other key's bucket is refused. Then the
// gateway restarts and every check runs again: owners and ACLs are kept with
// the buckets.
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
constexpr Key kReader{"READERKEY", "reader-secret-key-0003"};

enum class BackendKind { kFile, kRgwEndpoint };

class GatewayAccessClientsTest : public ::testing::TestWithParam<BackendKind> {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("strata-gwacc-" + std::to_string(::getpid()));
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
    std::ofstream(dir_ / "gateway.json") << R"({"keys": [
      {"access_key": ")" << kAlice.id << R"(", "secret_key": ")"
                                         << kAlice.secret << R"("},
      {"access_key": ")" << kBob.id << R"(", "secret_key": ")"
                                         << kBob.secret << R"("},
      {"access_key": ")" << kReader.id << R"(", "secret_key": ")"
                                         << kReader.secret << R"(", "read_only": true,
       "grants": [{"bucket": "alice-data"}]}]})";
  }
  void TearDown() override {
    StopGateway();
    if (rgw_) {
      EXPECT_TRUE(rgw_->Stop().ok());
    }
    fs::remove_all(dir_);
  }

  void StartGateway() {
    auto serve = testing::StartStrataServe({"--backend", backend_, "--listen", "127.0.0.1:0", "--config",
                                            (dir_ / "gateway.json").string(), "--cache-ram", "64MiB"},
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

  void Boto3(const std::string& phase) {
    const char* src = std::getenv("STRATA_SOURCE_DIR");
    ASSERT_NE(src, nullptr) << "run under ctest (STRATA_SOURCE_DIR)";
    std::vector<std::string> argv{"/usr/bin/python3",
                                  std::string(src) + "/src/gateway/testdata/access_clients.py",
                                  url_,
                                  phase,
                                  kAlice.id,
                                  kAlice.secret,
                                  kBob.id,
                                  kBob.secret,
                                  kReader.id,
                                  kReader.secret};
    if (rgw_) argv.insert(argv.end(), {rgw_->endpoint(), rgw_->access_key(), rgw_->secret_key()});
    auto r = testing::RunCommand(argv, ClientEnv());
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->exit_code, 0) << testing::DescribeRun(argv, *r) << "\ngateway log:\n" << gateway_->Log();
    EXPECT_NE(("\n" + r->stdout_text).find(", 0 failure(s)"), std::string::npos) << r->stdout_text;
  }

  testing::EnvOverrides ClientEnv(const Key* key = nullptr) const {
    testing::EnvOverrides env = testing::WithoutCaBundles();
    env += {{"AWS_CONFIG_FILE", "/dev/null"},
            {"AWS_SHARED_CREDENTIALS_FILE", "/dev/null"},
            {"AWS_EC2_METADATA_DISABLED", "true"},
            {"AWS_DEFAULT_REGION", "us-east-1"},
            {"AWS_PAGER", ""},
            {"NO_PROXY", "127.0.0.1"},
            {"AWS_SESSION_TOKEN", std::nullopt},
            {"AWS_PROFILE", std::nullopt}};
    if (key) env += {{"AWS_ACCESS_KEY_ID", key->id}, {"AWS_SECRET_ACCESS_KEY", key->secret}};
    return env;
  }

  // curl without a signature: "<status> <body>".
  std::string Curl(const std::vector<std::string>& args) {
    std::vector<std::string> argv{"/usr/bin/curl", "-sS", "-o", "-", "-w", " %{http_code}"};
    argv.insert(argv.end(), args.begin(), args.end());
    auto r = testing::RunCommand(argv, ClientEnv());
    EXPECT_TRUE(r.ok() && r->exit_code == 0) << (r.ok() ? r->stderr_text : r.status().ToString());
    if (!r.ok()) return "";
    const std::string& out = r->stdout_text;
    size_t sp = out.rfind(' ');
    return out.substr(sp + 1) + " " + out.substr(0, sp);
  }

  void UnsignedRequestsReadOnlyWhatIsPublic() {
    const std::string pub = url_ + "/alice-data/pub.txt";
    EXPECT_EQ(Curl({pub}), "200 public bytes");
    EXPECT_EQ(Curl({url_ + "/alice-data/later.txt"}), "200 made public later");
    EXPECT_TRUE(Curl({url_ + "/alice-data/a.txt"}).starts_with("403 ")) << "a private object";
    EXPECT_TRUE(Curl({"-X", "PUT", "--data-binary", "defaced", pub}).starts_with("403 ")) << "anonymous PUT";
    EXPECT_TRUE(Curl({"-X", "DELETE", pub}).starts_with("403 ")) << "anonymous DELETE";
    const std::string del = "<Delete><Object><Key>pub.txt</Key></Object></Delete>";
    EXPECT_TRUE(Curl({"-X", "POST", "--data-binary", del, url_ + "/alice-data?delete"}).starts_with("403 "))
        << "anonymous POST ?delete";
    // What a web page could make a browser send: refused, public or not.
    const std::string origin = "Origin: http://evil.example";
    EXPECT_TRUE(Curl({"-H", origin, pub}).starts_with("403 ")) << "unsigned GET with Origin";
    EXPECT_TRUE(
        Curl({"-H", origin, "-X", "POST", "--data-binary", del, url_ + "/alice-data?delete"}).starts_with("403 "))
        << "unsigned POST ?delete with Origin";
    EXPECT_TRUE(Curl({"-H", origin, url_ + "/metrics"}).starts_with("403 ")) << "unsigned /metrics with Origin";
    EXPECT_EQ(Curl({pub}), "200 public bytes");  // still there, unchanged
  }

  void AwsCliRefusesTheOtherKeysBucket() {
    const std::vector<std::string> ls{"/usr/bin/aws", "--endpoint-url", url_, "s3", "ls", "s3://alice-data/"};
    auto bob = testing::RunCommand(ls, ClientEnv(&kBob));
    ASSERT_TRUE(bob.ok());
    EXPECT_NE(bob->exit_code, 0) << bob->stdout_text;
    EXPECT_NE(bob->stderr_text.find("AccessDenied"), std::string::npos) << bob->stderr_text;
    auto alice = testing::RunCommand(ls, ClientEnv(&kAlice));
    ASSERT_TRUE(alice.ok());
    EXPECT_EQ(alice->exit_code, 0) << alice->stderr_text;
    EXPECT_NE(alice->stdout_text.find("a.txt"), std::string::npos) << alice->stdout_text;
    const std::vector<std::string> cp{"/usr/bin/aws", "--endpoint-url", url_, "s3", "cp", "-", "s3://alice-data/r.txt"};
    auto reader = testing::RunCommand(cp, ClientEnv(&kReader), "read-only");
    ASSERT_TRUE(reader.ok());
    EXPECT_NE(reader->exit_code, 0) << "a read-only key uploaded";
    EXPECT_NE(reader->stderr_text.find("AccessDenied"), std::string::npos) << reader->stderr_text;
  }

  fs::path dir_;
  std::string backend_, url_;
  testing::EnvOverrides gw_env_;
  std::unique_ptr<testing::S3TestServer> rgw_;
  std::unique_ptr<testing::BackgroundProcess> gateway_;
  int starts_ = 0;
};

TEST_P(GatewayAccessClientsTest, OwnersGrantsAndCannedAclsSurviveARestart) {
  StartGateway();
  Boto3("setup");
  Boto3("check");
  UnsignedRequestsReadOnlyWhatIsPublic();
  AwsCliRefusesTheOtherKeysBucket();
  if (GetParam() == BackendKind::kFile) {
    // The owner is kept in the bucket's directory, under a name no key can take.
    std::ifstream record(dir_ / "data" / "alice-data" / ".strata-bucket");
    std::string text((std::istreambuf_iterator<char>(record)), std::istreambuf_iterator<char>());
    EXPECT_NE(text.find(std::string("\"owner\":\"") + kAlice.id + "\""), std::string::npos) << text;
  }
  StopGateway();
  StartGateway();
  Boto3("check");
  UnsignedRequestsReadOnlyWhatIsPublic();
  AwsCliRefusesTheOtherKeysBucket();
}

INSTANTIATE_TEST_SUITE_P(Backends, GatewayAccessClientsTest,
                         ::testing::Values(BackendKind::kFile, BackendKind::kRgwEndpoint),
                         [](const auto& info) { return info.param == BackendKind::kFile ? "File" : "RgwEndpoint"; });

}  // namespace
}  // namespace strata::gateway

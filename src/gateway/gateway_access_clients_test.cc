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

#include <filesystem>
#include <fstream>

#include "gateway/serve_clients_fixture.h"

namespace strata::gateway {
namespace {

namespace fs = std::filesystem;

constexpr TestKey kReader{"READERKEY", "reader-secret-key-0003"};

class GatewayAccessClientsTest : public ServeClientsTest {
 protected:
  void StartGateway() {
    ServeClientsTest::StartGateway(
        "gateway.json", R"({"keys": [)" + KeyJson(kAlice) + ", " + KeyJson(kBob) + ", " +
                            KeyJson(kReader, R"(, "read_only": true, "grants": [{"bucket": "alice-data"}])") + "]}");
  }

  void Boto3(const std::string& phase) {
    std::vector<std::string> args{phase, kAlice.id, kAlice.secret, kBob.id, kBob.secret, kReader.id, kReader.secret};
    if (rgw_) args.insert(args.end(), {rgw_->endpoint(), rgw_->access_key(), rgw_->secret_key()});
    RunChecks("access_clients.py", args, ClientEnv(nullptr));
  }

  // curl without a signature: "<status> <body>".
  std::string Curl(const std::vector<std::string>& args) {
    std::vector<std::string> argv{"/usr/bin/curl", "-sS", "-o", "-", "-w", " %{http_code}"};
    argv.insert(argv.end(), args.begin(), args.end());
    auto r = testing::RunCommand(argv, ClientEnv(nullptr));
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
                         ::testing::Values(BackendKind::kFile, BackendKind::kRgwEndpoint), BackendName);

}  // namespace
}  // namespace strata::gateway

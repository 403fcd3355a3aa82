// What the client tests through the built `strata serve` share (gateway_access_clients_test,
// gateway_compat_test): the gateway in front of a file:// root or of a whole Ceph RGW
// endpoint, started from a JSON config of keys; the clients' environment; and the boto3
// scripts of testdata/ (boto3_checks.py), whose tally must end in ", 0 failure(s)".
// Header-only; test code only.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "testing/background_process.h"
#include "testing/s3_server.h"
#include "testing/subprocess.h"

namespace strata::gateway {

using strata::testing::operator+=;  // EnvOverrides is a std::vector: ADL cannot find it

struct TestKey {
  const char* id;
  const char* secret;
};
// Two unrestricted keys the tests' configs give.
inline constexpr TestKey kAlice{"ALICEKEY", "alice-secret-key-0001"};
inline constexpr TestKey kBob{"BOBKEY", "bob-secret-key-0002"};

// One "keys" entry of the gateway's JSON config; `extra` is more fields (`, "read_only": true`).
inline std::string KeyJson(const TestKey& key, std::string_view extra = "") {
  return std::string(R"({"access_key": ")") + key.id + R"(", "secret_key": ")" + key.secret + "\"" +
         std::string(extra) + "}";
}

enum class BackendKind { kFile, kRgwEndpoint };

// For INSTANTIATE_TEST_SUITE_P: the test names' suffix.
inline std::string BackendName(const ::testing::TestParamInfo<BackendKind>& info) {
  return info.param == BackendKind::kFile ? "File" : "RgwEndpoint";
}

class ServeClientsTest : public ::testing::TestWithParam<BackendKind> {
 protected:
  void SetUp() override {
    std::string pattern = (std::filesystem::temp_directory_path() / "strata-serve-clients-XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
    std::filesystem::create_directories(dir_ / "data");
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
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  // Writes `config_json` to dir_/`name` and starts the gateway with it over the backend.
  void StartGateway(const std::string& name, const std::string& config_json) {
    const std::filesystem::path config = dir_ / name;
    std::ofstream(config) << config_json;
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

  // A client's environment: no CA bundle, no config or credentials from the machine, the
  // key's credentials if one is given.
  static testing::EnvOverrides ClientEnv(const TestKey* key, const std::string& region = "us-east-1") {
    testing::EnvOverrides env = testing::WithoutCaBundles();
    env += {{"AWS_CONFIG_FILE", "/dev/null"},
            {"AWS_SHARED_CREDENTIALS_FILE", "/dev/null"},
            {"AWS_EC2_METADATA_DISABLED", "true"},
            {"AWS_DEFAULT_REGION", region},
            {"AWS_PAGER", ""},
            {"NO_PROXY", "127.0.0.1"},
            {"AWS_SESSION_TOKEN", std::nullopt},
            {"AWS_PROFILE", std::nullopt}};
    if (key) env += {{"AWS_ACCESS_KEY_ID", key->id}, {"AWS_SECRET_ACCESS_KEY", key->secret}};
    return env;
  }

  // /usr/bin/python3 testdata/`script` URL `args`...: exits 0 and its tally has no failure.
  // Its output, for the caller to show.
  std::string RunChecks(const std::string& script, const std::vector<std::string>& args,
                        const testing::EnvOverrides& env) {
    const char* src = std::getenv("STRATA_SOURCE_DIR");
    EXPECT_NE(src, nullptr) << "run under ctest (STRATA_SOURCE_DIR)";
    if (!src) return "";
    std::vector<std::string> argv{"/usr/bin/python3", std::string(src) + "/src/gateway/testdata/" + script, url_};
    argv.insert(argv.end(), args.begin(), args.end());
    auto r = testing::RunCommand(argv, env);
    EXPECT_TRUE(r.ok()) << r.status();
    if (!r.ok()) return "";
    EXPECT_EQ(r->exit_code, 0) << testing::DescribeRun(argv, *r) << "\ngateway log:\n"
                               << (gateway_ ? gateway_->Log() : "");
    EXPECT_NE(r->stdout_text.find(" check(s), 0 failure(s)"), std::string::npos) << r->stdout_text;
    return r->stdout_text;
  }

  std::filesystem::path dir_;
  std::string backend_, url_;
  testing::EnvOverrides gw_env_;
  std::unique_ptr<testing::S3TestServer> rgw_;
  std::unique_ptr<testing::BackgroundProcess> gateway_;
  int starts_ = 0;
};

}  // namespace strata::gateway

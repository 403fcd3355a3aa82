// `strata serve` over a backend that stops answering (issue 15, item 8): Ceph
// RGW behind an nginx proxy that the client script freezes with SIGSTOP
// (connections accepted, nothing answered) and thaws with SIGCONT, then halts
// (connections refused) and restarts on the same port. Cached data is served
// byte-exact meanwhile, an uncached GET gets a 503 with the S3 error XML within
// --backend-timeout, the gateway stays up, and the uncached object is served
// once the backend answers. The assertions and figures are in
// testdata/hung_backend_clients.py (boto3).
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <iostream>

#include "testing/background_process.h"
#include "testing/s3_server.h"

namespace strata::gateway {
namespace {

namespace fs = std::filesystem;

constexpr const char* kKey = "GWHUNGKEY";
constexpr const char* kSecret = "gw-hung-secret-key";

class GatewayHungBackendTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("strata-gwhung-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    auto backend = testing::StartProxiedRgw({.ttfb_ms = 0, .rate = "0"});
    ASSERT_TRUE(backend.ok()) << backend.status();
    backend_ = std::move(backend).value();
  }
  void TearDown() override {
    // Thawed whatever the script did, so everything stops normally.
    if (backend_.proxy) {
      for (pid_t p : backend_.proxy->pids()) ::kill(-p, SIGCONT);  // nginx's process group (its workers)
    }
    if (gateway_) {
      EXPECT_EQ(gateway_->Stop(), 0) << gateway_->Log();
    }
    if (backend_.proxy) {
      EXPECT_TRUE(backend_.proxy->Stop().ok());
    }
    if (backend_.rgw) {
      EXPECT_TRUE(backend_.rgw->Stop().ok());
    }
    fs::remove_all(dir_);
  }

  fs::path dir_;
  testing::ProxiedRgw backend_;
  std::unique_ptr<testing::BackgroundProcess> gateway_;
};

TEST_F(GatewayHungBackendTest, FrozenThenRefusedBackendGets503WithinTheBoundCachedDataServedThenRecovers) {
  const std::string backend_timeout = "3", metadata_ttl = "1";
  const std::string backend = backend_.StoreUrl();
  auto gw = testing::StartStrataServe(
      {"--backend", backend, "--listen", "127.0.0.1:0", "--access-key", kKey, "--secret-key", kSecret, "--cache-ram",
       "64MiB", "--backend-timeout", backend_timeout + "s", "--metadata-ttl", metadata_ttl + "s"},
      (dir_ / "gateway.out").string(), backend_.rgw->ClientEnv());
  ASSERT_TRUE(gw.ok()) << gw.status();
  gateway_ = std::move(gw->process);

  std::string pids;
  for (pid_t p : backend_.proxy->pids()) pids += (pids.empty() ? "" : ",") + std::to_string(p);
  std::vector<std::string> argv{"/usr/bin/python3",
                                testing::SourceDir() + "/src/gateway/testdata/hung_backend_clients.py",
                                gw->endpoint,
                                kKey,
                                kSecret,
                                backend_.rgw->endpoint(),
                                backend_.rgw->access_key(),
                                backend_.rgw->secret_key(),
                                backend_.rgw->bucket(),
                                pids,
                                backend_timeout,
                                metadata_ttl,
                                backend_.proxy->script(),
                                backend_.proxy->dir()};
  auto r = testing::RunCommand(argv, backend_.rgw->ClientEnv());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->exit_code, 0) << r->stdout_text << r->stderr_text << "\ngateway log:\n" << gateway_->Log();
  EXPECT_NE(r->stdout_text.find("hung backend: "), std::string::npos) << r->stdout_text;  // every check ran
  std::cout << r->stdout_text;
  EXPECT_FALSE(gateway_->Exited()) << "the gateway must outlive a hung backend\n" << gateway_->Log();
}

}  // namespace
}  // namespace strata::gateway

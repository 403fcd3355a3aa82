// S3 checksums end to end: boto3 (and hand-signed aws-chunked trailer
// requests) against the built `strata serve` over a file:// backend. The
// assertions live in testdata/checksum_clients.py, which computes every
// expected value itself (zlib, hashlib, bitwise CRC32C/CRC64NVME).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "testing/background_process.h"
#include "testing/subprocess.h"

namespace strata::gateway {
namespace {

namespace fs = std::filesystem;

constexpr const char* kKey = "GWCHECKSUMKEY";
constexpr const char* kSecret = "gw-checksum-secret";
constexpr const char* kBucket = "cksum";

class GatewayChecksumClientsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("strata-gwck-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "data" / kBucket);
    auto serve = testing::StartStrataServe(
        std::vector<std::string>{"--backend", "file://" + (dir_ / "data").string(), "--listen", "127.0.0.1:0",
                                 "--access-key", kKey, "--secret-key", kSecret, "--cache-ram", "128MiB"},
        (dir_ / "gateway.out").string());
    ASSERT_TRUE(serve.ok()) << serve.status();
    port_ = serve->port;
    gateway_ = std::move(serve->process);
  }

  void TearDown() override {
    if (gateway_) gateway_->Stop();
    fs::remove_all(dir_);
  }

  // Runs a boto3 script from testdata/ against the gateway on `port`; it must exit 0 and print
  // its tally ("N check(s), 0 failure(s)": a script that stopped early prints none).
  void RunScript(const std::string& script, int port, testing::BackgroundProcess& gateway) {
    const char* src = std::getenv("STRATA_SOURCE_DIR");
    ASSERT_NE(src, nullptr) << "run under ctest (STRATA_SOURCE_DIR)";
    std::vector<std::string> argv{"/usr/bin/python3",
                                  std::string(src) + "/src/gateway/testdata/" + script,
                                  "http://127.0.0.1:" + std::to_string(port),
                                  kKey,
                                  kSecret,
                                  kBucket};
    testing::EnvOverrides env = testing::WithoutCaBundles();
    env.push_back({"AWS_CONFIG_FILE", "/dev/null"});
    env.push_back({"AWS_SHARED_CREDENTIALS_FILE", "/dev/null"});
    auto r = testing::RunCommand(argv, env);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->exit_code, 0) << r->stdout_text << r->stderr_text << "\ngateway log:\n" << gateway.Log();
    EXPECT_NE(r->stdout_text.find(" check(s), 0 failure(s)"), std::string::npos) << r->stdout_text;
  }

  fs::path dir_;
  std::unique_ptr<testing::BackgroundProcess> gateway_;
  int port_ = 0;
};

TEST_F(GatewayChecksumClientsTest, Boto3ChecksumsHeadersTrailersMultipartAndContentMd5) {
  RunScript("checksum_clients.py", port_, *gateway_);
}

// Two conditional writers racing on spilled bodies (exactly one wins, the
// other gets 412 or 409, the winner's bytes are stored), conditional
// Complete, UploadPartCopy part checksums and GetObjectAttributes, over the
// file:// backend and then a mem:// one (each commits conditions its own way).
TEST_F(GatewayChecksumClientsTest, Boto3ConditionalRacesPartCopyChecksumsAndObjectAttributes) {
  RunScript("write_conditions.py", port_, *gateway_);
  auto mem = testing::StartStrataServe(
      std::vector<std::string>{"--backend", std::string("mem://") + kBucket, "--listen", "127.0.0.1:0", "--access-key",
                               kKey, "--secret-key", kSecret, "--cache-ram", "128MiB"},
      (dir_ / "gateway-mem.out").string());
  ASSERT_TRUE(mem.ok()) << mem.status();
  RunScript("write_conditions.py", mem->port, *mem->process);
  mem->process->Stop();
}

// GetObject/HeadObject ?partNumber= of a 3-part upload over file:// (the
// part sizes kept with the object) and of a single PUT, as AWS answers them.
TEST_F(GatewayChecksumClientsTest, Boto3PartNumberOfMultipartObjects) {
  RunScript("part_numbers.py", port_, *gateway_);
}

}  // namespace
}  // namespace strata::gateway

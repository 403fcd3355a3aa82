// S3 checksums end to end: boto3 (and hand-signed aws-chunked trailer
// requests) against the built `strata serve` over a file:// backend. The
// assertions live in testdata/checksum_clients.py, which computes every
// expected value itself (zlib, hashlib, bitwise CRC32C/CRC64NVME).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "testing/subprocess.h"

namespace strata::gateway {
namespace {

namespace fs = std::filesystem;
using SteadyClock = std::chrono::steady_clock;

constexpr const char* kKey = "GWCHECKSUMKEY";
constexpr const char* kSecret = "gw-checksum-secret";
constexpr const char* kBucket = "cksum";

std::string ReadFile(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class GatewayChecksumClientsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("strata-gwck-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "data" / kBucket);
    const char* bin_dir = std::getenv("STRATA_BINARY_DIR");
    ASSERT_NE(bin_dir, nullptr) << "run under ctest (STRATA_BINARY_DIR)";
    std::vector<std::string> argv{std::string(bin_dir) + "/src/cli/strata",
                                  "serve",
                                  "--backend",
                                  "file://" + (dir_ / "data").string(),
                                  "--listen",
                                  "127.0.0.1:0",
                                  "--access-key",
                                  kKey,
                                  "--secret-key",
                                  kSecret,
                                  "--cache-ram",
                                  "128MiB"};
    ASSERT_TRUE(fs::exists(argv[0])) << argv[0];
    log_ = dir_ / "gateway.out";
    int fd = ::open(log_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    std::vector<char*> args;
    for (auto& s : argv) args.push_back(s.data());
    args.push_back(nullptr);
    pid_ = ::fork();
    if (pid_ == 0) {
      ::dup2(fd, 1);
      ::dup2(fd, 2);
      ::execv(args[0], args.data());
      _exit(127);
    }
    ::close(fd);
    auto deadline = SteadyClock::now() + std::chrono::seconds(30);
    while (port_ == 0 && SteadyClock::now() < deadline) {
      std::string log = ReadFile(log_);
      if (size_t p = log.find("listening on http://127.0.0.1:"); p != std::string::npos) {
        size_t nl = log.find('\n', p);
        if (nl != std::string::npos) port_ = std::stoi(log.substr(p + 30, nl - p - 30));
      }
      int st = 0;
      ASSERT_NE(::waitpid(pid_, &st, WNOHANG), pid_) << "strata serve exited:\n" << ReadFile(log_);
      std::this_thread::sleep_for(std::chrono::milliseconds(20));  // polling the log for the port
    }
    ASSERT_NE(port_, 0) << ReadFile(log_);
  }

  void TearDown() override {
    if (pid_ > 0) {
      ::kill(pid_, SIGTERM);
      int st = 0;
      auto deadline = SteadyClock::now() + std::chrono::seconds(20);
      while (::waitpid(pid_, &st, WNOHANG) == 0) {
        if (SteadyClock::now() > deadline) {
          ::kill(pid_, SIGKILL);
          ::waitpid(pid_, &st, 0);
          break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));  // polling the child's exit
      }
    }
    fs::remove_all(dir_);
  }

  fs::path dir_, log_;
  pid_t pid_ = -1;
  int port_ = 0;
};

TEST_F(GatewayChecksumClientsTest, Boto3ChecksumsHeadersTrailersMultipartAndContentMd5) {
  const char* src = std::getenv("STRATA_SOURCE_DIR");
  ASSERT_NE(src, nullptr) << "run under ctest (STRATA_SOURCE_DIR)";
  std::vector<std::string> argv{"/usr/bin/python3",
                                std::string(src) + "/src/gateway/testdata/checksum_clients.py",
                                "http://127.0.0.1:" + std::to_string(port_),
                                kKey,
                                kSecret,
                                kBucket};
  testing::EnvOverrides env = testing::WithoutCaBundles();
  env.push_back({"AWS_CONFIG_FILE", "/dev/null"});
  env.push_back({"AWS_SHARED_CREDENTIALS_FILE", "/dev/null"});
  auto r = testing::RunCommand(argv, env);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->exit_code, 0) << r->stdout_text << r->stderr_text << "\ngateway log:\n" << ReadFile(log_);
  // Every check ran (a script that stopped early would not print its tally).
  EXPECT_NE(r->stdout_text.find("0 failure(s)"), std::string::npos) << r->stdout_text;
}

}  // namespace
}  // namespace strata::gateway

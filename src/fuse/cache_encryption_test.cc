// Cache directories encrypted at rest (--cache-encryption-key-file) through
// the real front ends: `strata serve` driven by the aws CLI and curl, and
// `strata mount` driven by cp and cat, each over a file:// bucket. A
// plaintext marker written and read through them never appears in the cache
// directory (every file of it searched with grep), the bytes read back are
// exact, and a wrong key stops the restarted front end with a clear error.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>

#include "testing/background_process.h"
#include "testing/subprocess.h"

namespace strata::fuse {
namespace {

namespace stdfs = std::filesystem;

constexpr char kMarker[] = "PLAINTEXT-MARKER-c0ffee-4b1d";
constexpr char kAccessKey[] = "sealed-test-key";
constexpr char kSecretKey[] = "sealed-test-secret-0123456789";

std::string ReadAll(const stdfs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// Random bytes with the marker every 64 KiB: every cache block holds it.
std::string MarkedBytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::string s(n, '\0');
  for (auto& c : s) c = static_cast<char>(rng());
  for (size_t at = 0; at + sizeof(kMarker) < n; at += 64 << 10) std::memcpy(&s[at], kMarker, sizeof(kMarker) - 1);
  return s;
}

class CacheEncryptionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* bin = std::getenv("STRATA_BINARY_DIR");
    ASSERT_NE(bin, nullptr) << "run under ctest (STRATA_BINARY_DIR)";
    strata_ = std::string(bin) + "/src/cli/strata";
    dir_ = stdfs::temp_directory_path() / ("strata-sealed-" + std::to_string(::getpid()) + "-" +
                                           ::testing::UnitTest::GetInstance()->current_test_info()->name());
    stdfs::remove_all(dir_);
    stdfs::create_directories(dir_ / "bucket" / "data");
    key_ = Key("key", 1);
    wrong_key_ = Key("wrong-key", 2);
  }
  void TearDown() override {
    if (serve_) serve_->Stop();
    if (mount_) {
      mount_->Stop();
      (void)testing::RunCommand({"fusermount3", "-u", "-z", (dir_ / "mnt").string()});
    }
    std::error_code ec;
    stdfs::remove_all(dir_, ec);
  }

  std::string Key(const std::string& name, uint32_t seed) {
    std::mt19937 rng(seed);
    std::string k(32, '\0');
    for (auto& c : k) c = static_cast<char>(rng());
    const stdfs::path p = dir_ / name;
    std::ofstream(p, std::ios::binary) << k;
    stdfs::permissions(p, stdfs::perms::owner_read | stdfs::perms::owner_write, stdfs::perm_options::replace);
    return p.string();
  }

  // grep over every file of `dir` (binary files too): whether the marker is anywhere.
  bool MarkerIn(const stdfs::path& dir) {
    auto r = testing::RunCommand({"grep", "-r", "-a", "-l", "-F", kMarker, dir.string()});
    EXPECT_TRUE(r.ok()) << r.status();
    EXPECT_TRUE(r.ok() && (r->exit_code == 0 || r->exit_code == 1)) << (r.ok() ? r->stderr_text : "");
    if (r.ok() && r->exit_code == 0) ADD_FAILURE() << "the marker is in: " << r->stdout_text;
    return r.ok() && r->exit_code == 0;
  }
  size_t BlockFiles(const stdfs::path& cache) {
    size_t n = 0;
    if (!stdfs::exists(cache / "blocks")) return 0;
    for (auto& e : stdfs::recursive_directory_iterator(cache / "blocks")) n += e.is_regular_file();
    return n;
  }

  Result<testing::ServeProcess> Serve(const std::string& key_file) {
    return testing::StartStrataServe(
        {"--backend", "file://" + (dir_ / "bucket").string(), "--listen", "127.0.0.1:0", "--access-key", kAccessKey,
         "--secret-key", kSecretKey, "--cache-dir", (dir_ / "cache").string(), "--block-size", "1MiB",
         "--cache-encryption-key-file", key_file},
        (dir_ / "serve.log").string());
  }
  testing::EnvOverrides AwsEnv() {
    testing::EnvOverrides env = testing::WithoutCaBundles();
    env.push_back({"AWS_ACCESS_KEY_ID", kAccessKey});
    env.push_back({"AWS_SECRET_ACCESS_KEY", kSecretKey});
    env.push_back({"AWS_DEFAULT_REGION", "us-east-1"});
    env.push_back({"AWS_CONFIG_FILE", "/dev/null"});
    return env;
  }

  std::string strata_, key_, wrong_key_;
  stdfs::path dir_;
  std::unique_ptr<testing::BackgroundProcess> serve_, mount_;
};

TEST_F(CacheEncryptionTest, GatewayCacheHoldsNoPlaintextAndRefusesAWrongKey) {
  auto serve = Serve(key_);
  ASSERT_TRUE(serve.ok()) << serve.status();
  serve_ = std::move(serve->process);
  const std::string endpoint = serve->endpoint;
  // Written through the gateway (aws CLI), then read back twice (aws CLI, curl): the second from the cache.
  const std::string want = MarkedBytes((3 << 20) + 4321, 7);
  std::ofstream(dir_ / "upload", std::ios::binary) << want;
  std::vector<std::string> put = {
      "/usr/bin/aws", "--endpoint-url", endpoint, "s3", "cp", (dir_ / "upload").string(), "s3://data/marked.bin"};
  auto r = testing::RunCommand(put, AwsEnv());
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->exit_code, 0) << testing::DescribeRun(put, *r);
  for (int pass = 0; pass < 2; ++pass) {
    std::vector<std::string> get = {
        "/usr/bin/aws", "--endpoint-url", endpoint, "s3", "cp", "s3://data/marked.bin", (dir_ / "download").string()};
    r = testing::RunCommand(get, AwsEnv());
    ASSERT_TRUE(r.ok()) << r.status();
    ASSERT_EQ(r->exit_code, 0) << testing::DescribeRun(get, *r);
    EXPECT_TRUE(ReadAll(dir_ / "download") == want) << "pass " << pass << ": other bytes than written";
  }
  const std::vector<std::string> curl = {"curl",
                                         "-sS",
                                         "-f",
                                         "-o",
                                         (dir_ / "curl-download").string(),
                                         "--aws-sigv4",
                                         "aws:amz:us-east-1:s3",
                                         "--user",
                                         std::string(kAccessKey) + ":" + kSecretKey,
                                         "-H",
                                         "x-amz-content-sha256: UNSIGNED-PAYLOAD",
                                         endpoint + "/data/marked.bin"};
  r = testing::RunCommand(curl, testing::WithoutCaBundles());
  ASSERT_TRUE(r.ok() && r->exit_code == 0) << (r.ok() ? testing::DescribeRun(curl, *r) : r.status().ToString());
  EXPECT_TRUE(ReadAll(dir_ / "curl-download") == want);
  EXPECT_EQ(serve_->Stop(), 0) << serve_->Log();
  serve_.reset();
  EXPECT_EQ(BlockFiles(dir_ / "cache"), 4u) << "the reads went through the disk tier";
  EXPECT_FALSE(MarkerIn(dir_ / "cache"));

  // Restarted with another key: a clear error at start, nothing served, nothing deleted.
  auto wrong = Serve(wrong_key_);
  ASSERT_FALSE(wrong.ok());
  const std::string log = ReadAll(dir_ / "serve.log");
  EXPECT_NE(log.find("was encrypted with another key"), std::string::npos) << log;
  EXPECT_EQ(BlockFiles(dir_ / "cache"), 4u);
  // And with its key: served from the cache, exact.
  serve = Serve(key_);
  ASSERT_TRUE(serve.ok()) << serve.status();
  serve_ = std::move(serve->process);
  std::vector<std::string> get = {"/usr/bin/aws", "--endpoint-url",       serve->endpoint,          "s3",
                                  "cp",           "s3://data/marked.bin", (dir_ / "again").string()};
  r = testing::RunCommand(get, AwsEnv());
  ASSERT_TRUE(r.ok() && r->exit_code == 0) << (r.ok() ? testing::DescribeRun(get, *r) : r.status().ToString());
  EXPECT_TRUE(ReadAll(dir_ / "again") == want);
}

TEST_F(CacheEncryptionTest, MountCacheHoldsNoPlaintextAndRefusesAWrongKey) {
  ASSERT_TRUE(stdfs::exists("/dev/fuse"));
  const std::string existing = MarkedBytes((2 << 20) + 99, 9);
  std::ofstream(dir_ / "bucket" / "data" / "existing.bin", std::ios::binary) << existing;
  stdfs::create_directories(dir_ / "mnt");
  const std::string mnt = (dir_ / "mnt").string();
  auto mount = [&](const std::string& key_file) {
    return testing::BackgroundProcess::Start(
        {strata_, "mount", "file://" + (dir_ / "bucket").string(), mnt, "--foreground", "--cache-dir",
         (dir_ / "cache").string(), "--block-size", "1MiB", "--cache-encryption-key-file", key_file},
        (dir_ / "mount.log").string());
  };
  auto m = mount(key_);
  ASSERT_TRUE(m.ok()) << m.status();
  mount_ = std::move(*m);
  ASSERT_TRUE(mount_->WaitForLine("strata: mounted", std::chrono::seconds(60)).ok()) << mount_->Log();
  // Written through the mount (cp), read back (cat), and a file the bucket had, read through it.
  const std::string written = MarkedBytes((1 << 20) + 7, 11);
  std::ofstream(dir_ / "local", std::ios::binary) << written;
  auto cp = testing::RunCommand({"cp", (dir_ / "local").string(), mnt + "/data/written.bin"});
  ASSERT_TRUE(cp.ok() && cp->exit_code == 0) << (cp.ok() ? cp->stderr_text : cp.status().ToString());
  for (const auto& [name, want] : {std::pair{"written.bin", &written}, {"existing.bin", &existing}}) {
    auto cat = testing::RunCommand({"cat", mnt + "/data/" + name});
    ASSERT_TRUE(cat.ok() && cat->exit_code == 0) << name;
    EXPECT_TRUE(cat->stdout_text == *want) << name << ": other bytes through the mount";
  }
  EXPECT_TRUE(ReadAll(dir_ / "bucket" / "data" / "written.bin") == written) << "the upload reached the bucket";
  EXPECT_EQ(mount_->Stop(), 0) << mount_->Log();
  mount_.reset();
  EXPECT_GE(BlockFiles(dir_ / "cache"), 3u) << "the reads went through the disk tier";
  EXPECT_FALSE(MarkerIn(dir_ / "cache"));

  m = mount(wrong_key_);
  ASSERT_TRUE(m.ok()) << m.status();
  int code = 0;
  EXPECT_TRUE((*m)->WaitExit(std::chrono::seconds(30), &code)) << "a mount with the wrong key kept running";
  EXPECT_NE(code, 0);
  EXPECT_NE((*m)->Log().find("was encrypted with another key"), std::string::npos) << (*m)->Log();
}

}  // namespace
}  // namespace strata::fuse

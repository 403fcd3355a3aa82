#include "io/secret_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace strata::io {
namespace {

class SecretFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("strata-secret-test-" + std::to_string(getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string Write(const std::string& name, const std::string& bytes, mode_t mode) {
    std::string p = (dir_ / name).string();
    std::ofstream(p, std::ios::binary | std::ios::trunc) << bytes;
    EXPECT_EQ(::chmod(p.c_str(), mode), 0);
    return p;
  }
  std::filesystem::path dir_;
};

TEST_F(SecretFileTest, TextSecretLosesItsNewlineAndNeedsItsLength) {
  const SecretRules rules{.what = "the test secret", .min_bytes = 8};
  EXPECT_EQ(ReadSecretFile(Write("a", "12345678\r\n", 0600), rules).value_or(""), "12345678");
  EXPECT_EQ(ReadSecretFile(Write("b", "1234567\n", 0400), rules).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(ReadSecretFile(Write("c", std::string(5000, 'x'), 0600), rules).status().code(), Code::kInvalidArgument);
}

TEST_F(SecretFileTest, BinaryKeyKeepsEveryByte) {
  const std::string key = std::string(31, '\x01') + "\n";  // a key may end in a newline byte
  auto r = ReadSecretFile(Write("k", key, 0600), {.what = "the key", .min_bytes = 32, .max_bytes = 32, .text = false});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(*r, key);
}

TEST_F(SecretFileTest, GroupOrOthersMayNotTouchIt) {
  for (mode_t mode : {0644, 0640, 0604, 0620, 0602, 0660}) {
    auto r = ReadSecretFile(Write("s", "0123456789", mode), {.what = "the test secret"});
    EXPECT_EQ(r.status().code(), Code::kPermissionDenied) << std::oct << mode;
    EXPECT_NE(r.status().message().find("chmod 600"), std::string::npos);
    EXPECT_EQ(r.status().message().find("0123456789"), std::string::npos) << "errors never show the secret";
  }
  // Through a symlink (as Kubernetes mounts Secrets), the target's mode counts.
  const std::string target = Write("t", "0123456789", 0600);
  std::filesystem::create_symlink(target, dir_ / "link");
  EXPECT_TRUE(ReadSecretFile((dir_ / "link").string(), {.what = "the test secret"}).ok());
  EXPECT_EQ(ReadSecretFile(dir_.string(), {.what = "the test secret"}).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(ReadSecretFile((dir_ / "none").string(), {.what = "the test secret"}).status().code(), Code::kNotFound);
}

}  // namespace
}  // namespace strata::io

#include "group/member.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace strata::group {
namespace {

constexpr char kSecret[] = "member-test-secret-0123456789abcdef";

TEST(GroupUrl, ParsesEtcdAndStatic) {
  auto e = ParseGroupUrl("etcd://127.0.0.1:2379/train");
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  EXPECT_EQ(e->etcd.url, "http://127.0.0.1:2379");
  EXPECT_EQ(e->group, "train");
  auto s = ParseGroupUrl("static://127.0.0.1:7001,127.0.0.1:7002,[::1]:7003");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->peers, (std::vector<std::string>{"127.0.0.1:7001", "127.0.0.1:7002", "[::1]:7003"}));
  for (const char* bad : {"etcd://127.0.0.1:2379", "etcd://127.0.0.1:2379/", "etcd://host/g", "static://",
                          "static://a:b", "static://h:99999", "http://x:1/g", "", "static://evil.example/x?:80",
                          "static://user@h:80", "static://127.0.0.1:0", "etcd://127.0.0.1:2379/g?ca=/x",
                          "etcds://127.0.0.1:2379/?ca=/x", "etcds://127.0.0.1:2379/g?bogus=1",
                          "etcds://127.0.0.1:2379/g?cert=/c", "etcds://127.0.0.1:2379/g?ca=/a&ca=/b"}) {
    EXPECT_FALSE(ParseGroupUrl(bad).ok()) << bad;
  }
}

TEST(GroupUrl, EtcdsTakesTlsFilesAndAUser) {
  auto e = ParseGroupUrl("etcds://127.0.0.1:2379/train?ca=/etc/ca.pem&cert=/etc/c.pem&key=/etc/k%20ey.pem");
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  EXPECT_EQ(e->etcd.url, "https://127.0.0.1:2379");
  EXPECT_EQ(e->group, "train");
  EXPECT_EQ(e->etcd.ca_file, "/etc/ca.pem");
  EXPECT_EQ(e->etcd.cert_file, "/etc/c.pem");
  EXPECT_EQ(e->etcd.key_file, "/etc/k ey.pem");
  auto u = ParseGroupUrl("etcds://127.0.0.1:2379/g?user_file=/run/u");
  ASSERT_TRUE(u.ok()) << u.status().ToString();
  EXPECT_EQ(u->etcd.user_file, "/run/u");
  EXPECT_TRUE(u->etcd.ca_file.empty());
}

class SecretFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("strata-member-test-" + std::to_string(getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string Write(const std::string& text, mode_t mode) {
    std::string p = (dir_ / "secret").string();
    std::ofstream(p, std::ios::trunc) << text;
    ::chmod(p.c_str(), mode);
    return p;
  }
  std::filesystem::path dir_;
};

TEST_F(SecretFileTest, GroupSecretNeeds32BytesAndAPrivateFile) {
  auto ok = ReadGroupSecret(Write(std::string(kSecret) + "\n", 0600));
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(*ok, kSecret);
  auto loose = ReadGroupSecret(Write(kSecret, 0644));
  EXPECT_EQ(loose.status().code(), Code::kPermissionDenied);
  EXPECT_NE(loose.status().message().find("chmod 600"), std::string::npos) << loose.status();
  EXPECT_EQ(loose.status().message().find(kSecret), std::string::npos);
  auto group_readable = ReadGroupSecret(Write(kSecret, 0640));
  EXPECT_EQ(group_readable.status().code(), Code::kPermissionDenied);
  auto short_one = ReadGroupSecret(Write("0123456789abcdef0123456789abcde\n", 0600));  // 31 bytes
  EXPECT_EQ(short_one.status().code(), Code::kInvalidArgument);
  EXPECT_EQ(short_one.status().message().find("0123456789abcdef"), std::string::npos) << short_one.status();
  EXPECT_EQ(ReadGroupSecret((dir_ / "missing").string()).status().code(), Code::kNotFound);
}

TEST_F(SecretFileTest, EnvironmentSecretNeeds32BytesToo) {
  ASSERT_EQ(setenv("STRATA_GROUP_SECRET", "short-secret", 1), 0);
  EXPECT_EQ(ReadGroupSecret("").status().code(), Code::kInvalidArgument);
  ASSERT_EQ(setenv("STRATA_GROUP_SECRET", kSecret, 1), 0);
  EXPECT_EQ(ReadGroupSecret("").value_or(""), kSecret);
  ASSERT_EQ(unsetenv("STRATA_GROUP_SECRET"), 0);
  EXPECT_EQ(ReadGroupSecret("").status().code(), Code::kInvalidArgument);
}

TEST(GroupMember, RefusesWhatCannotWork) {
  JoinOptions o;
  o.url = "static://127.0.0.1:7001";
  o.listen = "127.0.0.1:0";
  o.secret = kSecret;
  EXPECT_EQ(GroupMember::Join(o).status().code(), Code::kInvalidArgument);  // a static list needs a fixed port
  o.url = "etcd://127.0.0.1:1/g";
  o.secret = "0123456789abcdef";  // 16 bytes
  EXPECT_EQ(GroupMember::Join(o).status().code(), Code::kInvalidArgument);
  o.secret = kSecret;
  o.listen = "127.0.0.1:0/x";
  EXPECT_EQ(GroupMember::Join(o).status().code(), Code::kInvalidArgument);
}

}  // namespace
}  // namespace strata::group

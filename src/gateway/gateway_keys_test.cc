// Every valid S3 key through `strata serve --backend file://` (issue 14 item
// 2) with real clients: boto3 puts an object and keys below it, "dir/"
// markers, empty, "." and ".." segments, spaces, unicode and long segments,
// then lists them (prefix, delimiter, start-after, pages) and reads them
// back, all checked against a model of S3's answer; then the aws CLI lists
// the bucket and `aws s3 rb --force` removes it.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "testing/background_process.h"
#include "testing/subprocess.h"

namespace strata::gateway {
namespace {

using strata::testing::operator+=;  // EnvOverrides is a std::vector: ADL cannot find it

namespace fs = std::filesystem;

constexpr const char* kKey = "GWKEYSACCESSKEY";
constexpr const char* kSecret = "gw-keys-secret-1234";
constexpr const char* kBucket = "gwkeys";

int Count(const std::string& s, std::string_view what) {
  int n = 0;
  for (size_t p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) ++n;
  return n;
}

constexpr const char* kScript = R"PY(
import sys
import boto3
from botocore.config import Config
endpoint, bucket, key_id, secret = sys.argv[1:5]
s3 = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id=key_id, aws_secret_access_key=secret,
                  region_name="us-east-1", config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}))
keys = ["a", "a/b", "a/b/c", "a-b", "a0", "d/x", "d", "dir/", "dir/x", "dir//", "a//b", "/lead", "trail/",
        "./x", "x/../y", "..", ".strata-tmp", ".strata-x", "k/.strata-self", "with space/and more ",
        "unicod\u00e9/\u043a\u043b\u044e\u0447/\u65e5\u672c", "long/" + "t" * 255, "long/" + "u" * 250 + "/v"]
for k in keys:
    s3.put_object(Bucket=bucket, Key=k, Body=("v:" + k).encode())
for k in keys:
    body = s3.get_object(Bucket=bucket, Key=k)["Body"].read()
    assert body == ("v:" + k).encode(), (k, body)

def reference(prefix, delimiter, start_after):
    out_keys, prefixes = [], []
    for k in sorted(keys, key=lambda s: s.encode()):
        if not k.startswith(prefix) or k.encode() <= start_after.encode():
            continue
        d = k.find(delimiter, len(prefix)) if delimiter else -1
        if d < 0:
            out_keys.append(k)
        else:
            cp = k[:d + len(delimiter)]
            if cp != start_after and cp not in prefixes:
                prefixes.append(cp)
    return out_keys, prefixes

def listing(prefix, delimiter, start_after, page):
    args = {"Bucket": bucket, "Prefix": prefix, "Delimiter": delimiter, "StartAfter": start_after}
    got_keys, got_prefixes = [], []
    for p in s3.get_paginator("list_objects_v2").paginate(PaginationConfig={"PageSize": page}, **args):
        got_keys += [o["Key"] for o in p.get("Contents", [])]
        got_prefixes += [c["Prefix"] for c in p.get("CommonPrefixes", [])]
    return got_keys, got_prefixes

cases = [("", "", ""), ("", "/", ""), ("a", "/", ""), ("a/", "/", ""), ("a//", "/", ""), ("dir/", "/", ""),
         ("/", "/", ""), ("x/", "/", ""), ("", "/", "a/"), ("", "", "a/b"), ("", "/", "dir/"), (".", "/", ""),
         ("long/", "/", "")]
for prefix, delimiter, start_after in cases:
    want = reference(prefix, delimiter, start_after)
    for page in (1000, 2):
        got = listing(prefix, delimiter, start_after, page)
        assert got == want, (prefix, delimiter, start_after, page, got, want)
# Copy onto a marker and onto a key below an object.
s3.copy_object(Bucket=bucket, Key="copied//", CopySource={"Bucket": bucket, "Key": "a//b"})
assert s3.get_object(Bucket=bucket, Key="copied//")["Body"].read() == b"v:a//b"
s3.delete_object(Bucket=bucket, Key="a")
assert s3.get_object(Bucket=bucket, Key="a/b")["Body"].read() == b"v:a/b"
print("OK %d keys" % len(keys))
)PY";

class GatewayKeysTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("strata-gwk-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "data" / kBucket);
    auto serve = testing::StartStrataServe(
        std::vector<std::string>{"--backend", "file://" + (dir_ / "data").string(), "--listen", "127.0.0.1:0",
                                 "--access-key", kKey, "--secret-key", kSecret, "--cache-ram", "128MiB"},
        (dir_ / "gateway.out").string());
    ASSERT_TRUE(serve.ok()) << serve.status();
    endpoint_ = serve->endpoint;
    gateway_ = std::move(serve->process);
  }

  void TearDown() override {
    if (gateway_) {
      int code = gateway_->Stop();
      EXPECT_EQ(code, 0) << "strata serve did not exit cleanly:\n" << gateway_->Log();
    }
    fs::remove_all(dir_);
  }

  testing::EnvOverrides AwsEnv() const {
    testing::EnvOverrides env = testing::WithoutCaBundles();
    env += {{"AWS_ACCESS_KEY_ID", kKey},
            {"AWS_SECRET_ACCESS_KEY", kSecret},
            {"AWS_DEFAULT_REGION", "us-east-1"},
            {"AWS_REGION", "us-east-1"},
            {"AWS_SESSION_TOKEN", std::nullopt},
            {"AWS_PROFILE", std::nullopt},
            {"AWS_CONFIG_FILE", "/dev/null"},
            {"AWS_SHARED_CREDENTIALS_FILE", "/dev/null"},
            {"AWS_PAGER", ""},
            {"AWS_ENDPOINT_URL", std::nullopt},
            {"NO_PROXY", "127.0.0.1"}};
    return env;
  }
  testing::CommandResult Run(const std::vector<std::string>& argv, const testing::EnvOverrides& env) {
    testing::RunOptions o;
    o.timeout = std::chrono::seconds(300);
    auto r = testing::RunCommand(argv, env, std::nullopt, o);
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? *r : testing::CommandResult{-1, "", r.status().ToString()};
  }

  fs::path dir_;
  std::unique_ptr<testing::BackgroundProcess> gateway_;
  std::string endpoint_;
};

TEST_F(GatewayKeysTest, EveryValidKeyOnFileBackendThenRbForce) {
  const fs::path script = dir_ / "keys.py";
  std::ofstream(script) << kScript;
  std::vector<std::string> boto = {"/usr/bin/python3", script.string(), endpoint_, kBucket, kKey, kSecret};
  testing::CommandResult r = Run(boto, testing::WithoutCaBundles());
  ASSERT_EQ(r.exit_code, 0) << testing::DescribeRun(boto, r) << "\n" << gateway_->Log();
  EXPECT_EQ(r.stdout_text.substr(0, 3), "OK ") << r.stdout_text;
  // Plain keys are plain files; the others escaped ("dir/" is a marker file
  // in a directory that "dir//" also needs, so it is that directory's self).
  const fs::path bucket = dir_ / "data" / kBucket;
  EXPECT_TRUE(fs::is_regular_file(bucket / "a0"));
  EXPECT_TRUE(fs::is_regular_file(bucket / "dir/x"));
  EXPECT_TRUE(fs::is_regular_file(bucket / "a/.strata-x/b"));
  EXPECT_TRUE(fs::is_regular_file(bucket / "dir/.strata-x/.strata-self"));
  std::vector<std::string> ls = {"/usr/bin/aws",   "--endpoint-url", endpoint_, "s3api",
                                 "list-objects",   "--bucket",       kBucket,   "--query",
                                 "Contents[].Key", "--output",       "json"};
  testing::CommandResult listed = Run(ls, AwsEnv());
  ASSERT_EQ(listed.exit_code, 0) << testing::DescribeRun(ls, listed);
  EXPECT_NE(listed.stdout_text.find("\"dir/\""), std::string::npos) << listed.stdout_text;
  EXPECT_NE(listed.stdout_text.find("\"a//b\""), std::string::npos) << listed.stdout_text;
  // Only the user's own keys with internal-looking names, nothing internal.
  EXPECT_EQ(Count(listed.stdout_text, "strata-tmp\""), 1) << listed.stdout_text;
  EXPECT_EQ(Count(listed.stdout_text, "strata-self\""), 1) << listed.stdout_text;
  EXPECT_EQ(Count(listed.stdout_text, "strata-x"), 1) << listed.stdout_text;
  std::vector<std::string> rb = {
      "/usr/bin/aws", "--endpoint-url", endpoint_, "s3", "rb", std::string("s3://") + kBucket, "--force"};
  testing::CommandResult removed = Run(rb, AwsEnv());
  EXPECT_EQ(removed.exit_code, 0) << testing::DescribeRun(rb, removed) << "\n" << removed.stdout_text;
  EXPECT_FALSE(fs::exists(dir_ / "data" / kBucket));
}

}  // namespace
}  // namespace strata::gateway

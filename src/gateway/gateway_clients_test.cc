// Real clients against `strata serve` (the built binary), in front of a
// file:// backend and in front of Ceph RGW: the aws CLI (s3 cp/sync/ls and
// s3api multipart), boto3, s3cmd, rclone and an s3fs FUSE mount each write
// objects that every other client then reads back byte for byte; a wrong
// secret is refused with SignatureDoesNotMatch by every client.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <thread>

#include "base/hash.h"
#include "testing/background_process.h"
#include "testing/s3_server.h"
#include "testing/subprocess.h"

namespace strata::gateway {
namespace {

using strata::testing::operator+=;  // EnvOverrides is a std::vector: ADL cannot find it

namespace fs = std::filesystem;
using SteadyClock = std::chrono::steady_clock;

constexpr const char* kGwKey = "GWTESTACCESSKEY";
constexpr const char* kGwSecret = "gw-test-secret-key-1234";
constexpr const char* kPython = "/usr/bin/python3";
constexpr const char* kAws = "/usr/bin/aws";

std::string ReadFile(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}
void WriteFile(const fs::path& p, std::string_view data) {
  fs::create_directories(p.parent_path());
  std::ofstream out(p, std::ios::binary);
  out.write(data.data(), data.size());
}
std::string Unq(std::string s) {
  if (s.size() >= 2 && s.front() == '"' && s.back() == '"') s = s.substr(1, s.size() - 2);
  return s;
}
std::string RandomBytes(size_t n, uint32_t seed) {
  std::mt19937_64 rng(seed);
  std::string s(n, '\0');
  for (size_t i = 0; i < n; i += 8) {
    uint64_t v = rng();
    std::memcpy(&s[i], &v, std::min<size_t>(8, n - i));
  }
  return s;
}

enum class BackendKind { kFile, kRgw };

class GatewayClientsTest : public ::testing::TestWithParam<BackendKind> {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("strata-gwc-" + std::to_string(::getpid()) + "-" + (GetParam() == BackendKind::kFile ? "file" : "rgw"));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    std::string backend;
    testing::EnvOverrides gw_env = testing::WithoutCaBundles();
    if (GetParam() == BackendKind::kFile) {
      bucket_ = "gwbucket";
      fs::create_directories(dir_ / "data" / bucket_);
      backend = "file://" + (dir_ / "data").string();
    } else {
      auto server = testing::S3TestServer::Start(testing::S3TestServer::Kind::kRgw);
      ASSERT_TRUE(server.ok()) << server.status();
      rgw_ = std::move(server).value();
      bucket_ = rgw_->bucket();
      backend = rgw_->StoreUrl();
      gw_env = rgw_->ClientEnv();  // the gateway's own credentials for RGW
    }
    const char* bin_dir = std::getenv("STRATA_BINARY_DIR");
    ASSERT_NE(bin_dir, nullptr) << "run under ctest (STRATA_BINARY_DIR)";
    std::string strata = std::string(bin_dir) + "/src/cli/strata";
    ASSERT_TRUE(fs::exists(strata)) << strata;
    access_log_ = dir_ / "access.log";
    auto serve = testing::StartStrataServe(
        {"--backend", backend, "--listen", "127.0.0.1:0", "--access-key", kGwKey, "--secret-key", kGwSecret,
         "--access-log", access_log_.string(), "--cache-ram", "512MiB"},
        (dir_ / "gateway.out").string(), gw_env);
    ASSERT_TRUE(serve.ok()) << serve.status();
    endpoint_ = serve->endpoint;
    gateway_ = std::move(serve->process);
    WriteFile(dir_ / "boto3_helper.py", kBotoHelper);
  }

  void TearDown() override {
    if (s3fs_) UnmountS3fs();
    if (gateway_) {
      int code = gateway_->Stop();
      EXPECT_EQ(code, 0) << "strata serve did not exit cleanly on SIGTERM:\n" << gateway_->Log();
    }
    if (rgw_) {
      EXPECT_TRUE(rgw_->Stop().ok());
    }
    fs::remove_all(dir_);
  }

  testing::EnvOverrides AwsEnv(const std::string& secret = kGwSecret) const {
    testing::EnvOverrides env = testing::WithoutCaBundles();
    env += {{"AWS_ACCESS_KEY_ID", kGwKey},         {"AWS_SECRET_ACCESS_KEY", secret},
            {"AWS_DEFAULT_REGION", "us-east-1"},   {"AWS_REGION", "us-east-1"},
            {"AWS_SESSION_TOKEN", std::nullopt},   {"AWS_PROFILE", std::nullopt},
            {"AWS_CONFIG_FILE", "/dev/null"},      {"AWS_SHARED_CREDENTIALS_FILE", "/dev/null"},
            {"AWS_EC2_METADATA_DISABLED", "true"}, {"AWS_PAGER", ""},
            {"AWS_ENDPOINT_URL", std::nullopt},    {"NO_PROXY", "127.0.0.1"}};
    return env;
  }

  testing::CommandResult Run(const std::vector<std::string>& argv, const testing::EnvOverrides& env) {
    testing::RunOptions o;
    o.timeout = std::chrono::seconds(300);
    auto r = testing::RunCommand(argv, env, std::nullopt, o);
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? *r : testing::CommandResult{-1, "", r.status().ToString()};
  }
  void MustRun(const std::vector<std::string>& argv, const testing::EnvOverrides& env) {
    testing::CommandResult r = Run(argv, env);
    ASSERT_EQ(r.exit_code, 0) << testing::DescribeRun(argv, r) << "\n" << r.stdout_text;
  }

  std::vector<std::string> Aws(std::vector<std::string> args) const {
    args.insert(args.begin(), {kAws, "--endpoint-url", endpoint_});
    return args;
  }
  std::vector<std::string> Boto(std::vector<std::string> args, const std::string& secret = kGwSecret) const {
    args.insert(args.begin(), {kPython, (dir_ / "boto3_helper.py").string(), endpoint_, bucket_, kGwKey, secret});
    return args;
  }
  fs::path S3cmdConfig(const std::string& secret = kGwSecret) {
    fs::path p = dir_ / ("s3cmd-" + std::to_string(secret.size()) + ".cfg");
    std::string hostport = endpoint_.substr(std::string("http://").size());
    WriteFile(p, "[default]\naccess_key = " + std::string(kGwKey) + "\nsecret_key = " + secret +
                     "\nhost_base = " + hostport + "\nhost_bucket = " + hostport +
                     "\nuse_https = False\nsignature_v2 = False\nbucket_location = us-east-1\n"
                     "check_ssl_certificate = False\n");
    return p;
  }
  std::vector<std::string> S3cmd(std::vector<std::string> args, const std::string& secret = kGwSecret) {
    args.insert(args.begin(), {"s3cmd", "-c", S3cmdConfig(secret).string()});
    return args;
  }
  testing::EnvOverrides RcloneEnv(const std::string& secret = kGwSecret) const {
    testing::EnvOverrides env = testing::WithoutCaBundles();
    env += {{"RCLONE_CONFIG", "/dev/null"},
            {"RCLONE_CONFIG_GW_TYPE", "s3"},
            {"RCLONE_CONFIG_GW_PROVIDER", "Other"},
            {"RCLONE_CONFIG_GW_ACCESS_KEY_ID", kGwKey},
            {"RCLONE_CONFIG_GW_SECRET_ACCESS_KEY", secret},
            {"RCLONE_CONFIG_GW_ENDPOINT", endpoint_},
            {"RCLONE_CONFIG_GW_REGION", "us-east-1"},
            {"RCLONE_CONFIG_GW_FORCE_PATH_STYLE", "true"}};
    return env;
  }

  // Mounts the gateway with s3fs (foreground child, so we hold its PID).
  bool MountS3fs(const std::string& secret, int* exit_code = nullptr) {
    mount_ = dir_ / ("mnt-" + std::to_string(secret.size()));
    fs::create_directories(mount_);
    fs::path passwd = dir_ / "s3fs.passwd";
    WriteFile(passwd, std::string(kGwKey) + ":" + secret + "\n");
    fs::permissions(passwd, fs::perms::owner_read | fs::perms::owner_write);
    auto s3fs = testing::BackgroundProcess::Start(
        {"s3fs", bucket_, mount_.string(), "-f", "-o",
         "url=" + endpoint_ + ",use_path_request_style,sigv4,endpoint=us-east-1,passwd_file=" + passwd.string() +
             ",umask=022,mp_umask=022,dbglevel=warn,retries=1"},
        (dir_ / "s3fs.out").string(), testing::WithoutCaBundles());
    if (!s3fs.ok()) return false;
    s3fs_ = std::move(s3fs).value();
    auto deadline = SteadyClock::now() + std::chrono::seconds(30);
    while (SteadyClock::now() < deadline) {
      if (ReadFile("/proc/self/mounts").find(" " + mount_.string() + " fuse") != std::string::npos) return true;
      if (s3fs_->Exited(exit_code)) {
        s3fs_.reset();
        return false;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));  // polling the mount table
    }
    return false;
  }
  void UnmountS3fs() {
    Run({"fusermount3", "-u", mount_.string()}, {});
    if (s3fs_ && !s3fs_->WaitExit(std::chrono::seconds(20))) s3fs_->Stop();
    s3fs_.reset();
  }

  int AccessLogCount(std::string_view code) {
    std::string log = ReadFile(access_log_);
    int n = 0;
    for (size_t p = 0; (p = log.find(code, p)) != std::string::npos; p += code.size()) ++n;
    return n;
  }

  static constexpr const char* kBotoHelper = R"PY(
import os, sys, hashlib, urllib.request
import boto3, botocore
from botocore.config import Config
endpoint, bucket, key_id, secret, op = sys.argv[1:6]
args = sys.argv[6:]
s3 = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id=key_id, aws_secret_access_key=secret,
                  region_name="us-east-1",
                  config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}))
try:
    if op == "put":
        s3.upload_file(args[1], bucket, args[0])
    elif op == "get_prefix":
        prefix, out = args
        for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix, PaginationConfig={"PageSize": 3}):
            for obj in page.get("Contents", []):
                path = os.path.join(out, obj["Key"][len(prefix):])
                os.makedirs(os.path.dirname(path), exist_ok=True)
                body = s3.get_object(Bucket=bucket, Key=obj["Key"])["Body"].read()
                assert len(body) == obj["Size"], (obj["Key"], len(body), obj["Size"])
                open(path, "wb").write(body)
    elif op == "presigned_get":
        url = s3.generate_presigned_url("get_object", Params={"Bucket": bucket, "Key": args[0]}, ExpiresIn=300)
        sys.stdout.write(hashlib.md5(urllib.request.urlopen(url).read()).hexdigest())
    elif op == "list":
        s3.list_objects_v2(Bucket=bucket)
    elif op == "range":
        body = s3.get_object(Bucket=bucket, Key=args[0], Range="bytes=%s" % args[1])["Body"].read()
        sys.stdout.write(hashlib.md5(body).hexdigest())
    elif op == "put_meta":
        import datetime
        s3.put_object(Bucket=bucket, Key=args[0], Body=b"meta body", ContentType="text/csv",
                      CacheControl="max-age=60", ContentDisposition='attachment; filename="x.csv"',
                      ContentEncoding="identity", ContentLanguage="en",
                      Expires=datetime.datetime(2037, 10, 21, 7, 28, tzinfo=datetime.timezone.utc),
                      Metadata={"mode": "33188", "Mixed-Case": "v w"})
    elif op == "head_meta":
        for r in (s3.head_object(Bucket=bucket, Key=args[0]), s3.get_object(Bucket=bucket, Key=args[0])):
            h = r["ResponseMetadata"]["HTTPHeaders"]
            sys.stdout.write("|".join([r.get("ContentType", "-"), r.get("CacheControl", "-"),
                                       r.get("ContentDisposition", "-"), r.get("ContentEncoding", "-"),
                                       r.get("ContentLanguage", "-"), h.get("expires", "-"),
                                       repr(sorted(r["Metadata"].items()))]) + "\n")
    elif op == "head_missing":
        try:
            s3.head_object(Bucket=bucket, Key=args[0])
            sys.exit(3)
        except botocore.exceptions.ClientError as e:
            sys.stdout.write(e.response["Error"]["Code"])
except botocore.exceptions.ClientError as e:
    sys.stderr.write("ClientError %s\n" % e.response["Error"]["Code"])
    sys.exit(2)
)PY";

  fs::path dir_, access_log_, mount_;
  std::string bucket_, endpoint_;
  std::unique_ptr<testing::S3TestServer> rgw_;
  std::unique_ptr<testing::BackgroundProcess> gateway_;
  std::unique_ptr<testing::BackgroundProcess> s3fs_;
};

TEST_P(GatewayClientsTest, EveryClientReadsWhatEveryOtherWrote) {
  const std::vector<std::string> writers = {"aws", "boto3", "s3cmd", "rclone", "s3fs"};
  std::map<std::string, std::string> expected;  // key under w/ -> bytes
  uint32_t seed = 1;
  for (const auto& w : writers) {
    expected[w + "/small file.bin"] = RandomBytes(100 << 10, seed++);
    expected[w + "/large.bin"] = RandomBytes(12 << 20, seed++);
  }
  for (const auto& [key, data] : expected) WriteFile(dir_ / "src" / key, data);
  auto src = [&](const std::string& key) { return (dir_ / "src" / key).string(); };
  std::string w = "s3://" + bucket_ + "/w/";

  // Writers.
  for (std::string name : {"small file.bin", "large.bin"}) {
    MustRun(Aws({"s3", "cp", src("aws/" + name), w + "aws/" + name}), AwsEnv());
    MustRun(Boto({"put", "w/boto3/" + name, src("boto3/" + name)}), testing::WithoutCaBundles());
    MustRun(S3cmd({"put", "--multipart-chunk-size-mb=5", src("s3cmd/" + name), w + "s3cmd/" + name}),
            testing::WithoutCaBundles());
    MustRun({"rclone", "copyto", "--s3-upload-cutoff=5M", "--s3-chunk-size=5M", src("rclone/" + name),
             "gw:" + bucket_ + "/w/rclone/" + name},
            RcloneEnv());
  }
  // s3fs writes into a directory that exists (the file:// backend cannot hold "dir/" marker objects).
  MustRun(Boto({"put", "w/s3fs/.keep", src("aws/small file.bin")}), testing::WithoutCaBundles());
  ASSERT_TRUE(MountS3fs(kGwSecret)) << s3fs_->Log();
  for (std::string name : {"small file.bin", "large.bin"}) {
    WriteFile(mount_ / "w" / "s3fs" / name, expected["s3fs/" + name]);
  }
  ASSERT_TRUE(fs::exists(mount_ / "w" / "aws" / "large.bin")) << s3fs_->Log();

  // Readers: each fetches everything under w/ in one go.
  fs::path out = dir_ / "out";
  MustRun(Aws({"s3", "cp", "--recursive", w, (out / "aws").string()}), AwsEnv());
  MustRun(Boto({"get_prefix", "w/", (out / "boto3").string() + "/"}), testing::WithoutCaBundles());
  fs::create_directories(out / "s3cmd");
  MustRun(S3cmd({"get", "--recursive", w, (out / "s3cmd").string() + "/"}), testing::WithoutCaBundles());
  MustRun({"rclone", "copy", "gw:" + bucket_ + "/w", (out / "rclone").string()}, RcloneEnv());
  std::map<std::string, fs::path> readers = {{"aws", out / "aws"},
                                             {"boto3", out / "boto3"},
                                             {"s3cmd", out / "s3cmd"},
                                             {"rclone", out / "rclone"},
                                             {"s3fs", mount_ / "w"}};
  for (const auto& [reader, root] : readers) {
    for (const auto& [key, data] : expected) {
      std::string got = ReadFile(root / key);
      EXPECT_EQ(got.size(), data.size()) << reader << " reading " << key;
      EXPECT_TRUE(got == data) << reader << " read different bytes for " << key;
    }
  }
  // Ranged and presigned reads of another client's object.
  const std::string& big = expected["s3fs/large.bin"];
  testing::CommandResult range =
      Run(Boto({"range", "w/s3fs/large.bin", "5000000-5100000"}), testing::WithoutCaBundles());
  EXPECT_EQ(range.stdout_text, ToHex(Md5(big.substr(5000000, 100001)))) << range.stderr_text;
  testing::CommandResult pre = Run(Boto({"presigned_get", "w/rclone/large.bin"}), testing::WithoutCaBundles());
  EXPECT_EQ(pre.stdout_text, ToHex(Md5(expected["rclone/large.bin"]))) << pre.stderr_text;

  // Listings agree: aws s3 ls --recursive sees every object.
  testing::CommandResult ls = Run(Aws({"s3", "ls", "--recursive", w}), AwsEnv());
  for (const auto& [key, data] : expected) EXPECT_NE(ls.stdout_text.find("w/" + key), std::string::npos) << key;

  // Deletes are seen by the others (the cache is invalidated).
  MustRun(Aws({"s3", "rm", w + "boto3/small file.bin"}), AwsEnv());
  testing::CommandResult gone = Run(Boto({"head_missing", "w/boto3/small file.bin"}), testing::WithoutCaBundles());
  EXPECT_EQ(gone.stdout_text, "404") << gone.stderr_text;
  // Overwrites too: a new version through rclone is what s3cmd reads next.
  std::string v2 = RandomBytes(300 << 10, 99);
  WriteFile(dir_ / "v2.bin", v2);
  MustRun({"rclone", "copyto", (dir_ / "v2.bin").string(), "gw:" + bucket_ + "/w/aws/small file.bin"}, RcloneEnv());
  MustRun(S3cmd({"get", "--force", w + "aws/small file.bin", (dir_ / "v2.back").string()}),
          testing::WithoutCaBundles());
  EXPECT_TRUE(ReadFile(dir_ / "v2.back") == v2);
}

TEST_P(GatewayClientsTest, AwsSyncAndMultipartApi) {
  for (int i = 0; i < 5; ++i)
    WriteFile(dir_ / "sync" / ("f" + std::to_string(i)), RandomBytes(1000 + i * 7000, 50 + i));
  WriteFile(dir_ / "sync" / "sub dir" / "nested", "nested bytes");
  std::string dest = "s3://" + bucket_ + "/sync/";
  MustRun(Aws({"s3", "sync", (dir_ / "sync").string(), dest}), AwsEnv());
  testing::CommandResult again = Run(Aws({"s3", "sync", (dir_ / "sync").string(), dest}), AwsEnv());
  EXPECT_EQ(again.exit_code, 0);
  EXPECT_EQ(again.stdout_text, "") << "second sync re-uploaded: " << again.stdout_text;
  testing::CommandResult ls = Run(Aws({"s3", "ls", dest}), AwsEnv());
  EXPECT_NE(ls.stdout_text.find("PRE sub dir/"), std::string::npos) << ls.stdout_text;
  EXPECT_NE(ls.stdout_text.find(" f4"), std::string::npos) << ls.stdout_text;
  MustRun(Aws({"s3", "sync", dest, (dir_ / "back").string()}), AwsEnv());
  EXPECT_EQ(ReadFile(dir_ / "back" / "sub dir" / "nested"), "nested bytes");
  EXPECT_TRUE(ReadFile(dir_ / "back" / "f3") == ReadFile(dir_ / "sync" / "f3"));

  // s3api multipart: create, two parts, list-parts, complete; and an aborted one.
  std::string part1 = RandomBytes(5 << 20, 7), part2 = RandomBytes(1234567, 8);
  WriteFile(dir_ / "p1", part1);
  WriteFile(dir_ / "p2", part2);
  auto json_field = [](const std::string& text, const std::string& field) {
    size_t p = text.find("\"" + field + "\"");
    if (p == std::string::npos) return std::string();
    size_t q1 = text.find('"', text.find(':', p) + 1);
    size_t q2 = q1;
    while ((q2 = text.find('"', q2 + 1)) != std::string::npos && text[q2 - 1] == '\\') {
    }
    std::string v = text.substr(q1 + 1, q2 - q1 - 1);
    for (size_t i; (i = v.find("\\\"")) != std::string::npos;) v.replace(i, 2, "\"");
    return v;
  };
  testing::CommandResult create =
      Run(Aws({"s3api", "create-multipart-upload", "--bucket", bucket_, "--key", "mp/obj"}), AwsEnv());
  ASSERT_EQ(create.exit_code, 0) << create.stderr_text;
  std::string id = json_field(create.stdout_text, "UploadId");
  ASSERT_FALSE(id.empty()) << create.stdout_text;
  std::vector<std::string> etags;
  for (int n : {1, 2}) {
    testing::CommandResult up =
        Run(Aws({"s3api", "upload-part", "--bucket", bucket_, "--key", "mp/obj", "--upload-id", id, "--part-number",
                 std::to_string(n), "--body", (dir_ / ("p" + std::to_string(n))).string()}),
            AwsEnv());
    ASSERT_EQ(up.exit_code, 0) << up.stderr_text;
    etags.push_back(json_field(up.stdout_text, "ETag"));
  }
  EXPECT_EQ(etags[0], "\"" + ToHex(Md5(part1)) + "\"");
  testing::CommandResult parts =
      Run(Aws({"s3api", "list-parts", "--bucket", bucket_, "--key", "mp/obj", "--upload-id", id}), AwsEnv());
  EXPECT_EQ(parts.exit_code, 0) << parts.stderr_text;
  EXPECT_NE(parts.stdout_text.find("\"Size\": 1234567"), std::string::npos) << parts.stdout_text;
  WriteFile(dir_ / "parts.json", "{\"Parts\": [{\"PartNumber\": 1, \"ETag\": \"\\\"" + Unq(etags[0]) +
                                     "\\\"\"}, {\"PartNumber\": 2, \"ETag\": \"\\\"" + Unq(etags[1]) + "\\\"\"}]}");
  testing::CommandResult done =
      Run(Aws({"s3api", "complete-multipart-upload", "--bucket", bucket_, "--key", "mp/obj", "--upload-id", id,
               "--multipart-upload", "file://" + (dir_ / "parts.json").string()}),
          AwsEnv());
  ASSERT_EQ(done.exit_code, 0) << done.stderr_text;
  MustRun(Aws({"s3", "cp", "s3://" + bucket_ + "/mp/obj", (dir_ / "mp.back").string()}), AwsEnv());
  EXPECT_TRUE(ReadFile(dir_ / "mp.back") == part1 + part2);
  testing::CommandResult head = Run(Aws({"s3api", "head-object", "--bucket", bucket_, "--key", "mp/obj"}), AwsEnv());
  EXPECT_NE(head.stdout_text.find("-2\\\""), std::string::npos) << head.stdout_text;

  testing::CommandResult c2 =
      Run(Aws({"s3api", "create-multipart-upload", "--bucket", bucket_, "--key", "mp/aborted"}), AwsEnv());
  std::string id2 = json_field(c2.stdout_text, "UploadId");
  MustRun(Aws({"s3api", "upload-part", "--bucket", bucket_, "--key", "mp/aborted", "--upload-id", id2, "--part-number",
               "1", "--body", (dir_ / "p2").string()}),
          AwsEnv());
  MustRun(Aws({"s3api", "abort-multipart-upload", "--bucket", bucket_, "--key", "mp/aborted", "--upload-id", id2}),
          AwsEnv());
  testing::CommandResult after =
      Run(Aws({"s3api", "list-parts", "--bucket", bucket_, "--key", "mp/aborted", "--upload-id", id2}), AwsEnv());
  EXPECT_NE(after.exit_code, 0);
  EXPECT_NE(after.stderr_text.find("NoSuchUpload"), std::string::npos) << after.stderr_text;
  testing::CommandResult missing =
      Run(Aws({"s3api", "head-object", "--bucket", bucket_, "--key", "mp/aborted"}), AwsEnv());
  EXPECT_NE(missing.exit_code, 0);
}

TEST_P(GatewayClientsTest, MetadataRoundTripsThroughAwsAndBoto3) {
  const std::string b = bucket_;
  auto head = [&](const std::string& key) {
    testing::CommandResult r = Run(Aws({"s3api", "head-object", "--bucket", b, "--key", key, "--output", "text",
                                        "--query", "[ContentType,CacheControl,Metadata.a,Metadata.b,Metadata.c]"}),
                                   AwsEnv());
    EXPECT_EQ(r.exit_code, 0) << r.stderr_text;
    return r.stdout_text;
  };
  WriteFile(dir_ / "small.txt", "small body");
  MustRun(Aws({"s3", "cp", (dir_ / "small.txt").string(), "s3://" + b + "/m/small", "--content-type", "text/plain",
               "--cache-control", "no-cache", "--metadata", "a=1,b=2"}),
          AwsEnv());
  EXPECT_EQ(head("m/small"), "text/plain\tno-cache\t1\t2\tNone\n");
  // Multipart (past the CLI's 8 MiB threshold) keeps them from Create to Complete.
  WriteFile(dir_ / "big.bin", RandomBytes(9 << 20, 3));
  MustRun(Aws({"s3", "cp", (dir_ / "big.bin").string(), "s3://" + b + "/m/big", "--content-type", "text/plain",
               "--metadata", "a=big"}),
          AwsEnv());
  EXPECT_EQ(head("m/big"), "text/plain\tNone\tbig\tNone\tNone\n");
  // Copy: COPY (the default) keeps the source's; REPLACE takes the request's.
  MustRun(Aws({"s3api", "copy-object", "--bucket", b, "--key", "m/kept", "--copy-source", b + "/m/small"}), AwsEnv());
  EXPECT_EQ(head("m/kept"), "text/plain\tno-cache\t1\t2\tNone\n");
  MustRun(Aws({"s3api", "copy-object", "--bucket", b, "--key", "m/replaced", "--copy-source", b + "/m/small",
               "--metadata-directive", "REPLACE", "--content-type", "application/json", "--metadata", "c=3"}),
          AwsEnv());
  EXPECT_EQ(head("m/replaced"), "application/json\tNone\tNone\tNone\t3\n");
  MustRun(Aws({"s3api", "copy-object", "--bucket", b, "--key", "m/small", "--copy-source", b + "/m/small",
               "--metadata-directive", "REPLACE", "--metadata", "c=self"}),
          AwsEnv());
  EXPECT_EQ(head("m/small"), "binary/octet-stream\tNone\tNone\tNone\tself\n");
  MustRun(Aws({"s3", "cp", "s3://" + b + "/m/small", (dir_ / "small.back").string()}), AwsEnv());
  EXPECT_EQ(ReadFile(dir_ / "small.back"), "small body");
  // Copy-source conditions: 412 PreconditionFailed, for CopyObject and UploadPartCopy.
  testing::CommandResult cond =
      Run(Aws({"s3api", "copy-object", "--bucket", b, "--key", "m/never", "--copy-source", b + "/m/small",
               "--copy-source-if-match", "\"0123456789abcdef0123456789abcdef\""}),
          AwsEnv());
  EXPECT_NE(cond.exit_code, 0);
  EXPECT_NE(cond.stderr_text.find("PreconditionFailed"), std::string::npos) << cond.stderr_text;
  cond = Run(Aws({"s3api", "copy-object", "--bucket", b, "--key", "m/never", "--copy-source", b + "/m/small",
                  "--copy-source-if-unmodified-since", "2001-01-01T00:00:00Z"}),
             AwsEnv());
  EXPECT_NE(cond.stderr_text.find("PreconditionFailed"), std::string::npos) << cond.stderr_text;
  testing::CommandResult create = Run(Aws({"s3api", "create-multipart-upload", "--bucket", b, "--key", "m/upc",
                                           "--output", "text", "--query", "UploadId"}),
                                      AwsEnv());
  ASSERT_EQ(create.exit_code, 0) << create.stderr_text;
  std::string id = create.stdout_text.substr(0, create.stdout_text.find('\n'));
  cond = Run(Aws({"s3api", "upload-part-copy", "--bucket", b, "--key", "m/upc", "--upload-id", id, "--part-number", "1",
                  "--copy-source", b + "/m/small", "--copy-source-if-modified-since", "2100-01-01T00:00:00Z"}),
             AwsEnv());
  EXPECT_NE(cond.stderr_text.find("PreconditionFailed"), std::string::npos) << cond.stderr_text;
  // More than 2 KiB of user metadata: MetadataTooLarge.
  testing::CommandResult big = Run(Aws({"s3", "cp", (dir_ / "small.txt").string(), "s3://" + b + "/m/too-large",
                                        "--metadata", "a=" + std::string(2100, 'x')}),
                                   AwsEnv());
  EXPECT_NE(big.exit_code, 0);
  EXPECT_NE(big.stderr_text.find("MetadataTooLarge"), std::string::npos) << big.stderr_text;

  // boto3: every standard header and user metadata, from HEAD and GET alike.
  MustRun(Boto({"put_meta", "m/boto"}), testing::WithoutCaBundles());
  testing::CommandResult got = Run(Boto({"head_meta", "m/boto"}), testing::WithoutCaBundles());
  ASSERT_EQ(got.exit_code, 0) << got.stderr_text;
  const std::string line =
      "text/csv|max-age=60|attachment; filename=\"x.csv\"|identity|en|Wed, 21 Oct 2037 07:28:00 GMT|"
      "[('mixed-case', 'v w'), ('mode', '33188')]\n";
  EXPECT_EQ(got.stdout_text, line + line);
}

TEST_P(GatewayClientsTest, WrongSecretIsRefusedByEveryClient) {
  const std::string bad = "definitely-not-the-secret";
  int before = AccessLogCount(" SignatureDoesNotMatch ");
  testing::CommandResult aws = Run(Aws({"s3", "ls", "s3://" + bucket_ + "/"}), AwsEnv(bad));
  EXPECT_NE(aws.exit_code, 0);
  EXPECT_NE(aws.stderr_text.find("SignatureDoesNotMatch"), std::string::npos) << aws.stderr_text;
  testing::CommandResult boto = Run(Boto({"list"}, bad), testing::WithoutCaBundles());
  EXPECT_EQ(boto.exit_code, 2);
  EXPECT_NE(boto.stderr_text.find("SignatureDoesNotMatch"), std::string::npos) << boto.stderr_text;
  testing::CommandResult s3cmd = Run(S3cmd({"ls", "s3://" + bucket_ + "/"}, bad), testing::WithoutCaBundles());
  EXPECT_NE(s3cmd.exit_code, 0);
  EXPECT_NE((s3cmd.stderr_text + s3cmd.stdout_text).find("SignatureDoesNotMatch"), std::string::npos)
      << s3cmd.stderr_text;
  testing::CommandResult rclone =
      Run({"rclone", "lsf", "--retries", "1", "--low-level-retries", "1", "gw:" + bucket_}, RcloneEnv(bad));
  EXPECT_NE(rclone.exit_code, 0);
  EXPECT_NE(rclone.stderr_text.find("SignatureDoesNotMatch"), std::string::npos) << rclone.stderr_text;
  int s3fs_before = AccessLogCount(" SignatureDoesNotMatch ");
  int s3fs_code = -1;
  // s3fs checks the credentials from its FUSE init (and then exits with 0), so under load the
  // mount can show for a moment first: what counts is that s3fs gives up by itself.
  if (MountS3fs(bad, &s3fs_code)) {
    EXPECT_TRUE(s3fs_->WaitExit(std::chrono::seconds(30))) << "s3fs stayed mounted with a wrong secret";
    UnmountS3fs();
  }
  // s3fs reports the refusal in its own words; the gateway's access log names the code.
  EXPECT_GT(AccessLogCount(" SignatureDoesNotMatch "), s3fs_before);
  EXPECT_GE(AccessLogCount(" SignatureDoesNotMatch "), before + 5);
}

// What cleanup tools and careful writers call, through boto3: the versioning
// API of an unversioned bucket, conditional writes, multipart listings.
constexpr const char* kSemanticsPy = R"PY(
import sys, boto3, botocore
from botocore.config import Config
endpoint, bucket, key_id, secret = sys.argv[1:5]
s3 = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id=key_id, aws_secret_access_key=secret,
                  region_name="us-east-1",
                  config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}))
def code(fn, **kw):
    try:
        fn(**kw)
        return "OK"
    except botocore.exceptions.ClientError as e:
        return e.response["Error"]["Code"]
# Debian's botocore may predate IfMatch/IfNoneMatch parameters: add them as headers before signing.
def cond(fn, op, headers, **kw):
    def add(request, **_):
        for k, v in headers.items():
            request.headers[k] = v
    s3.meta.events.register("before-sign.s3." + op, add)
    try:
        return code(fn, **kw)
    finally:
        s3.meta.events.unregister("before-sign.s3." + op, add)
def check(what, got, want):
    if got != want:
        sys.exit("%s: got %r, want %r" % (what, got, want))
keys = ["sem/%02d" % i for i in range(7)] + ["sem/sub/x", "sem/sub/y"]
for k in keys:
    s3.put_object(Bucket=bucket, Key=k, Body=k.encode())
# ListObjectVersions, paginated by key/version-id markers.
seen = []
for page in s3.get_paginator("list_object_versions").paginate(Bucket=bucket, Prefix="sem/", PaginationConfig={"PageSize": 2}):
    for v in page.get("Versions", []):
        check("version of " + v["Key"], (v["VersionId"], v["IsLatest"]), ("null", True))
        seen.append(v["Key"])
check("versions listed", seen, keys)
pre = s3.list_object_versions(Bucket=bucket, Prefix="sem/", Delimiter="/")
check("version prefixes", [p["Prefix"] for p in pre.get("CommonPrefixes", [])], ["sem/sub/"])
check("versioning status", s3.get_bucket_versioning(Bucket=bucket).get("Status"), None)
check("enable versioning", code(s3.put_bucket_versioning, Bucket=bucket, VersioningConfiguration={"Status": "Enabled"}), "NotImplemented")
check("suspend versioning", code(s3.put_bucket_versioning, Bucket=bucket, VersioningConfiguration={"Status": "Suspended"}), "OK")
r = s3.delete_objects(Bucket=bucket, Delete={"Objects": [{"Key": "sem/00", "VersionId": "null"}, {"Key": "sem/01", "VersionId": "null"}]})
check("deleted", sorted((d["Key"], d.get("VersionId")) for d in r.get("Deleted", [])), [("sem/00", "null"), ("sem/01", "null")])
check("errors", r.get("Errors", []), [])
check("after delete_objects", code(s3.head_object, Bucket=bucket, Key="sem/00"), "404")
check("delete null version", code(s3.delete_object, Bucket=bucket, Key="sem/02", VersionId="null"), "OK")
check("after delete_object", code(s3.head_object, Bucket=bucket, Key="sem/02"), "404")
# Conditional writes.
check("create-only", cond(s3.put_object, "PutObject", {"If-None-Match": "*"}, Bucket=bucket, Key="cond", Body=b"1"), "OK")
check("create-only again", cond(s3.put_object, "PutObject", {"If-None-Match": "*"}, Bucket=bucket, Key="cond", Body=b"2"), "PreconditionFailed")
etag = s3.head_object(Bucket=bucket, Key="cond")["ETag"]
check("if-match wrong", cond(s3.put_object, "PutObject", {"If-Match": '"0123"'}, Bucket=bucket, Key="cond", Body=b"2"), "PreconditionFailed")
check("if-match", cond(s3.put_object, "PutObject", {"If-Match": etag}, Bucket=bucket, Key="cond", Body=b"2"), "OK")
check("if-match missing", cond(s3.put_object, "PutObject", {"If-Match": etag}, Bucket=bucket, Key="cond-missing", Body=b"2"), "NoSuchKey")
check("if-none-match etag", cond(s3.put_object, "PutObject", {"If-None-Match": etag}, Bucket=bucket, Key="cond", Body=b"2"), "NotImplemented")
up = s3.create_multipart_upload(Bucket=bucket, Key="cond")["UploadId"]
pe = s3.upload_part(Bucket=bucket, Key="cond", UploadId=up, PartNumber=1, Body=b"p")["ETag"]
mp = {"Parts": [{"PartNumber": 1, "ETag": pe}]}
check("complete create-only", cond(s3.complete_multipart_upload, "CompleteMultipartUpload", {"If-None-Match": "*"}, Bucket=bucket, Key="cond", UploadId=up, MultipartUpload=mp), "PreconditionFailed")
# Multipart listings: uploads (paginated) and parts (paginated); a re-sent part replaces the first.
ids = [s3.create_multipart_upload(Bucket=bucket, Key="mpl/%d" % i)["UploadId"] for i in range(5)]
listed = []
for page in s3.get_paginator("list_multipart_uploads").paginate(Bucket=bucket, Prefix="mpl/", PaginationConfig={"PageSize": 2}):
    listed += [(u["Key"], u["UploadId"]) for u in page.get("Uploads", [])]
check("uploads", listed, [("mpl/%d" % i, ids[i]) for i in range(5)])
for n in range(1, 6):
    s3.upload_part(Bucket=bucket, Key="mpl/0", UploadId=ids[0], PartNumber=n, Body=b"old")
new = s3.upload_part(Bucket=bucket, Key="mpl/0", UploadId=ids[0], PartNumber=3, Body=b"newer")["ETag"]
parts = []
for page in s3.get_paginator("list_parts").paginate(Bucket=bucket, Key="mpl/0", UploadId=ids[0], PaginationConfig={"PageSize": 2}):
    parts += [(p["PartNumber"], p["Size"]) for p in page.get("Parts", [])]
check("parts", parts, [(1, 3), (2, 3), (3, 5), (4, 3), (5, 3)])
for i, u in enumerate(ids):
    s3.abort_multipart_upload(Bucket=bucket, Key="mpl/%d" % i, UploadId=u)
s3.abort_multipart_upload(Bucket=bucket, Key="cond", UploadId=up)
h = s3.head_object(Bucket=bucket, Key="cond", PartNumber=1)
check("part 1 length", h["ContentLength"], 1)
check("part 2", code(s3.head_object, Bucket=bucket, Key="cond", PartNumber=2), "416")
print("semantics ok")
)PY";

TEST_P(GatewayClientsTest, CleanupToolsAndConditionalWrites) {
  WriteFile(dir_ / "semantics.py", kSemanticsPy);
  testing::CommandResult r = Run({kPython, (dir_ / "semantics.py").string(), endpoint_, bucket_, kGwKey, kGwSecret},
                                 testing::WithoutCaBundles());
  EXPECT_EQ(r.exit_code, 0) << r.stderr_text << r.stdout_text;
  EXPECT_NE(r.stdout_text.find("semantics ok"), std::string::npos) << r.stderr_text;
}

// Listing a bucket creates nothing in it, so it can be removed afterwards; a
// bucket with objects and an unfinished upload goes with `rb --force`.
TEST_P(GatewayClientsTest, ListedBucketsStayRemovable) {
  if (GetParam() != BackendKind::kFile) GTEST_SKIP() << "buckets are fixed in front of RGW";
  fs::path plain = dir_ / "data" / "plaintree";
  WriteFile(plain / "docs" / "readme.txt", "plain file");
  MustRun(Aws({"s3api", "list-objects", "--bucket", "plaintree"}), AwsEnv());
  MustRun(Aws({"s3api", "list-object-versions", "--bucket", "plaintree"}), AwsEnv());
  MustRun(Aws({"s3api", "list-multipart-uploads", "--bucket", "plaintree"}), AwsEnv());
  MustRun(Aws({"s3", "cp", "s3://plaintree/docs/readme.txt", (dir_ / "readme.back").string()}), AwsEnv());
  EXPECT_EQ(ReadFile(dir_ / "readme.back"), "plain file");
  std::vector<std::string> entries;
  for (const auto& e : fs::recursive_directory_iterator(plain))
    entries.push_back(fs::relative(e.path(), plain).string());
  std::sort(entries.begin(), entries.end());
  EXPECT_EQ(entries, (std::vector<std::string>{"docs", "docs/readme.txt"})) << "reads changed the tree";
  MustRun(Aws({"s3", "rm", "s3://plaintree/docs/readme.txt"}), AwsEnv());
  testing::CommandResult rb = Run(Aws({"s3", "rb", "s3://plaintree"}), AwsEnv());
  EXPECT_EQ(rb.exit_code, 0) << rb.stderr_text;
  EXPECT_FALSE(fs::exists(plain));

  MustRun(Aws({"s3", "mb", "s3://forced"}), AwsEnv());
  WriteFile(dir_ / "f.bin", RandomBytes(1000, 3));
  for (std::string k : {"a", "b/c", "b/d"})
    MustRun(Aws({"s3", "cp", (dir_ / "f.bin").string(), "s3://forced/" + k}), AwsEnv());
  MustRun(Aws({"s3api", "create-multipart-upload", "--bucket", "forced", "--key", "unfinished"}), AwsEnv());
  testing::CommandResult plain_rb = Run(Aws({"s3", "rb", "s3://forced"}), AwsEnv());
  EXPECT_NE(plain_rb.exit_code, 0);
  EXPECT_NE(plain_rb.stderr_text.find("BucketNotEmpty"), std::string::npos) << plain_rb.stderr_text;
  testing::CommandResult forced = Run(Aws({"s3", "rb", "--force", "s3://forced"}), AwsEnv());
  EXPECT_EQ(forced.exit_code, 0) << forced.stderr_text;
  EXPECT_FALSE(fs::exists(dir_ / "data" / "forced"));
}

INSTANTIATE_TEST_SUITE_P(Backends, GatewayClientsTest, ::testing::Values(BackendKind::kFile, BackendKind::kRgw),
                         [](const auto& info) { return info.param == BackendKind::kFile ? "File" : "Rgw"; });

}  // namespace
}  // namespace strata::gateway

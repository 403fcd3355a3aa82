// The fixture of the real-mount tests (fuse_test.cc, fuse_posix_test.cc):
// the built `strata` binary mounted with --foreground over a file:// backend
// or the Ceph RGW shared by the test binary, stopped by PID; helpers to seed
// and check objects and to run tools. Included by one test file per binary.
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <thread>

#include "base/hash.h"
#include "object/store_url.h"
#include "testing/s3_server.h"
#include "testing/subprocess.h"

namespace strata::fuse {

namespace stdfs = std::filesystem;
using SteadyClock = std::chrono::steady_clock;
inline constexpr const char* kPython = "/usr/bin/python3";

enum class Backend { kFile, kRgw };

inline std::string StrataBin() {
  const char* dir = std::getenv("STRATA_BINARY_DIR");
  return dir ? std::string(dir) + "/src/cli/strata" : "";
}

inline bool Mounted(const std::string& mp) {
  std::ifstream in("/proc/self/mounts");
  std::string dev, point, rest;
  while (in >> dev >> point && std::getline(in, rest)) {
    if (point == mp) return true;
  }
  return false;
}

inline std::string RandomBytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::string s(n, '\0');
  for (auto& c : s) c = static_cast<char>(rng());
  return s;
}

inline std::string Sha(const std::string& s) { return ToHex(Sha256(s)); }

// The RGW server shared by every test of this binary (started on first use).
class Rgw : public ::testing::Environment {
 public:
  static testing::S3TestServer* Get() {
    std::lock_guard lock(mu_);
    if (!server_) {
      auto s = testing::S3TestServer::Start(testing::S3TestServer::Kind::kRgw);
      if (!s.ok())
        s = testing::S3TestServer::Start(
            testing::S3TestServer::Kind::kRgw);  // a loaded machine can miss the deadline once
      if (!s.ok()) {
        ADD_FAILURE() << "cannot start Ceph RGW: " << s.status();
        return nullptr;
      }
      server_ = std::move(*s);
    }
    return server_.get();
  }
  void TearDown() override {
    std::lock_guard lock(mu_);
    if (server_) {
      EXPECT_TRUE(server_->Stop().ok());
    }
    server_.reset();
  }

 private:
  static inline std::mutex mu_;
  static inline std::unique_ptr<testing::S3TestServer> server_;
};
inline const auto* const kRgwEnv = ::testing::AddGlobalTestEnvironment(new Rgw);

// A `strata mount --foreground` child process.
class MountProcess {
 public:
  MountProcess(const std::vector<std::string>& args, const testing::EnvOverrides& env, const std::string& log)
      : log_(log) {
    pid_ = fork();
    if (pid_ == 0) {
      int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      dup2(fd, 1);
      dup2(fd, 2);
      for (const auto& [k, v] : env) v ? setenv(k.c_str(), v->c_str(), 1) : unsetenv(k.c_str());
      std::vector<char*> argv;
      for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
      argv.push_back(nullptr);
      execv(argv[0], argv.data());
      _exit(127);
    }
  }
  ~MountProcess() {
    if (pid_ > 0 && !reaped_) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  pid_t pid() const { return pid_; }
  std::string Log() const {
    std::ifstream in(log_);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  // Waits for the mount to appear (or the process to die).
  bool WaitMounted(const std::string& mp) {
    auto deadline = SteadyClock::now() + std::chrono::seconds(60);
    while (SteadyClock::now() < deadline) {
      if (Mounted(mp)) return true;
      int status;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        reaped_ = true;
        exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        return false;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));  // polling an external process
    }
    return false;
  }
  // Waits for the process to exit; its exit code (-1 on timeout).
  int Wait(std::chrono::seconds timeout = std::chrono::seconds(60)) {
    if (reaped_) return exit_code_;
    auto deadline = SteadyClock::now() + timeout;
    while (SteadyClock::now() < deadline) {
      int status;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        reaped_ = true;
        exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        return exit_code_;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return -1;
  }

 private:
  std::string log_;
  pid_t pid_ = -1;
  bool reaped_ = false;
  int exit_code_ = -1;
};

class FuseTest : public ::testing::TestWithParam<Backend> {
 protected:
  void SetUp() override {
    ASSERT_TRUE(stdfs::exists(StrataBin())) << "no strata binary at " << StrataBin() << " (run under ctest)";
    ASSERT_TRUE(stdfs::exists("/dev/fuse"));
    std::string name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::replace(name.begin(), name.end(), '/', '_');
    dir_ = (stdfs::temp_directory_path() / ("strata-fuse-" + std::to_string(getpid()) + "-" + name)).string();
    stdfs::remove_all(dir_);
    stdfs::create_directories(dir_ + "/mnt");
    stdfs::create_directories(dir_ + "/local");
    mnt_ = dir_ + "/mnt";
    if (GetParam() == Backend::kFile) {
      stdfs::create_directories(dir_ + "/bucket");
      url_ = "file://" + dir_ + "/bucket";
    } else {
      testing::S3TestServer* rgw = Rgw::Get();
      ASSERT_NE(rgw, nullptr);
      // Each test under its own prefix of the shared bucket.
      static int n = 0;
      prefix_ = "t" + std::to_string(getpid()) + "-" + std::to_string(++n);
      url_ = rgw->StoreUrl(prefix_);
      env_ = rgw->ClientEnv();
      // The test's own store (to seed and check objects) reads the same credentials.
      for (const auto& [k, v] : env_) v ? setenv(k.c_str(), v->c_str(), 1) : unsetenv(k.c_str());
    }
    auto store = object::OpenStore(url_);
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = *store;
  }

  void TearDown() override {
    if (mount_) Stop(SIGTERM);
    if (Mounted(mnt_)) (void)testing::RunCommand({"fusermount3", "-u", "-z", mnt_});
    stdfs::remove_all(dir_);
  }

  void Put(const std::string& key, const std::string& data) {
    ASSERT_TRUE(store_->Put(key, Buffer::Copy(data)).ok()) << key;
    expected_[key] = data;
  }
  std::string Get(const std::string& key) {
    auto r = store_->Get(key);
    // The code and message only: an S3 backend adds its own code ("[NoSuchKey]").
    if (!r.ok()) return "<" + std::string(CodeName(r.status().code())) + ": " + r.status().message() + ">";
    return r->data.ToString();
  }

  void Mount(std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {StrataBin(),   "mount",         url_,          mnt_,    "--foreground",
                                     "--cache-dir", dir_ + "/cache", "--cache-ram", "256MiB"};
    args.insert(args.end(), extra.begin(), extra.end());
    mount_ = std::make_unique<MountProcess>(args, env_, dir_ + "/mount.log");
    ASSERT_TRUE(mount_->WaitMounted(mnt_)) << "mount did not appear; log:\n" << mount_->Log();
  }
  void Stop(int sig) {
    ASSERT_EQ(kill(mount_->pid(), sig), 0);
    EXPECT_EQ(mount_->Wait(), 0) << mount_->Log();
    EXPECT_FALSE(Mounted(mnt_));
    mount_.reset();
  }

  testing::CommandResult Run(const std::vector<std::string>& argv, std::optional<std::string_view> in = std::nullopt) {
    auto r = testing::RunCommand(argv, testing::WithoutCaBundles(), in);
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? *r : testing::CommandResult{-1, "", r.status().ToString()};
  }
  void ExpectOk(const std::vector<std::string>& argv, const testing::CommandResult& r) {
    EXPECT_EQ(r.exit_code, 0) << testing::DescribeRun(argv, r) << "\nmount log:\n" << (mount_ ? mount_->Log() : "");
  }
  testing::CommandResult RunOk(const std::vector<std::string>& argv,
                               std::optional<std::string_view> in = std::nullopt) {
    auto r = Run(argv, in);
    ExpectOk(argv, r);
    return r;
  }

  // A small tree: nested dirs, an empty file, a multi-block file.
  void PutTree() {
    Put("data/a.txt", "hello\n");
    Put("data/empty", "");
    Put("data/sub/b.bin", RandomBytes(100 * 1024, 1));
    Put("data/sub/deeper/c.bin", RandomBytes(300 * 1024 + 17, 2));
    Put("data/big.bin", RandomBytes(9 * 1024 * 1024 + 123, 3));
    for (int i = 0; i < 20; ++i) Put("samples/s" + std::to_string(i) + ".bin", RandomBytes(20000 + i * 997, 10 + i));
    Put("top.txt", "top level\n");
  }

  std::string dir_, mnt_, url_, prefix_;
  testing::EnvOverrides env_;
  object::ObjectStorePtr store_;
  std::map<std::string, std::string> expected_;
  std::unique_ptr<MountProcess> mount_;
};

}  // namespace strata::fuse

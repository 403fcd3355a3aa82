// Real mounts of the built `strata` binary (label fuse): over a file://
// backend and over Ceph RGW, driven by real tools (cp, find, cat, sha256sum,
// dd, fio, Python, PyTorch DataLoader); contents checked byte-exact against
// the backend. Mounts run with --foreground in the background and are
// stopped by PID (SIGTERM / SIGINT) or with `strata umount`.
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
#include <thread>

#include "base/hash.h"
#include "object/store_url.h"
#include "testing/s3_server.h"
#include "testing/subprocess.h"

namespace strata::fuse {
namespace {

namespace stdfs = std::filesystem;
using SteadyClock = std::chrono::steady_clock;
constexpr const char* kPython = "/usr/bin/python3";

enum class Backend { kFile, kRgw };

std::string StrataBin() {
  const char* dir = std::getenv("STRATA_BINARY_DIR");
  return dir ? std::string(dir) + "/src/cli/strata" : "";
}

bool Mounted(const std::string& mp) {
  std::ifstream in("/proc/self/mounts");
  std::string dev, point, rest;
  while (in >> dev >> point && std::getline(in, rest)) {
    if (point == mp) return true;
  }
  return false;
}

std::string RandomBytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::string s(n, '\0');
  for (auto& c : s) c = static_cast<char>(rng());
  return s;
}

std::string Sha(const std::string& s) { return ToHex(Sha256(s)); }

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
const auto* const kRgwEnv = ::testing::AddGlobalTestEnvironment(new Rgw);

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

TEST_P(FuseTest, ReadToolsSeeExactBytes) {
  PutTree();
  Mount();
  // find: every name, types right.
  auto found = RunOk({"find", mnt_, "-type", "f"});
  std::vector<std::string> files;
  std::istringstream lines(found.stdout_text);
  for (std::string line; std::getline(lines, line);) files.push_back(line.substr(mnt_.size() + 1));
  std::sort(files.begin(), files.end());
  std::vector<std::string> want;
  for (const auto& [k, v] : expected_) want.push_back(k);
  EXPECT_EQ(files, want);
  EXPECT_EQ(RunOk({"find", mnt_, "-type", "d"}).stdout_text.size() > 0, true);
  // cat and sha256sum, byte-exact.
  EXPECT_EQ(RunOk({"cat", mnt_ + "/data/a.txt"}).stdout_text, "hello\n");
  EXPECT_EQ(RunOk({"cat", mnt_ + "/data/big.bin"}).stdout_text, expected_["data/big.bin"]);
  for (const auto& [key, data] : expected_) {
    auto sum = RunOk({"sha256sum", mnt_ + "/" + key});
    EXPECT_EQ(sum.stdout_text.substr(0, 64), Sha(data)) << key;
  }
  // stat sizes; ls -l.
  EXPECT_EQ(RunOk({"stat", "-c", "%s %F", mnt_ + "/data/big.bin"}).stdout_text, "9437307 regular file\n");
  EXPECT_NE(RunOk({"ls", "-lR", mnt_}).stdout_text.find("c.bin"), std::string::npos);
  // dd: whole file in 4 MiB reads, and a range.
  RunOk({"dd", "if=" + mnt_ + "/data/big.bin", "of=" + dir_ + "/local/big.dd", "bs=4M"});
  EXPECT_EQ(Sha(RunOk({"cat", dir_ + "/local/big.dd"}).stdout_text), Sha(expected_["data/big.bin"]));
  auto part = RunOk({"dd", "if=" + mnt_ + "/data/big.bin", "bs=1M", "skip=3", "count=2", "status=none"});
  EXPECT_EQ(part.stdout_text, expected_["data/big.bin"].substr(3 << 20, 2 << 20));
  // cp -r out of the mount.
  RunOk({"cp", "-r", mnt_ + "/data", dir_ + "/local/copy"});
  for (const auto& [key, data] : expected_) {
    if (!key.starts_with("data/")) continue;
    std::ifstream in(dir_ + "/local/copy/" + key.substr(5), std::ios::binary);
    EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), data) << key;
  }
  // A file's inode number is stable across lookups.
  auto ino1 = RunOk({"stat", "-c", "%i", mnt_ + "/data/sub/b.bin"}).stdout_text;
  RunOk({"sh", "-c", "echo 3 > /proc/sys/vm/drop_caches"});
  EXPECT_EQ(RunOk({"stat", "-c", "%i", mnt_ + "/data/sub/b.bin"}).stdout_text, ino1);
}

TEST_P(FuseTest, FioSequentialAndRandomReads) {
  Put("fio/file", RandomBytes(16 << 20, 5));
  Mount();
  for (const char* rw : {"read", "randread"}) {
    std::vector<std::string> argv = {"fio",
                                     "--name=" + std::string(rw),
                                     "--filename=" + mnt_ + "/fio/file",
                                     "--rw=" + std::string(rw),
                                     std::string("--bs=") + (std::string(rw) == "read" ? "1M" : "4k"),
                                     "--size=16M",
                                     "--readonly",
                                     "--ioengine=psync",
                                     "--runtime=5",
                                     "--time_based=0",
                                     "--output-format=json"};
    auto r = RunOk(argv);
    auto doc = nlohmann::json::parse(r.stdout_text.substr(r.stdout_text.find('{')), nullptr, false);
    ASSERT_FALSE(doc.is_discarded()) << r.stdout_text;
    EXPECT_EQ(doc["jobs"][0]["error"].get<int>(), 0) << rw;
    EXPECT_GT(doc["jobs"][0]["read"]["io_bytes"].get<uint64_t>(), 0u) << rw;
  }
}

TEST_P(FuseTest, PythonAndPyTorchOpenFilesByPath) {
  PutTree();
  Mount();
  const std::string script = R"PY(
import hashlib, json, os, sys
import torch
from torch.utils.data import Dataset, DataLoader
root = sys.argv[1]
names = []
def walk(d):
    with os.scandir(d) as it:
        for e in sorted(it, key=lambda e: e.name):
            if e.is_dir(): walk(e.path)
            else: names.append(os.path.relpath(e.path, root))
walk(root)
plain = {n: hashlib.sha256(open(os.path.join(root, n), 'rb').read()).hexdigest() for n in names}
class Files(Dataset):
    def __len__(self): return len(names)
    def __getitem__(self, i):
        with open(os.path.join(root, names[i]), 'rb') as f:
            data = f.read()
        return i, torch.tensor(list(hashlib.sha256(data).digest()), dtype=torch.uint8)
got = {}
for idx, digests in DataLoader(Files(), batch_size=4, num_workers=2):
    for i, d in zip(idx.tolist(), digests):
        got[names[i]] = bytes(d.tolist()).hex()
print(json.dumps({"plain": plain, "torch": got}))
)PY";
  auto r = RunOk({kPython, "-c", script, mnt_});
  auto doc = nlohmann::json::parse(r.stdout_text, nullptr, false);
  ASSERT_FALSE(doc.is_discarded()) << r.stdout_text << r.stderr_text;
  ASSERT_EQ(doc["plain"].size(), expected_.size());
  for (const auto& [key, data] : expected_) {
    EXPECT_EQ(doc["plain"][key], Sha(data)) << key;
    EXPECT_EQ(doc["torch"][key], Sha(data)) << key;
  }
}

TEST_P(FuseTest, WritesReachTheBackend) {
  Put("existing.txt", "do not touch");
  Mount();
  stdfs::create_directories(dir_ + "/local/src/nested");
  std::map<std::string, std::string> local = {{"one.txt", "first file\n"},
                                              {"nested/two.bin", RandomBytes(1 << 20, 7)},
                                              {"nested/three.bin", RandomBytes(5 * 1024 * 1024 + 3, 8)}};
  for (const auto& [name, data] : local) {
    std::ofstream(dir_ + "/local/src/" + name, std::ios::binary) << data;
  }
  RunOk({"cp", "-r", dir_ + "/local/src", mnt_ + "/copied"});
  for (const auto& [name, data] : local) EXPECT_EQ(Get("copied/" + name), data) << name;
  // A large file: multipart upload.
  RunOk({"dd", "if=/dev/urandom", "of=" + dir_ + "/local/large", "bs=1M", "count=40", "status=none"});
  RunOk({"cp", dir_ + "/local/large", mnt_ + "/large"});
  std::ifstream large_in(dir_ + "/local/large", std::ios::binary);
  std::string large(std::istreambuf_iterator<char>(large_in), {});
  EXPECT_EQ(Sha(Get("large")), Sha(large));
  EXPECT_EQ(RunOk({"sha256sum", mnt_ + "/large"}).stdout_text.substr(0, 64), Sha(large));
  // Overwrite with O_TRUNC, mkdir/rmdir, mv (copy + delete), rm.
  RunOk({"sh", "-c", "printf replaced > " + mnt_ + "/copied/one.txt"});
  EXPECT_EQ(Get("copied/one.txt"), "replaced");
  RunOk({"mkdir", mnt_ + "/newdir"});
  RunOk({"test", "-d", mnt_ + "/newdir"});
  if (GetParam() == Backend::kRgw) {
    EXPECT_EQ(Get("newdir/"), "") << "a directory marker";
  }
  RunOk({"rmdir", mnt_ + "/newdir"});
  RunOk({"sh", "-c", "! test -e " + mnt_ + "/newdir"});
  if (GetParam() == Backend::kRgw) {
    EXPECT_EQ(Get("newdir/").substr(0, 10), "<NotFound:");
  }
  RunOk({"mv", mnt_ + "/copied/one.txt", mnt_ + "/moved.txt"});
  EXPECT_EQ(Get("moved.txt"), "replaced");
  EXPECT_EQ(Get("copied/one.txt").substr(0, 10), "<NotFound:");
  RunOk({"mv", mnt_ + "/copied", mnt_ + "/copied2"});  // non-empty dir: EXDEV, mv copies
  for (const auto& [name, data] : local) {
    if (name != "one.txt") {
      EXPECT_EQ(Get("copied2/" + name), data) << name;
    }
  }
  RunOk({"rm", "-r", mnt_ + "/copied2"});
  EXPECT_EQ(Get("copied2/nested/two.bin").substr(0, 10), "<NotFound:");
  auto rmdir_busy = Run({"rmdir", mnt_});
  EXPECT_NE(rmdir_busy.exit_code, 0);
  EXPECT_EQ(Get("existing.txt"), "do not touch");
}

TEST_P(FuseTest, UnsupportedOperationsFailWithErrno) {
  Put("f.txt", "content");
  Mount();
  const std::string script = R"PY(
import errno, os, sys
root = sys.argv[1]
f = os.path.join(root, "f.txt")
def code(fn):
    try:
        fn(); return "ok"
    except OSError as e:
        names = {errno.EPERM: "EPERM", errno.EOPNOTSUPP: "EOPNOTSUPP", errno.ENOENT: "ENOENT"}
        return names.get(e.errno, errno.errorcode[e.errno])
print(code(lambda: os.link(f, os.path.join(root, "hard"))))
print(code(lambda: os.mkfifo(os.path.join(root, "fifo"))))
print(code(lambda: os.mknod(os.path.join(root, "dev"), 0o600 | 0o020000, os.makedev(1, 3))))
print(code(lambda: os.symlink("f.txt", os.path.join(root, "sym"))))
print(code(lambda: os.chmod(f, 0o777)))
print(code(lambda: os.chown(f, 1234, 5678)))
print(code(lambda: open(f, "r+b")))
print(code(lambda: open(f, "ab")))
print(code(lambda: os.truncate(f, 3)))
print(code(lambda: os.rmdir(root + "/nope")))
print(open(f).read())
)PY";
  auto r = RunOk({kPython, "-c", script, mnt_});
  EXPECT_EQ(r.stdout_text, "EPERM\nEPERM\nEPERM\nok\nok\nok\nEOPNOTSUPP\nEOPNOTSUPP\nEOPNOTSUPP\nENOENT\ncontent\n");
  EXPECT_EQ(Get("f.txt"), "content");
  Stop(SIGTERM);
  std::ifstream log(dir_ + "/mount.log");
  std::string text(std::istreambuf_iterator<char>(log), {});
  EXPECT_NE(text.find("link /hard refused"), std::string::npos) << text;
  EXPECT_NE(text.find("mknod /fifo refused"), std::string::npos) << text;
}

// `find -printf '%m %u %g %T@ %l %P'` of a tree, sorted; directories only
// when `dirs` (file:// keeps no directory markers, so not their attributes).
std::string Attrs(const std::string& root, bool dirs) {
  auto r = testing::RunCommand({"find", root, "-mindepth", "1", "-printf", "%y %m %u %g %T@ %l %P\n"}, {});
  if (!r.ok()) return "<" + r.status().ToString() + ">";
  std::istringstream lines(r->stdout_text);
  std::vector<std::string> out;
  for (std::string line; std::getline(lines, line);) {
    if (line.starts_with("d ") && !dirs) continue;
    out.push_back(line);
  }
  std::sort(out.begin(), out.end());
  std::string joined;
  for (const auto& l : out) joined += l + "\n";
  return joined;
}

TEST_P(FuseTest, PosixAttributesAndSymlinksSurviveARemount) {
  const bool dirs = GetParam() == Backend::kRgw;
  Put("obj", "existing object");
  const std::string src = dir_ + "/local/src";
  RunOk({"sh", "-c",
         "set -e; mkdir -p " + src + "/sub/deeper; cd " + src +
             "; printf '#!/bin/sh\\necho hi\\n' > run.sh; chmod 0751 run.sh; echo secret > sub/key; chmod 0600 sub/key;"
             " head -c 200000 /dev/urandom > sub/deeper/blob; chmod 0640 sub/deeper/blob; chown 1234:5678 sub/key;"
             " ln -s run.sh link; ln -s ../run.sh sub/up; ln -s /nowhere/at/all sub/dangling; chmod 0750 sub;"
             " chown -h 77:88 sub/up;"
             " for p in run.sh sub/key sub/deeper/blob link sub/up sub/dangling sub/deeper sub; do"
             " touch -h -d '2020-01-02 03:04:05' $p; done;"
             " touch -h -d '2019-05-06 07:08:09' sub/deeper/blob"});
  const std::string want = Attrs(src, dirs);
  ASSERT_NE(want.find("l 777 root root 1577934245.0000000000 run.sh link"), std::string::npos) << want;
  Mount();
  // Operations on an existing object (server-side copies onto itself) and new symlinks.
  RunOk({"chmod", "0700", mnt_ + "/obj"});
  RunOk({"chown", "42:43", mnt_ + "/obj"});
  RunOk({"touch", "-d", "2021-03-04 05:06:07", mnt_ + "/obj"});
  RunOk({"ln", "-s", "obj", mnt_ + "/obj.link"});
  EXPECT_EQ(RunOk({"readlink", mnt_ + "/obj.link"}).stdout_text, "obj\n");
  EXPECT_EQ(RunOk({"cat", mnt_ + "/obj.link"}).stdout_text, "existing object");
  // The tools that copy attributes.
  RunOk({"cp", "-pR", src, mnt_ + "/cp"});
  RunOk({"rsync", "-a", src + "/", mnt_ + "/rsync/"});
  RunOk({"tar", "-C", src, "-cf", dir_ + "/local/src.tar", "."});
  RunOk({"mkdir", mnt_ + "/tar"});
  RunOk({"tar", "-C", mnt_ + "/tar", "-xpf", dir_ + "/local/src.tar"});
  for (const char* sub : {"cp", "rsync", "tar"}) EXPECT_EQ(Attrs(mnt_ + "/" + sub, dirs), want) << sub << " (mounted)";
  Stop(SIGTERM);
  EXPECT_EQ(Get("obj"), "existing object") << "attributes changed, bytes kept";
  EXPECT_EQ(Get("obj.link"), "obj") << "a symlink's body is its target, as s3fs stores it";

  Mount();
  RunOk({"sh", "-c", "echo 3 > /proc/sys/vm/drop_caches"});
  for (const char* sub : {"cp", "rsync", "tar"})
    EXPECT_EQ(Attrs(mnt_ + "/" + sub, dirs), want) << sub << " (remounted)";
  EXPECT_EQ(RunOk({"stat", "-c", "%a %u %g %Y %s", mnt_ + "/obj"}).stdout_text,
            "700 42 43 " + RunOk({"date", "-d", "2021-03-04 05:06:07", "+%s"}).stdout_text.substr(0, 10) + " 15\n");
  EXPECT_EQ(RunOk({"stat", "-c", "%F %N", mnt_ + "/obj.link"}).stdout_text,
            "symbolic link '" + mnt_ + "/obj.link' -> 'obj'\n");
  EXPECT_EQ(RunOk({"sh", mnt_ + "/cp/run.sh"}).stdout_text, "hi\n");
  EXPECT_EQ(RunOk({"cmp", src + "/sub/deeper/blob", mnt_ + "/tar/sub/deeper/blob"}).exit_code, 0);
}

// s3fs and strata on the same RGW bucket: what one writes, the other shows
// with the same modes, owners, times and symlinks.
TEST_P(FuseTest, S3fsAndStrataAgreeOnAttributesAndSymlinks) {
  if (GetParam() != Backend::kRgw) GTEST_SKIP() << "s3fs needs an S3 endpoint";
  testing::S3TestServer* rgw = Rgw::Get();
  ASSERT_NE(rgw, nullptr);
  const std::string& prefix = prefix_;
  // s3fs mounts bucket:/prefix only where the prefix is a directory it can see.
  auto root = object::OpenStore(rgw->StoreUrl());
  ASSERT_TRUE(root.ok()) << root.status();
  object::PutOptions dir_meta;
  dir_meta.metadata.user = {{"mode", "16877"}};
  ASSERT_TRUE((*root)->Put(prefix + "/", Buffer(), dir_meta).ok()) << prefix;
  const std::string passwd = dir_ + "/s3fs.passwd";
  {
    std::ofstream out(passwd);
    out << rgw->access_key() << ":" << rgw->secret_key() << "\n";
  }
  stdfs::permissions(passwd, stdfs::perms::owner_read | stdfs::perms::owner_write);
  const std::string s3mnt = dir_ + "/s3fs";
  stdfs::create_directories(s3mnt);
  auto s3fs_mount = [&] {
    auto p = std::make_unique<MountProcess>(
        std::vector<std::string>{"/usr/bin/s3fs", rgw->bucket() + ":/" + prefix, s3mnt, "-f", "-o",
                                 "url=" + rgw->endpoint() + ",use_path_request_style,sigv4,endpoint=" + rgw->region() +
                                     ",passwd_file=" + passwd + ",dbglevel=warn,retries=1,stat_cache_expire=1"},
        testing::WithoutCaBundles(), dir_ + "/s3fs.log");
    EXPECT_TRUE(p->WaitMounted(s3mnt)) << p->Log();
    return p;
  };
  auto s3fs_stop = [&](std::unique_ptr<MountProcess>& p) {
    (void)testing::RunCommand({"fusermount3", "-u", s3mnt}, {});
    EXPECT_EQ(p->Wait(), 0) << p->Log();
    p.reset();
  };
  const std::string src = dir_ + "/local/src";
  RunOk({"sh", "-c",
         "set -e; mkdir -p " + src + "/d; cd " + src +
             "; echo x > exe; chmod 0755 exe; echo y > d/priv; chmod 0600 d/priv; chown 1234:5678 d/priv;"
             " ln -s exe link; ln -s ../exe d/up; chmod 0700 d;"
             " for p in exe d/priv link d/up d; do touch -h -d '2020-01-02 03:04:05' $p; done"});
  // s3fs 1.90 sets no times on symlinks (its utimens follows them): compare files and modes only for those.
  auto cmp = [&](const std::string& root) {
    std::string a = Attrs(root, true), out;
    std::istringstream lines(a);
    for (std::string l; std::getline(lines, l);) {
      if (l.starts_with("l ")) {
        std::istringstream f(l);
        std::string y, m, u, g, t, target, name;
        f >> y >> m >> u >> g >> t >> target >> name;
        l = y + " " + m + " " + target + " " + name;
      }
      out += l + "\n";
    }
    return out;
  };
  const std::string want = cmp(src);

  // s3fs writes, strata reads (s3fs 1.90 loses owners and times under cp -a: set modes one by one).
  auto s3 = s3fs_mount();
  ASSERT_TRUE(s3);
  RunOk({"sh", "-c",
         "set -e; cd " + s3mnt +
             "; mkdir -p by-s3fs/d; cd by-s3fs; echo x > exe; chmod 0751 exe; echo y > d/priv;"
             " chmod 0600 d/priv; ln -s exe link; ln -s ../exe d/up; chmod 0700 d"});
  s3fs_stop(s3);
  s3 = s3fs_mount();
  ASSERT_TRUE(s3);
  auto modes = [](const std::string& root) {
    auto r = testing::RunCommand({"find", root, "-mindepth", "1", "-printf", "%y %m %l %P\n"}, {});
    return r.ok() ? r->stdout_text : r.status().ToString();
  };
  const std::string s3fs_view = modes(s3mnt + "/by-s3fs");
  s3fs_stop(s3);
  EXPECT_NE(s3fs_view.find("f 751  exe"), std::string::npos) << s3fs_view;
  EXPECT_NE(s3fs_view.find("l 777 ../exe d/up"), std::string::npos) << s3fs_view;
  Mount();
  std::string strata_view = modes(mnt_ + "/by-s3fs");
  auto sorted = [](const std::string& text) {
    std::istringstream in(text);
    std::vector<std::string> v;
    for (std::string l; std::getline(in, l);) v.push_back(l);
    std::sort(v.begin(), v.end());
    return v;
  };
  EXPECT_EQ(sorted(strata_view), sorted(s3fs_view)) << "strata reading what s3fs wrote";
  EXPECT_EQ(RunOk({"readlink", mnt_ + "/by-s3fs/d/up"}).stdout_text, "../exe\n");
  EXPECT_EQ(RunOk({"ls", "-l", mnt_ + "/by-s3fs/link"}).stdout_text.substr(0, 10), "lrwxrwxrwx");
  EXPECT_EQ(RunOk({"ls", "-ld", mnt_ + "/by-s3fs/d"}).stdout_text.substr(0, 10), "drwx------");
  // strata writes, s3fs reads.
  RunOk({"cp", "-a", src, mnt_ + "/by-strata"});
  Stop(SIGTERM);
  s3 = s3fs_mount();
  ASSERT_TRUE(s3);
  EXPECT_EQ(cmp(s3mnt + "/by-strata"), want) << "s3fs reading what strata wrote";
  EXPECT_EQ(RunOk({"readlink", s3mnt + "/by-strata/d/up"}).stdout_text, "../exe\n");
  EXPECT_EQ(RunOk({"cat", s3mnt + "/by-strata/link"}).stdout_text, "x\n");
  s3fs_stop(s3);
}

TEST_P(FuseTest, ReadOnlyMount) {
  Put("r.txt", "read me");
  Mount({"--read-only"});
  EXPECT_EQ(RunOk({"cat", mnt_ + "/r.txt"}).stdout_text, "read me");
  auto w = Run({"sh", "-c", "echo x > " + mnt_ + "/new"});
  EXPECT_NE(w.exit_code, 0);
  EXPECT_NE(w.stderr_text.find("Read-only file system"), std::string::npos) << w.stderr_text;
}

TEST_P(FuseTest, BackendErrorIsEioAndTheMountStaysUp) {
  if (GetParam() != Backend::kFile) GTEST_SKIP() << "needs a backend the test can break (file://)";
  Put("vanishing.bin", RandomBytes(24 << 20, 9));
  Put("stays.txt", "still here");
  Mount({"--attr-ttl", "1h"});
  EXPECT_EQ(RunOk({"stat", "-c", "%s", mnt_ + "/vanishing.bin"}).stdout_text, "25165824\n");
  RunOk({"head", "-c", "100", mnt_ + "/vanishing.bin"});  // opens it: the mount now knows its ETag
  // Replace the backend file behind the mount's back: blocks not yet cached
  // cannot be fetched for the version the mount knows, so the read fails (EIO)
  // instead of mixing two versions.
  std::ofstream(dir_ + "/bucket/vanishing.bin", std::ios::binary) << RandomBytes(24 << 20, 99);
  auto r = Run({"dd", "if=" + mnt_ + "/vanishing.bin", "of=/dev/null", "bs=1M", "skip=20", "status=none"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.stderr_text.find("Input/output error"), std::string::npos) << r.stderr_text;
  EXPECT_EQ(RunOk({"cat", mnt_ + "/stays.txt"}).stdout_text, "still here") << "the mount is still up";
}

// `cat` of a directory's files one at a time, cold: each file comes on
// several ranged GETs at once, and the files after it are fetched ahead
// (the mount's counters, logged at unmount).
TEST_P(FuseTest, ColdDirectoryScanKeepsSeveralConnectionsPerFile) {
  constexpr int kFiles = 8;
  std::string sums;
  for (int i = 0; i < kFiles; ++i) {
    const std::string key = "scan/f" + std::to_string(i);
    Put(key, RandomBytes(4 << 20, 100 + i));
    sums += Sha(expected_[key]) + "  " + mnt_ + "/" + key + "\n";
  }
  Mount({"--log-level", "info", "--emulate", "ttfb=30ms,bw=25MB/s"});
  auto r = RunOk({"sh", "-c", "for f in " + mnt_ + "/scan/*; do sha256sum \"$f\"; done"});
  EXPECT_EQ(r.stdout_text, sums);
  Stop(SIGTERM);
  std::ifstream log_file(dir_ + "/mount.log");
  const std::string log((std::istreambuf_iterator<char>(log_file)), {});
  const size_t at = log.find("backend GETs ");
  ASSERT_NE(at, std::string::npos) << log;
  unsigned long gets = 0, peak = 0, prefetched = 0;
  ASSERT_EQ(std::sscanf(log.c_str() + at, "backend GETs %lu (at most %lu in flight at once), files prefetched %lu",
                        &gets, &peak, &prefetched),
            3)
      << log;
  EXPECT_GE(gets, 2u * kFiles) << "more than one connection per file";
  EXPECT_GE(peak, 8u) << "files fetched ahead while one is read";
  EXPECT_GE(prefetched, kFiles - 2u) << "every file after the second was fetched ahead";
}

// An open file keeps reading the version it opened, through the kernel's
// page cache too: a later open of the replaced object sees the new version
// on another inode and does not refill the pages the first reader uses.
TEST_P(FuseTest, AnOpenFileKeepsReadingTheVersionItOpened) {
  const std::string v1 = RandomBytes(4 << 20, 1), v2 = RandomBytes(4 << 20, 2);  // the same size
  Put("ver.bin", v1);
  Mount({"--metadata-ttl", "1s"});
  auto read_all = [](int fd) {
    std::string out(8 << 20, '\0');
    size_t got = 0;
    for (ssize_t n; (n = pread(fd, out.data() + got, out.size() - got, static_cast<off_t>(got))) > 0;) got += n;
    out.resize(got);
    return out;
  };
  const std::string path = mnt_ + "/ver.bin";
  int a = open(path.c_str(), O_RDONLY);
  ASSERT_GE(a, 0);
  EXPECT_TRUE(read_all(a) == v1);
  Put("ver.bin", v2);  // replaced behind the mount
  // Past the TTLs a new open sees v2 (polling: the mount is another process).
  int b = -1;
  for (auto deadline = SteadyClock::now() + std::chrono::seconds(30); SteadyClock::now() < deadline;) {
    b = open(path.c_str(), O_RDONLY);
    ASSERT_GE(b, 0) << std::strerror(errno) << "\nmount log:\n" << mount_->Log();
    if (read_all(b) == v2) break;
    close(b);
    b = -1;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_GE(b, 0) << "the new version never appeared";
  EXPECT_TRUE(read_all(a) == v1) << "the first handle must still read the version it opened";
  EXPECT_TRUE(read_all(b) == v2);
  struct stat sa = {};
  struct stat sb = {};
  ASSERT_EQ(fstat(a, &sa), 0);
  ASSERT_EQ(fstat(b, &sb), 0);
  EXPECT_NE(sa.st_ino, sb.st_ino) << "each version its own inode (and page cache)";
  close(a);
  close(b);
  EXPECT_TRUE(read_all(b = open(path.c_str(), O_RDONLY)) == v2);
  close(b);
}

TEST_P(FuseTest, UnmountPaths) {
  Put("x", "1");
  Mount();
  Stop(SIGINT);
  Mount();
  RunOk({StrataBin(), "umount", mnt_});
  EXPECT_EQ(mount_->Wait(), 0) << mount_->Log();
  EXPECT_FALSE(Mounted(mnt_));
  mount_.reset();
  Mount();
  RunOk({"fusermount3", "-u", mnt_});
  EXPECT_EQ(mount_->Wait(), 0) << mount_->Log();
  mount_.reset();
  // Daemon mode: returns once mounted; the daemon exits on umount. (Through
  // the old spelling of --cache-ram, which still works and says it is deprecated.)
  auto r = testing::RunCommand({StrataBin(), "mount", url_, mnt_, "--cache-mem", "64MiB"}, env_);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->exit_code, 0) << r->stderr_text;
  const std::string deprecated = "strata: mount: --cache-mem is deprecated; use --cache-ram (the same value)\n";
  EXPECT_NE(r->stderr_text.find(deprecated), std::string::npos) << r->stderr_text;
  EXPECT_EQ(r->stderr_text.find("deprecated"), r->stderr_text.rfind("deprecated")) << r->stderr_text;  // one line
  EXPECT_TRUE(Mounted(mnt_));
  size_t p = r->stdout_text.find("(pid ");
  ASSERT_NE(p, std::string::npos) << r->stdout_text;
  pid_t daemon = std::stoi(r->stdout_text.substr(p + 5));
  EXPECT_EQ(RunOk({"cat", mnt_ + "/x"}).stdout_text, "1");
  RunOk({StrataBin(), "umount", mnt_});
  auto deadline = SteadyClock::now() + std::chrono::seconds(30);
  while (!testing::ProcessGone(daemon) && SteadyClock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_TRUE(testing::ProcessGone(daemon));
  EXPECT_FALSE(Mounted(mnt_));
}

INSTANTIATE_TEST_SUITE_P(Backends, FuseTest, ::testing::Values(Backend::kFile, Backend::kRgw),
                         [](const auto& info) { return info.param == Backend::kFile ? "file" : "rgw"; });

}  // namespace
}  // namespace strata::fuse

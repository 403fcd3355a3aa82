// Real mounts of the built `strata` binary (label fuse): over a file://
// backend and over Ceph RGW, driven by real tools (cp, find, cat, sha256sum,
// dd, fio, Python, PyTorch DataLoader); contents checked byte-exact against
// the backend. Mounts run with --foreground in the background and are
// stopped by PID (SIGTERM / SIGINT) or with `strata umount`.
#include "fuse/fuse_test_fixture.h"

namespace strata::fuse {
namespace {

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
  // FIFOs and device nodes are stored (SpecialFilesAndStableInodeNumbers); hard links are not.
  EXPECT_EQ(r.stdout_text, "EPERM\nok\nok\nok\nok\nok\nEOPNOTSUPP\nEOPNOTSUPP\nEOPNOTSUPP\nENOENT\ncontent\n");
  EXPECT_EQ(Get("f.txt"), "content");
  Stop(SIGTERM);
  std::ifstream log(dir_ + "/mount.log");
  std::string text(std::istreambuf_iterator<char>(log), {});
  EXPECT_NE(text.find("link /hard refused"), std::string::npos) << text;
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

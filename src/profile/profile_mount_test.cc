// `strata profile` through a strata mount (label fuse, root): the mount's
// access log gives exact reads. A Python reader with known patterns over a
// file:// backed mount: small files read whole over epochs (all sequential,
// re-reads counted), one large file read at random offsets (all random, the
// block-cache verdict).
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "testing/strata_binary.h"

namespace strata::profile {

using testing::StrataBinaryTest;

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

bool Mounted(const std::string& mp) {
  std::ifstream in("/proc/self/mounts");
  std::string dev, point, rest;
  while (in >> dev >> point && std::getline(in, rest))
    if (point == mp) return true;
  return false;
}

class ProfileMountTest : public StrataBinaryTest {
 protected:
  void SetUp() override {
    StrataBinaryTest::SetUp();
    if (::geteuid() != 0) GTEST_SKIP() << "needs root (FUSE mount)";
    if (::access("/usr/bin/python3", X_OK) != 0 || ::access("/dev/fuse", R_OK) != 0) GTEST_SKIP() << "no python3/fuse";
    fs::create_directories(dir_ / "back" / "data");
    fs::create_directories(dir_ / "mnt");
  }
  void TearDown() override {
    if (pid_ > 0) {
      RunStrata({"umount", (dir_ / "mnt").string()}, std::chrono::seconds(30));
      ::kill(pid_, SIGTERM);
      ::waitpid(pid_, nullptr, 0);
    }
    StrataBinaryTest::TearDown();
  }
  // `strata mount --foreground` in a child; waits (with a deadline) for the mount.
  void Mount() {
    const std::string url = "file://" + (dir_ / "back").string(), mp = (dir_ / "mnt").string();
    const std::string log = (dir_ / "mount.log").string();
    pid_ = ::fork();
    if (pid_ == 0) {
      FILE* f = std::freopen(log.c_str(), "w", stderr);
      (void)f;
      ::execl(binary_.c_str(), binary_.c_str(), "mount", url.c_str(), mp.c_str(), "--foreground",
              static_cast<char*>(nullptr));
      ::_exit(127);
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (!Mounted(mp) && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    ASSERT_TRUE(Mounted(mp)) << "mount did not come up";
  }
  json Profile(const std::string& script, const std::vector<std::string>& args) {
    std::ofstream(dir_ / "reader.py") << script;
    std::vector<std::string> cmd{
        "profile", "--path",           (dir_ / "mnt" / "data").string(), "--json", (dir_ / "p.json").string(),
        "--",      "/usr/bin/python3", (dir_ / "reader.py").string()};
    cmd.insert(cmd.end(), args.begin(), args.end());
    auto run = RunStrata(cmd, std::chrono::seconds(120));
    EXPECT_EQ(run.code, 0) << run.out << run.err;
    std::ifstream f(dir_ / "p.json");
    return json::parse(f, nullptr, false);
  }
  pid_t pid_ = -1;
};

bool HasVerdict(const json& r, const std::string& v) {
  for (const auto& x : r["verdicts"])
    if (x["verdict"] == v) return true;
  return false;
}

// 60 small files read whole in 3 epochs: 180 reads, all sequential, exact
// bytes, two thirds of them re-read.
TEST_F(ProfileMountTest, SmallFilesReadWholeAreSequentialAndRereadsCounted) {
  uint64_t total = 0;
  for (int i = 0; i < 60; ++i) {
    const size_t size = 2000 + size_t(i) * 7;
    std::ofstream(dir_ / "back" / "data" / ("s" + std::to_string(i)), std::ios::binary) << std::string(size, 'y');
    total += size;
  }
  Mount();
  json r = Profile(
      "import os, sys\n"
      "root = sys.argv[1]\n"
      "files = sorted(os.path.join(root, f) for f in os.listdir(root))\n"
      "for epoch in range(3):\n"
      "    for p in files:\n"
      "        with open(p, 'rb') as fh: fh.read()\n",
      {(dir_ / "mnt" / "data").string()});
  ASSERT_FALSE(r.is_discarded());
  EXPECT_TRUE(r["exact_reads"].get<bool>());
  EXPECT_EQ(r["files"], 60);
  EXPECT_EQ(r["read_opens"].get<double>(), 180);
  EXPECT_EQ(r["unique_bytes"].get<double>(), double(total));
  EXPECT_EQ(r["bytes_read"].get<double>(), 3.0 * double(total));
  const json& rd = r["reads"];
  EXPECT_EQ(rd["count"].get<double>(), 180);  // each file in one read (it fits max_read)
  EXPECT_EQ(rd["sequential"]["share"].get<double>(), 1.0);
  EXPECT_EQ(rd["random"]["reads"].get<double>(), 0);
  EXPECT_EQ(rd["reread_bytes"].get<double>(), 2.0 * double(total));
  EXPECT_NEAR(r["rereads"]["fraction"].get<double>(), 2.0 / 3, 1e-9);
  uint64_t sized = 0;
  for (const auto& b : rd["size_histogram"]) sized += b["count"].get<uint64_t>();
  EXPECT_EQ(sized, 180u);
  double timeline = 0;
  for (const auto& b : rd["timeline"]["bytes"]) timeline += b.get<double>();
  EXPECT_EQ(timeline, 3.0 * double(total));
  EXPECT_GT(rd["io_wait_s"].get<double>(), 0);
  EXPECT_TRUE(HasVerdict(r, "pack into shards")) << r["verdicts"];
  EXPECT_TRUE(HasVerdict(r, "cache locally")) << r["verdicts"];
  EXPECT_FALSE(HasVerdict(r, "block cache with small blocks, no read-ahead")) << r["verdicts"];
}

// One 64 MiB file, 400 reads of 4 KiB at random 4 KiB-aligned offsets: all
// random, every read 4 KiB, the block-cache verdict; the log is off afterwards.
TEST_F(ProfileMountTest, LargeFileAtRandomOffsetsIsRandom) {
  { std::ofstream f(dir_ / "back" / "data" / "big.bin"); }
  fs::resize_file(dir_ / "back" / "data" / "big.bin", 64ull << 20);
  Mount();
  json r = Profile(
      "import os, random, sys\n"
      "fd = os.open(sys.argv[1], os.O_RDONLY)\n"
      "rng = random.Random(7)\n"
      "for _ in range(400): os.pread(fd, 4096, 4096 * rng.randrange(1, (64 << 20) // 4096))\n"
      "os.close(fd)\n",
      {(dir_ / "mnt" / "data" / "big.bin").string()});
  ASSERT_FALSE(r.is_discarded());
  EXPECT_TRUE(r["exact_reads"].get<bool>());
  EXPECT_EQ(r["files"], 1);
  const json& rd = r["reads"];
  EXPECT_EQ(rd["count"].get<double>(), 400);
  EXPECT_GE(rd["random"]["share"].get<double>(), 0.99);  // a random offset may land right after the last read
  ASSERT_EQ(rd["size_histogram"].size(), 1u);
  EXPECT_EQ(rd["size_histogram"][0]["le"], 4096);
  EXPECT_EQ(r["bytes_read"].get<double>(), 400.0 * 4096);
  EXPECT_TRUE(HasVerdict(r, "block cache with small blocks, no read-ahead")) << r["verdicts"];
  EXPECT_FALSE(HasVerdict(r, "pack into shards")) << r["verdicts"];
  // The profile switched the log off: a second profile can switch it on again.
  json again = Profile("import os, sys\nos.pread(os.open(sys.argv[1], os.O_RDONLY), 10, 0)\n",
                       {(dir_ / "mnt" / "data" / "big.bin").string()});
  ASSERT_FALSE(again.is_discarded());
  EXPECT_EQ(again["reads"]["count"].get<double>(), 1);
  EXPECT_EQ(again["bytes_read"].get<double>(), 10);
}

}  // namespace
}  // namespace strata::profile

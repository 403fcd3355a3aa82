// The free-space floor through a real `strata mount` whose cache directory
// is on a small real file system (a 24 MiB tmpfs): a warm dataset read
// through the mount (cat) fills the cache up to the floor, and checkpoints
// then written beside it on the same file system (as a training job does)
// each find the floor free, because the mount gives space back while it
// only serves reads. Skips, saying why, where a tmpfs cannot be mounted.
#include <gtest/gtest.h>
#include <sys/mount.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

#include "fuse/fuse_test_fixture.h"
#include "testing/background_process.h"
#include "testing/subprocess.h"

namespace strata::fuse {
namespace {

constexpr uint64_t kMiB = 1 << 20;
constexpr uint64_t kDiskBytes = 24 * kMiB;
constexpr uint64_t kFloor = kDiskBytes / 4;  // --cache-free-space 25%
constexpr int kObjects = 16;                 // 16 MiB: fits above the floor

std::string Bytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::string s(n, '\0');
  for (auto& c : s) c = static_cast<char>(rng());
  return s;
}

class MountFreeSpaceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(StrataBin().empty()) << "run under ctest (STRATA_BINARY_DIR)";
    dir_ = stdfs::temp_directory_path() / ("strata-mount-space-" + std::to_string(::getpid()));
    stdfs::remove_all(dir_);
    stdfs::create_directories(dir_ / "bucket" / "data");
    stdfs::create_directories(dir_ / "disk");
    stdfs::create_directories(dir_ / "mnt");
    if (::mount("tmpfs", (dir_ / "disk").c_str(), "tmpfs", 0, "size=24m") != 0) {
      GTEST_SKIP() << "cannot mount a tmpfs here: " << std::strerror(errno);
    }
    disk_mounted_ = true;
  }
  void TearDown() override {
    if (mount_) {
      mount_->Stop();
      (void)testing::RunCommand({"fusermount3", "-u", "-z", (dir_ / "mnt").string()});
    }
    if (disk_mounted_) ::umount2((dir_ / "disk").c_str(), MNT_DETACH);
    std::error_code ec;
    stdfs::remove_all(dir_, ec);
  }
  uint64_t Free() {
    struct statvfs st {};
    EXPECT_EQ(::statvfs((dir_ / "disk").c_str(), &st), 0);
    return static_cast<uint64_t>(st.f_bavail) * st.f_frsize;
  }
  // Waits (up to a deadline) until the floor is free again.
  bool FloorFree() {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (Free() < kFloor && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));  // polling the file system
    }
    return Free() >= kFloor;
  }
  void CatAll() {
    for (int i = 0; i < kObjects; ++i) {
      auto cat = testing::RunCommand({"cat", (dir_ / "mnt" / "data" / (std::to_string(i) + ".bin")).string()});
      ASSERT_TRUE(cat.ok() && cat->exit_code == 0) << i;
      ASSERT_TRUE(cat->stdout_text == Bytes(kMiB, i)) << "object " << i << ": other bytes through the mount";
    }
  }

  stdfs::path dir_;
  bool disk_mounted_ = false;
  std::unique_ptr<testing::BackgroundProcess> mount_;
};

TEST_F(MountFreeSpaceTest, CheckpointsBesideAWarmDatasetFindTheFloorFree) {
  ASSERT_TRUE(stdfs::exists("/dev/fuse"));
  for (int i = 0; i < kObjects; ++i) {
    std::ofstream(dir_ / "bucket" / "data" / (std::to_string(i) + ".bin"), std::ios::binary) << Bytes(kMiB, i);
  }
  auto m = testing::BackgroundProcess::Start(
      {StrataBin(), "mount", "file://" + (dir_ / "bucket").string(), (dir_ / "mnt").string(), "--foreground",
       "--cache-dir", (dir_ / "disk" / "cache").string(), "--block-size", "1MiB", "--cache-free-space", "25%"},
      (dir_ / "mount.log").string());
  ASSERT_TRUE(m.ok()) << m.status();
  mount_ = std::move(*m);
  ASSERT_TRUE(mount_->WaitForLine("strata: mounted", std::chrono::seconds(60)).ok()) << mount_->Log();
  CatAll();
  ASSERT_TRUE(FloorFree()) << Free();
  ASSERT_LT(Free(), kFloor + 5 * kMiB) << "the warm dataset did not fill the cache";

  // Two 5 MiB checkpoints, one after the other, beside the warm dataset: the
  // second fits only if the cache gave back what the first took of the floor.
  for (int ckpt = 0; ckpt < 2; ++ckpt) {
    const stdfs::path path = dir_ / "disk" / ("ckpt-" + std::to_string(ckpt));
    auto dd = testing::RunCommand({"dd", "if=/dev/zero", "of=" + path.string(), "bs=1M", "count=5", "conv=fsync"});
    ASSERT_TRUE(dd.ok());
    ASSERT_EQ(dd->exit_code, 0) << "checkpoint " << ckpt << " did not fit: " << dd->stderr_text;
    EXPECT_EQ(stdfs::file_size(path), 5 * kMiB);
    EXPECT_TRUE(FloorFree()) << "checkpoint " << ckpt << ": the mount kept the floor's space (" << Free() << " free)";
  }
  CatAll();  // still exact: what was evicted comes from the bucket again
  EXPECT_GE(Free() + kMiB, kFloor) << "rereading filled the floor back";
  EXPECT_EQ(mount_->Stop(), 0) << mount_->Log();
  mount_.reset();
}

}  // namespace
}  // namespace strata::fuse

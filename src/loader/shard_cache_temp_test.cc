// The shard cache's temp files: a dead writer's are swept at Open, a live
// writer's are kept and counted towards the disk bound.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <string>

#include "base/clock.h"
#include "io/durable.h"
#include "io/fault_file_system.h"
#include "loader/shard_cache.h"
#include "object/mem_store.h"

namespace strata::loader {
namespace {

// A pid that belonged to a process that has exited and been reaped.
pid_t DeadPid() {
  pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  int status = 0;
  EXPECT_EQ(::waitpid(child, &status, 0), child);
  return child;
}

class ShardCacheTempTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = io::MakeTempDir("strata-shard-temp-");
    ASSERT_TRUE(dir.ok()) << dir.status();
    dir_ = *dir;
    store_ = object::MakeMemStore();
    ASSERT_TRUE(store_->Put(key_, Buffer::FromString(std::string(1000, 's'))).ok());
  }
  void TearDown() override { EXPECT_TRUE(io::RemoveAll(io::DefaultFileSystem(), dir_).ok()); }

  // A temp file named as WriteFileAtomic names it for `pid`, `bytes` long, last written `age` before the fake
  // now (the real one with real_clock).
  std::string WriteTemp(pid_t pid, size_t bytes, std::chrono::seconds age, bool real_clock = false) {
    std::string path = dir_ + "/00000000deadbeef.shard.tmp." + std::to_string(pid) + "." + std::to_string(seq_++);
    EXPECT_TRUE(io::WriteFileAtomic(io::DefaultFileSystem(), path, std::string(bytes, 't')).ok());
    const auto mtime = std::chrono::duration_cast<std::chrono::nanoseconds>(
        ((real_clock ? std::chrono::system_clock::now() : clock_.WallNow()) - age).time_since_epoch());
    struct timespec times[2];
    times[0].tv_sec = times[1].tv_sec = static_cast<time_t>(mtime.count() / 1000000000);
    times[0].tv_nsec = times[1].tv_nsec = static_cast<long>(mtime.count() % 1000000000);
    EXPECT_EQ(::utimensat(AT_FDCWD, path.c_str(), times, 0), 0);
    return path;
  }
  bool Exists(const std::string& path) { return *io::DefaultFileSystem().Exists(path); }

  Result<std::shared_ptr<ShardCache>> Open(uint64_t disk_bytes) {
    ShardCacheOptions co;
    co.dir = dir_;
    co.disk_bytes = disk_bytes;
    co.fs = &fs_;
    co.clock = &clock_;
    return ShardCache::Open(store_, {key_}, {1000}, co);
  }
  // What the shard's file takes on disk: header (28 bytes + key) + data.
  uint64_t ShardFileBytes() const { return 28 + key_.size() + 1000; }

  std::string dir_;
  std::string key_ = "ds/shard-0";
  object::ObjectStorePtr store_;
  FakeClock clock_;
  io::FaultFileSystem fs_{io::DefaultFileSystem()};
  int seq_ = 0;
};

TEST_F(ShardCacheTempTest, DeadWritersTempFilesAreSweptLiveOnesCounted) {
  const pid_t dead = DeadPid();
  const pid_t live = ::getppid();  // the test runner: alive while we run
  ASSERT_NE(dead, live);
  const std::string dead_old = WriteTemp(dead, 5000, std::chrono::hours(1));
  const std::string live_old = WriteTemp(live, 4000, std::chrono::hours(1));
  // Dead in our PID namespace but written a moment ago: maybe a live writer in another one.
  const std::string dead_recent = WriteTemp(dead, 10, std::chrono::seconds(5));

  auto cache = Open(ShardFileBytes() + 4010);
  ASSERT_TRUE(cache.ok()) << cache.status();
  EXPECT_FALSE(Exists(dead_old));
  EXPECT_TRUE(Exists(live_old));
  EXPECT_TRUE(Exists(dead_recent));
  EXPECT_EQ((*cache)->counters().temps_swept, 1u);
  EXPECT_EQ(fs_.Counters().removes, 1u);  // through the injected file system

  // The kept temp files count towards the bound: the shard just fits beside them.
  ASSERT_TRUE((*cache)->Get(0).ok());
  (*cache)->FlushDiskWrites();
  EXPECT_TRUE(Exists((*cache)->FilePath(0)));
  EXPECT_EQ((*cache)->counters().disk_bytes, ShardFileBytes() + 4010);
  EXPECT_TRUE(Exists(live_old));  // counted, never evicted
}

// After a reboot the pid in a leftover temp file's name may be a live,
// unrelated process: a temp file written before this boot is dead whatever its
// pid (real clock and mtimes; /proc/stat btime).
TEST_F(ShardCacheTempTest, TempFilesFromBeforeTheBootAreSweptWhateverTheirPid) {
  std::ifstream stat("/proc/stat");
  std::string line;
  long long btime = 0;
  while (std::getline(stat, line))
    if (line.rfind("btime ", 0) == 0) btime = std::stoll(line.substr(6));
  ASSERT_GT(btime, 0);
  const pid_t live = ::getppid();  // the test runner: alive while we run
  const auto real_now = std::chrono::system_clock::now();
  const auto before_boot = std::chrono::system_clock::now() - WallTime(std::chrono::seconds(btime - 3600));
  const auto since_boot = real_now - WallTime(std::chrono::seconds(btime));
  ASSERT_GT(since_boot, std::chrono::minutes(3)) << "the machine just booted";
  const std::string old = WriteTemp(live, 300, std::chrono::duration_cast<std::chrono::seconds>(before_boot),
                                    /*real_clock=*/true);
  const std::string recent = WriteTemp(live, 200, std::chrono::minutes(2), /*real_clock=*/true);
  ShardCacheOptions co;
  co.dir = dir_;
  co.disk_bytes = 1 << 20;
  co.fs = &fs_;  // the real clock
  auto cache = ShardCache::Open(store_, {key_}, {1000}, co);
  ASSERT_TRUE(cache.ok()) << cache.status();
  EXPECT_FALSE(Exists(old));
  EXPECT_TRUE(Exists(recent));  // after the boot, its writer alive: kept
  EXPECT_EQ((*cache)->counters().temps_swept, 1u);
}

TEST_F(ShardCacheTempTest, LiveTempFilesLeaveNoRoomBeyondTheBound) {
  const std::string live = WriteTemp(::getppid(), 4000, std::chrono::hours(1));
  auto cache = Open(ShardFileBytes() + 3999);  // one byte short once the temp file is counted
  ASSERT_TRUE(cache.ok()) << cache.status();
  auto got = (*cache)->Get(0);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->data.ToString(), std::string(1000, 's'));
  (*cache)->FlushDiskWrites();
  EXPECT_FALSE(Exists((*cache)->FilePath(0)));  // served, not kept: the bound holds
  EXPECT_TRUE(Exists(live));
  EXPECT_EQ((*cache)->counters().temps_swept, 0u);
}

TEST_F(ShardCacheTempTest, OurOwnTempFilesAreNeverSwept) {
  const std::string ours = WriteTemp(::getpid(), 100, std::chrono::hours(1));  // another cache in this process
  auto cache = Open(1 << 20);
  ASSERT_TRUE(cache.ok()) << cache.status();
  EXPECT_TRUE(Exists(ours));
}

}  // namespace
}  // namespace strata::loader

// The file store under power loss: it writes through io/FileSystem, so a
// FaultFileSystem can drop what was not synced (SimulateCrash). A Put that
// returned survives byte-exact; a crash at any step before it returns leaves
// the old object or the new one, never a torn or missing one.
#include <gtest/gtest.h>

#include <iostream>
#include <string>

#include "base/hash.h"
#include "io/crashing_file_system.h"
#include "io/durable.h"
#include "object/file_store.h"

namespace strata::object {
namespace {

// Fails every durable-write step after the chosen one (the process died
// there); SimulateCrash drops what it had not synced.
using CrashingFs = io::CrashingFileSystem;

class FileStoreCrashTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = io::MakeTempDir("strata-file-store-crash-");
    ASSERT_TRUE(dir.ok()) << dir.status();
    root_ = *dir;
  }
  void TearDown() override { EXPECT_TRUE(io::RemoveAll(io::DefaultFileSystem(), root_).ok()); }

  // The object as a fresh store on the real file system sees it after the crash.
  Result<std::string> ReadAfterCrash(const std::string& key) {
    STRATA_ASSIGN_OR_RETURN(ObjectStorePtr store, OpenFileStore(root_));
    STRATA_ASSIGN_OR_RETURN(GetResult got, store->Get(key));
    std::string data = got.data.ToString();
    EXPECT_EQ(got.info.etag, ToHex(Md5(data))) << key;  // the ETag describes the surviving bytes
    EXPECT_EQ(got.info.size, data.size());
    return data;
  }

  std::string root_;
};

TEST_F(FileStoreCrashTest, AnObjectWhosePutReturnedSurvivesPowerLoss) {
  CrashingFs fs(io::DefaultFileSystem());
  FileStoreOptions options;
  options.fs = &fs;
  auto store = OpenFileStore(root_, options);
  ASSERT_TRUE(store.ok()) << store.status();
  const std::string data(100000, 'x');
  ASSERT_TRUE((*store)->Put("a/b/obj", Buffer::FromString(data)).ok());
  ASSERT_TRUE((*store)->Put("top", Buffer::FromString("small")).ok());
  ASSERT_TRUE(fs.SimulateCrash().ok());
  EXPECT_EQ(ReadAfterCrash("a/b/obj").value_or("<missing>"), data);
  EXPECT_EQ(ReadAfterCrash("top").value_or("<missing>"), "small");
  EXPECT_GT(fs.Counters().syncs, 0u);  // the writes went through the injected file system
  EXPECT_GT(fs.Counters().dir_syncs, 0u);
}

// Crashes at every step of a Put, replacing an object and creating one under new directories.
TEST_F(FileStoreCrashTest, ACrashBeforePutReturnsLeavesTheOldOrTheNewObject) {
  const std::string old_data(3000, 'o'), new_data(5000, 'n');
  int points = 0, old_seen = 0, new_seen = 0, absent_seen = 0;
  for (int64_t crash_at = 0;; ++crash_at) {
    ASSERT_TRUE(io::RemoveAll(io::DefaultFileSystem(), root_).ok());
    {
      auto plain = OpenFileStore(root_);
      ASSERT_TRUE(plain.ok()) << plain.status();
      ASSERT_TRUE((*plain)->Put("dir/obj", Buffer::FromString(old_data)).ok());
    }
    CrashingFs fs(io::DefaultFileSystem());
    FileStoreOptions options;
    options.fs = &fs;
    auto store = OpenFileStore(root_, options);
    ASSERT_TRUE(store.ok()) << store.status();
    fs.CrashAfter(crash_at);
    const bool replaced = (*store)->Put("dir/obj", Buffer::FromString(new_data)).ok();
    const bool created = !fs.crashed() && (*store)->Put("x/y/z", Buffer::FromString(new_data)).ok();
    const bool finished = !fs.crashed();
    ASSERT_TRUE(fs.SimulateCrash().ok()) << "crash point " << crash_at;
    ++points;

    auto got = ReadAfterCrash("dir/obj");
    ASSERT_TRUE(got.ok()) << "crash point " << crash_at << ": " << got.status();
    if (replaced) {
      EXPECT_EQ(*got, new_data) << "crash point " << crash_at;
    } else {
      EXPECT_TRUE(*got == old_data || *got == new_data) << "crash point " << crash_at << ": torn";
    }
    (*got == old_data ? old_seen : new_seen)++;

    auto fresh = ReadAfterCrash("x/y/z");
    if (created) {
      EXPECT_EQ(fresh.value_or("<missing>"), new_data) << "crash point " << crash_at;
    } else if (fresh.ok()) {
      EXPECT_EQ(*fresh, new_data) << "crash point " << crash_at << ": torn";
    } else {
      EXPECT_EQ(fresh.status().code(), Code::kNotFound) << fresh.status();
      ++absent_seen;
    }
    if (finished) break;
  }
  std::cout << "file store power-loss campaign: crash points " << points << ", old object seen " << old_seen
            << ", new object seen " << new_seen << ", new key absent " << absent_seen
            << ", data lost 0, wrong bytes served 0 (asserted at every point)\n";
  // Every step was a crash point, and both outcomes occurred.
  EXPECT_GE(points, 10);
  EXPECT_GT(old_seen, 0);
  EXPECT_GT(new_seen, 0);
  EXPECT_GT(absent_seen, 0);
}

}  // namespace
}  // namespace strata::object

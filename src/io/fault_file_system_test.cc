#include "io/fault_file_system.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "io/durable.h"

namespace strata::io {
namespace {

class FaultFsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = MakeTempDir("strata-fault-test-");
    ASSERT_TRUE(dir.ok()) << dir.status();
    dir_ = *dir;
  }
  void TearDown() override { EXPECT_TRUE(RemoveAll(posix_, dir_).ok()); }
  std::string P(std::string_view name) const { return JoinPath(dir_, name); }

  // Contents through the real file system, or "<missing>".
  std::string Contents(const std::string& path) {
    auto s = ReadFileToString(posix_, path, 1 << 20);
    if (!s.ok() && s.status().code() == Code::kNotFound) return "<missing>";
    EXPECT_TRUE(s.ok()) << s.status();
    return s.value_or("<error>");
  }
  // Writes through the fault file system; optionally syncs the file and its directory.
  void Write(const std::string& path, std::string_view data, bool sync_file, bool sync_dir) {
    auto f = fs_.OpenForWrite(path);
    ASSERT_TRUE(f.ok()) << f.status();
    ASSERT_TRUE((*f)->Append(data).ok());
    if (sync_file) {
      ASSERT_TRUE((*f)->Sync().ok());
    }
    ASSERT_TRUE((*f)->Close().ok());
    if (sync_dir) {
      ASSERT_TRUE(fs_.SyncDir(ParentDir(path)).ok());
    }
  }

  PosixFileSystem posix_;
  FaultFileSystem fs_{posix_};
  std::string dir_;
};

TEST_F(FaultFsTest, WriteBudgetGivesNoSpaceAfterPartialWrite) {
  fs_.SetWriteBudget(10);
  auto f = fs_.OpenForWrite(P("f"));
  ASSERT_TRUE(f.ok());
  ASSERT_TRUE((*f)->Append("123456").ok());
  Status s = (*f)->Append("abcdef");
  EXPECT_EQ(s.code(), Code::kNoSpace) << s;
  EXPECT_NE(s.message().find(P("f")), std::string::npos);
  EXPECT_EQ((*f)->Append("x").code(), Code::kNoSpace);
  EXPECT_EQ(*fs_.FreeSpace(dir_), 0u);
  ASSERT_TRUE((*f)->Close().ok());
  EXPECT_EQ(Contents(P("f")), "123456abcd");  // what fitted was written, like a real full disk
  EXPECT_EQ(fs_.Counters().no_space_errors, 2u);

  fs_.ClearWriteBudget();
  EXPECT_GT(*fs_.FreeSpace(dir_), 0u);
  auto g = fs_.OpenForWrite(P("g"));
  ASSERT_TRUE(g.ok());
  EXPECT_TRUE((*g)->Append("fine now").ok());
}

TEST_F(FaultFsTest, ClosedWriteGateHoldsWritesUntilOpened) {
  auto f = fs_.OpenForWrite(P("f"));
  ASSERT_TRUE(f.ok());
  fs_.CloseWriteGate();
  std::atomic<bool> written{false};
  std::thread writer([&] {
    EXPECT_TRUE((*f)->Append("held").ok());
    written = true;
  });
  ASSERT_TRUE(fs_.WaitHeldWrites(1, std::chrono::seconds(10)));
  EXPECT_FALSE(written.load()) << "the write waits at the gate";
  fs_.OpenWriteGate();
  writer.join();
  EXPECT_TRUE(written.load());
  ASSERT_TRUE((*f)->Close().ok());
  EXPECT_EQ(Contents(P("f")), "held");
}

TEST_F(FaultFsTest, ClosedReadGateHoldsReadsUntilOpened) {
  {
    auto w = fs_.OpenForWrite(P("f"));
    ASSERT_TRUE(w.ok());
    ASSERT_TRUE((*w)->Append("held").ok());
    ASSERT_TRUE((*w)->Close().ok());
  }
  auto f = fs_.OpenForRead(P("f"));
  ASSERT_TRUE(f.ok());
  fs_.CloseReadGate();
  ASSERT_TRUE(fs_.OpenForWrite(P("g")).ok()) << "writes pass a closed read gate";
  std::atomic<bool> read{false};
  char buf[4] = {};
  std::thread reader([&] {
    EXPECT_EQ((*f)->ReadAt(0, 4, buf).value_or(0), 4u);
    read = true;
  });
  ASSERT_TRUE(fs_.WaitHeldReads(1, std::chrono::seconds(10)));
  EXPECT_FALSE(read.load()) << "the read waits at the gate";
  fs_.OpenReadGate();
  reader.join();
  EXPECT_TRUE(read.load());
  EXPECT_EQ(std::string(buf, 4), "held");
}

TEST_F(FaultFsTest, BudgetIsSharedAcrossThreads) {
  constexpr uint64_t kBudget = 25000;
  fs_.SetWriteBudget(kBudget);
  std::atomic<int> no_space{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      auto f = fs_.OpenForWrite(P("t" + std::to_string(t)));
      ASSERT_TRUE(f.ok());
      std::string chunk(100, char('a' + t));
      for (int i = 0; i < 100; ++i) {
        if ((*f)->Append(chunk).code() == Code::kNoSpace) ++no_space;
      }
      ASSERT_TRUE((*f)->Close().ok());
    });
  }
  for (auto& t : threads) t.join();
  uint64_t total = 0;
  auto entries = posix_.ListDir(dir_);  // kept in a local: the Result must outlive the loop
  ASSERT_TRUE(entries.ok());
  for (const auto& e : *entries) total += e.size;
  EXPECT_EQ(total, kBudget);
  EXPECT_EQ(fs_.Counters().bytes_written, kBudget);
  EXPECT_EQ(no_space.load(), 4 * 100 - 250);
}

TEST_F(FaultFsTest, InjectsErrorsOnlyOnMatchingPathsAndOps) {
  Write(P("bad.dat"), "bad", false, false);
  Write(P("good.dat"), "good", false, false);
  fs_.InjectErrors({.path_substring = "bad", .probability = 1.0, .seed = 7, .ops = kFaultRead | kFaultWrite});
  auto bad = fs_.OpenForRead(P("bad.dat"));  // opening is not in `ops`
  ASSERT_TRUE(bad.ok());
  char buf[8];
  auto r = (*bad)->ReadAt(0, 3, buf);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kIOError);
  EXPECT_NE(r.status().message().find("injected"), std::string::npos);
  EXPECT_NE(r.status().message().find(P("bad.dat")), std::string::npos);
  auto good = fs_.OpenForRead(P("good.dat"));
  ASSERT_TRUE(good.ok());
  EXPECT_EQ(*(*good)->ReadAt(0, 4, buf), 4u);

  auto w = fs_.OpenForWrite(P("bad.dat"), false);
  ASSERT_TRUE(w.ok());
  EXPECT_EQ((*w)->Append("x").code(), Code::kIOError);
  EXPECT_TRUE((*w)->Sync().ok());  // sync not selected
  EXPECT_EQ(fs_.Counters().injected_errors, 2u);

  fs_.InjectErrors({.path_substring = "", .probability = 1.0, .seed = 1, .ops = kFaultOpen | kFaultMetadata});
  EXPECT_EQ(fs_.OpenForRead(P("good.dat")).status().code(), Code::kIOError);
  EXPECT_EQ(fs_.Rename(P("good.dat"), P("g2")).code(), Code::kIOError);
  EXPECT_EQ(Contents(P("good.dat")), "good");
  fs_.ClearErrors();
  EXPECT_TRUE((*bad)->ReadAt(0, 3, buf).ok());
}

TEST_F(FaultFsTest, ProbabilisticErrorsAreSeededAndReproducible) {
  Write(P("p"), "x", false, false);
  auto run = [&](uint64_t seed) {
    fs_.InjectErrors({.path_substring = "p", .probability = 0.5, .seed = seed, .ops = kFaultRead});
    auto f = fs_.OpenForRead(P("p"));
    std::string pattern;
    char c;
    for (int i = 0; i < 200; ++i) pattern += (*f)->ReadAt(0, 1, &c).ok() ? '.' : 'E';
    return pattern;
  };
  std::string a = run(42), b = run(42), c = run(43);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  size_t errors = std::count(a.begin(), a.end(), 'E');
  EXPECT_GT(errors, 60u);
  EXPECT_LT(errors, 140u);
}

TEST_F(FaultFsTest, CrashKeepsSyncedDataAndDropsTheRest) {
  Write(P("durable"), "synced", /*sync_file=*/true, /*sync_dir=*/true);
  auto f = fs_.OpenForWrite(P("durable"), /*truncate=*/false);
  ASSERT_TRUE(f.ok());
  ASSERT_TRUE((*f)->Append(" plus unsynced tail").ok());
  ASSERT_TRUE((*f)->Close().ok());
  EXPECT_EQ(Contents(P("durable")), "synced plus unsynced tail");

  Write(P("never-synced"), "data", false, true);      // directory entry durable, bytes not
  Write(P("entry-not-synced"), "data", true, false);  // bytes durable, directory entry not
  Write(P("sub-missing"), "x", false, false);

  ASSERT_TRUE(fs_.SimulateCrash().ok());
  EXPECT_EQ(Contents(P("durable")), "synced");
  EXPECT_EQ(Contents(P("never-synced")), "");
  EXPECT_EQ(Contents(P("entry-not-synced")), "<missing>");
  EXPECT_EQ(Contents(P("sub-missing")), "<missing>");
}

TEST_F(FaultFsTest, CrashRestoresBytesOverwrittenInPlace) {
  Write(P("f"), "0123456789", true, true);
  auto f = fs_.OpenForWrite(P("f"), false);
  ASSERT_TRUE(f.ok());
  ASSERT_TRUE((*f)->WriteAt(2, "ab", 2).ok());
  ASSERT_TRUE((*f)->WriteAt(8, "XYZ", 3).ok());  // straddles the synced end
  ASSERT_TRUE((*f)->Close().ok());
  EXPECT_EQ(Contents(P("f")), "01ab4567XYZ");
  ASSERT_TRUE(fs_.SimulateCrash().ok());
  EXPECT_EQ(Contents(P("f")), "0123456789");
}

TEST_F(FaultFsTest, PreexistingFilesKeepTheirBytes) {
  ASSERT_TRUE(WriteFileAtomic(posix_, P("old"), "before").ok());  // not through the fault fs
  auto f = fs_.OpenForWrite(P("old"), false);
  ASSERT_TRUE(f.ok());
  ASSERT_TRUE((*f)->Append(" after").ok());
  ASSERT_TRUE((*f)->Close().ok());
  ASSERT_TRUE(fs_.SimulateCrash().ok());
  EXPECT_EQ(Contents(P("old")), "before");
}

TEST_F(FaultFsTest, CrashUndoesUnsyncedRenamesOnly) {
  Write(P("target"), "v1", true, true);
  Write(P("tmp"), "v2", true, true);
  ASSERT_TRUE(fs_.Rename(P("tmp"), P("target")).ok());
  EXPECT_EQ(Contents(P("target")), "v2");
  ASSERT_TRUE(fs_.SimulateCrash().ok());  // no SyncDir after the rename
  EXPECT_EQ(Contents(P("target")), "v1");
  EXPECT_EQ(Contents(P("tmp")), "v2");

  ASSERT_TRUE(fs_.Rename(P("tmp"), P("target")).ok());
  ASSERT_TRUE(fs_.SyncDir(dir_ + "/").ok());  // trailing slash still names the directory
  ASSERT_TRUE(fs_.SimulateCrash().ok());
  EXPECT_EQ(Contents(P("target")), "v2");
  EXPECT_EQ(Contents(P("tmp")), "<missing>");
}

TEST_F(FaultFsTest, RenameIntoOtherDirectoryNeedsThatDirectorySynced) {
  ASSERT_TRUE(fs_.CreateDirs(P("out")).ok());
  Write(P("a"), "moved", true, true);
  ASSERT_TRUE(fs_.Rename(P("a"), P("out/a")).ok());
  ASSERT_TRUE(fs_.SyncDir(dir_).ok());  // the source directory is not enough
  ASSERT_TRUE(fs_.SimulateCrash().ok());
  EXPECT_EQ(Contents(P("a")), "moved");
  EXPECT_EQ(Contents(P("out/a")), "<missing>");
}

TEST_F(FaultFsTest, HandlesFromBeforeTheCrashFail) {
  auto f = fs_.OpenForWrite(P("f"));
  ASSERT_TRUE(f.ok());
  ASSERT_TRUE(fs_.SimulateCrash().ok());
  EXPECT_EQ((*f)->Append("late").code(), Code::kIOError);
  EXPECT_EQ((*f)->Sync().code(), Code::kIOError);
}

TEST_F(FaultFsTest, MarkAllDurableKeepsEverything) {
  Write(P("f"), "kept", false, false);
  fs_.MarkAllDurable();
  ASSERT_TRUE(fs_.SimulateCrash().ok());
  EXPECT_EQ(Contents(P("f")), "kept");
}

TEST_F(FaultFsTest, CountsOperations) {
  Write(P("a"), "12345", true, true);
  auto r = fs_.OpenForRead(P("a"));
  ASSERT_TRUE(r.ok());
  char buf[8];
  ASSERT_TRUE((*r)->ReadAt(0, 8, buf).ok());
  ASSERT_TRUE(fs_.Rename(P("a"), P("b")).ok());
  ASSERT_TRUE(fs_.Remove(P("b")).ok());
  FaultCounters c = fs_.Counters();
  EXPECT_EQ(c.opens, 2u);
  EXPECT_EQ(c.writes, 1u);
  EXPECT_EQ(c.bytes_written, 5u);
  EXPECT_EQ(c.reads, 1u);
  EXPECT_EQ(c.bytes_read, 5u);
  EXPECT_EQ(c.syncs, 1u);
  EXPECT_EQ(c.dir_syncs, 1u);
  EXPECT_EQ(c.renames, 1u);
  EXPECT_EQ(c.removes, 1u);
  EXPECT_EQ(c.injected_errors, 0u);
}

TEST_F(FaultFsTest, PassesThroughErrorsAndLocks) {
  EXPECT_EQ(fs_.OpenForRead(P("missing")).status().code(), Code::kNotFound);
  EXPECT_EQ(fs_.Stat(P("missing")).status().code(), Code::kNotFound);
  auto lock = fs_.LockFile(P("LOCK"));
  ASSERT_TRUE(lock.ok());
  EXPECT_EQ(fs_.LockFile(P("LOCK")).status().code(), Code::kUnavailable);
  lock->reset();
  auto blocking = fs_.LockFileBlocking(P("LOCK"), {});
  EXPECT_TRUE(blocking.ok()) << blocking.status();
}

TEST_F(FaultFsTest, LockFileBlockingFailsLikeAnOpen) {
  fs_.InjectErrors(FaultSpec{"item.lock", 1.0, 1, kFaultOpen});
  auto lock = fs_.LockFileBlocking(P("item.lock"), {});
  ASSERT_FALSE(lock.ok());
  EXPECT_EQ(lock.status().code(), Code::kIOError);
  EXPECT_EQ(fs_.Counters().injected_errors, 1u);
  fs_.ClearErrors();
  EXPECT_TRUE(fs_.LockFileBlocking(P("item.lock"), {}).ok());
}

}  // namespace
}  // namespace strata::io

#include "io/file_system.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/magic.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "io/durable.h"
#include "io/uring_read.h"

namespace strata::io {
namespace {

class PosixFsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = MakeTempDir("strata-io-test-");
    ASSERT_TRUE(dir.ok()) << dir.status();
    dir_ = *dir;
  }
  void TearDown() override { EXPECT_TRUE(RemoveAll(fs_, dir_).ok()); }
  std::string P(std::string_view name) const { return JoinPath(dir_, name); }

  std::string ReadAll(const std::string& path) {
    auto s = ReadFileToString(fs_, path, 1 << 20);
    EXPECT_TRUE(s.ok()) << s.status();
    return s.value_or("");
  }
  void Write(const std::string& path, std::string_view data) {
    auto f = fs_.OpenForWrite(path);
    ASSERT_TRUE(f.ok()) << f.status();
    ASSERT_TRUE((*f)->Append(data).ok());
    ASSERT_TRUE((*f)->Close().ok());
  }

  PosixFileSystem fs_;
  std::string dir_;
};

TEST(PathTest, JoinParentBase) {
  EXPECT_EQ(JoinPath("a", "b"), "a/b");
  EXPECT_EQ(JoinPath("a/", "b"), "a/b");
  EXPECT_EQ(JoinPath("", "b"), "b");
  EXPECT_EQ(ParentDir("/x/y/z"), "/x/y");
  EXPECT_EQ(ParentDir("/x/y/"), "/x");
  EXPECT_EQ(ParentDir("/z"), "/");
  EXPECT_EQ(ParentDir("z"), ".");
  EXPECT_EQ(BaseName("/x/y/z"), "z");
  EXPECT_EQ(BaseName("z"), "z");
  EXPECT_EQ(BaseName("/x/y/"), "y");
}

TEST_F(PosixFsTest, WriteAppendWriteAtAndRead) {
  auto w = fs_.OpenForWrite(P("f"));
  ASSERT_TRUE(w.ok()) << w.status();
  WritableFile& f = **w;
  ASSERT_TRUE(f.Append("hello ").ok());
  ASSERT_TRUE(f.Append(Buffer::Copy("world")).ok());
  EXPECT_EQ(f.Size(), 11u);
  ASSERT_TRUE(f.WriteAt(0, "J", 1).ok());
  ASSERT_TRUE(f.WriteAt(20, Buffer::Copy("!")).ok());  // leaves a hole of zeros
  EXPECT_EQ(f.Size(), 21u);
  ASSERT_TRUE(f.Append("?").ok());  // appends after the furthest write
  ASSERT_TRUE(f.Sync().ok());
  ASSERT_TRUE(f.Close().ok());
  EXPECT_TRUE(f.Close().ok());  // second close is harmless
  EXPECT_EQ(f.Append("x").code(), Code::kInvalidArgument);

  auto r = fs_.OpenForRead(P("f"));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*(*r)->Size(), 22u);
  EXPECT_EQ((*r)->path(), P("f"));
  char buf[64];
  auto n = (*r)->ReadAt(0, 11, buf);
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(std::string(buf, *n), "Jello world");
  n = (*r)->ReadAt(18, 10, buf);  // short only at EOF
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(std::string(buf, *n), std::string("\0\0!?", 4));
  n = (*r)->ReadAt(1000, 10, buf);
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 0u);
  auto b = (*r)->Read(6, 5);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->view(), "world");
}

TEST_F(PosixFsTest, OpenWithoutTruncateAppendsAfterExistingBytes) {
  Write(P("f"), "abc");
  auto w = fs_.OpenForWrite(P("f"), /*truncate=*/false);
  ASSERT_TRUE(w.ok());
  EXPECT_EQ((*w)->Size(), 3u);
  ASSERT_TRUE((*w)->Append("def").ok());
  ASSERT_TRUE((*w)->Close().ok());
  EXPECT_EQ(ReadAll(P("f")), "abcdef");
  Write(P("f"), "x");  // truncating open
  EXPECT_EQ(ReadAll(P("f")), "x");
}

TEST_F(PosixFsTest, ConcurrentReadsAtDifferentOffsets) {
  std::string data(1 << 16, '\0');
  for (size_t i = 0; i < data.size(); ++i) data[i] = char(i * 31);
  Write(P("big"), data);
  auto r = fs_.OpenForRead(P("big"));
  ASSERT_TRUE(r.ok());
  std::vector<std::thread> threads;
  std::atomic<int> mismatches{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      char buf[1000];
      for (size_t off = t * 100; off + sizeof(buf) <= data.size(); off += 4000) {
        auto n = (*r)->ReadAt(off, sizeof(buf), buf);
        if (!n.ok() || *n != sizeof(buf) || std::memcmp(buf, data.data() + off, sizeof(buf)) != 0) ++mismatches;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(mismatches.load(), 0);
}

TEST_F(PosixFsTest, RealPathAndOpenDirectory) {
  ASSERT_TRUE(fs_.CreateDirs(P("d")).ok());
  ASSERT_EQ(::symlink(P("d").c_str(), P("link").c_str()), 0);
  auto real = fs_.RealPath(P("link/../link"));
  ASSERT_TRUE(real.ok()) << real.status();
  auto expected = fs_.RealPath(P("d"));
  ASSERT_TRUE(expected.ok()) << expected.status();
  EXPECT_EQ(*real, *expected);
  EXPECT_EQ(fs_.RealPath(P("missing")).status().code(), Code::kNotFound);

  auto fd = fs_.OpenDirectory(P("link"));
  ASSERT_TRUE(fd.ok()) << fd.status();
  Write(P("d/inner"), "x");
  struct stat st {};
  EXPECT_EQ(::fstatat(*fd, "inner", &st, 0), 0);  // the descriptor walks the directory
  EXPECT_EQ(st.st_size, 1);
  ::close(*fd);
  auto file = fs_.OpenDirectory(P("d/inner"));
  ASSERT_FALSE(file.ok());
  EXPECT_EQ(file.status().cause(), std::strerror(ENOTDIR));
  EXPECT_EQ(fs_.OpenDirectory(P("missing")).status().code(), Code::kNotFound);
}

TEST_F(PosixFsTest, ErrorCodesNameThePath) {
  auto r = fs_.OpenForRead(P("missing"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kNotFound);
  EXPECT_NE(r.status().message().find(P("missing")), std::string::npos) << r.status();
  EXPECT_FALSE(r.status().cause().empty());

  EXPECT_EQ(fs_.OpenForWrite(P("no/such/dir/f")).status().code(), Code::kNotFound);
  EXPECT_EQ(fs_.Stat(P("missing")).status().code(), Code::kNotFound);
  EXPECT_EQ(fs_.Remove(P("missing")).code(), Code::kNotFound);
  EXPECT_EQ(fs_.Rename(P("missing"), P("x")).code(), Code::kNotFound);
  EXPECT_EQ(fs_.ListDir(P("missing")).status().code(), Code::kNotFound);
  EXPECT_EQ(fs_.Truncate(P("missing"), 0).code(), Code::kNotFound);
  EXPECT_EQ(fs_.SyncDir(P("missing")).code(), Code::kNotFound);

  Write(P("f"), "1");
  auto again = fs_.CreateExclusive(P("f"));
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.status().code(), Code::kAlreadyExists);
  EXPECT_NE(again.status().message().find(P("f")), std::string::npos);
  EXPECT_EQ(fs_.CreateDirs(P("f/sub")).code(), Code::kAlreadyExists);  // a file is in the way
  EXPECT_EQ(fs_.CreateDirs(P("f")).code(), Code::kAlreadyExists);
  EXPECT_EQ(fs_.OpenForRead(P("f/x")).status().code(), Code::kNotFound);  // ENOTDIR

  ASSERT_TRUE(fs_.CreateDirs(P("d")).ok());
  Write(P("d/inner"), "");
  Status not_empty = fs_.RemoveDir(P("d"));
  EXPECT_FALSE(not_empty.ok());
  EXPECT_NE(not_empty.message().find(P("d")), std::string::npos);
}

TEST_F(PosixFsTest, CreateExclusiveCreatesNewFile) {
  auto w = fs_.CreateExclusive(P("new"));
  ASSERT_TRUE(w.ok()) << w.status();
  ASSERT_TRUE((*w)->Append("n").ok());
  ASSERT_TRUE((*w)->Close().ok());
  EXPECT_EQ(ReadAll(P("new")), "n");
}

TEST_F(PosixFsTest, DirectoriesStatListRemove) {
  ASSERT_TRUE(fs_.CreateDirs(P("a/b/c")).ok());
  ASSERT_TRUE(fs_.CreateDirs(P("a/b/c")).ok());  // idempotent
  ASSERT_TRUE(fs_.CreateDirs(P("a/b/c/")).ok());
  Write(P("a/z.txt"), "12345");
  Write(P("a/m.txt"), "");

  auto st = fs_.Stat(P("a/z.txt"));
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->size, 5u);
  EXPECT_FALSE(st->is_dir);
  auto now = std::chrono::system_clock::now();
  EXPECT_LT(std::chrono::abs(now - st->mtime), std::chrono::minutes(5));
  EXPECT_TRUE(fs_.Stat(P("a/b"))->is_dir);

  auto list = fs_.ListDir(P("a"));
  ASSERT_TRUE(list.ok());
  ASSERT_EQ(list->size(), 3u);
  EXPECT_EQ((*list)[0].name, "b");
  EXPECT_TRUE((*list)[0].is_dir);
  EXPECT_EQ((*list)[1].name, "m.txt");
  EXPECT_EQ((*list)[2].name, "z.txt");
  EXPECT_EQ((*list)[2].size, 5u);
  EXPECT_FALSE((*list)[2].is_dir);

  EXPECT_TRUE(*fs_.Exists(P("a/b/c")));
  EXPECT_FALSE(*fs_.Exists(P("a/nope")));
  EXPECT_FALSE(*fs_.Exists(P("a/z.txt/under-a-file")));
  ASSERT_TRUE(fs_.RemoveDir(P("a/b/c")).ok());
  EXPECT_FALSE(*fs_.Exists(P("a/b/c")));
  ASSERT_TRUE(fs_.Remove(P("a/m.txt")).ok());
  EXPECT_EQ(fs_.ListDir(P("a"))->size(), 2u);
  ASSERT_TRUE(fs_.SyncDir(P("a")).ok());
  ASSERT_TRUE(fs_.SyncDir(P("a/")).ok());
}

TEST_F(PosixFsTest, ListingSurvivesEntriesRemovedWhileListing) {
  // A writer keeps creating and removing the directory's only file, so some
  // listings read its name and then find it gone: that entry is skipped and
  // the listing still succeeds (it once returned ENOENT for the whole directory).
  ASSERT_TRUE(fs_.CreateDirs(P("churn")).ok());
  std::atomic<bool> stop{false};
  std::thread churn([&] {
    for (int i = 0; !stop; ++i) {
      std::string f = P("churn/f" + std::to_string(i % 4));
      int fd = ::open(f.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
      if (fd >= 0) ::close(fd);
      ::unlink(f.c_str());
    }
  });
  int failures = 0;
  std::string first_error;
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  for (int i = 0; i < 20000 && std::chrono::steady_clock::now() < until; ++i) {
    auto list = fs_.ListDir(P("churn"));
    if (!list.ok() && failures++ == 0) first_error = list.status().ToString();
  }
  stop = true;
  churn.join();
  EXPECT_EQ(failures, 0) << first_error;
}

TEST_F(PosixFsTest, RenameReplacesAndTruncateResizes) {
  Write(P("a"), "new");
  Write(P("b"), "old contents");
  ASSERT_TRUE(fs_.Rename(P("a"), P("b")).ok());
  EXPECT_FALSE(*fs_.Exists(P("a")));
  EXPECT_EQ(ReadAll(P("b")), "new");
  ASSERT_TRUE(fs_.Truncate(P("b"), 1).ok());
  EXPECT_EQ(ReadAll(P("b")), "n");
  ASSERT_TRUE(fs_.Truncate(P("b"), 4).ok());
  EXPECT_EQ(ReadAll(P("b")), std::string("n\0\0\0", 4));
}

TEST_F(PosixFsTest, FreeSpaceIsPlausible) {
  auto free = fs_.FreeSpace(dir_);
  ASSERT_TRUE(free.ok()) << free.status();
  EXPECT_GT(*free, 0u);
  auto space = fs_.Space(dir_);
  ASSERT_TRUE(space.ok()) << space.status();
  EXPECT_GE(space->total, space->available);
  EXPECT_GT(space->available, 0u);
  EXPECT_EQ(fs_.FreeSpace(P("missing")).status().code(), Code::kNotFound);
}

TEST_F(PosixFsTest, DefaultFileSystemIsPosixAndShared) {
  EXPECT_EQ(&DefaultFileSystem(), &DefaultFileSystem());
  EXPECT_NE(dynamic_cast<PosixFileSystem*>(&DefaultFileSystem()), nullptr);
}

TEST_F(PosixFsTest, DirectReadNeedsAlignment) {
  std::string data(3 * 4096, 'd');
  data[4096] = 'X';
  Write(P("direct"), data);
  auto r = fs_.OpenForReadDirect(P("direct"));
  if (!r.ok() && r.status().code() == Code::kNotSupported) GTEST_SKIP() << r.status();
  ASSERT_TRUE(r.ok()) << r.status();
  MutableBuffer buf(8192);
  auto n = (*r)->ReadAt(4096, 8192, buf.data());
  ASSERT_TRUE(n.ok()) << n.status();
  EXPECT_EQ(*n, 8192u);
  EXPECT_EQ(buf.data()[0], 'X');
  EXPECT_EQ((*r)->ReadAt(1, 4096, buf.data()).status().code(), Code::kInvalidArgument);
  EXPECT_EQ((*r)->ReadAt(0, 100, buf.data()).status().code(), Code::kInvalidArgument);
  EXPECT_EQ((*r)->ReadAt(0, 4096, buf.data() + 1).status().code(), Code::kInvalidArgument);
}

// Parts in flight (io_uring) read exactly what one read does, buffered and
// O_DIRECT, whole or ending early at end of file; `landed` grows in order.
TEST_F(PosixFsTest, ReadAtPartsReadsWhatReadAtReads) {
  std::string data((4 << 20) + 4096, '\0');
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>(i * 7 + (i >> 12));
  Write(P("block"), data);
  Write(P("short"), data.substr(0, (2 << 20) + 100));
  for (bool direct : {false, true}) {
    for (const char* name : {"block", "short"}) {
      SCOPED_TRACE(std::string(name) + (direct ? " O_DIRECT" : " buffered"));
      auto file = direct ? fs_.OpenForReadDirect(P(name)) : fs_.OpenForRead(P(name));
      if (!file.ok() && file.status().code() == Code::kNotSupported) continue;
      ASSERT_TRUE(file.ok()) << file.status();
      std::shared_ptr<uint8_t> buf(static_cast<uint8_t*>(std::aligned_alloc(4096, data.size())), std::free);
      std::vector<size_t> landed;
      auto n = (*file)->ReadAtParts(0, data.size(), buf.get(), 1 << 20, [&](size_t b) { landed.push_back(b); });
      const size_t want = std::string(name) == "block" ? data.size() : (2 << 20) + 100;
      ASSERT_TRUE(n.ok()) << n.status();
      ASSERT_EQ(*n, want);
      EXPECT_EQ(std::memcmp(buf.get(), data.data(), want), 0);
      ASSERT_FALSE(landed.empty());
      EXPECT_TRUE(std::is_sorted(landed.begin(), landed.end()));
      EXPECT_EQ(landed.back(), want);
    }
  }
  EXPECT_TRUE(UringAvailable()) << "this kernel has io_uring: the parts should go through it";
}

// Where io_uring is off, the parts are read the plain way: the same bytes.
TEST_F(PosixFsTest, ReadAtPartsWithoutUringReadsTheSame) {
  std::string data((2 << 20) + 4096, '\0');
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>(i * 13 + (i >> 10));
  Write(P("block"), data);
  ScopedUringOff off;
  EXPECT_FALSE(UringAvailable());
  auto file = fs_.OpenForReadDirect(P("block"));
  if (!file.ok() && file.status().code() == Code::kNotSupported) GTEST_SKIP() << file.status();
  ASSERT_TRUE(file.ok()) << file.status();
  std::shared_ptr<uint8_t> buf(static_cast<uint8_t*>(std::aligned_alloc(4096, data.size())), std::free);
  size_t landed = 0;
  auto n = (*file)->ReadAtParts(0, data.size(), buf.get(), 1 << 20, [&](size_t b) { landed = b; });
  ASSERT_TRUE(n.ok()) << n.status();
  EXPECT_EQ(*n, data.size());
  EXPECT_EQ(landed, data.size());
  EXPECT_EQ(std::memcmp(buf.get(), data.data(), data.size()), 0);
}

// Pages of `path` in the page cache, of its first `pages`.
size_t ResidentPages(const std::string& path, size_t pages) {
  int fd = ::open(path.c_str(), O_RDONLY);
  void* map = ::mmap(nullptr, pages * 4096, PROT_READ, MAP_SHARED, fd, 0);
  std::vector<unsigned char> vec(pages);
  size_t resident = 0;
  if (map != MAP_FAILED && ::mincore(map, pages * 4096, vec.data()) == 0) {
    for (unsigned char v : vec) resident += v & 1;
  }
  if (map != MAP_FAILED) ::munmap(map, pages * 4096);
  ::close(fd);
  return resident;
}

TEST_F(PosixFsTest, StreamingWriteBypassesThePageCacheAndKeepsEveryByte) {
  constexpr size_t kBlocks = 64, kTail = 100, kMore = 5000;
  void* mem = nullptr;
  ASSERT_EQ(::posix_memalign(&mem, 4096, kBlocks * 4096 + kTail + 1), 0);
  std::unique_ptr<uint8_t, decltype(&std::free)> buf(static_cast<uint8_t*>(mem), &std::free);
  for (size_t i = 0; i < kBlocks * 4096 + kTail + 1; ++i) buf.get()[i] = static_cast<uint8_t>(i * 31 + i / 4096);
  std::string more(kMore, 'm');
  {
    auto f = fs_.OpenForStreamingWrite(P("stream"));
    ASSERT_TRUE(f.ok()) << f.status();
    // Whole blocks + a tail in one write, then a write after the tail (buffered).
    ASSERT_TRUE((*f)->Append(buf.get(), kBlocks * 4096 + kTail).ok());
    ASSERT_TRUE((*f)->Append(more).ok());
    EXPECT_EQ((*f)->Size(), kBlocks * 4096 + kTail + kMore);
    ASSERT_TRUE((*f)->Sync().ok());
    ASSERT_TRUE((*f)->Close().ok());
  }
  // Where O_DIRECT works the aligned blocks never entered the page cache; tmpfs
  // (Linux 6.6+) accepts O_DIRECT but is the page cache, so it proves nothing there.
  struct statfs sfs {};
  const bool tmpfs = ::statfs(P("").c_str(), &sfs) == 0 && sfs.f_type == TMPFS_MAGIC;
  const int probe = ::open(P("probe").c_str(), O_WRONLY | O_CREAT | O_DIRECT, 0644);
  if (probe >= 0) ::close(probe);
  if (probe >= 0 && !tmpfs) {
    EXPECT_EQ(ResidentPages(P("stream"), kBlocks), 0u);
    EXPECT_EQ(PosixFileSystem::ResidentBytes(P("stream"), 0, kBlocks * 4096).value_or(1), 0u);
  }
  std::string expected(reinterpret_cast<const char*>(buf.get()), kBlocks * 4096 + kTail);
  EXPECT_EQ(ReadAll(P("stream")), expected + more);
  // A buffered read leaves the pages it read in the page cache (an unaligned range counts its pages whole).
  EXPECT_EQ(PosixFileSystem::ResidentBytes(P("stream"), 100, kBlocks * 4096).value_or(0), kBlocks * 4096);
  EXPECT_EQ(ResidentPages(P("stream"), kBlocks), kBlocks);
  EXPECT_EQ(PosixFileSystem::ResidentBytes(P("no such file"), 0, 1).status().code(), Code::kNotFound);

  // Memory that is not aligned: buffered throughout, bytes the same.
  auto f = fs_.OpenForStreamingWrite(P("unaligned"));
  ASSERT_TRUE(f.ok()) << f.status();
  ASSERT_TRUE((*f)->Append(buf.get() + 1, kBlocks * 4096).ok());
  ASSERT_TRUE((*f)->Close().ok());
  EXPECT_EQ(ReadAll(P("unaligned")), std::string(reinterpret_cast<const char*>(buf.get()) + 1, kBlocks * 4096));
  // It truncates, as OpenForWrite does.
  Write(P("unaligned"), "x");
  ASSERT_TRUE(fs_.OpenForStreamingWrite(P("unaligned")).ok());
  EXPECT_EQ(ReadAll(P("unaligned")), "");
}

TEST_F(PosixFsTest, LockFileExcludesSecondOpenInSameProcess) {
  auto first = fs_.LockFile(P("LOCK"));
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ((*first)->path(), P("LOCK"));
  auto second = fs_.LockFile(P("LOCK"));
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), Code::kUnavailable);
  EXPECT_NE(second.status().message().find("held by process " + std::to_string(getpid())), std::string::npos)
      << second.status();
  EXPECT_NE(second.status().message().find(P("LOCK")), std::string::npos);
  first->reset();  // releasing lets the next locker in
  auto third = fs_.LockFile(P("LOCK"));
  EXPECT_TRUE(third.ok()) << third.status();
}

// Exit codes of the child in the fork test.
constexpr int kChildLocked = 0, kChildRefusedWithPid = 3, kChildOtherError = 4;

int ChildTryLock(const std::string& path, pid_t parent) {
  auto lock = DefaultFileSystem().LockFile(path);
  if (lock.ok()) return kChildLocked;
  bool names_parent = lock.status().message().find("held by process " + std::to_string(parent)) != std::string::npos;
  return lock.status().code() == Code::kUnavailable && names_parent ? kChildRefusedWithPid : kChildOtherError;
}

int RunChild(const std::string& path) {
  pid_t parent = getpid();
  pid_t child = fork();
  if (child == 0) _exit(ChildTryLock(path, parent));
  int status = 0;
  if (child < 0 || waitpid(child, &status, 0) != child || !WIFEXITED(status)) return -1;
  return WEXITSTATUS(status);
}

TEST_F(PosixFsTest, LockFileExcludesForkedChild) {
  {
    auto lock = fs_.LockFile(P("LOCK"));
    ASSERT_TRUE(lock.ok()) << lock.status();
    EXPECT_EQ(RunChild(P("LOCK")), kChildRefusedWithPid);
  }
  EXPECT_EQ(RunChild(P("LOCK")), kChildLocked);
}

TEST_F(PosixFsTest, LockFileBlockingWaitsForTheHolder) {
  auto first = fs_.LockFile(P("LOCK"));
  ASSERT_TRUE(first.ok()) << first.status();
  std::mutex mu;
  std::condition_variable cv;
  bool waiting = false;
  std::atomic<bool> acquired{false};
  LockWaitOptions options;
  options.on_wait = [&] {
    std::lock_guard lock(mu);
    waiting = true;
    cv.notify_all();
  };
  std::thread waiter([&] {
    auto second = fs_.LockFileBlocking(P("LOCK"), options);
    EXPECT_TRUE(second.ok()) << second.status();
    acquired = true;
  });
  {
    std::unique_lock lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(30), [&] { return waiting; }));
  }
  EXPECT_FALSE(acquired.load());  // still blocked: the first lock is held
  first->reset();
  waiter.join();
  EXPECT_TRUE(acquired.load());
  // Not contended: no wait reported, and the lock file stays.
  waiting = false;
  auto third = fs_.LockFileBlocking(P("LOCK"), options);
  ASSERT_TRUE(third.ok()) << third.status();
  EXPECT_FALSE(waiting);
  third->reset();
  EXPECT_TRUE(*fs_.Exists(P("LOCK")));
}

TEST_F(PosixFsTest, LockFileBlockingRemoveOnUnlockHandsOverToTheNewFile) {
  LockWaitOptions options;
  options.remove_on_unlock = true;
  auto first = fs_.LockFileBlocking(P("item.lock"), options);
  ASSERT_TRUE(first.ok()) << first.status();
  std::atomic<bool> acquired{false};
  std::mutex mu;
  std::condition_variable cv;
  bool waiting = false;
  LockWaitOptions waiter_options = options;
  waiter_options.on_wait = [&] {
    std::lock_guard lock(mu);
    waiting = true;
    cv.notify_all();
  };
  std::thread waiter([&] {
    auto second = fs_.LockFileBlocking(P("item.lock"), waiter_options);
    EXPECT_TRUE(second.ok()) << second.status();
    acquired = true;
    // It holds the file the name has now (the first holder removed its own), so a third locker must wait.
    EXPECT_TRUE(*fs_.Exists(P("item.lock")));
    EXPECT_EQ(fs_.LockFile(P("item.lock")).status().code(), Code::kUnavailable);
  });
  {
    std::unique_lock lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(30), [&] { return waiting; }));
  }
  EXPECT_FALSE(acquired.load());
  first->reset();
  waiter.join();
  EXPECT_TRUE(acquired.load());
  EXPECT_FALSE(*fs_.Exists(P("item.lock")));  // the second holder removed it too
}

TEST_F(PosixFsTest, OpenFileStatIsTheOpenFiles) {
  Write(P("a"), "12345");
  auto f = fs_.OpenForRead(P("a"));
  ASSERT_TRUE(f.ok());
  Write(P("b"), "xy");
  ASSERT_TRUE(fs_.Rename(P("b"), P("a")).ok());  // the name now points elsewhere
  auto st = (*f)->Stat();
  ASSERT_TRUE(st.ok()) << st.status();
  EXPECT_EQ(st->size, 5u);
  EXPECT_FALSE(st->is_dir);
  EXPECT_NE(st->inode, 0u);
  EXPECT_NE(st->inode, fs_.Stat(P("a"))->inode);
}

TEST_F(PosixFsTest, LockFileInMissingDirectory) {
  EXPECT_EQ(fs_.LockFile(P("no/LOCK")).status().code(), Code::kNotFound);
}

}  // namespace
}  // namespace strata::io

#include "io/durable.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <thread>

#include "io/fault_file_system.h"

namespace strata::io {
namespace {

class DurableTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = MakeTempDir("strata-durable-test-");
    ASSERT_TRUE(dir.ok()) << dir.status();
    dir_ = *dir;
  }
  void TearDown() override { EXPECT_TRUE(RemoveAll(posix_, dir_).ok()); }
  std::string P(std::string_view name) const { return JoinPath(dir_, name); }
  std::vector<std::string> Names() {
    std::vector<std::string> out;
    auto entries = posix_.ListDir(dir_);  // kept in a local: the Result must outlive the loop
    EXPECT_TRUE(entries.ok()) << entries.status();
    if (entries.ok()) {
      for (const auto& e : *entries) out.push_back(e.name);
    }
    return out;
  }
  std::string Read(const std::string& path) {
    auto s = ReadFileToString(posix_, path, 1 << 20);
    EXPECT_TRUE(s.ok()) << s.status();
    return s.value_or("<error>");
  }

  PosixFileSystem posix_;
  std::string dir_;
};

TEST_F(DurableTest, WriteFileAtomicCreatesAndReplacesLeavingNoTemp) {
  ASSERT_TRUE(WriteFileAtomic(posix_, P("manifest"), "first").ok());
  EXPECT_EQ(Read(P("manifest")), "first");
  ASSERT_TRUE(WriteFileAtomic(posix_, P("manifest"), Buffer::Copy("second, longer")).ok());
  EXPECT_EQ(Read(P("manifest")), "second, longer");
  ASSERT_TRUE(WriteFileAtomic(posix_, P("manifest"), "").ok());
  EXPECT_EQ(Read(P("manifest")), "");
  EXPECT_EQ(Names(), std::vector<std::string>{"manifest"});
}

// A bare file name (no directory part) is written in the working directory; std::filesystem's
// create_directories("") threw there and ended the benchmarks that wrote `--out cache.json`.
TEST_F(DurableTest, WriteFileAtomicCreatingDirsTakesBareNamesNestedDirsAndReportsBadParents) {
  char previous[4096];
  ASSERT_NE(::getcwd(previous, sizeof previous), nullptr);
  ASSERT_EQ(::chdir(dir_.c_str()), 0);
  Status bare = WriteFileAtomicCreatingDirs(posix_, "bare.json", "{}");
  Status nested = WriteFileAtomicCreatingDirs(posix_, "out/deeper/result.json", "[1]");
  Status under_a_file = WriteFileAtomicCreatingDirs(posix_, "bare.json/x.json", "no");
  Status empty = WriteFileAtomicCreatingDirs(posix_, "", "no");
  ASSERT_EQ(::chdir(previous), 0);
  EXPECT_TRUE(bare.ok()) << bare;
  EXPECT_EQ(Read(P("bare.json")), "{}");
  EXPECT_TRUE(nested.ok()) << nested;
  EXPECT_EQ(Read(P("out/deeper/result.json")), "[1]");
  EXPECT_FALSE(under_a_file.ok());
  EXPECT_NE(under_a_file.message().find("bare.json"), std::string::npos) << under_a_file;
  EXPECT_EQ(Read(P("bare.json")), "{}");  // the file in the way is untouched
  EXPECT_EQ(empty.code(), Code::kInvalidArgument) << empty;
}

TEST_F(DurableTest, WriteFileAtomicJoinsPartsInOrder) {
  ASSERT_TRUE(
      WriteFileAtomic(posix_, P("joined"), std::vector<Buffer>{Buffer::Copy("head|"), Buffer(), Buffer::Copy("body")})
          .ok());
  EXPECT_EQ(Read(P("joined")), "head|body");
  FaultFileSystem fs(posix_);
  fs.SetWriteBudget(7);  // the second part does not fit: nothing of the new file appears
  Status s = WriteFileAtomic(fs, P("joined"), std::vector<Buffer>{Buffer::Copy("NEWHEAD|"), Buffer::Copy("x")});
  EXPECT_EQ(s.code(), Code::kNoSpace) << s;
  EXPECT_EQ(Read(P("joined")), "head|body");
  EXPECT_EQ(Names(), std::vector<std::string>{"joined"});
}

// Aligned parts (a padded header block, whole blocks of a body) go around the
// page cache, the unaligned tail after them buffered: the file is exact, and
// as durable as WriteFileAtomic's (synced, renamed, directory synced).
TEST_F(DurableTest, WriteFileAtomicStreamingWritesAlignedPartsThenTheTail) {
  constexpr size_t kA = PosixFileSystem::kDirectAlignment;
  auto aligned = [](size_t n, char fill) {
    std::shared_ptr<uint8_t> p(static_cast<uint8_t*>(std::aligned_alloc(kA, (n + kA - 1) / kA * kA)), std::free);
    std::memset(p.get(), fill, n);
    uint8_t* data = p.get();
    return Buffer::Wrap(std::move(p), data, n);
  };
  const std::vector<Buffer> parts = {aligned(kA, 'h'), aligned(3 * kA + 17, 'b'), Buffer::Copy("tail")};
  const std::string want = std::string(kA, 'h') + std::string(3 * kA + 17, 'b') + "tail";
  ASSERT_TRUE(WriteFileAtomicStreaming(posix_, P("shard"), parts).ok());
  EXPECT_EQ(Read(P("shard")), want);
  EXPECT_EQ(Names(), std::vector<std::string>{"shard"});
  FaultFileSystem fs(posix_);
  ASSERT_TRUE(WriteFileAtomicStreaming(fs, P("again"), parts).ok());
  EXPECT_EQ(fs.Counters().syncs, 1u);
  EXPECT_EQ(fs.Counters().dir_syncs, 1u);
  ASSERT_TRUE(fs.SimulateCrash().ok());
  EXPECT_EQ(Read(P("again")), want);
}

TEST_F(DurableTest, WriteFileAtomicSyncsFileThenDirectory) {
  FaultFileSystem fs(posix_);
  ASSERT_TRUE(WriteFileAtomic(fs, P("m"), "x").ok());
  FaultCounters c = fs.Counters();
  EXPECT_EQ(c.syncs, 1u);
  EXPECT_EQ(c.renames, 1u);
  EXPECT_EQ(c.dir_syncs, 1u);
}

TEST_F(DurableTest, FailedWriteMidwayLeavesOldContent) {
  ASSERT_TRUE(WriteFileAtomic(posix_, P("m"), "old content").ok());
  FaultFileSystem fs(posix_);
  fs.SetWriteBudget(5);  // the new content is half written when the disk fills
  Status s = WriteFileAtomic(fs, P("m"), "new content that does not fit");
  EXPECT_EQ(s.code(), Code::kNoSpace) << s;
  EXPECT_NE(s.message().find(P("m")), std::string::npos) << s;
  EXPECT_EQ(Read(P("m")), "old content");
  EXPECT_EQ(Names(), std::vector<std::string>{"m"});  // temp file cleaned up
  EXPECT_EQ(fs.Counters().bytes_written, 5u);

  fs.ClearWriteBudget();
  fs.InjectErrors({.path_substring = ".tmp.", .probability = 1.0, .seed = 1, .ops = kFaultSync});
  s = WriteFileAtomic(fs, P("m"), "new");
  EXPECT_EQ(s.code(), Code::kIOError) << s;
  EXPECT_EQ(Read(P("m")), "old content");
  EXPECT_EQ(Names(), std::vector<std::string>{"m"});
}

TEST_F(DurableTest, WriteFileAtomicSurvivesCrashWhilePlainWriteDoesNot) {
  FaultFileSystem fs(posix_);
  ASSERT_TRUE(WriteFileAtomic(fs, P("atomic"), "committed").ok());
  {
    auto f = fs.OpenForWrite(P("plain"));
    ASSERT_TRUE(f.ok());
    ASSERT_TRUE((*f)->Append("lost").ok());
    ASSERT_TRUE((*f)->Close().ok());
  }
  ASSERT_TRUE(fs.SimulateCrash().ok());
  EXPECT_EQ(Read(P("atomic")), "committed");
  EXPECT_EQ(Names(), std::vector<std::string>{"atomic"});
}

TEST_F(DurableTest, CrashBeforeDirectorySyncKeepsOldVersion) {
  ASSERT_TRUE(WriteFileAtomic(posix_, P("m"), "v1").ok());
  FaultFileSystem fs(posix_);
  fs.InjectErrors({.path_substring = dir_, .probability = 1.0, .seed = 1, .ops = kFaultSync});
  // Fails at the file sync: nothing renamed.
  EXPECT_FALSE(WriteFileAtomic(fs, P("m"), "v2").ok());
  fs.ClearErrors();
  // Now do the steps by hand and crash after the rename, before the directory sync.
  {
    auto f = fs.CreateExclusive(P("m.tmp"));
    ASSERT_TRUE(f.ok());
    ASSERT_TRUE((*f)->Append("v2").ok());
    ASSERT_TRUE((*f)->Sync().ok());
    ASSERT_TRUE((*f)->Close().ok());
    ASSERT_TRUE(fs.Rename(P("m.tmp"), P("m")).ok());
  }
  ASSERT_TRUE(fs.SimulateCrash().ok());
  EXPECT_EQ(Read(P("m")), "v1");
  EXPECT_EQ(Names(), std::vector<std::string>{"m"});
}

TEST_F(DurableTest, AtomicFileWriterPublishesOutOfOrderConcurrentWritesOnlyAtCommit) {
  ASSERT_TRUE(WriteFileAtomic(posix_, P("f"), "old").ok());
  FaultFileSystem fs(posix_);
  auto w = AtomicFileWriter::Create(fs, P("f"));
  ASSERT_TRUE(w.ok()) << w.status();
  // 64 pieces of 4 KiB written by 4 threads, last piece first.
  constexpr int kPieces = 64, kPiece = 4096;
  std::string want(kPieces * kPiece, '\0');
  for (size_t i = 0; i < want.size(); ++i) want[i] = static_cast<char>('a' + (i * 7) % 26);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = kPieces - 1 - t; i >= 0; i -= 4) {
        EXPECT_TRUE((*w)->WriteAt(uint64_t(i) * kPiece, want.data() + i * kPiece, kPiece).ok());
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(Read(P("f")), "old");  // nothing visible under the real name yet
  EXPECT_EQ(Names().size(), 2u);   // "f" and the temp file
  ASSERT_TRUE((*w)->Commit().ok());
  EXPECT_EQ(Read(P("f")), want);
  EXPECT_EQ(Names(), std::vector<std::string>{"f"});
  FaultCounters c = fs.Counters();
  EXPECT_EQ(c.syncs, 1u);
  EXPECT_EQ(c.renames, 1u);
  EXPECT_EQ(c.dir_syncs, 1u);
  EXPECT_FALSE((*w)->WriteAt(0, "x", 1).ok());  // used after Commit: an error, not a write
  EXPECT_FALSE((*w)->Commit().ok());
}

TEST_F(DurableTest, AtomicFileWriterAbandonedOrFailedLeavesNoTrace) {
  ASSERT_TRUE(WriteFileAtomic(posix_, P("f"), "old").ok());
  {
    auto w = AtomicFileWriter::Create(posix_, P("f"));
    ASSERT_TRUE(w.ok());
    ASSERT_TRUE((*w)->WriteAt(0, "partial", 7).ok());
  }  // dropped without Commit, as after a failed download
  EXPECT_EQ(Read(P("f")), "old");
  EXPECT_EQ(Names(), std::vector<std::string>{"f"});

  FaultFileSystem fs(posix_);
  fs.SetWriteBudget(3);  // the disk fills
  {
    auto w = AtomicFileWriter::Create(fs, P("f"));
    ASSERT_TRUE(w.ok());
    Status s = (*w)->WriteAt(0, "new content", 11);
    EXPECT_EQ(s.code(), Code::kNoSpace) << s;
    EXPECT_NE(s.message().find(P("f")), std::string::npos) << s;
  }
  fs.ClearWriteBudget();
  fs.InjectErrors({.path_substring = ".tmp.", .probability = 1.0, .seed = 1, .ops = kFaultSync});
  {
    auto w = AtomicFileWriter::Create(fs, P("f"));
    ASSERT_TRUE(w.ok());
    ASSERT_TRUE((*w)->WriteAt(0, "new", 3).ok());
    EXPECT_EQ((*w)->Commit().code(), Code::kIOError);
  }
  EXPECT_EQ(Read(P("f")), "old");
  EXPECT_EQ(Names(), std::vector<std::string>{"f"});
}

TEST_F(DurableTest, ReadFileToStringEnforcesLimit) {
  ASSERT_TRUE(WriteFileAtomic(posix_, P("ten"), "0123456789").ok());
  auto ok = ReadFileToString(posix_, P("ten"), 10);
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(*ok, "0123456789");
  auto big = ReadFileToString(posix_, P("ten"), 9);
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.status().code(), Code::kInvalidArgument);
  EXPECT_NE(big.status().message().find(P("ten")), std::string::npos);
  EXPECT_EQ(ReadFileToString(posix_, P("missing"), 10).status().code(), Code::kNotFound);
  ASSERT_TRUE(WriteFileAtomic(posix_, P("empty"), "").ok());
  EXPECT_EQ(*ReadFileToString(posix_, P("empty"), 0), "");
  EXPECT_EQ(*ReadFileToString(posix_, P("ten"), UINT64_MAX), "0123456789");
}

// A file system whose files report a size that is not true.
class LyingSizeFs : public PosixFileSystem {
 public:
  explicit LyingSizeFs(uint64_t claimed) : claimed_(claimed) {}
  Result<std::unique_ptr<RandomAccessFile>> OpenForRead(const std::string& path) override {
    STRATA_ASSIGN_OR_RETURN(auto inner, PosixFileSystem::OpenForRead(path));
    return std::unique_ptr<RandomAccessFile>(std::make_unique<Lying>(std::move(inner), claimed_));
  }

 private:
  class Lying : public RandomAccessFile {
   public:
    Lying(std::unique_ptr<RandomAccessFile> inner, uint64_t claimed) : inner_(std::move(inner)), claimed_(claimed) {}
    Result<size_t> ReadAt(uint64_t o, size_t n, void* d) override { return inner_->ReadAt(o, n, d); }
    Result<uint64_t> Size() override { return claimed_; }
    const std::string& path() const override { return inner_->path(); }

   private:
    std::unique_ptr<RandomAccessFile> inner_;
    uint64_t claimed_;
  };
  uint64_t claimed_;
};

TEST_F(DurableTest, ReadFileToStringDoesNotTrustTheSize) {
  std::string data(3 << 20, 'z');
  ASSERT_TRUE(WriteFileAtomic(posix_, P("f"), data).ok());
  LyingSizeFs small(10);  // claims less than it holds: the limit still applies to what is read
  auto r = ReadFileToString(small, P("f"), 1 << 20);
  EXPECT_EQ(r.status().code(), Code::kInvalidArgument);
  auto whole = ReadFileToString(small, P("f"), 4 << 20);
  ASSERT_TRUE(whole.ok());
  EXPECT_EQ(whole->size(), data.size());
  LyingSizeFs huge(uint64_t{1} << 60);  // claims far more: no giant allocation
  auto h = ReadFileToString(huge, P("f"), uint64_t{1} << 62);
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_EQ(*h, data);
}

TEST_F(DurableTest, MakeTempDirIsFreshAndRemoveAllDoesNotFollowSymlinks) {
  auto a = MakeTempDir("strata-x-");
  auto b = MakeTempDir("strata-x-");
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_NE(*a, *b);
  EXPECT_TRUE(posix_.Stat(*a)->is_dir);

  ASSERT_TRUE(WriteFileAtomic(posix_, JoinPath(*b, "precious"), "keep").ok());
  ASSERT_TRUE(posix_.CreateDirs(JoinPath(*a, "d/e")).ok());
  ASSERT_TRUE(WriteFileAtomic(posix_, JoinPath(*a, "d/e/f"), "x").ok());
  ASSERT_EQ(symlink(b->c_str(), JoinPath(*a, "d/link").c_str()), 0);
  ASSERT_EQ(symlink("/nonexistent/target", JoinPath(*a, "dangling").c_str()), 0);
  ASSERT_TRUE(RemoveAll(posix_, *a).ok());
  EXPECT_FALSE(*posix_.Exists(*a));
  EXPECT_EQ(Read(JoinPath(*b, "precious")), "keep");
  ASSERT_TRUE(RemoveAll(posix_, *b).ok());
  EXPECT_TRUE(RemoveAll(posix_, *b).ok());  // already gone
}

}  // namespace
}  // namespace strata::io

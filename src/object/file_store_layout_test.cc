// The file store's on-disk layout for keys a plain path cannot name: escaped
// segments, the object named like a directory (.strata-self), directory
// markers; what a plain tree looks like as a bucket; and that nothing
// internal is listed or keeps a bucket from being removed.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <thread>

#include "object/file_store.h"

namespace strata::object {
namespace {

namespace fs = std::filesystem;
using Strings = std::vector<std::string>;

class FileLayoutTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("strata-file-layout-" + std::to_string(::getpid()) + "-" +
                                         ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_);
  }
  void TearDown() override { fs::remove_all(root_); }
  void Open() {
    auto store = OpenFileStore(root_.string());
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = *store;
  }

  static std::string ReadFile(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  static void WriteFile(const fs::path& p, const std::string& s) {
    fs::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << s;
  }
  static uint64_t Inode(const fs::path& p) {
    struct stat st;
    return ::stat(p.c_str(), &st) == 0 ? st.st_ino : 0;
  }
  // Every path under the root but staging, relative, sorted.
  Strings Tree() {
    Strings names;
    for (auto it = fs::recursive_directory_iterator(root_); it != fs::recursive_directory_iterator(); ++it) {
      std::string rel = fs::relative(it->path(), root_).string();
      if (rel == ".strata-tmp") {
        it.disable_recursion_pending();
        continue;
      }
      names.push_back(rel + (it->is_directory() ? "/" : ""));
    }
    std::sort(names.begin(), names.end());
    return names;
  }
  Strings Keys() {
    Strings keys;
    auto r = store_->List({});
    EXPECT_TRUE(r.ok()) << r.status();
    if (r.ok()) {
      for (const auto& o : r->objects) keys.push_back(o.key);
    }
    return keys;
  }
  void Put(const std::string& key, const std::string& data, const PutOptions& o = {}) {
    auto r = store_->Put(key, Buffer::Copy(data), o);
    ASSERT_TRUE(r.ok()) << key << ": " << r.status();
  }

  fs::path root_;
  ObjectStorePtr store_;
};

TEST_F(FileLayoutTest, ObjectMovesIntoItsDirectoryAndBackWithItsMetadata) {
  Open();
  PutOptions o;
  o.metadata.content_type = "text/csv";
  o.metadata.user["k"] = "v";
  Put("a", "object a", o);
  const uint64_t inode = Inode(root_ / "a");
  auto before = store_->Head("a");
  ASSERT_TRUE(before.ok());
  Put("a/b", "object a/b");
  EXPECT_EQ(Tree(), (Strings{"a/", "a/.strata-self", "a/b"}));
  EXPECT_EQ(ReadFile(root_ / "a/.strata-self"), "object a");
  EXPECT_EQ(Inode(root_ / "a/.strata-self"), inode);  // moved, not copied: xattrs go with it
  auto after = store_->Head("a");
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_EQ(after->etag, before->etag);
  EXPECT_EQ(after->metadata, o.metadata);
  // The directory empties: "a" is a plain file again, same inode.
  ASSERT_TRUE(store_->Delete("a/b").ok());
  EXPECT_EQ(Tree(), (Strings{"a"}));
  EXPECT_EQ(Inode(root_ / "a"), inode);
  EXPECT_EQ(store_->Head("a")->metadata, o.metadata);
}

// The moves between "a" and "a/.strata-self" are atomic: a reader never
// misses the object while keys below it come and go.
TEST_F(FileLayoutTest, ReadersNeverMissAnObjectWhileItMoves) {
  auto store = OpenFileStore(root_.string(), FileStoreOptions{.fsync = false});
  ASSERT_TRUE(store.ok());
  store_ = *store;
  Put("a", "object a");
  std::atomic<bool> done{false};
  std::atomic<int> reads{0}, misses{0};
  std::thread reader([&] {
    while (!done.load()) {
      auto got = store_->Get("a");
      if (!got.ok() || got->data.ToString() != "object a") misses.fetch_add(1);
      reads.fetch_add(1);
    }
  });
  for (int i = 0; i < 300; ++i) {
    ASSERT_TRUE(store_->Put("a/b", Buffer::Copy("b")).ok());
    ASSERT_TRUE(store_->Delete("a/b").ok());
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (reads.load() < 100 && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
  EXPECT_GE(reads.load(), 100) << "the reader did not run alongside";
  done = true;
  reader.join();
  EXPECT_EQ(misses.load(), 0) << "of " << reads.load() << " reads";
  EXPECT_EQ(Tree(), (Strings{"a"}));
}

TEST_F(FileLayoutTest, ObjectOverKeysBelowItIsSelfAndDeletingItKeepsThem) {
  Open();
  Put("d/x", "x");
  Put("d", "object d");
  EXPECT_EQ(Tree(), (Strings{"d/", "d/.strata-self", "d/x"}));
  EXPECT_EQ(Keys(), (Strings{"d", "d/x"}));
  ASSERT_TRUE(store_->Delete("d").ok());
  EXPECT_EQ(Tree(), (Strings{"d/", "d/x"}));
  EXPECT_EQ(store_->Get("d").status().code(), Code::kNotFound);
  EXPECT_TRUE(store_->Delete("d").ok());  // idempotent
  EXPECT_EQ(Keys(), (Strings{"d/x"}));
}

TEST_F(FileLayoutTest, UnrepresentableSegmentsAreEscaped) {
  Open();
  for (const std::string k : {"dir/", "a//b", "/lead", "./x", "x/../y", ".strata-tmp", ".strata-x", "k/.strata-self"}) {
    Put(k, "v:" + k);
  }
  EXPECT_EQ(Tree(), (Strings{".strata-x./", ".strata-x./x", ".strata-x.strata-tmp", ".strata-x.strata-x", ".strata-x/",
                             ".strata-x/lead", "a/", "a/.strata-x/", "a/.strata-x/b", "dir/", "dir/.strata-x", "k/",
                             "k/.strata-x.strata-self", "x/", "x/.strata-x../", "x/.strata-x../y"}));
  EXPECT_FALSE(fs::exists(root_.parent_path() / "y"));  // ".." never walks out
  // A marker keeps its directory when the keys in it go.
  Put("dir/in", "in");
  ASSERT_TRUE(store_->Delete("dir/in").ok());
  EXPECT_TRUE(fs::exists(root_ / "dir/.strata-x"));
  EXPECT_EQ(store_->Head("dir/")->size, 6u);
  // 255 bytes is the longest name: escaping counts.
  EXPECT_TRUE(store_->Put("s/" + std::string(255, 'x'), Buffer()).ok());
  EXPECT_EQ(store_->Put("s/" + std::string(256, 'x'), Buffer()).status().code(), Code::kInvalidArgument);
  EXPECT_TRUE(store_->Put("s/.strata-" + std::string(246 - 8, 'y'), Buffer()).ok());
  EXPECT_EQ(store_->Put("s/.strata-" + std::string(247 - 8, 'y'), Buffer()).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(store_->Get("s/" + std::string(256, 'x')).status().code(), Code::kInvalidArgument);
}

TEST_F(FileLayoutTest, PlainTreeServesAsIsAndInternalNamesAreHidden) {
  WriteFile(root_ / "data/train/0001.bin", "one");
  WriteFile(root_ / "data/train/0002.bin", "two");
  WriteFile(root_ / "README", "read me");
  WriteFile(root_ / ".hidden", "dotfile");
  WriteFile(root_ / "data/.strata-conv-crashed/.strata-self", "leftover of a crash");
  WriteFile(root_ / ".strata-xplain", "non-canonical escape");  // "plain" has its own name
  fs::create_directories(root_ / "empty/dir");
  const uint64_t inode = Inode(root_ / "data/train/0001.bin");
  Open();
  EXPECT_EQ(Keys(), (Strings{".hidden", "README", "data/train/0001.bin", "data/train/0002.bin"}));
  auto got = store_->Get("data/train/0002.bin");
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->data.ToString(), "two");
  // Writing elsewhere leaves the existing files where and what they are.
  Put("data/train/0003.bin", "three");
  EXPECT_EQ(Inode(root_ / "data/train/0001.bin"), inode);
  EXPECT_EQ(ReadFile(root_ / "data/train/0003.bin"), "three");
  ListOptions o;
  o.delimiter = "/";
  auto r = store_->List(o);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->common_prefixes, (Strings{"data/"}));  // empty directories hold no keys
}

TEST_F(FileLayoutTest, NothingInternalKeepsABucketFromBeingRemoved) {
  const fs::path bucket = root_ / "bucket";
  auto store = OpenFileStore(bucket.string());
  ASSERT_TRUE(store.ok());
  store_ = *store;
  for (const std::string k : {"a", "a/b", "dir/", "dir/x", "a//b", "/lead"}) Put(k, k);
  auto upload = store_->CreateMultipartUpload("pending/");
  ASSERT_TRUE(upload.ok());
  WriteFile(bucket / "a/.strata-conv-crashed/.strata-self", "leftover");
  ASSERT_TRUE(store_->List({}).ok());
  EXPECT_EQ(RemoveEmptyFileStore(bucket.string()).code(), Code::kPreconditionFailed);
  for (const std::string k : {"a", "a/b", "dir/", "dir/x", "a//b"}) ASSERT_TRUE(store_->Delete(k).ok()) << k;
  EXPECT_EQ(RemoveEmptyFileStore(bucket.string()).code(), Code::kPreconditionFailed);  // "/lead" is left
  ASSERT_TRUE(store_->Delete("/lead").ok());
  EXPECT_EQ(Keys(), Strings{});
  EXPECT_TRUE(RemoveEmptyFileStore(bucket.string()).ok());
  EXPECT_FALSE(fs::exists(bucket));
}

}  // namespace
}  // namespace strata::object

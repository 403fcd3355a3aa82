#include "object/file_store.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <thread>

#include "base/hash.h"
#include "object/part_reader.h"
#include "object/store_url.h"
#include "object/transfer.h"

namespace strata::object {
namespace {

namespace fs = std::filesystem;

class FileStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("strata-file-store-" + std::to_string(::getpid()) + "-" +
                                         ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    auto store = OpenFileStore(root_.string(), FileStoreOptions{.min_part_size = 4});
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = *store;
  }
  void TearDown() override { fs::remove_all(root_); }

  static std::string ReadFile(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  static void WriteFile(const fs::path& p, const std::string& s) {
    fs::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << s;
  }
  std::vector<std::string> ListKeys() {
    std::vector<std::string> keys;
    auto r = store_->List({});
    EXPECT_TRUE(r.ok()) << r.status();
    if (r.ok()) {
      for (const auto& o : r->objects) keys.push_back(o.key);
    }
    return keys;
  }

  fs::path root_;
  ObjectStorePtr store_;
};

// CompleteMultipartUpload's own conditions are checked with the rename; a
// failed one leaves the upload in place, as S3 does.
TEST_F(FileStoreTest, CompleteConditionsAreCheckedWithTheCommit) {
  auto id = store_->CreateMultipartUpload("c");
  ASSERT_TRUE(id.ok()) << id.status();
  auto e = store_->UploadPart("c", *id, 1, Buffer::Copy("part"));
  ASSERT_TRUE(e.ok()) << e.status();
  CompleteOptions o;
  o.if_match = ToHex(Md5("old"));  // no object yet
  EXPECT_EQ(store_->CompleteMultipartUpload("c", *id, {{1, *e}}, o).status().code(), Code::kPreconditionFailed);
  ASSERT_TRUE(store_->Put("c", Buffer::Copy("old")).ok());
  o = {};
  o.if_none_match = true;
  EXPECT_EQ(store_->CompleteMultipartUpload("c", *id, {{1, *e}}, o).status().code(), Code::kPreconditionFailed);
  EXPECT_EQ(store_->Get("c")->data.ToString(), "old");
  o = {};
  o.if_match = ToHex(Md5("old"));  // the upload stayed: it can still complete
  auto done = store_->CompleteMultipartUpload("c", *id, {{1, *e}}, o);
  ASSERT_TRUE(done.ok()) << done.status();
  EXPECT_EQ(store_->Get("c")->data.ToString(), "part");
}

// GetOptions::into: a ranged Get of exactly that many bytes reads into the
// caller's memory (the loader assembles a shard's parallel parts so, with no
// copy afterwards); any other size gets a buffer of its own, as without it.
TEST_F(FileStoreTest, ARangedGetReadsIntoTheCallersMemory) {
  ASSERT_TRUE(store_->Put("k", Buffer::Copy("0123456789")).ok());
  auto memory = std::shared_ptr<uint8_t>(new uint8_t[8](), std::default_delete<uint8_t[]>());
  GetOptions o;
  o.range = ByteRange::Of(2, 4);
  o.into = {memory, memory.get() + 3, 4};
  auto got = store_->Get("k", o);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->data.data(), memory.get() + 3);
  EXPECT_EQ(got->data.view(), "2345");
  EXPECT_EQ(std::string(reinterpret_cast<char*>(memory.get()) + 3, 4), "2345");
  o.range = ByteRange::Of(2, 5);  // not the destination's size: a buffer of its own
  got = store_->Get("k", o);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_NE(got->data.data(), memory.get() + 3);
  EXPECT_EQ(got->data.view(), "23456");
}

TEST_F(FileStoreTest, KeysAreRelativePaths) {
  ASSERT_TRUE(store_->Put("a/b/c.txt", Buffer::Copy("hello")).ok());
  EXPECT_EQ(ReadFile(root_ / "a/b/c.txt"), "hello");
  // Nothing is left behind in staging.
  EXPECT_FALSE(fs::exists(root_ / ".strata-tmp/uploads"));
  size_t staged = 0;
  for (const auto& e : fs::directory_iterator(root_ / ".strata-tmp")) staged += e.is_regular_file();
  EXPECT_EQ(staged, 0u);
}

// Keys that are not plain relative paths, and an object with keys below it:
// file_store_layout_test.cc.

TEST_F(FileStoreTest, DeleteRemovesEmptiedDirectories) {
  ASSERT_TRUE(store_->Put("x/y/z", Buffer::Copy("1")).ok());
  ASSERT_TRUE(store_->Put("x/keep", Buffer::Copy("2")).ok());
  ASSERT_TRUE(store_->Delete("x/y/z").ok());
  EXPECT_FALSE(fs::exists(root_ / "x/y"));
  EXPECT_TRUE(fs::exists(root_ / "x/keep"));
  ASSERT_TRUE(store_->Delete("x/keep").ok());
  EXPECT_FALSE(fs::exists(root_ / "x"));
  EXPECT_TRUE(fs::exists(root_));
}

TEST_F(FileStoreTest, EtagIsStoredInAnXattrWithWhatItDescribes) {
  auto info = store_->Put("k", Buffer::Copy("content"));
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->etag, ToHex(Md5("content")));
  char buf[256];
  ssize_t n = ::getxattr((root_ / "k").c_str(), "user.strata.etag", buf, sizeof(buf));
  ASSERT_GT(n, 0) << "xattrs unsupported on " << root_;
  EXPECT_EQ(std::string(buf, n).substr(0, 33), info->etag + " ");
}

TEST_F(FileStoreTest, MetadataIsOneXattrOnTheCommittedFile) {
  PutOptions o;
  o.metadata.content_type = "text/plain";
  o.metadata.user["mode"] = "33188";
  ASSERT_TRUE(store_->Put("m", Buffer::Copy("v1"), o).ok());
  char buf[4096];
  ssize_t n = ::getxattr((root_ / "m").c_str(), "user.strata.meta", buf, sizeof(buf));
  ASSERT_GT(n, 0) << "xattrs unsupported on " << root_;
  EXPECT_EQ(std::string(buf, n), EncodeMetadata(o.metadata));
  // A replacing Put without metadata leaves no record: the new inode never had one.
  ASSERT_TRUE(store_->Put("m", Buffer::Copy("v2")).ok());
  EXPECT_LT(::getxattr((root_ / "m").c_str(), "user.strata.meta", buf, sizeof(buf)), 0);
  EXPECT_TRUE(store_->Head("m")->metadata.empty());
  // A damaged record is Corruption, never wrong metadata.
  ASSERT_EQ(::setxattr((root_ / "m").c_str(), "user.strata.meta", "\x01\xff", 2, 0), 0);
  EXPECT_EQ(store_->Head("m").status().code(), Code::kCorruption);
  EXPECT_EQ(store_->Get("m").status().code(), Code::kCorruption);
  EXPECT_EQ(ListKeys(), std::vector<std::string>{"m"});  // listing reads no metadata
}

// The record is set on the temp file before the rename: a put that dies
// before its rename leaves the old object with its old metadata intact.
TEST_F(FileStoreTest, MetadataTravelsWithTheBytesAcrossReopen) {
  PutOptions o;
  o.metadata.user = {{"uid", "1000"}, {"gid", "100"}};
  ASSERT_TRUE(store_->Put("k", Buffer::Copy("old"), o).ok());
  WriteFile(root_ / ".strata-tmp/put-crashed", "new bytes never renamed");
  auto id = store_->CreateMultipartUpload("mp", o);
  ASSERT_TRUE(id.ok());
  auto e1 = store_->UploadPart("mp", *id, 1, Buffer::Copy("part"));
  ASSERT_TRUE(e1.ok());
  store_.reset();
  auto again = OpenFileStore(root_.string(), FileStoreOptions{.min_part_size = 4});
  ASSERT_TRUE(again.ok());
  auto head = (*again)->Head("k");
  ASSERT_TRUE(head.ok());
  EXPECT_EQ(head->metadata, o.metadata);
  EXPECT_EQ((*again)->Get("k")->data.ToString(), "old");
  ASSERT_TRUE((*again)->CompleteMultipartUpload("mp", *id, {{1, *e1}}).ok());
  EXPECT_EQ((*again)->Head("mp")->metadata, o.metadata);
}

// A multipart object's part sizes are an xattr on the committed file, kept
// across reopening; a damaged or foreign record only makes them unknown.
TEST_F(FileStoreTest, PartSizesAreAnXattrOnTheCommittedFile) {
  auto id = store_->CreateMultipartUpload("mp");
  ASSERT_TRUE(id.ok());
  auto e1 = store_->UploadPart("mp", *id, 1, Buffer::Copy("aaaaa"));
  auto e2 = store_->UploadPart("mp", *id, 2, Buffer::Copy("bbbbb"));
  auto e3 = store_->UploadPart("mp", *id, 3, Buffer::Copy("cc"));
  ASSERT_TRUE(e1.ok() && e2.ok() && e3.ok());
  auto done = store_->CompleteMultipartUpload("mp", *id, {{1, *e1}, {2, *e2}, {3, *e3}});
  ASSERT_TRUE(done.ok()) << done.status();
  const std::vector<uint64_t> sizes{5, 5, 2};
  EXPECT_EQ(done->part_sizes, sizes);
  char buf[4096];
  ssize_t n = ::getxattr((root_ / "mp").c_str(), "user.strata.parts", buf, sizeof(buf));
  ASSERT_GT(n, 0) << "xattrs unsupported on " << root_;
  EXPECT_EQ(std::string(buf, n), EncodePartSizes(sizes));
  store_.reset();
  auto again = OpenFileStore(root_.string(), FileStoreOptions{.min_part_size = 4});
  ASSERT_TRUE(again.ok());
  EXPECT_EQ((*again)->Head("mp")->part_sizes, sizes);
  EXPECT_EQ((*again)->Get("mp")->info.part_sizes, sizes);
  // Sizes that do not add up to the object's are not this object's.
  const std::string wrong = EncodePartSizes({5, 5});
  ASSERT_EQ(::setxattr((root_ / "mp").c_str(), "user.strata.parts", wrong.data(), wrong.size(), 0), 0);
  EXPECT_TRUE((*again)->Head("mp")->part_sizes.empty());
  ASSERT_EQ(::setxattr((root_ / "mp").c_str(), "user.strata.parts", "\x01\xff", 2, 0), 0);
  auto head = (*again)->Head("mp");
  ASSERT_TRUE(head.ok()) << head.status();
  EXPECT_TRUE(head->part_sizes.empty());
  EXPECT_EQ((*again)->Get("mp")->data.ToString(), "aaaaabbbbbcc");
}

TEST_F(FileStoreTest, WithoutXattrsMetadataIsNotSupported) {
  auto plain = OpenFileStore((root_ / "plain").string(), FileStoreOptions{.use_xattrs = false});
  ASSERT_TRUE(plain.ok());
  EXPECT_FALSE((*plain)->Capabilities().metadata_kept);
  EXPECT_TRUE(store_->Capabilities().metadata_kept);
  PutOptions o;
  o.metadata.content_type = "text/plain";
  EXPECT_EQ((*plain)->Put("k", Buffer::Copy("x"), o).status().code(), Code::kNotSupported);
  EXPECT_TRUE((*plain)->Put("k", Buffer::Copy("x")).ok());
  CopyOptions co;
  co.directive = MetadataDirective::kReplace;
  co.metadata = o.metadata;
  EXPECT_EQ((*plain)->Copy("k", "k2", co).status().code(), Code::kNotSupported);
  EXPECT_TRUE((*plain)->Copy("k", "k2").ok());
}

TEST_F(FileStoreTest, FilesWrittenByOthersGetCorrectEtags) {
  WriteFile(root_ / "ext/file.bin", "written by someone else");
  auto head = store_->Head("ext/file.bin");
  ASSERT_TRUE(head.ok()) << head.status();
  EXPECT_EQ(head->etag, ToHex(Md5("written by someone else")));
  // Rewritten in place (the xattr survives but is stale): detected and rehashed.
  auto before = fs::last_write_time(root_ / "ext/file.bin");
  WriteFile(root_ / "ext/file.bin", "changed!");
  fs::last_write_time(root_ / "ext/file.bin", before + std::chrono::seconds(1));
  head = store_->Head("ext/file.bin");
  ASSERT_TRUE(head.ok());
  EXPECT_EQ(head->etag, ToHex(Md5("changed!")));
  EXPECT_EQ(head->size, 8u);
  EXPECT_EQ(ListKeys(), std::vector<std::string>{"ext/file.bin"});
}

TEST_F(FileStoreTest, NonRegularFilesAndSymlinkLoopsAreSkipped) {
  ASSERT_TRUE(store_->Put("dir/real", Buffer::Copy("r")).ok());
  ASSERT_EQ(::mkfifo((root_ / "dir/fifo").c_str(), 0644), 0);
  fs::create_directory_symlink(root_ / "dir", root_ / "dir/loop");
  fs::create_symlink(root_ / "nowhere", root_ / "dir/dangling");
  auto keys = ListKeys();
  // The loop is followed only as deep as the kernel resolves symlinks (ELOOP
  // ends it, as for a dangling link) and never past 1024-byte keys: the
  // listing terminates, in order, with "real" under each level.
  ASSERT_GT(keys.size(), 2u);
  EXPECT_TRUE(std::is_sorted(keys.begin(), keys.end()));
  for (const auto& k : keys) {
    EXPECT_LE(k.size(), 1024u);
    EXPECT_EQ(k.substr(k.size() - 5), "/real") << k;
  }
  EXPECT_EQ(keys.back(), "dir/real");
  for (const auto& k : keys) EXPECT_EQ(k.find("fifo"), std::string::npos);
  for (const auto& k : keys) EXPECT_EQ(k.find("dangling"), std::string::npos);
}

TEST_F(FileStoreTest, StateSurvivesReopening) {
  ASSERT_TRUE(store_->Put("persist/k", Buffer::Copy("kept")).ok());
  auto id = store_->CreateMultipartUpload("persist/mp");
  ASSERT_TRUE(id.ok());
  auto e1 = store_->UploadPart("persist/mp", *id, 1, Buffer::Copy("part1"));
  ASSERT_TRUE(e1.ok());
  store_.reset();
  auto again = OpenFileStore(root_.string(), FileStoreOptions{.min_part_size = 4});
  ASSERT_TRUE(again.ok());
  EXPECT_EQ((*again)->Get("persist/k")->data.ToString(), "kept");
  auto parts = (*again)->ListParts("persist/mp", *id);
  ASSERT_TRUE(parts.ok()) << parts.status();
  ASSERT_EQ(parts->size(), 1u);
  auto e2 = (*again)->UploadPart("persist/mp", *id, 2, Buffer::Copy("part2"));
  ASSERT_TRUE(e2.ok());
  auto info = (*again)->CompleteMultipartUpload("persist/mp", *id, {{1, *e1}, {2, *e2}});
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->etag, MultipartEtag({*e1, *e2}));
  EXPECT_EQ(ReadFile(root_ / "persist/mp"), "part1part2");
  EXPECT_TRUE(fs::is_empty(root_ / ".strata-tmp/uploads"));
  // The multipart ETag is what Head reports after another reopen.
  auto third = OpenFileStore(root_.string());
  EXPECT_EQ((*third)->Head("persist/mp")->etag, info->etag);
}

// Completions are recorded on disk for a Complete sent again: across a
// reopen, and only the most recent `completed_uploads_kept` of them.
TEST_F(FileStoreTest, CompletedUploadsAreRecordedDurablyAndBounded) {
  store_.reset();
  auto opened = OpenFileStore(root_.string(), FileStoreOptions{.min_part_size = 4, .completed_uploads_kept = 2});
  ASSERT_TRUE(opened.ok());
  std::vector<std::pair<std::string, std::vector<CompletedPart>>> done;
  for (int i = 0; i < 3; ++i) {
    auto id = (*opened)->CreateMultipartUpload("mp");
    ASSERT_TRUE(id.ok());
    auto e = (*opened)->UploadPart("mp", *id, 1, Buffer::Copy("v" + std::to_string(i)));
    ASSERT_TRUE(e.ok());
    ASSERT_TRUE((*opened)->CompleteMultipartUpload("mp", *id, {{1, *e}}).ok());
    done.push_back({*id, {{1, *e}}});
    // A record older than the last one may share its mtime: the order of removal needs distinct times.
    fs::last_write_time(root_ / ".strata-tmp/completed" / *id,
                        fs::file_time_type::clock::now() - std::chrono::minutes(10 - i));
  }
  EXPECT_TRUE(fs::is_empty(root_ / ".strata-tmp/uploads"));
  auto reopened = OpenFileStore(root_.string(), FileStoreOptions{.min_part_size = 4, .completed_uploads_kept = 2});
  ASSERT_TRUE(reopened.ok());
  for (int i = 0; i < 3; ++i) {
    auto again = (*reopened)->CompleteMultipartUpload("mp", done[i].first, done[i].second);
    if (i == 0) {
      EXPECT_EQ(again.status().code(), Code::kNotFound) << "the oldest record was dropped";
    } else {
      ASSERT_TRUE(again.ok()) << i << ": " << again.status();
      EXPECT_EQ(again->etag, MultipartEtag({ToHex(Md5("v" + std::to_string(i)))}));
    }
  }
  EXPECT_EQ((*reopened)->Get("mp")->data.ToString(), "v2");  // the retries wrote nothing
}

// Part 1 sent twice at once: the upload that finishes last is the part (its
// rename comes last), whichever started first.
TEST_F(FileStoreTest, APartUploadedTwiceAtOnceIsTheOneThatFinishedLast) {
  auto id = store_->CreateMultipartUpload("race");
  ASSERT_TRUE(id.ok());
  std::promise<void> in_flight, other_done;
  std::shared_future<void> other_finished = other_done.get_future().share();
  const std::string a(8 << 20, 'A');  // more than one read of the source
  PartReader slow;
  slow.size = a.size();
  slow.read = [&](uint64_t offset, void* dst, size_t n) -> Status {
    if (offset + n == a.size()) {  // the last piece waits for the other upload
      in_flight.set_value();
      if (other_finished.wait_for(std::chrono::seconds(30)) != std::future_status::ready) {
        return DeadlineExceededError("the other upload never finished");
      }
    }
    std::memcpy(dst, a.data() + offset, n);
    return Status::Ok();
  };
  Result<std::string> ea = NotFoundError("not run");
  std::future<void> started = in_flight.get_future();
  std::thread first([&] { ea = UploadPartFromSource(*store_, "race", *id, 1, slow, {}); });
  ASSERT_EQ(started.wait_for(std::chrono::seconds(30)), std::future_status::ready);
  auto eb = store_->UploadPart("race", *id, 1, Buffer::Copy("B"));
  other_done.set_value();
  first.join();
  ASSERT_TRUE(ea.ok() && eb.ok()) << ea.status() << eb.status();
  auto parts = store_->ListParts("race", *id);
  ASSERT_TRUE(parts.ok());
  ASSERT_EQ(parts->size(), 1u);
  EXPECT_EQ((*parts)[0].etag, *ea);
  EXPECT_EQ(store_->CompleteMultipartUpload("race", *id, {{1, *eb}}).status().code(), Code::kInvalidArgument);
  ASSERT_TRUE(store_->CompleteMultipartUpload("race", *id, {{1, *ea}}).ok());
  EXPECT_EQ(ReadFile(root_ / "race"), a);
}

TEST_F(FileStoreTest, ReopeningRemovesTempFilesOfCrashedPuts) {
  WriteFile(root_ / ".strata-tmp/put-crashed", "half written");
  WriteFile(root_ / ".strata-tmp/put-live", "being written now");
  fs::last_write_time(root_ / ".strata-tmp/put-crashed", fs::file_time_type::clock::now() - std::chrono::hours(48));
  ASSERT_TRUE(OpenFileStore(root_.string()).ok());
  EXPECT_FALSE(fs::exists(root_ / ".strata-tmp/put-crashed"));
  EXPECT_TRUE(fs::exists(root_ / ".strata-tmp/put-live"));
  EXPECT_TRUE(ListKeys().empty());  // staging is never listed
}

TEST_F(FileStoreTest, UploadIdsCannotEscapeTheStagingDir) {
  for (const char* id : {"../../../etc", "", "0123456789abcdef0123456789abcdeg", "/tmp"}) {
    EXPECT_EQ(store_->UploadPart("k", id, 1, Buffer::Copy("x")).status().code(), Code::kNotFound) << id;
    EXPECT_EQ(store_->AbortMultipartUpload("k", id).code(), Code::kNotFound) << id;
  }
}

TEST_F(FileStoreTest, ReadersNeverSeeAMix) {
  const std::string a(1 << 20, 'a'), b(1 << 19, 'b');
  ASSERT_TRUE(store_->Put("k", Buffer::Copy(a)).ok());
  std::atomic<bool> stop{false};
  std::thread writer([&] {
    for (int i = 0; i < 50; ++i) EXPECT_TRUE(store_->Put("k", Buffer::Copy(i % 2 ? a : b)).ok());
    stop = true;
  });
  int reads = 0;
  while (!stop || reads < 5) {
    auto got = store_->Get("k");
    ASSERT_TRUE(got.ok()) << got.status();
    ASSERT_TRUE(got->data.view() == a || got->data.view() == b);
    EXPECT_EQ(got->info.etag, ToHex(Md5(got->data.view())));
    ++reads;
  }
  writer.join();
}

TEST_F(FileStoreTest, ParallelTransfersOverFiles) {
  std::string data(3'000'001, '\0');
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>(i * 131);
  auto put = ParallelPut(*store_, "big", Buffer::Copy(data), 1'000'000, 3);
  ASSERT_TRUE(put.ok()) << put.status();
  EXPECT_EQ(put->etag.substr(put->etag.size() - 2), "-4");
  auto got = ParallelGet(*store_, "big", 700'000, 3);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_TRUE(got->view() == data);
}

TEST_F(FileStoreTest, OpenStoreFileUrls) {
  auto store = OpenStore("file://" + root_.string() + "?prefix=sub/");
  ASSERT_TRUE(store.ok()) << store.status();
  ASSERT_TRUE((*store)->Put("x", Buffer::Copy("1")).ok());
  EXPECT_EQ(ReadFile(root_ / "sub/x"), "1");
  auto again = OpenStore((*store)->Url());
  ASSERT_TRUE(again.ok()) << (*store)->Url();
  EXPECT_TRUE((*again)->Head("x").ok());
  EXPECT_EQ(store_->Url(), "file://" + fs::canonical(root_).string());
}

TEST(OpenFileStore, RootMustBeADirectory) {
  auto file = fs::temp_directory_path() / ("strata-not-a-dir-" + std::to_string(::getpid()));
  std::ofstream(file) << "x";
  auto store = OpenFileStore(file.string());
  EXPECT_EQ(store.status().code(), Code::kInvalidArgument) << store.status();
  fs::remove(file);
  EXPECT_EQ(OpenFileStore("").status().code(), Code::kInvalidArgument);
  // A missing root is created.
  auto fresh = fs::temp_directory_path() / ("strata-fresh-" + std::to_string(::getpid())) / "nested";
  auto created = OpenFileStore(fresh.string());
  ASSERT_TRUE(created.ok()) << created.status();
  EXPECT_TRUE(fs::is_empty(fresh)) << "opening a store must not create its staging directory";
  fs::remove_all(fresh.parent_path());
}

// A plain directory tree served as a store stays as it was after reads and
// listings: nothing is created in it (a bucket must stay deletable).
TEST_F(FileStoreTest, ReadsAndListingsCreateNothing) {
  auto tree = root_ / "tree";
  WriteFile(tree / "x/y", "y");
  auto store = OpenFileStore(tree.string());
  ASSERT_TRUE(store.ok()) << store.status();
  ASSERT_TRUE((*store)->List({}).ok());
  ASSERT_TRUE((*store)->Head("x/y").ok());
  EXPECT_EQ((*store)->ListParts("x/y", std::string(32, 'a')).status().code(), Code::kNotFound);
  std::vector<std::string> names;
  for (const auto& e : fs::recursive_directory_iterator(tree)) names.push_back(fs::relative(e.path(), tree).string());
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"x", "x/y"}));
}

TEST_F(FileStoreTest, RemoveEmptyFileStoreIgnoresStagingOnly) {
  auto dir = root_ / "bucket";
  auto store = OpenFileStore(dir.string());
  ASSERT_TRUE(store.ok()) << store.status();
  ASSERT_TRUE((*store)->Put("k", Buffer::Copy("v")).ok());
  auto upload = (*store)->CreateMultipartUpload("pending");
  ASSERT_TRUE(upload.ok()) << upload.status();
  ASSERT_TRUE((*store)->UploadPart("pending", *upload, 1, Buffer::Copy("part")).ok());
  EXPECT_EQ(RemoveEmptyFileStore(dir.string()).code(), Code::kPreconditionFailed);
  EXPECT_TRUE(fs::exists(dir / "k"));
  ASSERT_TRUE((*store)->Delete("k").ok());
  // Only staging and an in-progress upload are left: the store is empty, as a bucket is on S3.
  EXPECT_TRUE(RemoveEmptyFileStore(dir.string()).ok());
  EXPECT_FALSE(fs::exists(dir));
  EXPECT_EQ(RemoveEmptyFileStore(dir.string()).code(), Code::kNotFound);
}

}  // namespace
}  // namespace strata::object

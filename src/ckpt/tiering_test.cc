// Tiering to the object store, observed through a recording store: resuming
// an interrupted upload, the order of remote markers, withdrawing stale rank
// commits of an earlier attempt, a prompt Close, and retention.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <mutex>
#include <set>
#include <thread>

#include "ckpt/commit.h"
#include "ckpt/reader.h"
#include "ckpt/recording_store.h"
#include "ckpt/test_fixture.h"
#include "ckpt/test_util.h"
#include "ckpt/writer.h"
#include "ckpt/writer_impl.h"  // UploadJournalName
#include "io/durable.h"
#include "object/fault_store.h"
#include "object/mem_store.h"

namespace strata::ckpt {
namespace {

using testing::Compare;
using testing::MakeState;
using testing::OwnedState;
using testing::RecordingStore;
using testing::TempDirTest;

class TieringTest : public TempDirTest<> {
 protected:
  void SetUp() override {
    TempDirTest::SetUp();
    inner_ = object::MakeMemStore("", {.min_part_size = 1 << 20});
    store_ = std::make_shared<RecordingStore>(inner_);
  }
  WriterOptions Options(std::string sub = "local") {
    WriterOptions o;
    o.dir = io::JoinPath(dir_, sub);
    o.shard_bytes = 1 << 20;
    o.remote = store_;
    o.upload_part_size = 1 << 20;
    return o;
  }
  std::unique_ptr<Location> Local(std::string sub = "local") {
    return std::move(OpenLocalLocation(io::DefaultFileSystem(), io::JoinPath(dir_, sub))).value();
  }
  // Waits (deadline, not a fixed sleep) until `key` exists in the store.
  bool WaitForObject(const std::string& key) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (std::chrono::steady_clock::now() < deadline) {
      if (inner_->Head(key).ok()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return false;
  }

  std::shared_ptr<object::ObjectStore> inner_;
  std::shared_ptr<RecordingStore> store_;
};

std::string Key(int64_t step, std::string_view name) { return StepDirName(step) + "/" + std::string(name); }

// The store fails after two files; the writer dies with the upload half done.
// A new writer on the same directory resumes: the files the journal says are
// uploaded are not PUT again, and the remote COMMITTED comes after all others.
TEST_F(TieringTest, InterruptedUploadResumesWithoutRePuttingDoneShards) {
  WriterOptions o = Options();
  o.upload_files_in_flight = 1;  // one shard at a time: exactly two make it
  const OwnedState state = MakeState(8);
  store_->FailNewObjectsAfter(2);
  {
    auto w = std::move(CheckpointWriter::Open(o)).value();
    auto h = w->Save(8, state.views);
    ASSERT_TRUE(h.ok()) << h.status();
    ASSERT_TRUE(h->Wait().ok());  // committed locally
    EXPECT_EQ(h->WaitUploaded().code(), Code::kUnavailable);
  }
  auto info = OpenCheckpoint(*Local(), 8);
  ASSERT_TRUE(info.ok()) << info.status();
  const auto& shards = info->ranks[0].shards;
  ASSERT_GE(shards.size(), 3u);
  std::set<std::string> first;  // objects that appeared before the failure
  for (const auto& e : store_->TakeEvents()) {
    if (e.op == "object") first.insert(e.key);
  }
  ASSERT_EQ(first.size(), 2u);
  for (const auto& key : first) EXPECT_EQ(key.find("COMMITTED"), std::string::npos) << key;

  store_->Heal();
  {
    auto w = std::move(CheckpointWriter::Open(o)).value();  // resumes at Open
    ASSERT_TRUE(w->WaitForUploads().ok());
  }
  const auto events = store_->TakeEvents();
  std::set<std::string> second;
  for (const auto& e : events) {
    EXPECT_FALSE(first.count(e.key)) << e.key << " was uploaded again after the restart";
    if (e.op == "object") second.insert(e.key);
  }
  for (const auto& s : shards) {
    EXPECT_TRUE(first.count(Key(8, s.file)) + second.count(Key(8, s.file)) == 1) << s.file;
  }
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back().key, Key(8, kCommitFile));  // last: after every shard and manifest
  EXPECT_EQ(std::count_if(events.begin(), events.end(), [](const auto& e) { return e.key == Key(8, kCommitFile); }),
            2);  // its create and its appearance, nothing else
  auto remote = StoreLocation(inner_);
  auto loaded = Load(*remote, 8);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(Compare(*loaded, state), "");

  // Uploaded: a third writer finds nothing to do and writes nothing.
  { auto w = std::move(CheckpointWriter::Open(o)).value(); }
  EXPECT_TRUE(store_->TakeEvents().empty());
}

// A damaged upload journal (wrong member types) is ignored, not thrown on:
// the resumed upload starts over and commits.
TEST_F(TieringTest, DamagedUploadJournalRestartsTheUpload) {
  WriterOptions o = Options();
  const OwnedState state = MakeState(9);
  store_->FailNewObjectsAfter(1);
  {
    auto w = std::move(CheckpointWriter::Open(o)).value();
    auto h = w->Save(9, state.views);
    ASSERT_TRUE(h.ok() && h->Wait().ok());
    EXPECT_EQ(h->WaitUploaded().code(), Code::kUnavailable);
  }
  const std::string journal = io::JoinPath(io::JoinPath(o.dir, StepDirName(9)), UploadJournalName(0));
  ASSERT_TRUE(io::WriteFileAtomic(io::DefaultFileSystem(), journal, R"({"manifest": null, "etags": 5})").ok());
  store_->Heal();
  {
    auto w = std::move(CheckpointWriter::Open(o)).value();
    ASSERT_TRUE(w->WaitForUploads().ok());
  }
  auto loaded = Load(*StoreLocation(inner_), 9);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(Compare(*loaded, state), "");
}

// The store answers with ETags that are not UTF-8 (any bytes may come back in
// a header): the upload journal records them and the upload succeeds.
class OddEtagStore : public object::StoreWrapper {
 public:
  using object::StoreWrapper::CreateMultipartUpload;
  using object::StoreWrapper::Put;
  using object::StoreWrapper::StoreWrapper;
  Result<object::ObjectInfo> Put(std::string_view key, Buffer data, const object::PutOptions& o) override {
    return Odd(object::StoreWrapper::Put(key, std::move(data), o));
  }
  Result<object::ObjectInfo> CompleteMultipartUpload(std::string_view key, std::string_view id,
                                                     const std::vector<object::CompletedPart>& parts,
                                                     const object::CompleteOptions& o) override {
    return Odd(object::StoreWrapper::CompleteMultipartUpload(key, id, parts, o));
  }

 private:
  static Result<object::ObjectInfo> Odd(Result<object::ObjectInfo> r) {
    if (r.ok()) r->etag = "\xff\xfe-" + r->etag;
    return r;
  }
};

TEST_F(TieringTest, EtagThatIsNotUtf8IsJournaledAndTheUploadCommits) {
  WriterOptions o = Options();
  o.remote = std::make_shared<OddEtagStore>(inner_);
  const OwnedState state = MakeState(10);
  {
    auto w = std::move(CheckpointWriter::Open(o)).value();
    auto h = w->Save(10, state.views);
    ASSERT_TRUE(h.ok() && h->Wait().ok());
    Status up = h->WaitUploaded();
    EXPECT_TRUE(up.ok()) << up;
  }
  auto loaded = Load(*StoreLocation(inner_), 10);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(Compare(*loaded, state), "");
}

// A part of a crashed attempt at the same step is in the store. The new
// attempt's coordinator must not pair it; the rank re-saving withdraws its
// stale commit before replacing any shard; the retry then commits.
TEST_F(TieringTest, StaleRankCommitOfAnEarlierAttemptIsNeverPaired) {
  auto rank_options = [&](int rank, const std::string& attempt) {
    WriterOptions o = Options("node" + std::to_string(rank));
    o.rank = rank;
    o.world_size = 2;
    o.shared_dir = false;
    o.attempt = attempt;
    return o;
  };
  {  // Attempt a1: rank 1 uploads its part, rank 0 crashed before saving.
    auto w = std::move(CheckpointWriter::Open(rank_options(1, "a1"))).value();
    auto h = w->Save(5, MakeState(51, 1).views);
    ASSERT_TRUE(h.ok() && h->WaitUploaded().ok());
  }
  {  // Attempt a2, rank 0 alone: the stale part of rank 1 is not enough.
    FakeClock clock(/*auto_advance=*/true);
    WriterOptions o = rank_options(0, "a2");
    o.clock = &clock;
    o.commit_timeout = std::chrono::seconds(30);
    auto w = std::move(CheckpointWriter::Open(o)).value();
    auto h = w->Save(5, MakeState(52, 0).views);
    ASSERT_TRUE(h.ok());
    Status st = h->WaitUploaded();
    EXPECT_EQ(st.code(), Code::kDeadlineExceeded) << st;
    EXPECT_NE(st.message().find("attempt 'a1'"), std::string::npos) << st;
  }
  EXPECT_EQ(inner_->Head(Key(5, kCommitFile)).status().code(), Code::kNotFound);

  store_->TakeEvents();
  std::thread rank0([&] {
    auto w = std::move(CheckpointWriter::Open(rank_options(0, "a2"))).value();  // resumes its upload
    EXPECT_TRUE(w->WaitForUploads().ok());
  });
  {
    auto w = std::move(CheckpointWriter::Open(rank_options(1, "a2"))).value();
    auto h = w->Save(5, MakeState(52, 1).views);
    ASSERT_TRUE(h.ok());
    EXPECT_TRUE(h->WaitUploaded().ok()) << h->WaitUploaded();
  }
  rank0.join();
  // Rank 1's stale commit went before any of its shards was replaced.
  const auto events = store_->TakeEvents();
  auto withdrawn = std::find_if(events.begin(), events.end(),
                                [](const auto& e) { return e.op == "delete" && e.key == Key(5, RankCommitName(1)); });
  auto first_shard = std::find_if(events.begin(), events.end(), [](const auto& e) {
    return e.op == "create" && e.key.rfind(Key(5, "rank-00001-shard-"), 0) == 0;
  });
  ASSERT_NE(withdrawn, events.end());
  ASSERT_NE(first_shard, events.end());
  EXPECT_LT(withdrawn - events.begin(), first_shard - events.begin());

  auto remote = StoreLocation(inner_);
  auto info = Latest(*remote, VerifyLevel::kFull);
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->manifest.attempt, "a2");
  for (int r = 0; r < 2; ++r) {
    auto loaded = Load(*remote, 5, {.rank = r});
    ASSERT_TRUE(loaded.ok()) << loaded.status();
    EXPECT_EQ(Compare(*loaded, MakeState(52, r)), "") << "rank " << r;
  }
  // A step committed in the store is never overwritten by another attempt.
  auto w = std::move(CheckpointWriter::Open(rank_options(1, "a3"))).value();
  auto h = w->Save(5, MakeState(53, 1).views);
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(h->WaitUploaded().code(), Code::kAlreadyExists);
  EXPECT_EQ(Compare(*Load(*remote, 5, {.rank = 1}), MakeState(52, 1)), "");
}

TEST_F(TieringTest, SavingAStepAgainUnderTheSameAttemptIsRefused) {
  WriterOptions o = Options("shared");
  o.remote = nullptr;
  o.rank = 1;
  o.world_size = 2;
  o.attempt = "same";
  {
    auto w = std::move(CheckpointWriter::Open(o)).value();
    ASSERT_TRUE(w->Save(3, MakeState(3, 1).views)->Wait().ok());
  }
  std::string before, after;
  ASSERT_TRUE(ReadRankCommit(*Local("shared"), 3, 1, &before).ok());
  auto w = std::move(CheckpointWriter::Open(o)).value();
  Status st = w->Save(3, MakeState(4, 1).views)->Wait();
  EXPECT_EQ(st.code(), Code::kPreconditionFailed) << st;
  EXPECT_NE(st.message().find("new attempt id"), std::string::npos) << st;
  auto part = ReadRankCommit(*Local("shared"), 3, 1, &after);  // the first part is untouched
  ASSERT_TRUE(part.ok()) << part.status();
  EXPECT_EQ(after, before);
}

// Close() while rank 0 waits in the store for a rank that never comes: it
// must give up at once, not after commit_timeout.
TEST_F(TieringTest, CloseIsPromptWhileTheRemoteCommitWaits) {
  WriterOptions o = Options("node0");
  o.world_size = 2;
  o.shared_dir = false;
  o.attempt = "a1";
  o.commit_timeout = std::chrono::seconds(45);
  auto w = std::move(CheckpointWriter::Open(o)).value();
  auto h = w->Save(1, MakeState(1).views);
  ASSERT_TRUE(h.ok() && h->Wait().ok());
  ASSERT_TRUE(WaitForObject(Key(1, RankCommitName(0))));  // now waiting for rank 1
  auto queued = w->Save(2, MakeState(2).views);           // its upload waits behind step 1's
  ASSERT_TRUE(queued.ok() && queued->Wait().ok());
  const auto start = std::chrono::steady_clock::now();
  w.reset();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20));
  EXPECT_EQ(h->WaitUploaded().code(), Code::kCancelled);
  Status st = queued->WaitUploaded();  // answered, not left waiting forever
  EXPECT_EQ(st.code(), Code::kCancelled) << st;
  EXPECT_NE(st.message().find("resumes it"), std::string::npos) << st;
}

}  // namespace
}  // namespace strata::ckpt

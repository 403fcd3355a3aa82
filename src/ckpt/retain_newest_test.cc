// RetainNewest, the remote tier's retention rule, on mem:// behind the fault
// decorator (no disk): steps older than the `keep` newest valid ones go
// without being read; inside that window a step is deleted only when proven
// torn (twice), never on a transient error; nothing goes unless a kept one verifies.
#include <gtest/gtest.h>

#include <chrono>

#include "ckpt/commit.h"
#include "ckpt/reader.h"
#include "ckpt/shard_hasher.h"
#include "object/fault_store.h"
#include "object/mem_store.h"

namespace strata::ckpt {
namespace {

std::string Key(int64_t step, std::string_view name) { return StepDirName(step) + "/" + std::string(name); }

class RetainNewestTest : public ::testing::Test {
 protected:
  void SetUp() override {
    inner_ = object::MakeMemStore();
    fault_ = std::make_shared<object::FaultStore>(inner_, object::FaultConfig{});
    loc_ = StoreLocation(fault_);
  }
  // A committed one-tensor checkpoint, written through the Location as the uploader does.
  void Commit(int64_t step) {
    const std::string data(64, static_cast<char>('a' + step % 26));
    const std::string header = EncodeSafetensorsHeader({{"t", "U8", {64}, 0, 64}}, {});
    const std::string file = header + data;
    TensorEntry t{"t", "U8", {64}, 0, header.size(), data.size(), 0};
    ShardHasher hasher({&t});
    hasher.Update(file.data(), file.size());
    t.xxh3 = hasher.Digests().at(0);
    RankManifest m;
    m.step = step;
    m.attempt = "a";
    m.shards = {{ShardFileName(0, 0), file.size(), hasher.Sha256Hex(), hasher.Xxh3()}};
    m.tensors = {t};
    ASSERT_TRUE(loc_->WriteFile(step, ShardFileName(0, 0), Buffer::FromString(file)).ok());
    ASSERT_TRUE(WriteRankCommit(*loc_, m).ok());
    ASSERT_TRUE(
        CommitGlobal(*loc_, step, 1, "a", clock_, clock_.Now() + std::chrono::seconds(1), std::chrono::milliseconds(1))
            .ok());
    ASSERT_TRUE(OpenCheckpoint(*loc_, step).ok());
  }
  std::vector<int64_t> Steps() { return *StoreLocation(inner_)->ListSteps(); }

  FakeClock clock_;
  std::shared_ptr<object::ObjectStore> inner_;
  std::shared_ptr<object::FaultStore> fault_;
  std::unique_ptr<Location> loc_;
};

// Once `keep` newer steps proved valid, older ones are superseded whatever
// they hold: deleted without a read (every read of them here would fail).
TEST_F(RetainNewestTest, StepsBeyondTheKeptOnesAreDeletedWithoutBeingRead) {
  for (int64_t s = 1; s <= 6; ++s) Commit(s);
  for (int64_t s = 1; s <= 3; ++s) {
    fault_->FailKey(StepDirName(s) + "/", UnavailableError("injected 503"), -1, object::FaultOp::kGet);
  }
  auto deleted = RetainNewest(*loc_, 3);
  ASSERT_TRUE(deleted.ok()) << deleted.status();
  EXPECT_EQ(*deleted, (std::vector<int64_t>{1, 2, 3}));
  EXPECT_EQ(fault_->counters().scripted, 0u) << "a superseded step was read";
  EXPECT_EQ(Steps(), (std::vector<int64_t>{4, 5, 6}));
}

// Inside the window a step that cannot be read is kept and not counted; the
// torn one (marker gone) goes after a second read agrees; a torn one newer
// than the newest valid (an upload in flight) stays.
TEST_F(RetainNewestTest, InsideTheWindowOnlyProvenTornStepsGo) {
  for (int64_t s = 1; s <= 6; ++s) Commit(s);
  ASSERT_TRUE(inner_->Delete(Key(4, kCommitFile)).ok());  // torn
  ASSERT_TRUE(inner_->Delete(Key(6, kCommitFile)).ok());  // newer than every valid one: in flight
  fault_->FailKey(Key(5, kCommitFile), Status(Code::kThrottled, "SlowDown"), -1, object::FaultOp::kGet);
  auto deleted = RetainNewest(*loc_, 2);
  ASSERT_TRUE(deleted.ok()) << deleted.status();
  // Valid: 3 and 2 (5 unknown; 4 torn, but newer than the newest valid); beyond them: 1.
  EXPECT_EQ(*deleted, (std::vector<int64_t>{1}));
  EXPECT_EQ(Steps(), (std::vector<int64_t>{2, 3, 4, 5, 6}));
  fault_->ClearRules();
  deleted = RetainNewest(*loc_, 2);  // 5 readable again: 5 and 3 are kept, 4 is torn below 5
  ASSERT_TRUE(deleted.ok()) << deleted.status();
  EXPECT_EQ(*deleted, (std::vector<int64_t>{2, 4}));
  EXPECT_EQ(Steps(), (std::vector<int64_t>{3, 5, 6}));
}

// The listing failing deletes nothing; a kept step that does not verify
// stops every deletion (a newer one may only look valid).
TEST_F(RetainNewestTest, NothingGoesOnAFailedListingOrWhenNoKeptStepVerifies) {
  for (int64_t s = 1; s <= 4; ++s) Commit(s);
  fault_->FailNext(1, UnavailableError("injected 503"));
  EXPECT_EQ(RetainNewest(*loc_, 1).status().code(), Code::kUnavailable);
  EXPECT_EQ(Steps(), (std::vector<int64_t>{1, 2, 3, 4}));
  auto deleted = RetainNewest(*loc_, 2, {}, nullptr, [](int64_t) { return false; });
  ASSERT_TRUE(deleted.ok()) << deleted.status();
  EXPECT_TRUE(deleted->empty());
  EXPECT_EQ(Steps(), (std::vector<int64_t>{1, 2, 3, 4}));
  int asked = 0;
  deleted = RetainNewest(*loc_, 2, /*protect=*/{1}, nullptr, [&](int64_t s) {
    ++asked;
    return s == 3;  // the newest kept (4) does not verify, the next does
  });
  ASSERT_TRUE(deleted.ok()) << deleted.status();
  EXPECT_EQ(*deleted, (std::vector<int64_t>{2}));  // 1 protected
  EXPECT_EQ(asked, 2);
  EXPECT_EQ(Steps(), (std::vector<int64_t>{1, 3, 4}));
}

}  // namespace
}  // namespace strata::ckpt

// Issue 15, item 4: a seeded store-fault campaign over the checkpoint remote
// tier. A FaultStore injects 5xx, throttling, resets, truncated bodies, lost
// replies and stale ETags (a Get/Head answered whole from the key's previous
// version: the keys a resumed upload writes again, and those retention
// deletes) while a loop saves with a remote tier (background uploads, the
// writer's own keep_remote retention, restarts that resume uploads), runs
// separate retention passes on the bucket (what `strata ckpt gc` runs),
// Latest() + Load on the bucket, and pulls into fresh local directories.
// Checked after every operation against the store behind the faults: no
// committed step is deleted unless `keep` newer committed ones remain; every
// latest/load/pull is byte-exact or a clear error that is never Corruption
// (the stored bytes are never wrong here) and never leaves a committed copy;
// Latest() never answers an older step than the bucket's newest committed.
// After healing, a new writer resumes and the bucket's newest is the local
// newest, byte-exact. Short version in the default suite; STRATA_STRESS=1: long.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>
#include <set>

#include "base/random.h"
#include "ckpt/commit.h"
#include "ckpt/reader.h"
#include "ckpt/test_util.h"
#include "ckpt/writer.h"
#include "io/durable.h"
#include "object/fault_store.h"
#include "object/mem_store.h"
#include "testing/stress.h"

namespace strata::ckpt {
namespace {

using testing::Compare;
using testing::MakeState;
using testing::RemoteWriterOptions;

constexpr int kKeep = 3;  // the writer's keep_remote and the separate passes' keep

struct Figures {
  uint64_t requests = 0, errors = 0, throttles = 0, resets = 0, truncations = 0, lost_replies = 0, stale = 0;
  int uploads_ok = 0, uploads_failed = 0, pulls_ok = 0, pulls_failed = 0, latest_ok = 0, latest_failed = 0;
  int retention_passes = 0, retention_failed = 0, deleted = 0, restarts = 0, resaved = 0;
  int steps_lost = 0, wrong_bytes = 0, corruption_errors = 0;
  uint64_t bytes_verified = 0;
  uint64_t injected() const { return errors + throttles + resets + truncations + lost_replies + stale; }
};

uint64_t StateBytes(const testing::OwnedState& s) {
  uint64_t n = 0;
  for (const auto& v : s.views) n += v.size;
  return n;
}

class Campaign {
 public:
  Campaign(uint64_t seed, std::string dir, Figures* fig) : seed_(seed), dir_(std::move(dir)), fig_(*fig), rng_(seed) {
    inner_ = object::MakeMemStore("", {.min_part_size = 1 << 20});
    fault_ = std::make_shared<object::FaultStore>(inner_, object::FaultConfig{});
    truth_ = StoreLocation(inner_, 1 << 20);
    faulty_ = StoreLocation(fault_, 1 << 20);
  }

  void Run(int rounds) {
    fault_->SetConfig({.seed = seed_,
                       .error_rate = 0.01,
                       .throttle_rate = 0.01,
                       .reset_rate = 0.01,
                       .truncate_rate = 0.02,
                       .lost_reply_rate = 0.01,
                       .stale_rate = 0.3});
    for (int round = 0; round < rounds && !::testing::Test::HasFatalFailure(); ++round) {
      const int64_t step = 10 * (round + 1);
      if (!writer_ || rng_.Bernoulli(0.25)) Restart();  // a restarted job resumes what failed, under faults
      SaveOne(step);
      Check("save " + std::to_string(step));
      if (Uncommitted(step) && rng_.Bernoulli(0.5)) {
        // The node is lost with a partial upload in the bucket; the job resumes
        // on a fresh one and saves the step again, with other contents (a new
        // attempt): the upload rewrites the step's keys, so stale answers
        // now give the other attempt's manifests and shards.
        writer_.reset();
        std::error_code ec;
        std::filesystem::remove_all(io::JoinPath(dir_, "local"), ec);
        ++generation_[step];
        ++fig_.resaved;
        Restart();
        SaveOne(step);
        Check("save again " + std::to_string(step));
      }
      RetentionPass();
      Check("retention after " + std::to_string(step));
      LatestAndLoad();
      // Pull the newest, a random present step, and (when a pass just deleted
      // one) a deleted step, which only stale replicas still answer for.
      PullOne(NewestTrue());
      if (!present_.empty()) PullOne(*std::next(present_.begin(), rng_.Uniform(present_.size())));
      if (!just_deleted_.empty()) PullOne(just_deleted_.back());
      Check("reads after " + std::to_string(step));
    }
    const object::StoreFaultCounters c = fault_->counters();
    fig_.requests += c.requests;
    fig_.errors += c.errors;
    fig_.throttles += c.throttles;
    fig_.resets += c.resets;
    fig_.truncations += c.truncations;
    fig_.lost_replies += c.lost_replies;
    fig_.stale += c.stale;
    Heal();
  }

 private:
  WriterOptions Options() {
    WriterOptions o = RemoteWriterOptions(dir_, fault_);
    o.keep_remote = kKeep;
    o.keep_local = kKeep + 1;
    return o;
  }
  void Restart() {
    writer_.reset();  // joins the upload thread; what it did not finish resumes at the next Open
    auto w = CheckpointWriter::Open(Options());
    ASSERT_TRUE(w.ok()) << w.status();  // opening never depends on the store answering
    writer_ = std::move(*w);
    ++fig_.restarts;
  }
  // The contents of `step` as last saved.
  testing::OwnedState StateOf(int64_t step) { return MakeState(step + 100000 * generation_[step]); }
  // Keys of `step` in the bucket, not committed there.
  bool Uncommitted(int64_t step) {
    return truth_->ListFiles(step).status().code() != Code::kNotFound && !OpenCheckpoint(*truth_, step).ok();
  }
  void SaveOne(int64_t step) {
    auto state = StateOf(step);
    auto h = writer_->Save(step, state.views);
    ASSERT_TRUE(h.ok()) << h.status();
    ASSERT_TRUE(h->Wait().ok()) << h->Wait();  // the local commit never depends on the store
    Status up = h->WaitUploaded();
    // The writer's background work (resumed uploads, retention) is over
    // before the bucket is checked: checks of a step being deleted would see it half gone.
    writer_->WaitForUploads().IgnoreError();  // failures are the handle's
    if (up.ok()) {
      ++fig_.uploads_ok;
    } else {
      ++fig_.uploads_failed;
      EXPECT_FALSE(up.message().empty());
      NoteError(up, "upload of " + StepDirName(step));
    }
  }
  // A separate pass on the bucket through the faults: what `strata ckpt gc --keep 3` runs.
  void RetentionPass() {
    ++fig_.retention_passes;
    just_deleted_.clear();
    auto deleted = RetainNewest(*faulty_, kKeep);
    if (!deleted.ok()) {
      ++fig_.retention_failed;  // the listing failed: nothing done
      NoteError(deleted.status(), "retention");
      return;
    }
    fig_.deleted += static_cast<int>(deleted->size());
    just_deleted_ = *deleted;
  }
  void LatestAndLoad() {
    const std::optional<int64_t> truth = NewestTrue();
    auto latest = Latest(*faulty_, VerifyLevel::kBytes);
    if (!latest.ok()) {
      ++fig_.latest_failed;
      NoteError(latest.status(), "latest");
      // Never "nothing there" while a committed step is.
      EXPECT_FALSE(truth && latest.status().code() == Code::kNotFound) << latest.status();
      return;
    }
    // Never an older step instead of the newest committed one (nor a newer, uncommitted one).
    EXPECT_EQ(std::optional<int64_t>(latest->step), truth) << "seed " << seed_;
    if (truth != latest->step) ++fig_.wrong_bytes;
    auto loaded = Load(*faulty_, latest->step);
    if (!loaded.ok()) {
      ++fig_.latest_failed;
      NoteError(loaded.status(), "load of the latest");
      return;
    }
    ++fig_.latest_ok;
    Expect(*loaded, latest->step, "load of the latest");
  }
  void PullOne(std::optional<int64_t> step) {
    if (!step) return;
    const std::string into = io::JoinPath(dir_, "pull-" + std::to_string(pull_dirs_++));
    auto dst = std::move(OpenLocalLocation(io::DefaultFileSystem(), into)).value();
    Status st = Pull(*faulty_, *step, *dst);
    if (st.ok()) {
      ++fig_.pulls_ok;
      Status v = Verify(*dst, *step, VerifyLevel::kFull).ToStatus();
      EXPECT_TRUE(v.ok()) << v;
      auto loaded = Load(*dst, *step);
      ASSERT_TRUE(loaded.ok()) << loaded.status();
      Expect(*loaded, *step, "pull");
    } else {
      ++fig_.pulls_failed;
      NoteError(st, "pull of " + StepDirName(*step));
      EXPECT_FALSE(OpenCheckpoint(*dst, *step).ok()) << "a failed pull left a committed copy";
    }
    std::error_code ec;
    std::filesystem::remove_all(into, ec);
  }
  // Heals the store: a new writer resumes; the bucket's newest is the local newest, byte-exact.
  void Heal() {
    fault_->SetConfig({});
    fault_->ForgetVersions();
    writer_.reset();
    auto w = CheckpointWriter::Open(Options());
    ASSERT_TRUE(w.ok()) << w.status();
    ASSERT_TRUE((*w)->WaitForUploads().ok()) << (*w)->WaitForUploads();
    w->reset();
    auto local = std::move(OpenLocalLocation(io::DefaultFileSystem(), io::JoinPath(dir_, "local"))).value();
    auto local_latest = Latest(*local);
    ASSERT_TRUE(local_latest.ok()) << local_latest.status();
    auto remote_latest = Latest(*faulty_, VerifyLevel::kFull);
    ASSERT_TRUE(remote_latest.ok()) << remote_latest.status();
    EXPECT_EQ(remote_latest->step, local_latest->step) << "seed " << seed_;
    auto loaded = Load(*faulty_, remote_latest->step);
    ASSERT_TRUE(loaded.ok()) << loaded.status();
    Expect(*loaded, remote_latest->step, "after healing");
    Check("healed");
  }

  // Bookkeeping against the store behind the faults.
  std::optional<int64_t> NewestTrue() {
    auto n = NewestCommitted(*truth_);
    EXPECT_TRUE(n.ok()) << n.status();
    return n.ok() ? *n : std::nullopt;
  }
  void Check(const std::string& when) {
    auto steps = truth_->ListSteps();
    ASSERT_TRUE(steps.ok()) << steps.status();
    present_.clear();
    for (int64_t s : *steps) {
      if (!OpenCheckpoint(*truth_, s).ok()) continue;
      present_.insert(s);
      if (committed_.insert(s).second) {  // newly committed in the store: every byte as saved
        Status v = Verify(*truth_, s, VerifyLevel::kFull).ToStatus();
        EXPECT_TRUE(v.ok()) << v;
        auto loaded = Load(*truth_, s);
        ASSERT_TRUE(loaded.ok()) << loaded.status();
        Expect(*loaded, s, "committed upload");
      }
    }
    // A committed step may go only with `kKeep` newer committed ones present.
    for (int64_t s : committed_) {
      if (present_.count(s) || lost_.count(s)) continue;
      const auto newer = std::distance(present_.upper_bound(s), present_.end());
      if (newer < kKeep) {
        ADD_FAILURE() << "seed " << seed_ << ", " << when << ": committed " << StepDirName(s) << " deleted with only "
                      << newer << " newer committed steps";
        lost_.insert(s);
        ++fig_.steps_lost;
      }
    }
  }
  void Expect(const LoadedCheckpoint& loaded, int64_t step, const std::string& what) {
    const auto state = StateOf(step);
    const std::string diff = Compare(loaded, state);
    EXPECT_EQ(diff, "") << what << " of " << StepDirName(step) << ", seed " << seed_;
    if (diff.empty()) {
      fig_.bytes_verified += StateBytes(state);
    } else {
      ++fig_.wrong_bytes;
    }
  }
  // The stored bytes are never wrong here: Corruption would be a transfer
  // fault or a stale answer taken for damage (and torn for retention).
  void NoteError(const Status& st, const std::string& what) {
    if (st.code() == Code::kCorruption) {
      ++fig_.corruption_errors;
      ADD_FAILURE() << what << " (seed " << seed_ << "): " << st;
    }
  }

  uint64_t seed_;
  std::string dir_;
  Figures& fig_;
  Random rng_;
  std::shared_ptr<object::ObjectStore> inner_;
  std::shared_ptr<object::FaultStore> fault_;
  std::unique_ptr<Location> truth_, faulty_;
  std::unique_ptr<CheckpointWriter> writer_;
  std::set<int64_t> committed_, present_, lost_;
  std::vector<int64_t> just_deleted_;
  std::map<int64_t, int> generation_;
  int pull_dirs_ = 0;
};

Figures RunCampaign(const std::vector<uint64_t>& seeds, int rounds) {
  Figures fig;
  for (uint64_t seed : seeds) {
    auto dir = io::MakeTempDir("strata-ckpt-faults-");
    EXPECT_TRUE(dir.ok()) << dir.status();
    if (!dir.ok()) return fig;
    Campaign(seed, *dir, &fig).Run(rounds);
    std::error_code ec;
    std::filesystem::remove_all(*dir, ec);
    if (::testing::Test::HasFatalFailure()) break;
  }
  std::cout << "ckpt store-fault campaign: seeds " << seeds.size() << ", " << fig.requests << " requests, "
            << fig.injected() << " faults injected (" << fig.errors << " 5xx, " << fig.throttles << " throttled, "
            << fig.resets << " resets, " << fig.truncations << " truncated, " << fig.lost_replies << " lost replies, "
            << fig.stale << " stale), " << fig.uploads_ok << "/" << fig.uploads_failed << " uploads ok/failed, "
            << fig.pulls_ok << "/" << fig.pulls_failed << " pulls ok/failed, " << fig.latest_ok << "/"
            << fig.latest_failed << " latest+load ok/failed, " << fig.retention_passes << " retention passes ("
            << fig.retention_failed << " failed, " << fig.deleted << " steps deleted), " << fig.restarts
            << " writer restarts (" << fig.resaved << " on a fresh node saving a step again), steps lost "
            << fig.steps_lost << ", wrong bytes " << fig.wrong_bytes << ", corruption errors " << fig.corruption_errors
            << ", bytes verified " << fig.bytes_verified << "\n";
  EXPECT_EQ(fig.steps_lost, 0);
  EXPECT_EQ(fig.wrong_bytes, 0);
  EXPECT_EQ(fig.corruption_errors, 0);
  return fig;
}

TEST(CkptStoreFaultCampaign, Short) {
  Figures fig = RunCampaign({1}, /*rounds=*/12);
  // The campaign did exercise every kind of fault and both outcomes.
  EXPECT_GT(fig.stale, 0u);
  EXPECT_GT(fig.injected(), 30u);
  EXPECT_GT(fig.uploads_ok, 0);
  EXPECT_GT(fig.pulls_ok, 0);
  EXPECT_GT(fig.bytes_verified, 0u);
}

TEST(CkptStoreFaultCampaign, Long) {
  if (!strata::testing::StressRun()) GTEST_SKIP() << "long version: STRATA_STRESS=1";
  Figures fig = RunCampaign({2, 3, 4, 5}, /*rounds=*/40);
  EXPECT_GT(fig.uploads_failed, 0);
  EXPECT_GT(fig.pulls_failed, 0);
  EXPECT_GT(fig.resaved, 0);
}

}  // namespace
}  // namespace strata::ckpt

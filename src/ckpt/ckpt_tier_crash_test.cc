// A checkpointing job that crash-loops (issue 31): ckpt_tier_child resumes
// from its newest local checkpoint and saves ~7.5 MiB every 100 ms, faster
// than Ceph RGW behind the cloud proxy (30 ms before each request, 25 MiB/s
// per connection) takes them, tiering with keep_local 2, keep_remote 3 and the
// default backlog B = keep_remote = 3 steps (policy wait); it is SIGKILLed at
// random moments (seeded; the seed is printed) 100 times (300 with STRATA_STRESS=1).
//
// After every kill:
// - no step the child saw committed is lost, and the newest local one loads byte-exact;
// - the bucket's newest is at most B = 3 steps behind the newest committed,
//   and never goes backwards. Why: a save is admitted only while the backlog
//   stays within B, and the backlog is every step the bucket is behind on
//   (queued, uploading, persisting, or dropped as superseded but newer than
//   the bucket's newest), which a restarted writer finds again in the local
//   directory (it keeps them); no upload fails here;
// - the local directory holds at most keep_local + B committed checkpoints (the
//   backlog is all it keeps beyond keep_local) and at most two other step
//   directories: the save the kill interrupted (the next run redoes that step)
//   and a step local retention was deleting (one at a time, markers first;
//   the next pass removes it);
// - the bucket holds at most keep_remote + 1 committed steps (one may have
//   landed just before the kill, ahead of the retention pass after it; an
//   upload commits only once the pass before it is over, and a writer opened
//   runs one before its first commit), plus at most
//   B + 1 partial ones in flight (the backlog's, and one a kill left that the
//   bucket's newest has passed, removed as torn by the next pass).
// At the end, a writer resumes without being killed: the bucket's newest is the
// local newest, the bucket holds keep_remote steps, and every checkpoint of
// either tier loads byte-exact (the bucket's pass the full verification too).
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <random>
#include <regex>
#include <thread>

#include "base/executor.h"
#include "ckpt/commit.h"
#include "ckpt/kill_loop_util.h"
#include "ckpt/reader.h"
#include "ckpt/writer.h"
#include "object/store_url.h"
#include "testing/background_process.h"
#include "testing/s3_server.h"
#include "testing/stress.h"

namespace strata::ckpt {
namespace {

namespace fs = std::filesystem;
using testing::kTierBacklog;
using testing::kTierKeepLocal;
using testing::kTierKeepRemote;

struct Tier {
  std::vector<int64_t> committed;  // ascending
  size_t uncommitted = 0;          // step directories / prefixes without a valid commit
  int64_t Newest() const { return committed.empty() ? -1 : committed.back(); }
};

Tier Look(Location& loc) {
  Tier t;
  auto steps = loc.ListSteps();
  EXPECT_TRUE(steps.ok()) << steps.status();
  if (!steps.ok()) return t;
  std::vector<char> ok(steps->size());
  ParallelFor(steps->size(), 8, [&](size_t i) { ok[i] = OpenCheckpoint(loc, (*steps)[i]).ok(); });
  for (size_t i = 0; i < steps->size(); ++i) {
    if (ok[i]) {
      t.committed.push_back((*steps)[i]);
    } else {
      ++t.uncommitted;
    }
  }
  return t;
}

std::string Exact(Location& loc, int64_t step) {
  auto loaded = Load(loc, step);
  if (!loaded.ok()) return loaded.status().ToString();
  return testing::Compare(*loaded, testing::TierLoopState(step));
}

uint64_t Seed() {
  if (const char* s = std::getenv("STRATA_CKPT_SEED")) return std::strtoull(s, nullptr, 10);
  return std::random_device{}();
}

TEST(CkptTierCrash, NewestReachesTheBucketFirstAndBothTiersStayBoundedUnderSigkills) {
  const char* bin = std::getenv("STRATA_BINARY_DIR");
  ASSERT_NE(bin, nullptr) << "run under ctest";
  const std::string child = std::string(bin) + "/src/ckpt/ckpt_tier_child";
  const int kills = strata::testing::StressRun() ? 300 : 100;
  const uint64_t seed = Seed();
  std::cout << "ckpt tier crash loop: seed " << seed << " (STRATA_CKPT_SEED=" << seed << " repeats the kill times)\n";
  std::mt19937_64 rng(seed);
  const fs::path dir = fs::temp_directory_path() / ("strata-ckpt-tier-crash-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "local");
  auto backend = strata::testing::StartProxiedRgw({.ttfb_ms = 30, .rate = "25m"});
  if (!backend.ok()) backend = strata::testing::StartProxiedRgw({.ttfb_ms = 30, .rate = "25m"});
  ASSERT_TRUE(backend.ok()) << backend.status();
  ASSERT_EQ(setenv("AWS_ACCESS_KEY_ID", backend->rgw->access_key().c_str(), 1), 0);
  ASSERT_EQ(setenv("AWS_SECRET_ACCESS_KEY", backend->rgw->secret_key().c_str(), 1), 0);
  const std::string through_proxy = backend->StoreUrl("tier");
  auto bucket = object::OpenStore(backend->rgw->StoreUrl("tier"));  // the checks go around the proxy
  ASSERT_TRUE(bucket.ok()) << bucket.status();
  auto remote = StoreLocation(*bucket, 5 << 20, 8);
  const std::string local_dir = (dir / "local").string();
  auto local = std::move(OpenLocalLocation(io::DefaultFileSystem(), local_dir)).value();

  const int64_t kBehind = static_cast<int64_t>(kTierBacklog);
  int64_t acked = -1, last_remote = -1, behind_max = 0;
  size_t local_max = 0, local_other_max = 0, bucket_max = 0, bucket_partial_max = 0;
  int commits = 0, waited = 0, kills_done = 0;
  const std::regex committed_line(R"(committed (\d+) (\d+))");
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < kills && !::testing::Test::HasFailure(); ++i, ++kills_done) {
    const std::string when = "kill " + std::to_string(i);
    auto p = strata::testing::BackgroundProcess::Start({child, local_dir, through_proxy, "100"},
                                                       (dir / "child.log").string(), backend->rgw->ClientEnv());
    ASSERT_TRUE(p.ok()) << p.status();
    // The point of this test is a kill at an arbitrary moment: wait a random time.
    std::this_thread::sleep_for(std::chrono::milliseconds(50 + rng() % 1950));
    int code = 0;
    ASSERT_FALSE((*p)->Exited(&code)) << when << ": the child ended on its own (" << code << "): " << (*p)->Log();
    ASSERT_EQ(::kill((*p)->pid(), SIGKILL), 0);
    ASSERT_TRUE((*p)->WaitExit(std::chrono::seconds(30), &code));
    EXPECT_EQ(code, 128 + SIGKILL) << (*p)->Log();
    const std::string log = (*p)->Log();
    for (std::sregex_iterator it(log.begin(), log.end(), committed_line), end; it != end; ++it) {
      acked = std::max<int64_t>(acked, std::stoll((*it)[1]));
      ++commits;
      waited += std::stoll((*it)[2]) > 0;
    }

    const Tier l = Look(*local), r = Look(*remote);
    EXPECT_GE(l.Newest(), acked) << when << ": a step the child saw committed is gone";
    EXPECT_LE(l.committed.size(), size_t{kTierKeepLocal} + kTierBacklog) << when;
    EXPECT_LE(l.uncommitted, 2u) << when;
    if (l.Newest() >= 0) {
      EXPECT_EQ(Exact(*local, l.Newest()), "") << when;
    }
    EXPECT_GE(r.Newest(), last_remote) << when << ": the bucket's newest went backwards";
    EXPECT_LE(l.Newest() - r.Newest(), kBehind)
        << when << ": newest committed " << l.Newest() << ", newest in the bucket " << r.Newest();
    EXPECT_LE(r.committed.size(), size_t{kTierKeepRemote} + 1) << when;
    EXPECT_LE(r.uncommitted, kTierBacklog + 1) << when;
    if (r.Newest() >= 0 && (r.Newest() > last_remote || i % 10 == 9)) {
      EXPECT_EQ(Exact(*remote, r.Newest()), "") << when;
    }
    last_remote = r.Newest();
    behind_max = std::max(behind_max, l.Newest() - r.Newest());
    local_max = std::max(local_max, l.committed.size());
    local_other_max = std::max(local_other_max, l.uncommitted);
    bucket_max = std::max(bucket_max, r.committed.size());
    bucket_partial_max = std::max(bucket_partial_max, r.uncommitted);
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const Tier l_end = Look(*local), r_end = Look(*remote);
  std::cout << "ckpt tier crash loop: " << kills_done << " kills in " << seconds << " s (seed " << seed
            << "): steps committed " << l_end.Newest() + 1 << " (" << commits << " commits seen, " << waited
            << " saves waited for the bucket), newest in the bucket " << r_end.Newest() << "; held locally "
            << l_end.committed.size() << " (at most " << local_max << " after a kill, bound "
            << kTierKeepLocal + kTierBacklog << "), in the bucket " << r_end.committed.size() << " (at most "
            << bucket_max << ", bound " << kTierKeepRemote + 1 << "; partial at most " << bucket_partial_max
            << "); bucket behind by at most " << behind_max << " (bound " << kBehind << ")\n";
  EXPECT_EQ(kills_done, kills);
  EXPECT_GT(waited, 0) << "no save waited: the bucket kept up, so the loop tested nothing";
  EXPECT_GT(r_end.Newest(), 0);

  // Resumed without a kill: the bucket catches up and keeps keep_remote steps.
  {
    WriterOptions o = testing::TierLoopWriterOptions(local_dir);
    o.remote_url = through_proxy;
    auto w = CheckpointWriter::Open(o);
    ASSERT_TRUE(w.ok()) << w.status();
    ASSERT_TRUE((*w)->WaitForUploads().ok());
    const TierStats t = (*w)->tier_stats();
    EXPECT_EQ(t.newest_remote, t.newest_local);
    EXPECT_EQ(t.lag_steps, 0);
    EXPECT_EQ(t.pending_steps, 0u);
  }
  const Tier l = Look(*local), r = Look(*remote);
  EXPECT_EQ(r.Newest(), l.Newest());
  EXPECT_EQ(r.committed.size(), size_t{kTierKeepRemote});
  EXPECT_EQ(r.uncommitted, 0u);
  EXPECT_EQ(l.committed.size(), size_t{kTierKeepLocal});
  for (int64_t s : l.committed) EXPECT_EQ(Exact(*local, s), "") << "local " << s;
  for (int64_t s : r.committed) {
    EXPECT_EQ(Exact(*remote, s), "") << "bucket " << s;
    EXPECT_TRUE(Verify(*remote, s, VerifyLevel::kFull).ok()) << "bucket " << s;
  }
  EXPECT_TRUE(backend->proxy->Stop().ok());
  EXPECT_TRUE(backend->rgw->Stop().ok());
  fs::remove_all(dir);
}

}  // namespace
}  // namespace strata::ckpt

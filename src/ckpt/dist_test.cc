// Ranks as separate processes (ckpt_rank_child), committing through a
// file:// store from node-local directories, as on a real multi-node job: a
// rank killed mid-save leaves the step uncommitted, and a retry under a new
// attempt commits, never pairing the parts the crashed attempt left behind.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <thread>

#include "ckpt/commit.h"
#include "ckpt/reader.h"
#include "ckpt/test_fixture.h"
#include "ckpt/test_util.h"
#include "io/durable.h"
#include "object/store_url.h"

extern char** environ;

namespace strata::ckpt {
namespace {

constexpr int kWorld = 3;
constexpr int64_t kStep = 100;

class DistTest : public testing::TempDirTest<> {
 protected:
  void SetUp() override {
    TempDirTest::SetUp();
    const char* bin = std::getenv("STRATA_BINARY_DIR");
    ASSERT_NE(bin, nullptr) << "STRATA_BINARY_DIR not set (run through ctest)";
    child_ = std::string(bin) + "/src/ckpt/ckpt_rank_child";
    ASSERT_TRUE(std::filesystem::exists(child_)) << child_;
    url_ = "file://" + io::JoinPath(dir_, "store");
    std::filesystem::create_directories(io::JoinPath(dir_, "store"));
    auto store = object::OpenStore(url_);
    ASSERT_TRUE(store.ok()) << store.status();
    remote_ = StoreLocation(*store);
  }
  void TearDown() override {
    for (pid_t pid : running_) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
    TempDirTest::TearDown();
  }

  // Starts rank `rank` of attempt `attempt` saving MakeState(seed, rank); output to a log.
  pid_t Spawn(int rank, const std::string& attempt, int seed, bool stall_persist = false) {
    const std::string log = io::JoinPath(dir_, "rank" + std::to_string(rank) + "-" + attempt + ".log");
    std::vector<std::string> args = {child_,
                                     io::JoinPath(dir_, "node" + std::to_string(rank)),
                                     url_,
                                     std::to_string(rank),
                                     std::to_string(kWorld),
                                     attempt,
                                     std::to_string(kStep),
                                     std::to_string(seed)};
    if (stall_persist) args.push_back("--stall-persist");
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&actions, 1, 2);
    pid_t pid = -1;
    const int rc = posix_spawn(&pid, child_.c_str(), &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    EXPECT_EQ(rc, 0) << "spawning " << child_;
    logs_[pid] = log;
    running_.push_back(pid);
    return pid;
  }
  // The child's exit code (128 + signal if killed), or -1 if it is still running at the deadline.
  int WaitExit(pid_t pid, std::chrono::seconds timeout = std::chrono::seconds(60)) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    int status = 0;
    for (;;) {
      pid_t got = ::waitpid(pid, &status, WNOHANG);
      if (got == pid) break;
      if (std::chrono::steady_clock::now() >= deadline) return -1;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    running_.erase(std::remove(running_.begin(), running_.end(), pid), running_.end());
    return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
  }
  void Kill(pid_t pid) {
    ASSERT_EQ(::kill(pid, SIGKILL), 0);
    EXPECT_EQ(WaitExit(pid), 128 + SIGKILL);
  }
  std::string Log(pid_t pid) {
    std::ifstream in(logs_[pid]);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  // Polls `cond` until it holds or the deadline passes.
  static bool WaitUntil(const std::function<bool()>& cond) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (!cond()) {
      if (std::chrono::steady_clock::now() >= deadline) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return true;
  }
  // Whether rank `rank`'s part of `attempt` is committed in the store.
  bool RemotePart(int rank, const std::string& attempt) {
    auto m = ReadRankCommit(*remote_, kStep, rank);
    return m.ok() && m->attempt == attempt;
  }

  std::string child_, url_;
  std::unique_ptr<Location> remote_;
  std::vector<pid_t> running_;
  std::map<pid_t, std::string> logs_;
};

TEST_F(DistTest, RankKilledMidSaveLeavesNoCommitAndARetryCommits) {
  // Attempt a1: ranks 0 and 1 get their parts into the store; rank 2 dies
  // mid-save (shards written, no manifest), and so does rank 0 (waiting for
  // it), as a launcher tears a failed job down.
  pid_t r0 = Spawn(0, "a1", 1000), r1 = Spawn(1, "a1", 1000), r2 = Spawn(2, "a1", 1000, /*stall_persist=*/true);
  ASSERT_EQ(WaitExit(r1), 0) << Log(r1);
  ASSERT_TRUE(WaitUntil([&] { return RemotePart(0, "a1"); })) << Log(r0);
  ASSERT_TRUE(WaitUntil([&] { return std::filesystem::exists(io::JoinPath(dir_, "node2/STALLED")); })) << Log(r2);
  Kill(r2);
  Kill(r0);
  VerifyReport report = Verify(*remote_, kStep, VerifyLevel::kQuick);
  EXPECT_FALSE(report.committed) << report.ToString();
  EXPECT_EQ(Latest(*remote_).status().code(), Code::kNotFound);

  // The retry (attempt a2, other contents). Rank 0 first resumes a1's upload
  // (its a1 part is committed on its node) until its new save supersedes it.
  // Rank 1 starts last: until then the store holds its part of a1, which
  // rank 0 must not pair with the new ones.
  r0 = Spawn(0, "a2", 2000);
  r2 = Spawn(2, "a2", 2000);
  ASSERT_TRUE(WaitUntil([&] { return RemotePart(0, "a2") && RemotePart(2, "a2"); })) << Log(r0) << Log(r2);
  EXPECT_TRUE(RemotePart(1, "a1"));
  EXPECT_FALSE(remote_->FileSize(kStep, kCommitFile).ok()) << "committed with a stale part of rank 1";
  r1 = Spawn(1, "a2", 2000);
  for (pid_t pid : {r1, r0, r2}) EXPECT_EQ(WaitExit(pid), 0) << Log(pid);

  auto info = Latest(*remote_, VerifyLevel::kFull);
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->step, kStep);
  EXPECT_EQ(info->manifest.attempt, "a2");
  for (int r = 0; r < kWorld; ++r) {
    EXPECT_EQ(info->ranks[r].attempt, "a2");
    auto loaded = Load(*remote_, kStep, {.rank = r});
    ASSERT_TRUE(loaded.ok()) << loaded.status();
    EXPECT_EQ(testing::Compare(*loaded, testing::MakeState(2000, r)), "") << "rank " << r;
  }
}

}  // namespace
}  // namespace strata::ckpt

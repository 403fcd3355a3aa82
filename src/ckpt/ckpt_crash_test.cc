// Crash consistency: a child process saves checkpoints in a loop and is
// SIGKILLed at random moments, over and over. After every kill, Latest()
// must return a checkpoint that loads and verifies byte-exact against what
// that step wrote (content is deterministic per step), never a torn one.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <iostream>
#include <random>
#include <thread>

#include "base/sanitizers.h"
#include "ckpt/reader.h"
#include "ckpt/test_util.h"
#include "ckpt/writer.h"
#include "io/durable.h"
#include "testing/fork.h"

namespace strata::ckpt {
namespace {

[[noreturn]] void ChildSaveLoop(const std::string& dir, int64_t first_step) {
  WriterOptions o;
  o.dir = dir;
  o.shard_bytes = 1 << 20;
  o.policy = InflightPolicy::kQueue;
  o.max_queued = 2;
  o.keep_local = 3;  // retention runs (and may be killed) too
  auto w = CheckpointWriter::Open(o);
  if (!w.ok()) _exit(2);
  for (int64_t step = first_step;; ++step) {
    // Mixed sizes: every third step is bigger (~7 MiB) than the others (~3 MiB).
    testing::OwnedState s = testing::MakeState(step, 0, step % 3 == 0 ? 4 : 1);
    auto h = (*w)->Save(step, s.views, "{\"step\":" + std::to_string(step) + "}");
    if (!h.ok()) _exit(3);
  }
}

TEST(CkptCrash, LatestIsAlwaysValidAfterSigkill) {
  auto tmp = io::MakeTempDir("ckpt-crash-");
  ASSERT_TRUE(tmp.ok());
  const std::string dir = *tmp;
  auto loc = std::move(OpenLocalLocation(io::DefaultFileSystem(), dir)).value();
  std::mt19937 rng(12345);
  constexpr int kIterations = 110;
  int found = 0, advanced = 0;
  int64_t last_latest = -1;
  // The kills are the point, not the speed: a sanitizer's build (several times slower) gets longer.
  const auto budget = std::chrono::seconds(kAddressSanitizer || kThreadSanitizer ? 150 : 50);
  const auto deadline = std::chrono::steady_clock::now() + budget;
  int i = 0;
  for (; i < kIterations && std::chrono::steady_clock::now() < deadline; ++i) {
    const int64_t first = last_latest + 1;
    pid_t pid = strata::testing::ForkForTest();
    ASSERT_GE(pid, 0);
    if (pid == 0) ChildSaveLoop(dir, first);
    // The point of this test is a kill at an arbitrary moment: wait a random time.
    std::this_thread::sleep_for(std::chrono::microseconds(5000 + rng() % 400000));
    ASSERT_EQ(kill(pid, SIGKILL), 0);
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFSIGNALED(status)) << "child exited early with " << WEXITSTATUS(status);

    std::vector<VerifyReport> skipped;
    auto latest = Latest(*loc, VerifyLevel::kQuick, &skipped);
    if (!latest.ok()) {
      ASSERT_EQ(latest.status().code(), Code::kNotFound) << latest.status();
      ASSERT_EQ(last_latest, -1) << "a committed checkpoint disappeared: " << latest.status();
      continue;
    }
    ++found;
    ASSERT_GE(latest->step, last_latest) << "latest went backwards";
    if (latest->step > last_latest) ++advanced;
    last_latest = latest->step;
    auto loaded = Load(*loc, latest->step);
    ASSERT_TRUE(loaded.ok()) << "iteration " << i << ": " << loaded.status();
    ASSERT_EQ(testing::Compare(*loaded, testing::MakeState(latest->step, 0, latest->step % 3 == 0 ? 4 : 1)), "")
        << "iteration " << i << " step " << latest->step;
    ASSERT_EQ(loaded->metadata, "{\"step\":" + std::to_string(latest->step) + "}");
    VerifyReport full = Verify(*loc, latest->step, VerifyLevel::kFull);
    ASSERT_TRUE(full.ok()) << full.ToString();
  }
  std::cout << "kills: " << i << ", latest found after " << found << ", advanced " << advanced << " times, final step "
            << last_latest << "\n";
  EXPECT_GE(i, 100) << "too slow: only " << i << " kills in the time budget";
  EXPECT_GT(found, i / 2);
  EXPECT_GT(advanced, 10);  // kills landed while saves made progress, not only in one phase
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
}

}  // namespace
}  // namespace strata::ckpt

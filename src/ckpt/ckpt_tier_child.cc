// The process ckpt_tier_crash_test SIGKILLs: a training job that resumes from
// its newest local checkpoint and saves the next steps (TierLoopState) every
// INTERVAL_MS, tiering them to the store at URL (TierLoopWriterOptions:
// keep_local 2, keep_remote 3, backlog 3 steps, policy wait), until killed.
//   ckpt_tier_child DIR URL INTERVAL_MS
// Prints "committed STEP BACKLOG_WAIT_MS" after each local commit; exits 1 on any error.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include "ckpt/commit.h"
#include "ckpt/kill_loop_util.h"
#include "ckpt/writer.h"

namespace {

int Fail(const std::string& what) {
  std::fprintf(stderr, "ckpt_tier_child: %s\n", what.c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace strata;
  if (argc != 4) return Fail("usage: DIR URL INTERVAL_MS");
  const auto interval = std::chrono::milliseconds(std::atoll(argv[3]));
  ckpt::WriterOptions o = ckpt::testing::TierLoopWriterOptions(argv[1]);
  o.remote_url = argv[2];
  auto local = ckpt::OpenLocalLocation(io::DefaultFileSystem(), o.dir);
  if (!local.ok()) return Fail("open " + o.dir + ": " + local.status().ToString());
  auto newest = ckpt::NewestCommitted(**local);  // the step training resumes after
  if (!newest.ok()) return Fail("newest: " + newest.status().ToString());
  auto w = ckpt::CheckpointWriter::Open(o);
  if (!w.ok()) return Fail("open: " + w.status().ToString());
  for (int64_t step = newest->value_or(-1) + 1;; ++step) {
    const auto start = std::chrono::steady_clock::now();
    const ckpt::testing::OwnedState s = ckpt::testing::TierLoopState(step);
    auto h = (*w)->Save(step, s.views, "{\"step\":" + std::to_string(step) + "}");
    if (!h.ok()) return Fail("save " + std::to_string(step) + ": " + h.status().ToString());
    Status st = h->Wait();
    if (!st.ok()) return Fail("persist " + std::to_string(step) + ": " + st.ToString());
    const auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(h->stats().backlog_wait).count();
    std::printf("committed %lld %lld\n", static_cast<long long>(step), static_cast<long long>(waited));
    std::fflush(stdout);
    std::this_thread::sleep_until(start + interval);
  }
}
